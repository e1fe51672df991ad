"""Read and write traces: our own JSONL, Who&When files, or folders of either.

Our format is JSON Lines, one :class:`~agentcausal.traces.model.Trace` per
line (``Trace.model_dump_json()``), so traces from other systems can be
converted in by writing that shape. :func:`load_traces` accepts any mix of

* a Who&When folder (holding ``Algorithm-Generated/`` / ``Hand-Crafted/``, or a subset folder),
* a folder of Who&When ``*.json`` files and/or our ``*.jsonl`` files,
* single ``*.json`` (Who&When) or ``*.jsonl`` (ours) files.

Ids: Who&When files in a subset folder are ``"<subset>/<stem>"``; a loose
``.json`` file is ``"<parent folder>/<stem>"``, widened with more parent folders
only where two files would clash; a JSONL trace keeps its own ``id``. A trace
whose id an earlier one already has is an invalid input (named with both files).

Every file is read before anything is refused: :func:`scan_traces` returns
the valid traces and one error per invalid file (or JSONL line), and
:func:`load_traces` refuses them all in one message, or leaves them out when
``skip_invalid`` is set.

Hostile files are refused by name before any read (:mod:`agentcausal.input_files`):
only regular files are read (a FIFO, a device such as a symlink to
``/dev/zero``, a symlink loop, a dangling symlink, and a symlink found in a
folder that leads out of it are each an invalid input); a file over the input
size limit (256 MiB, ``--max-input-mb``) is refused unread; JSON (a file, or a
JSONL line) nested deeper than 64 levels or holding an integer of more than
4,300 digits is one line, never a traceback. A trace without a question is
refused (``question``): every method asks about the task. A JSONL file is read
one line at a time (:func:`agentcausal.traces.jsonl.iter_jsonl`, the format's own module), so the
size limit holds per line there and a corpus of any size streams through in the memory of one trace.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.jsonl import TraceScan, iter_jsonl, raise_all
from agentcausal.traces.model import Trace
from agentcausal.traces.whowhen import SUBSETS, load_who_and_when_file, who_and_when_files

__all__ = [
    "ReusedTrace",
    "ScannedTrace",
    "iter_traces",
    "scan_traces",
    "load_traces",
    "check_unique_ids",
    "select_traces",
]


LOOSE = "examples"  # the source of a loose Who&When .json file (outside a subset folder)


def _files(path: Path) -> list[tuple[Path, str | None, Path | None]]:
    """The trace files a path stands for, each with its Who&When subset (None for JSONL) and the folder it
    was found in (None for a file named directly). Entries of a folder are taken by name, never followed
    into: a FIFO or a folder named ``x.json`` is read (and refused by name) as a file."""
    if path.is_dir():
        if path.name in SUBSETS or any((path / s).is_dir() for s in SUBSETS):
            return [(f, subset, path) for f, subset in who_and_when_files(path)]
        files = sorted(path.glob("*.json")) + sorted(path.glob("*.jsonl"))
        if not files:
            raise TraceFormatError("folder holds no Who&When subsets, *.json or *.jsonl files", path=str(path))
        return [(f, None if f.suffix == ".jsonl" else LOOSE, path) for f in files]
    if path.suffix == ".jsonl":
        return [(path, None, None)]
    if path.suffix == ".json":
        return [(path, path.parent.name if path.parent.name in SUBSETS else LOOSE, None)]
    raise TraceFormatError("expected a folder, a Who&When .json file or a Trace .jsonl file", path=str(path))


def _resolved(f: Path) -> Path:
    """``f.resolve()``, or its absolute path where it cannot be resolved (a symlink loop: refused when read)."""
    try:
        return f.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(f))


def _loose_ids(files: Sequence[Path]) -> dict[Path, str]:
    """Ids for loose Who&When ``.json`` files (outside a subset folder): ``"<parent folder>/<stem>"``,
    widened by one more parent folder at a time for the files whose ids would otherwise clash
    (``/a/x/trace.json`` and ``/b/x/trace.json`` become ``a/x/trace`` and ``b/x/trace``), so files
    in different folders never share an id and ``data/examples/<stem>.json`` stays ``examples/<stem>``.
    The same file given twice keeps one id (a duplicate :func:`scan_traces` reports)."""
    resolved = {f: _resolved(f) for f in files}

    def ident(f: Path, depth: int) -> str:
        r = resolved[f]
        parts = [*r.parent.parts[1:][-depth:], r.stem]
        return "/".join(parts)

    depth = {f: 1 for f in files}
    while True:
        groups: dict[str, set[Path]] = {}
        for f in files:
            groups.setdefault(ident(f, depth[f]), set()).add(resolved[f])
        widen = [f for f in files if len(groups[ident(f, depth[f])]) > 1 and depth[f] < len(resolved[f].parents) - 1]
        if not widen:
            return {f: ident(f, depth[f]) for f in files}
        for f in widen:
            depth[f] += 1


class ReusedTrace(NamedTuple):
    """One trace of an unchanged JSONL file, not parsed: what an earlier scan kept of it (see ``reuse``).

    Attributes
    ----------
    id : str, the trace's id
    path : str, the file
    offset : int, the byte offset of its line
    summary : what the ``reuse`` callable returned for it
    """

    id: str
    path: str
    offset: int
    summary: Any


#: ``reuse(file, root)`` of :func:`iter_traces`: the (id, offset, summary) of every trace of an unchanged
#: JSONL file, in file order, or None to read the file
Reuse = Callable[[Path, Path | None], Sequence[tuple[str, int, Any]] | None]


class ScannedTrace(NamedTuple):
    """One valid trace of a corpus, where it was read from.

    Attributes
    ----------
    trace : Trace
    path : str, the file it was read from
    offset : int or None, the byte offset of its line in a JSONL file (None: a Who&When file)
    """

    trace: Trace
    path: str
    offset: int | None


def iter_traces(
    paths: Sequence[str | Path], *, reuse: Reuse | None = None
) -> Iterator[ScannedTrace | ReusedTrace | TraceFormatError]:
    """Every trace of the given paths one at a time, or the error of an invalid input, in corpus order.

    One trace is parsed at a time (a JSONL file line by line), so a corpus is never held whole. A later
    trace whose id an earlier one has is an error ("duplicate trace id ... (first read from <file>)"):
    the ids seen are kept, nothing else. A FIFO, device, symlink loop or out-of-folder symlink, an
    oversized file (or JSONL line), over-deep JSON and a trace without a question are errors too, each
    naming its file (and line or field).

    Parameters
    ----------
    paths : sequence of paths (folders, ``.json``, ``.jsonl``)
    reuse : called with each JSONL file and the folder it was found in (None: named directly); where it
        returns the (id, offset, summary) of the file's traces, those come as :class:`ReusedTrace` (the
        duplicate-id rule still holds) and the file is not read. None: every file is read.

    Yields
    ------
    ScannedTrace (ReusedTrace from ``reuse``), or TraceFormatError naming the file (and line or field) of an
    invalid input

    Raises
    ------
    TraceFormatError
        If a path does not exist or has an unknown kind, or a folder holds no trace files
        (these are not skippable: they name no trace).
    DatasetError
        As :func:`agentcausal.traces.whowhen.who_and_when_files`.
    """
    found: list[tuple[Path, str | None, Path | None]] = []
    for raw in paths:
        p = Path(raw)
        if not os.path.lexists(p):
            raise TraceFormatError("no such file or folder", path=str(p))
        found.extend(_files(p))
    loose = _loose_ids([f for f, subset, _ in found if subset == LOOSE])
    first: dict[str, str] = {}
    for f, subset, root in found:
        origin = str(f)
        hit = reuse(f, root) if reuse is not None and subset is None else None
        if hit is not None:
            for tid, at, summary in hit:
                if tid in first:
                    yield TraceFormatError(f"duplicate trace id {tid!r} (first read from {first[tid]})", path=origin)
                else:
                    first[tid] = origin
                    yield ReusedTrace(tid, origin, at, summary)
            continue
        if subset is None:
            scanned: Iterable[tuple[int | None, Trace | TraceFormatError]] = iter_jsonl(
                f, root=root, require_question=True
            )
        else:
            try:
                scanned = [(None, load_who_and_when_file(f, subset=subset, trace_id=loose.get(f), root=root))]
            except TraceFormatError as exc:
                scanned = [(None, exc)]
        for offset, t in scanned:
            if isinstance(t, TraceFormatError):
                yield t
            elif t.id in first:  # a later duplicate: refused with the other invalid inputs (or skipped)
                yield TraceFormatError(f"duplicate trace id {t.id!r} (first read from {first[t.id]})", path=origin)
            else:
                first[t.id] = origin
                yield ScannedTrace(t, origin, offset)


def scan_traces(paths: Sequence[str | Path]) -> TraceScan:
    """Read every trace of the given paths, collecting the invalid ones instead of stopping at the first.

    This is :func:`iter_traces` collected: the one loader behind :func:`load_traces`, the CLI's
    up-front check and the flow, so a corpus that passes the check loads the same way later.

    Parameters
    ----------
    paths : sequence of paths (folders, ``.json``, ``.jsonl``)

    Returns
    -------
    TraceScan(traces, invalid); the traces have unique ids (see :func:`iter_traces` for what is invalid).

    Raises
    ------
    TraceFormatError, DatasetError
        As :func:`iter_traces`.
    """
    traces: list[Trace] = []
    origins: list[str] = []
    errors: list[TraceFormatError] = []
    for x in iter_traces(paths):
        if isinstance(x, TraceFormatError):
            errors.append(x)
        elif isinstance(x, ScannedTrace):  # no ``reuse``: every trace is read
            traces.append(x.trace)
            origins.append(x.path)
    return TraceScan(traces, errors, origins)


def load_traces(paths: Sequence[str | Path], *, skip_invalid: bool = False) -> list[Trace]:
    """Load traces from folders and files of either format.

    Parameters
    ----------
    paths : sequence of paths (folders, ``.json``, ``.jsonl``)
    skip_invalid : bool, leave out invalid files (and JSONL lines) instead of
        refusing; :func:`scan_traces` says which

    Returns
    -------
    list of Trace in the given order; ids must be unique.

    Raises
    ------
    TraceFormatError
        If a path does not exist, has an unknown kind, is malformed (unless
        ``skip_invalid``), or two traces share an id.
    InvalidTracesError
        If several inputs are malformed (and not ``skip_invalid``): one message listing each file and field.

    Examples
    --------
    >>> from agentcausal.traces.io import load_traces
    >>> ts = load_traces(["data/examples"])  # doctest: +SKIP
    """
    scan = scan_traces(paths)
    if not skip_invalid:
        raise_all(scan.invalid)
    check_unique_ids(scan.traces)
    return scan.traces


def check_unique_ids(traces: Sequence[Trace]) -> None:
    """Refuse a corpus in which two traces share an id.

    Raises
    ------
    TraceFormatError
        Naming up to ten duplicated ids.
    """
    seen: dict[str, int] = {}
    for t in traces:
        seen[t.id] = seen.get(t.id, 0) + 1
    dups = [k for k, v in seen.items() if v > 1]
    if dups:
        raise TraceFormatError(f"duplicate trace ids: {', '.join(dups[:10])}")


def select_traces(
    traces: Sequence[Trace], *, ids: Sequence[str] | None = None, limit: int | None = None, max_steps: int | None = None
) -> list[Trace]:
    """Pick traces by id, length and count (in that order).

    Parameters
    ----------
    traces : sequence of Trace
    ids : ids to keep (in the order of ``traces``); None keeps all
    limit : keep at most this many (the first ones); None keeps all
    max_steps : drop traces with more steps; None keeps all

    Returns
    -------
    list of Trace

    Raises
    ------
    TraceFormatError
        If an id in ``ids`` is not among the traces.
    """
    out = list(traces)
    if ids is not None:
        known = {t.id for t in out}
        missing = [i for i in ids if i not in known]
        if missing:
            some = sorted(known)[:5]
            hint = (
                f"; ids here look like {', '.join(some)}{' ...' if len(known) > 5 else ''} ({len(known)} in all)"
                if known
                else "; no traces were read"
            )
            raise TraceFormatError(f"unknown trace ids: {', '.join(missing[:10])}{hint}")
        wanted = set(ids)
        out = [t for t in out if t.id in wanted]
    if max_steps is not None:
        out = [t for t in out if len(t) <= max_steps]
    if limit is not None:
        out = out[: max(0, limit)]
    return out
