"""Read and write traces: our own JSONL, Who&When files, or folders of either.

Our format is JSON Lines, one :class:`~agentcausal.traces.model.Trace` per
line (``Trace.model_dump_json()``), so traces from other systems can be
converted in by writing that shape. :func:`load_traces` accepts any mix of

* a Who&When folder (holding ``Algorithm-Generated/`` / ``Hand-Crafted/``, or a subset folder),
* a folder of Who&When ``*.json`` files and/or our ``*.jsonl`` files,
* single ``*.json`` (Who&When) or ``*.jsonl`` (ours) files.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import ValidationError

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.model import Trace
from agentcausal.traces.whowhen import SUBSETS, load_who_and_when, load_who_and_when_file

__all__ = ["read_jsonl", "write_jsonl", "load_traces", "select_traces"]


def read_jsonl(path: str | Path) -> list[Trace]:
    """Read our Trace JSONL.

    Parameters
    ----------
    path : file with one Trace JSON object per line (blank lines ignored)

    Returns
    -------
    list of Trace

    Raises
    ------
    TraceFormatError
        If a line is not JSON or not a valid Trace (the message names the line).
    """
    p = Path(path)
    out = []
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TraceFormatError(f"cannot read: {exc}", path=str(p)) from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Trace.model_validate_json(line))
        except ValidationError as exc:
            raise TraceFormatError(f"line {n}: not a Trace: {str(exc)[:400]}", path=str(p)) from exc
    return out


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


def _load_one(path: Path) -> list[Trace]:
    if path.is_dir():
        if path.name in SUBSETS or any((path / s).is_dir() for s in SUBSETS):
            return load_who_and_when(path)
        files = sorted(path.glob("*.json")) + sorted(path.glob("*.jsonl"))
        if not files:
            raise TraceFormatError("folder holds no Who&When subsets, *.json or *.jsonl files", path=str(path))
        out: list[Trace] = []
        for f in files:
            out.extend(_load_one(f))
        return out
    if path.suffix == ".jsonl":
        return read_jsonl(path)
    if path.suffix == ".json":
        subset = path.parent.name if path.parent.name in SUBSETS else "examples"
        return [load_who_and_when_file(path, subset=subset)]
    raise TraceFormatError("expected a folder, a Who&When .json file or a Trace .jsonl file", path=str(path))


def load_traces(paths: Sequence[str | Path]) -> list[Trace]:
    """Load traces from folders and files of either format.

    Parameters
    ----------
    paths : sequence of paths (folders, ``.json``, ``.jsonl``)

    Returns
    -------
    list of Trace in the given order; ids must be unique.

    Raises
    ------
    TraceFormatError
        If a path does not exist, has an unknown kind, is malformed, or two traces share an id.

    Examples
    --------
    >>> from agentcausal.traces.io import load_traces
    >>> ts = load_traces(["data/examples"])  # doctest: +SKIP
    """
    out: list[Trace] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise TraceFormatError("no such file or folder", path=str(p))
        out.extend(_load_one(p))
    seen: dict[str, int] = {}
    for t in out:
        seen[t.id] = seen.get(t.id, 0) + 1
    dups = [k for k, v in seen.items() if v > 1]
    if dups:
        raise TraceFormatError(f"duplicate trace ids: {', '.join(dups[:10])}")
    return out


def select_traces(traces: Sequence[Trace], *, ids: Sequence[str] | None = None, limit: int | None = None,
                  max_steps: int | None = None) -> list[Trace]:
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
            raise TraceFormatError(f"unknown trace ids: {', '.join(missing[:10])}")
        wanted = set(ids)
        out = [t for t in out if t.id in wanted]
    if max_steps is not None:
        out = [t for t in out if len(t) <= max_steps]
    if limit is not None:
        out = out[: max(0, limit)]
    return out
