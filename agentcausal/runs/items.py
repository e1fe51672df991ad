"""Plan items by (id, path, sha256): what a task loads instead of receiving a whole corpus.

The CLI (or :func:`agentcausal.attribution.plan.attribute_plan` for a Python caller) reads
and validates the corpus once and writes each trace into the plan as a
:class:`~agentcausal.runs.plan.PlanItem`: its id, the file it is read from, the
trace's content hash and the file's sha256. A task then loads only its own
item with :func:`load_trace_item`: the file is parsed once per process (a
cache keyed by ``(path, file sha256)``, so the traces of one JSONL file are
parsed once for all its items) and the trace's content hash is checked against
the plan. Nothing else of the corpus is revalidated (duplicate ids, the other
files): the plan already holds the checked selection.

A file that changed since the plan, or went away, is one
:class:`~agentcausal.exceptions.ItemChangedError` naming the item.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path

from agentcausal.exceptions import AgentCausalError, ItemChangedError
from agentcausal.traces.model import Trace

__all__ = ["load_trace_item", "load_trace_items", "check_file_item", "clear_cache"]

_lock = threading.Lock()
#: (path, file sha256, id, sha256) of items whose parsed trace was checked once (the parse is cached by file hash)
_verified: set[tuple[str, str | None, str, str]] = set()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=64)
def _parsed(path: str, file_sha256: str | None) -> dict[str, Trace]:
    """The traces of one file by id (parsed once per process and (path, file sha256))."""
    from agentcausal.traces.io import LOOSE, _scan_jsonl
    from agentcausal.traces.whowhen import SUBSETS, load_who_and_when_file

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ItemChangedError("(file)", path, f"cannot read: {exc.strerror or exc}") from exc
    if file_sha256 is not None and _sha256(data) != file_sha256:
        raise ItemChangedError("(file)", path, f"file sha256 {_sha256(data)[:12]}… is not the plan's "
                                               f"{file_sha256[:12]}…")
    if p.suffix == ".jsonl":
        return {t.id: t for t in _scan_jsonl(p).traces}
    subset = p.parent.name if p.parent.name in SUBSETS else LOOSE
    t = load_who_and_when_file(p, subset=subset)
    return {"": t}  # one trace per Who&When file; its id is the plan's (see load_trace_item)


def load_trace_item(item: object) -> Trace:
    """The trace of one plan item, read from its file and checked against the plan.

    Parameters
    ----------
    item : PlanItem (``id``, ``path``, ``sha256`` = :meth:`Trace.content_hash`, ``file_sha256``)

    Returns
    -------
    Trace with the item's id.

    Raises
    ------
    ItemChangedError
        If the file cannot be read, its bytes or the trace's content hash differ from the plan,
        or a JSONL file no longer holds the item's id.
    """
    iid, path, sha = item.id, item.path, item.sha256  # type: ignore[attr-defined]
    try:
        with _lock:  # one parse per file even when threads ask at once
            traces = _parsed(str(path), getattr(item, "file_sha256", None))
    except ItemChangedError as exc:
        raise ItemChangedError(iid, path, exc.detail) from exc
    except AgentCausalError as exc:
        raise ItemChangedError(iid, path, f"no longer a valid trace file ({exc})") from exc
    if "" in traces:  # a Who&When file: the id comes from the corpus it was read with (the plan holds it)
        t = traces[""].model_copy(update={"id": iid})
    elif iid in traces:
        t = traces[iid]
    else:
        raise ItemChangedError(iid, path, "the file no longer holds this trace id")
    seen = (str(path), getattr(item, "file_sha256", None), iid, sha)
    if seen[1] is not None and seen in _verified:  # this parse of these bytes was checked before
        return t
    if t.content_hash() != sha:
        raise ItemChangedError(iid, path, f"trace content hash {t.content_hash()[:12]}… is not the plan's {sha[:12]}…")
    _verified.add(seen)
    return t


def load_trace_items(items: Sequence[object]) -> list[Trace]:
    """:func:`load_trace_item` for each item, in order."""
    return [load_trace_item(i) for i in items]


@functools.lru_cache(maxsize=256)
def _file_sha256(path: str, mtime_ns: int, size: int) -> str:
    """:func:`agentcausal.runs.plan.sha256_file`, once per file version (path, modification time, size)."""
    from agentcausal.runs.plan import sha256_file

    return sha256_file(path)


def check_file_item(item: object) -> None:
    """Check that a dataset item's file still has the plan's sha256 (hashed once per process and file version).

    Parameters
    ----------
    item : PlanItem of a discover plan (``sha256`` = the sha256 of the bytes of ``path``)

    Raises
    ------
    ItemChangedError
        If the file is gone or its bytes differ from the plan.
    """
    iid, path, sha = item.id, str(item.path), item.sha256  # type: ignore[attr-defined]
    try:
        st = Path(path).stat()
    except OSError as exc:
        raise ItemChangedError(iid, path, f"cannot read: {exc.strerror or exc}") from exc
    got = _file_sha256(path, st.st_mtime_ns, st.st_size)
    if got != sha:
        raise ItemChangedError(iid, path, f"file sha256 {got[:12]}… is not the plan's {sha[:12]}…")


def clear_cache() -> None:
    """Forget the parsed files (tests; a long-lived worker after its corpus changed)."""
    _parsed.cache_clear()
    _file_sha256.cache_clear()
    _verified.clear()
