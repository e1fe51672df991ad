"""Our trace format, JSON Lines: one :class:`~agentcausal.traces.model.Trace` per line
(``Trace.model_dump_json()``), streamed line by line (the input size limit holds per line), one line read
back by its byte offset (a plan item), and written atomically.

Each line is refused as one :class:`~agentcausal.exceptions.TraceFormatError` naming the file and the line:
JSON that does not parse, is nested too deep or holds a huge integer (:mod:`agentcausal.input_files`), a
record that is not a Trace, or (where a method needs it) a trace without a question. Folders and mixes of
formats are :mod:`agentcausal.traces.io`'s.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from pydantic import ValidationError
from pydantic_core import from_json

from agentcausal.exceptions import InputFileError, InvalidTracesError, TraceFormatError
from agentcausal.input_files import input_refusal, loads_json, max_input_bytes, within_json_limits
from agentcausal.traces.model import Trace
from agentcausal.traces.text import clean_text, content_text, optional_text

__all__ = ["TraceScan", "iter_jsonl", "read_jsonl_line", "read_jsonl", "write_jsonl", "raise_all"]


class TraceScan(NamedTuple):
    """What :func:`scan_traces` found.

    Attributes
    ----------
    traces : list of Trace, the valid ones, in order
    invalid : list of TraceFormatError, one per invalid file (or JSONL line), each naming file and field
    origins : list of str, the file each trace was read from (same order as ``traces``; filled by
        :func:`scan_traces`)
    """

    traces: list[Trace]
    invalid: list[TraceFormatError]
    origins: list[str] = []  # a NamedTuple default, never mutated

    def skipped(self) -> list[dict[str, str | None]]:
        """The invalid inputs as JSON-ready records ``{"path", "field", "error"}`` (for ``run.json``)."""
        return [{"path": e.path, "field": e.field, "error": e.detail} for e in self.invalid]


def _validation_summary(exc: ValidationError) -> str:
    """A pydantic error on one line: ``loc: msg; loc: msg``."""
    items = [f"{'.'.join(str(x) for x in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:5]]
    return "; ".join(items).replace("\n", " ")


def _normalise_record(obj: object) -> dict:
    """A parsed Trace JSON object with its text fields normalised (see :mod:`agentcausal.traces.text`)."""
    if not isinstance(obj, dict):
        raise TraceFormatError("expected a JSON object")
    out = dict(obj)
    problems: list[TraceFormatError] = []

    def norm(fn, value, field, **kw):
        try:
            return fn(value, field=field, **kw)
        except TraceFormatError as exc:
            problems.append(exc)
            return ""

    for key in ("question", "ground_truth"):
        if key in out:
            out[key] = norm(optional_text, out[key], key, numbers=True)
    if isinstance(out.get("steps"), list):
        steps = []
        for i, st in enumerate(out["steps"]):
            if isinstance(st, dict):
                st = dict(st)
                for key in ("agent", "role", "content"):
                    if key not in st:
                        continue
                    v = st[key]
                    if type(v) is str:  # the common case: a string, cleaned as both text rules clean it
                        st[key] = clean_text(v)
                    else:
                        st[key] = norm(content_text if key == "content" else optional_text, v, f"steps[{i}].{key}")
            steps.append(st)
        out["steps"] = steps
    if problems:
        raise TraceFormatError("; ".join(str(p) for p in problems[:10]), field=None)
    return out


#: bytes read from a JSONL file at a time while scanning it (lines of a few KB each: one read per many lines)
_READ_BUFFER = 1 << 20
#: bytes read first for one line read back by its offset (a longer line is read on)
_LINE_READ = 1 << 14

_NO_QUESTION = "not a Trace: question: missing or empty: every method is asked about the task the agents were given"


def _read_fast(line: str | bytes, *, checked: bool) -> Trace | None:
    """The Trace of one line as :func:`_parse_jsonl_line`'s reference reading gives it, read about twice as fast,
    or None where that reading must decide (then nothing is lost but the time of this try).

    The line is parsed by ``pydantic_core.from_json`` (Rust), which gives the value ``json.loads`` gives or
    refuses the line (a lone surrogate escape, nesting past 200 levels, an integer past Python's digit limit,
    and whatever ``json.loads`` refuses: duplicate keys keep the last value in both), checked against
    :func:`within_json_limits` (unless ``checked``), and validated as it is: the reference's text
    normalisation changes only text fields that are not strings, which ``Trace`` refuses here, and cleans
    strings as ``Trace``'s own validators do.
    """
    try:
        value = from_json(line)
        if type(value) is not dict or not (checked or within_json_limits(value)):
            return None
        return Trace.model_validate(value)
    except (ValueError, TypeError):  # not JSON to pydantic_core (a str that is not UTF-8: TypeError), or not
        return None  # a Trace as it stands (ValidationError)


def _parse_jsonl_line(
    line: str | bytes, path: Path, where: str, *, require_question: bool, checked: bool = False
) -> Trace:
    """One line of our Trace JSONL as a Trace (depth and digit limits of :func:`loads_json`; ``checked``: the
    line's bytes already passed them, so plain ``json.loads`` reads them to the same value).

    A line is read by :func:`_read_fast` first; where it gives nothing, the reference reading below
    (``json.loads``, :func:`_normalise_record`, ``Trace.model_validate``) reads it and names what is wrong.

    Raises
    ------
    TraceFormatError
        If the line is not JSON, not a valid Trace or (``require_question``) has no question, naming the file
        and ``where``.
    """
    fast = _read_fast(line, checked=checked)
    if fast is not None:
        if require_question and not fast.question.strip():
            raise TraceFormatError(_NO_QUESTION, path=str(path), field=where)
        return fast
    try:
        t = Trace.model_validate(_normalise_record(json.loads(line) if checked else loads_json(line)))
        if require_question and not t.question.strip():
            raise TraceFormatError(_NO_QUESTION)
        return t
    except InputFileError as exc:
        raise TraceFormatError(f"not JSON: {exc.detail}", path=str(path), field=where) from exc
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"not JSON: {exc.msg} at column {exc.colno}", path=str(path), field=where) from exc
    except TraceFormatError as exc:
        detail = exc.detail if exc.detail.startswith("not a Trace") else f"not a Trace: {exc.detail}"
        raise TraceFormatError(detail, path=str(path), field=where) from exc
    except ValidationError as exc:
        raise TraceFormatError(f"not a Trace: {_validation_summary(exc)}", path=str(path), field=where) from exc


def iter_jsonl(
    path: str | Path, *, root: Path | None = None, require_question: bool = False
) -> Iterator[tuple[int, Trace | TraceFormatError]]:
    """The traces of our Trace JSONL one line at a time, each with the byte offset its line starts at.

    The file is refused by name first as :func:`agentcausal.input_files.input_refusal` says (a FIFO, a
    device, a symlink loop or one out of ``root``), with the input size limit holding per line.

    Parameters
    ----------
    path : file with one Trace JSON object per line (blank lines skipped)
    root : the folder the file was found in (a symlink must stay inside it); None: named directly
    require_question : a trace without a question is an error

    Yields
    ------
    (offset, Trace or TraceFormatError) : the byte offset of the line in the file, and its trace, or the
    error naming the file and line (not JSON, not a valid Trace, not UTF-8, over the size limit); a file
    that cannot be read is one error at offset -1. :func:`read_jsonl_line` reads one line back by its offset.
    """
    p = Path(path)
    cap = max_input_bytes()
    why = input_refusal(p, root=root, limit=2**62)  # the kind of file; the size limit holds per line below
    if why is not None:
        yield -1, TraceFormatError(why, path=str(p))
        return
    try:
        fh = p.open("rb", buffering=_READ_BUFFER)
    except OSError as exc:
        yield -1, TraceFormatError(f"cannot read: {exc.strerror or exc}", path=str(p))
        return
    with fh:
        offset = 0
        for n, raw in enumerate(iter(lambda: fh.readline(cap + 1), b""), 1):
            start, offset = offset, offset + len(raw)
            if len(raw) > cap and not raw.endswith(b"\n"):  # the rest of an oversized line: skip it unread
                yield (
                    start,
                    TraceFormatError(
                        f"a line over the input size limit ({cap:,} bytes)", path=str(p), field=f"line {n}"
                    ),
                )
                while raw and not raw.endswith(b"\n"):
                    raw = fh.readline(cap + 1)
                    offset += len(raw)
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield (
                    start,
                    TraceFormatError(f"not UTF-8 text (byte {start + exc.start})", path=str(p), field=f"line {n}"),
                )
                continue
            if not line or line.isspace():  # blank (as ``not line.strip()``, without copying the line)
                continue
            try:
                yield start, _parse_jsonl_line(line, p, f"line {n}", require_question=require_question)
            except TraceFormatError as exc:
                yield start, exc


def read_jsonl_line(path: str | Path, offset: int, *, checked: bool = False) -> Trace:
    """The trace on the line of our Trace JSONL that starts at byte ``offset`` (see :func:`iter_jsonl`).

    ``checked``: the file's bytes are known to be those :func:`iter_jsonl` read (a plan item whose file sha256
    matched), so the line's nesting and integer digits are not checked again.

    Raises
    ------
    TraceFormatError
        If the file cannot be read or the line is not a valid Trace.
    """
    p = path if isinstance(path, Path) else Path(path)
    why = input_refusal(p, limit=2**62)
    if why is not None:
        raise TraceFormatError(why, path=str(p))
    try:
        raw = _line_at(p, offset, max_input_bytes() + 1)
    except OSError as exc:
        raise TraceFormatError(f"cannot read: {exc.strerror or exc}", path=str(p)) from exc
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"not UTF-8 text (byte {offset + exc.start})", path=str(p)) from exc
    return _parse_jsonl_line(line, p, f"byte {offset}", require_question=False, checked=checked)


def _line_at(p: Path, offset: int, limit: int) -> bytes:
    """The bytes of the line that starts at byte ``offset``, as ``readline(limit)`` reads them there (through the
    newline, to the end of the file, or ``limit`` bytes), read with ``pread``: :data:`_LINE_READ` bytes first (one
    read for most lines), twice as many each time after.

    Raises
    ------
    OSError
        If the file cannot be opened or read.
    """
    fd = os.open(p, os.O_RDONLY)
    try:
        parts: list[bytes] = []
        got, size = 0, _LINE_READ
        while got < limit:
            raw = os.pread(fd, min(size, limit - got), offset + got)
            end = raw.find(b"\n")
            if end >= 0:
                parts.append(raw[: end + 1])
                break
            if not raw:  # the end of the file
                break
            parts.append(raw)
            got += len(raw)
            size *= 2
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


def _scan_jsonl(path: Path, *, root: Path | None = None, require_question: bool = False) -> TraceScan:
    traces: list[Trace] = []
    errors: list[TraceFormatError] = []
    for _, t in iter_jsonl(path, root=root, require_question=require_question):
        if isinstance(t, TraceFormatError):
            errors.append(t)
        else:
            traces.append(t)
    return TraceScan(traces, errors)


def raise_all(errors: list[TraceFormatError]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InvalidTracesError(errors)


def read_jsonl(path: str | Path) -> list[Trace]:
    """Read our Trace JSONL.

    Text fields are normalised as for Who&When files (:mod:`agentcausal.traces.text`).

    Parameters
    ----------
    path : file with one Trace JSON object per line (blank lines ignored)

    Returns
    -------
    list of Trace

    Raises
    ------
    TraceFormatError
        If a line is not JSON or not a valid Trace (the message names the line);
        :class:`~agentcausal.exceptions.InvalidTracesError` listing each line when several are.
    """
    scan = _scan_jsonl(Path(path))
    raise_all(scan.invalid)
    return scan.traces


def write_jsonl(traces: Iterable[Trace], path: str | Path) -> Path:
    """Write traces as JSONL (one per line, UTF-8); creates parent folders.

    Parameters
    ----------
    traces : iterable of Trace
    path : target file

    Returns
    -------
    Path
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8") as fh:
        for t in traces:
            fh.write(t.model_dump_json() + "\n")
    return p
