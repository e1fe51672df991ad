"""Plan items by (id, path, sha256): what a task loads instead of receiving a whole corpus.

The CLI (or a half's plan builder for a Python caller) reads and validates the corpus once, as a
stream, and writes each trace into the plan as a :class:`~agentcausal.runs.plan.PlanItem`: its id,
the file it is read from (and, in a JSONL file, the byte offset of its line), the trace's content
hash and the file's sha256. A task then loads only its own item with :func:`load_trace_item`: one
line of a JSONL file (or one Who&When file) is read and parsed, and the file's sha256 is checked (hashed
once per process and file version; not at all where this process's plan pass hashed that version,
:func:`remember_file_sha256`). The file holding the plan's bytes, what the plan pass checked of
them (nesting, integer digits) and the trace's content hash are not computed again; an item without a
file sha256 has its trace's content hash checked against the plan instead. Nothing else of the corpus
is read, and nothing of it is kept: the caller drops the trace when its item is done.

A file that changed since the plan, or went away, is one
:class:`~agentcausal.exceptions.ItemChangedError` naming the item.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from agentcausal.exceptions import AgentCausalError, ItemChangedError
from agentcausal.runs.plan import PlanItem, sha256_file
from agentcausal.traces.io import LOOSE
from agentcausal.traces.jsonl import read_jsonl_line
from agentcausal.traces.model import Trace
from agentcausal.traces.whowhen import SUBSETS, load_who_and_when_file

__all__ = ["load_trace_item", "check_file", "check_file_item", "remember_file_sha256", "clear_cache"]


_hash_lock = threading.Lock()
#: (path, file version) -> sha256 of the bytes, for this process (:func:`_file_sha256`, :func:`remember_file_sha256`)
_hashes: dict[tuple[str, tuple[int, int, int, int]], str] = {}
#: file versions remembered at most (the oldest half is dropped past it)
_KEEP = 256


def _version(st: os.stat_result) -> tuple[int, int, int, int]:
    """What identifies one version of a file's bytes: inode, size, modification and change times (ns)."""
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _store(path: str, version: tuple[int, int, int, int], sha: str) -> None:
    if len(_hashes) >= _KEEP:
        for k in list(_hashes)[: _KEEP // 2]:
            del _hashes[k]
    _hashes[(path, version)] = sha


def _file_sha256(path: str, st: os.stat_result) -> str:
    """:func:`agentcausal.runs.plan.sha256_file`, once per file version (:func:`_version`) and process: the first
    thread hashes, the others wait for it (a pool's threads all start on one file)."""
    key = (path, _version(st))
    with _hash_lock:
        got = _hashes.get(key)
        if got is None:
            got = sha256_file(path)
            _store(path, key[1], got)
        return got


def remember_file_sha256(path: str, sha256: str, before: os.stat_result) -> None:
    """Keep the sha256 this process took of ``path`` (the plan pass) for its items: they are not hashed again
    while the file stays the version it was (``before``: its ``os.stat`` taken before it was hashed; a file
    that changed since is not remembered).

    Parameters
    ----------
    path : str, the file as a plan item names it (absolute and resolved)
    sha256 : str, the sha256 hex of its bytes
    before : os.stat_result of the file taken before those bytes were read
    """
    try:
        now = os.stat(path)
    except OSError:
        return
    if _version(now) == _version(before):
        with _hash_lock:
            _store(path, _version(now), sha256)


def check_file(iid: str, path: str, sha: str, p: Path | None = None) -> None:
    """Check that item ``iid``'s file ``path`` still has the plan's sha256 ``sha`` (hashed once per process and file
    version; ``p``: ``path`` as a Path, when the caller has one).

    Raises
    ------
    ItemChangedError
        If the file is gone or its bytes differ from the plan.
    """
    try:
        st = (p or Path(path)).stat()
    except OSError as exc:
        raise ItemChangedError(iid, path, f"cannot read: {exc.strerror or exc}") from exc
    got = _file_sha256(path, st)
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
    p = Path(path)  # once: each use below takes it as it is
    checked = item.file_sha256 is not None  # the file holds the bytes the plan pass read, validated and hashed
    if item.file_sha256 is not None:
        check_file(iid, path, item.file_sha256, p)
    try:
        if item.offset is not None:
            t = read_jsonl_line(p, item.offset, checked=checked)
            if t.id != iid:
                raise ItemChangedError(iid, path, f"the line at byte {item.offset} holds trace {t.id!r}")
        else:  # a Who&When file: the id comes from the corpus it was read with (the plan holds it)
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
    check_file(item.id, str(item.path), item.sha256)


def clear_cache() -> None:
    """Forget the file hashes (tests; a long-lived worker after its corpus changed)."""
    with _hash_lock:
        _hashes.clear()
