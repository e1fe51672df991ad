"""Plan items by (id, path, sha256): what a task loads instead of receiving a whole corpus.

The CLI (or a half's plan builder for a Python caller) reads and validates the corpus once, as a
stream, and writes each trace into the plan as a :class:`~agentcausal.runs.plan.PlanItem`: its id,
the file it is read from (and, in a JSONL file, the byte offset of its line), the trace's content
hash and the file's sha256. A task then loads only its own item with :func:`load_trace_item`: one
line of a JSONL file (or one Who&When file) is read and parsed, and the file's sha256 is checked (hashed
once per process and file version). The file holding the plan's bytes, what the plan pass checked of
them (nesting, integer digits) and the trace's content hash are not computed again; an item without a
file sha256 has its trace's content hash checked against the plan instead. Nothing else of the corpus
is read, and nothing of it is kept: the caller drops the trace when its item is done.

A file that changed since the plan, or went away, is one
:class:`~agentcausal.exceptions.ItemChangedError` naming the item.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from agentcausal.exceptions import AgentCausalError, ItemChangedError
from agentcausal.runs.plan import PlanItem, sha256_file
from agentcausal.traces.io import LOOSE
from agentcausal.traces.jsonl import read_jsonl_line
from agentcausal.traces.model import Trace
from agentcausal.traces.whowhen import SUBSETS, load_who_and_when_file

__all__ = ["load_trace_item", "check_file_item", "clear_cache"]


_hash_lock = threading.Lock()


@functools.lru_cache(maxsize=256)
def _hashed(path: str, mtime_ns: int, size: int) -> str:
    return sha256_file(path)


def _file_sha256(path: str, mtime_ns: int, size: int) -> str:
    """:func:`agentcausal.runs.plan.sha256_file`, once per file version (path, modification time, size) and
    process: the first thread hashes, the others wait for it (a pool's threads all start on one file)."""
    with _hash_lock:
        return _hashed(path, mtime_ns, size)


def _check_file(iid: str, path: str, sha: str) -> None:
    try:
        st = Path(path).stat()
    except OSError as exc:
        raise ItemChangedError(iid, path, f"cannot read: {exc.strerror or exc}") from exc
    got = _file_sha256(path, st.st_mtime_ns, st.st_size)
    if got != sha:
        raise ItemChangedError(iid, path, f"file sha256 {got[:12]}… is not the plan's {sha[:12]}…")


def load_trace_item(item: PlanItem) -> Trace:
    """The trace of one plan item, read from its file and checked against the plan.

    Parameters
    ----------
    item : PlanItem (``id``, ``path``, ``offset`` for a JSONL line, ``sha256`` = :meth:`Trace.content_hash`,
        ``file_sha256``)

    Returns
    -------
    Trace with the item's id.

    Raises
    ------
    ItemChangedError
        If the file cannot be read, its bytes differ from the plan (or, for an item without a file sha256, the
        trace's content hash does), or the line at the item's offset no longer holds the item's trace.
    """
    iid, path = item.id, str(item.path)
    checked = item.file_sha256 is not None  # the file holds the bytes the plan pass read, validated and hashed
    if item.file_sha256 is not None:
        _check_file(iid, path, item.file_sha256)
    try:
        if item.offset is not None:
            t = read_jsonl_line(path, item.offset, checked=checked)
            if t.id != iid:
                raise ItemChangedError(iid, path, f"the line at byte {item.offset} holds trace {t.id!r}")
        else:  # a Who&When file: the id comes from the corpus it was read with (the plan holds it)
            p = Path(path)
            t = load_who_and_when_file(p, subset=p.parent.name if p.parent.name in SUBSETS else LOOSE, trace_id=iid)
    except ItemChangedError:
        raise
    except AgentCausalError as exc:
        raise ItemChangedError(iid, path, f"no longer a valid trace file ({exc})") from exc
    if not checked and t.content_hash() != item.sha256:  # bytes unchecked: the trace's own hash is checked
        raise ItemChangedError(
            iid, path, f"trace content hash {t.content_hash()[:12]}… is not the plan's {item.sha256[:12]}…"
        )
    return t


def check_file_item(item: PlanItem) -> None:
    """Check that a dataset item's file still has the plan's sha256 (hashed once per process and file version).

    Parameters
    ----------
    item : PlanItem of a discover plan (``sha256`` = the sha256 of the bytes of ``path``)

    Raises
    ------
    ItemChangedError
        If the file is gone or its bytes differ from the plan.
    """
    _check_file(item.id, str(item.path), item.sha256)


def clear_cache() -> None:
    """Forget the file hashes (tests; a long-lived worker after its corpus changed)."""
    _hashed.cache_clear()
