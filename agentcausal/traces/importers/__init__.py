"""Importers: the traces people already record, as :class:`~agentcausal.traces.model.Trace`.

One module per format, each a pure function from a file to traces:

========================  ==============================================  ==========================================
``--format``              what                                            module
========================  ==============================================  ==========================================
``who-and-when``          Who&When JSON (``history``)                     :mod:`agentcausal.traces.whowhen`
``jsonl``                 our Trace JSONL                                 :mod:`agentcausal.traces.io`
``otel``                  OpenTelemetry GenAI spans, OTLP JSON            :mod:`.otel`
``openinference``         OpenInference spans: OTLP JSON or the Python    :mod:`.openinference`
                          console exporter's concatenated JSON
``openai-agents``         OpenAI Agents SDK trace export (``trace.span``  :mod:`.openai_agents`
                          records: ``{"data": [...]}``, a list, JSONL)
``ag2``                   AG2 runtime-log SQLite; AG2/AutoGen chat        :mod:`.ag2`
                          histories (``chat_history``, ``TaskResult``)
``langsmith``             LangSmith run export (JSONL with                :mod:`.langsmith`
                          ``dotted_order``)
``mast``, ``agentrx``      MAST-Data rows, AgentRx trajectories            :mod:`.mast`, :mod:`.agentrx`
========================  ==============================================  ==========================================

:func:`detect_format` picks the format of a file from its content (a file that
matches none is named with every format tried); :func:`import_traces` loads any
mix of files, and :func:`scan_imports` does the same while collecting every
invalid file and trace instead of stopping at the first (``--skip-invalid``). Span formats share the rules of
:mod:`._spans` (one trace per trace id, execution order, agent from the nearest
agent span, tool results as their own steps, span ids in step metadata).
Imported traces carry no ground truth; :mod:`.labels` adds it from a side file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from agentcausal.exceptions import InvalidTracesError, TraceFormatError
from agentcausal.input_files import input_refusal
from agentcausal.traces.importers._spans import SpanRecord, iter_json_values, spans_to_traces
from agentcausal.traces.importers.ag2 import load_ag2
from agentcausal.traces.importers.agentrx import load_agentrx
from agentcausal.traces.importers.langsmith import langsmith_records
from agentcausal.traces.importers.mast import load_mast
from agentcausal.traces.importers.openai_agents import RESPONSE_HINT, agents_records, is_agents_record
from agentcausal.traces.importers.openinference import openinference_records, span_record
from agentcausal.traces.importers.otel import otel_records
from agentcausal.traces.io import check_unique_ids, scan_traces
from agentcausal.traces.model import Trace
from agentcausal.traces.whowhen import SUBSETS

__all__ = [
    "FORMATS",
    "SPAN_FORMATS",
    "detect_format",
    "detect_formats",
    "import_traces",
    "import_file",
    "scan_imports",
    "ImportScan",
]

#: the values of ``--format`` (``auto`` detects per file)
FORMATS = (
    "auto",
    "who-and-when",
    "jsonl",
    "otel",
    "openinference",
    "openai-agents",
    "ag2",
    "langsmith",
    "mast",
    "agentrx",
)

#: formats whose records are spans: the spans of every file are pooled, so a trace split over files is one trace
SPAN_FORMATS = ("otel", "openinference", "openai-agents")

EXPECTED = (
    "Who&When JSON (an object with 'history'), our Trace JSONL ('steps' and 'question'), OTLP JSON "
    "('resourceSpans'), OpenInference console spans ('context' with 'span_id'), an OpenAI Agents SDK "
    "export ('span_data'), an AG2 runtime-log SQLite database or chat history (messages with 'content' and "
    "'name'/'source'), a LangSmith run export ('dotted_order'), MAST rows ('mast_annotation') or AgentRx "
    "rows ('trajectory_id')"
)

#: top-level keys of a Who&When record: a JSON object with any of them is given to the Who&When loader, whose
#: message names the missing or broken field
WHO_AND_WHEN_KEYS = frozenset(
    {
        "history",
        "question",
        "ground_truth",
        "groundtruth",
        "mistake_agent",
        "mistake_step",
        "mistake_reason",
        "is_correct",
        "level",
        "question_ID",
    }
)


def _unrecognised(p: Path) -> TraceFormatError:
    tried = ", ".join(f for f in FORMATS if f != "auto")
    return TraceFormatError(
        f"matches no trace format (tried {tried}; expected {EXPECTED}); if it is one of "
        "them, name it with --format FORMAT to see what is wrong",
        path=str(p),
    )


#: files a folder is expanded to (an explicitly named file may have any name)
FOLDER_SUFFIXES = (".json", ".jsonl", ".ndjson", ".db", ".sqlite", ".sqlite3")


def _is_sqlite(p: Path) -> bool:
    try:
        with p.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _classify(value: Any, text: str) -> str | None:
    oi = "openinference.span.kind" in text
    if isinstance(value, dict):
        keys = set(value)
        if keys & {"resourceSpans", "resource_spans"}:
            return "openinference" if oi else "otel"
        if keys & {"resourceLogs", "resource_logs"}:
            raise TraceFormatError(
                "an OTLP logs file (GenAI content events v1.28-1.36); pass it with --logs beside its traces file"
            )
        if is_agents_record(value):
            return "openai-agents"
        if isinstance(value.get("context"), dict) and "span_id" in value["context"]:
            return "openinference"
        if "history" in keys:
            return "who-and-when"
        if {"steps", "question"} <= keys:
            return "jsonl"
        if keys & {"dotted_order", "run_type"}:
            return "langsmith"
        if "mast_annotation" in keys:
            return "mast"
        if "trajectory_id" in keys:
            return "agentrx"
        if "chat_history" in keys or "messages" in keys:
            return "ag2"
        if keys == {"data"} or (isinstance(value.get("data"), list) and value["data"]):  # a wrapped batch
            return _classify(value["data"][0], text) if value.get("data") else None
        return None
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return (
            _classify(value[0], text)
            if not ({"content"} <= set(value[0]) and set(value[0]) & {"name", "role", "source"})
            else "ag2"
        )
    return None


def _native_fallback(first: Any) -> bool:
    """Whether a ``.json``/``.jsonl`` value that matched no format goes to the Who&When/Trace JSONL loader (which
    names the missing or broken field): anything but an object (or list of objects) none of whose keys is ours."""
    obj = first[0] if isinstance(first, list) and first and isinstance(first[0], dict) else first
    if not isinstance(obj, dict) or not obj:
        return True
    return bool(set(obj) & (WHO_AND_WHEN_KEYS | {"steps", "id", "source", "label"}))


def detect_format(path: str | Path) -> str:
    """The format of one trace file (see :data:`FORMATS`), from its content.

    Parameters
    ----------
    path : a file, or a folder (Who&When folders and folders of ``*.json``/``*.jsonl`` read as ``who-and-when``)

    Returns
    -------
    str, one of :data:`FORMATS` other than ``auto`` (a folder: ``who-and-when``; see
    :func:`detect_formats` for folders of other files).

    Raises
    ------
    TraceFormatError
        If the file matches no format; the message names the file, every format tried and what
        each looks like, and suggests ``--format``. A ``.json``/``.jsonl`` file that is broken,
        or holds a Who&When-like object (``question``, ``mistake_step`` ...) without ``history``,
        is given to the Who&When/Trace JSONL loader, whose message names the broken line or field.
    """
    p = Path(path)
    if p.is_dir():
        return "who-and-when"
    native = {".json": "who-and-when", ".jsonl": "jsonl"}.get(p.suffix)
    refusal = input_refusal(p)  # nothing is opened: a FIFO, a device or a symlink loop never hangs or floods
    if refusal is not None:
        if native:  # the native loader refuses it by name (or --skip-invalid skips it)
            return native
        raise TraceFormatError(refusal, path=str(p))
    if _is_sqlite(p):
        return "ag2"
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        if native:
            return native
        raise TraceFormatError(f"cannot read as text: {exc}", path=str(p)) from exc
    try:
        first = next(iter_json_values(text), None)
    except (ValueError, RecursionError) as exc:
        if native:  # the native loader names the broken file and line
            return native
        raise TraceFormatError(f"not JSON ({exc}); expected {EXPECTED}", path=str(p)) from exc
    try:
        fmt = _classify(first, text) if first is not None else None
    except TraceFormatError as exc:
        raise TraceFormatError(str(exc), path=str(p)) from exc
    if fmt is None and native and _native_fallback(first):  # the native loader says which field is wrong
        return native
    if fmt is None:
        raise _unrecognised(p)
    return fmt


def detect_formats(
    paths: Sequence[str | Path],
    format: str = "auto",
    *,
    unrecognised: list[TraceFormatError] | None = None,
) -> list[tuple[Path, str]]:
    """Each file to read with its format: a Who&When folder stays whole (``who-and-when``); any other
    folder is expanded to its files (hidden files skipped), each detected unless ``format`` names one.

    Parameters
    ----------
    paths : files and folders
    format : one of :data:`FORMATS`
    unrecognised : list, optional; when given, a file that matches no format is appended to it (and left
        out) instead of raising

    Raises
    ------
    TraceFormatError
        If a path does not exist, the format is unknown, or a file matches no format (unless ``unrecognised``).
    """
    if format not in FORMATS:
        raise TraceFormatError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    out: list[tuple[Path, str]] = []
    for raw in paths:
        p = Path(raw)
        if not os.path.lexists(p):  # a symlink loop or dangling link is named by the loader
            raise TraceFormatError("no such file or folder", path=str(p))
        if p.is_dir() and (p.name in SUBSETS or any((p / s).is_dir() for s in SUBSETS)):
            out.append((p, "who-and-when"))
        elif p.is_dir() and format in ("mast", "agentrx"):
            out.append((p, format))
        elif p.is_dir():
            files = sorted(
                f
                for f in p.iterdir()
                if f.suffix in FOLDER_SUFFIXES  # a FIFO or link too: the
                and not f.name.startswith(".")
            )  # loader names it, unopened
            if not files:
                raise TraceFormatError(f"folder holds no trace files ({', '.join(FOLDER_SUFFIXES)})", path=str(p))
            found = [(f, fmt) for f in files if (fmt := _detect_one(f, format, unrecognised))]
            if {fmt for _, fmt in found} == {"agentrx"}:  # labels and trajectories are joined per folder
                found = [(p, "agentrx")]
            out.extend(found)
        elif fmt := _detect_one(p, format, unrecognised):
            out.append((p, fmt))
    return out


def _detect_one(p: Path, format: str, unrecognised: list[TraceFormatError] | None) -> str | None:
    """``format`` (checked by :func:`_unrefused`) or the detected format; a refusal goes to ``unrecognised``
    when given (None returned), else it is raised."""
    try:
        if format != "auto":
            _unrefused(p, format)
            return format
        return detect_format(p)
    except TraceFormatError as exc:
        if unrecognised is None:
            raise
        unrecognised.append(exc)
        return None


def _unrefused(p: Path, format: str) -> bool:
    """True, or TraceFormatError when ``--format`` names a non-native format for a file that may not be
    read (FIFO, device, symlink loop, over the size limit): never opened. Native formats are named by
    their loader (and ``--skip-invalid`` can skip them)."""
    if format in ("auto", "who-and-when", "jsonl") or p.is_dir():
        return True
    refusal = input_refusal(p)
    if refusal is not None:
        raise TraceFormatError(refusal, path=str(p))
    return True


def _span_records(fmt: str, path: Path, logs: str | Path | None) -> list[SpanRecord]:
    if fmt == "openai-agents":
        return agents_records(path)

    if fmt == "otel":
        return otel_records(path, logs=logs, record=span_record)
    return openinference_records(path)


class ImportScan(NamedTuple):
    """What :func:`scan_imports` read.

    Attributes
    ----------
    traces : list of Trace, the valid ones (ids unique)
    origins : list of str, the file each trace was read from (same order; span traces pooled over
        several files name them all, comma-separated)
    invalid : list of TraceFormatError, one per file that matches no format or is malformed, and
        per trace that cannot be imported (no content ...), each naming its file(s)
    """

    traces: list[Trace]
    origins: list[str]
    invalid: list[TraceFormatError]

    def skipped(self) -> list[dict[str, str | None]]:
        """The invalid inputs as JSON-ready records ``{"path", "field", "error"}`` (for ``run.json``)."""
        return [{"path": e.path, "field": e.field, "error": e.detail} for e in self.invalid]


def _content_hint(fmt: str) -> dict[str, str]:
    if fmt == "openai-agents":
        return {"content_hint": RESPONSE_HINT}
    return {}


def scan_imports(
    paths: Sequence[str | Path],
    format: str = "auto",
    *,
    logs: str | Path | None = None,
    tool_agent: str | None = None,
) -> ImportScan:
    """Import any mix of trace files, collecting every invalid file and trace instead of stopping.

    Parameters
    ----------
    paths : files or folders
    format : one of :data:`FORMATS`; ``auto`` detects per file
    logs : OTLP JSON logs file with GenAI content events (``otel`` v1.28–v1.36)
    tool_agent : agent name for tool steps (default: the calling agent's)

    Returns
    -------
    ImportScan: the valid traces (the traces of each file in the order given, span formats after the
    rest, ordered by start time), where each came from, and every file or trace left out with why.

    Raises
    ------
    TraceFormatError
        If a path does not exist or the format is unknown (these name no trace), or two valid traces
        share an id.
    """
    invalid: list[TraceFormatError] = []
    traces: list[Trace] = []
    origins: list[str] = []
    pooled: dict[str, list[SpanRecord]] = {}
    files_of: dict[tuple[str, str], list[str]] = {}  # (format, trace id) -> files holding its spans
    for p, fmt in detect_formats(paths, format, unrecognised=invalid):
        try:
            if fmt in ("who-and-when", "jsonl"):
                scan = scan_traces([p])
                invalid.extend(scan.invalid)
                got, where = scan.traces, scan.origins
            elif fmt in SPAN_FORMATS:
                records = _span_records(fmt, p, logs)
                for r in records:
                    files = files_of.setdefault((fmt, r.trace_id), [])
                    if str(p) not in files:
                        files.append(str(p))
                pooled.setdefault(fmt, []).extend(records)
                continue
            else:
                got = _load_other(fmt, p, tool_agent, invalid)
                where = [str(p)] * len(got)
        except TraceFormatError as exc:
            invalid.append(exc if exc.path else TraceFormatError(exc.detail, path=str(p), field=exc.field))
            continue
        traces.extend(got)
        origins.extend(where)
    for fmt, records in pooled.items():
        bad: list[tuple[str, str]] = []
        got = spans_to_traces(
            records, source=fmt, file=None, tool_agent=tool_agent, skip_invalid=True, invalid=bad, **_content_hint(fmt)
        )
        traces.extend(got)
        origins.extend(", ".join(files_of.get((fmt, t.id), [])) for t in got)
        invalid.extend(
            TraceFormatError(why, path=", ".join(files_of.get((fmt, tid), [])), field=f"trace {tid}")
            for tid, why in bad
        )
    check_unique_ids(traces)
    return ImportScan(traces, origins, invalid)


def _load_other(fmt: str, p: Path, tool_agent: str | None, invalid: list[TraceFormatError]) -> list[Trace]:
    """The traces of one AG2, LangSmith, MAST or AgentRx file; LangSmith traces without content go to ``invalid``."""
    if fmt == "ag2":
        return load_ag2(p, tool_agent=tool_agent)
    if fmt == "langsmith":
        bad: list[tuple[str, str]] = []
        got = spans_to_traces(
            langsmith_records(p), source="langsmith", file=p.name, tool_agent=tool_agent, skip_invalid=True, invalid=bad
        )
        invalid.extend(TraceFormatError(why, path=str(p), field=f"trace {tid}") for tid, why in bad)
        return got
    if fmt == "mast":
        return load_mast(p)

    return load_agentrx(p)


def import_file(
    path: str | Path,
    format: str = "auto",
    *,
    logs: str | Path | None = None,
    tool_agent: str | None = None,
    skip_invalid: bool = False,
) -> list[Trace]:
    """Import one file (or folder) of the given format (``auto``: :func:`detect_format`).

    Parameters
    ----------
    path : the file
    format : one of :data:`FORMATS`
    logs : OTLP JSON logs file with GenAI content events (``otel`` v1.28–v1.36)
    tool_agent : agent name for tool steps (default: the calling agent's)
    skip_invalid : leave out invalid files and traces (see :func:`scan_imports`) instead of raising

    Returns
    -------
    list of Trace

    Raises
    ------
    TraceFormatError
        If the file does not match the format, or a trace is invalid (content capture off ...).
    """
    return import_traces([path], format, logs=logs, tool_agent=tool_agent, skip_invalid=skip_invalid)


def import_traces(
    paths: Sequence[str | Path],
    format: str = "auto",
    *,
    logs: str | Path | None = None,
    tool_agent: str | None = None,
    skip_invalid: bool = False,
) -> list[Trace]:
    """Import any mix of trace files; each file's format is ``format`` or detected.

    Spans of the span formats (:data:`SPAN_FORMATS`) are pooled over all files before
    building traces, so a trace whose spans sit in several files is one trace.

    Parameters
    ----------
    paths : files or folders
    format : one of :data:`FORMATS`; ``auto`` detects per file
    logs, tool_agent : see :func:`import_file`
    skip_invalid : leave out the invalid files and traces (:func:`scan_imports` lists them) instead of raising

    Returns
    -------
    list of Trace: the traces of each file in the order given (span formats after the rest,
    ordered by start time); ids are unique.

    Raises
    ------
    TraceFormatError
        If a path does not exist or matches no format, a file is malformed, a trace is
        invalid, or two traces share an id (unless ``skip_invalid``, one input: that input's error;
        several: :class:`~agentcausal.exceptions.InvalidTracesError` naming each).
    """
    scan = scan_imports(paths, format, logs=logs, tool_agent=tool_agent)
    if scan.invalid and not skip_invalid:
        raise scan.invalid[0] if len(scan.invalid) == 1 else InvalidTracesError(scan.invalid)
    return scan.traces
