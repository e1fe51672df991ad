"""What the attribution plan read of each unchanged JSONL trace file, kept on disk, so a rerun (or the
next night over a corpus that only grew) plans those files without parsing them again.

Of one trace a plan needs its id, the byte offset of its line, its :class:`~agentcausal.traces.model.TraceFacts`
(the content hash and the number of steps among them), whether it has a ground truth, and each method's
estimated calls (:class:`agentcausal.attribution.estimate.TraceCalls`). :class:`ScanCache` keeps these per file
under

* the file's sha256 (any changed byte reads the file again; a file written to while it was read is not
  stored),
* a context: the methods' resolved settings, the routed profiles (their context budgets and prices shape the
  estimate), the per-line input size limit, and :data:`SCAN_VERSION`.

Only a file planned whole is stored: every line read as a valid trace with an id of its own, and every
trace selected (a file with an invalid line, a duplicate id, or a trace left out by ``ids``, ``max_steps`` or
``limit`` is read each time). A file is refused by name
(:func:`agentcausal.input_files.input_refusal`) before it is hashed: a FIFO or a symlink out of its folder is
read, and refused, as before.

Storage: a :class:`~agentcausal.llm.reply_cache.ReplyCache` folder (``<cache_dir>/plan-scan``: data-only JSON
records, each checked on read, a damaged file healed), a file's traces in pages of :data:`PAGE` behind a head
record written last, so a file half stored reads as a miss. ``refresh`` reads nothing and stores afresh.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from agentcausal.exceptions import CorruptStoreError
from agentcausal.input_files import input_refusal, max_input_bytes
from agentcausal.llm.reply_cache import ReplyCache
from agentcausal.runs.estimate import CallPattern
from agentcausal.runs.plan import sha256_file
from agentcausal.traces.model import TraceFacts

__all__ = ["PAGE", "SCAN_VERSION", "ScanCache", "TraceSummary"]

log = logging.getLogger(__name__)

#: bump when what is kept of a trace, or how an estimate is counted, changes (older records are then never read)
SCAN_VERSION = 1
#: traces per stored page (what the plan holds of a file being recorded)
PAGE = 2000


class TraceSummary(NamedTuple):
    """What the plan reads of one trace.

    Attributes
    ----------
    facts : TraceFacts
    has_truth : bool, a non-blank ground truth
    calls : method -> (its estimated calls on this trace, how they were counted)
    """

    facts: TraceFacts
    has_truth: bool
    calls: dict[str, tuple[list[CallPattern], str]]

    def to_json(self) -> list[Any]:
        calls = {m: [[list(c) for c in cs], note] for m, (cs, note) in self.calls.items()}
        return [self.facts.model_dump(mode="json"), self.has_truth, calls]

    @classmethod
    def from_json(cls, value: list[Any]) -> TraceSummary:
        facts, has_truth, calls = value
        return cls(
            TraceFacts.model_validate(facts),
            bool(has_truth),
            {m: ([CallPattern(*c) for c in cs], str(note)) for m, (cs, note) in calls.items()},
        )


def _stat_of(f: Path) -> tuple[int, int, int] | None:
    try:
        st = f.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class ScanCache:
    """The plan-scan records of one cache folder under one context.

    Parameters
    ----------
    directory : path, the folder (``<cache_dir>/plan-scan``; created if absent)
    context : JSON-able mapping of everything besides the file's bytes that shapes a summary
        (resolved method settings, the routed profiles)
    refresh : bool, read nothing (every file is parsed) and store what is read

    Attributes
    ----------
    file_sha256 : str path -> sha256 of each file hashed here (the plan's ``file_sha256``, not hashed twice)
    file_stat : str path -> the file's ``os.stat`` taken before it was hashed (the version that hash is of)
    reused_files, stored_files : int, files planned from a record / stored this plan

    Use :meth:`reuse` as :func:`agentcausal.traces.io.iter_traces`'s ``reuse``; :meth:`record` each trace
    read and planned, :meth:`spoil` a file with an invalid or skipped trace, :meth:`flush` at the end.
    A damaged store that cannot be moved aside is logged once and the plan reads every file.
    """

    def __init__(self, directory: str | Path, *, context: Mapping[str, Any], refresh: bool = False) -> None:
        self.store: ReplyCache | None = ReplyCache(directory)
        blob = json.dumps(
            {"v": SCAN_VERSION, "line_limit": max_input_bytes(), "context": context}, sort_keys=True, default=repr
        )
        self.context = hashlib.sha256(blob.encode()).hexdigest()[:32]
        self.refresh = refresh
        self.file_sha256: dict[str, str] = {}
        self.file_stat: dict[str, os.stat_result] = {}
        self.reused_files = 0
        self.stored_files = 0
        self._path: str | None = None  # the file being recorded
        self._entries: list[list[Any]] = []  # the page being filled
        self._pages = 0  # pages of the current file stored
        self._traces = 0  # traces of the current file recorded
        self._spoiled: set[str] = set()
        self._stat: dict[str, tuple[int, int, int] | None] = {}  # path -> (inode, size, mtime) when hashed

    def _key(self, sha: str, part: str) -> str:
        return f"scan:{SCAN_VERSION}:{sha}:{self.context}:{part}"

    def _get(self, key: str) -> dict[str, Any] | None:
        if self.store is None:
            return None
        try:
            return self.store.get(key)
        except CorruptStoreError as exc:
            self._give_up(exc)
            return None

    def _give_up(self, exc: Exception) -> None:
        log.warning("plan-scan cache off for this plan (%s): every trace file is read", exc)
        self.store = None

    def reuse(self, f: Path, root: Path | None) -> list[tuple[str, int, TraceSummary]] | None:
        """The (id, offset, summary) of every trace of JSONL file ``f`` from its record, or None (read it)."""
        if self.store is None or input_refusal(f, root=root, limit=2**62) is not None:
            return None  # refused by name where it is read
        try:
            before: os.stat_result | None = os.stat(f)
        except OSError:
            before = None
        try:
            sha = sha256_file(f)
        except OSError:
            return None
        self.file_sha256[str(f)] = sha
        if before is not None:
            self.file_stat[str(f)] = before
        self._stat[str(f)] = _stat_of(f)
        if self.refresh:
            return None
        head = self._get(self._key(sha, "head"))
        if head is None:
            return None
        out: list[tuple[str, int, TraceSummary]] = []
        try:
            for i in range(int(head["pages"])):
                page = self._get(self._key(sha, str(i)))
                if page is None:
                    return None
                out.extend((str(tid), int(off), TraceSummary.from_json(s)) for tid, off, s in page["entries"])
        except (KeyError, TypeError, ValueError) as exc:  # a record of another shape: read the file
            log.warning("plan-scan record of %s unreadable (%s): reading the file", f, exc)
            return None
        if len(out) != head.get("traces"):
            return None
        self.reused_files += 1
        return out

    def record(self, path: str, trace_id: str, offset: int | None, summary: TraceSummary) -> None:
        """One trace of ``path`` read and planned (a new path first :meth:`flush` es the previous one); each
        full page is stored as it fills, so a file of any size is recorded in the memory of one page."""
        if path != self._path:
            self.flush()
            self._path, self._pages, self._traces = path, 0, 0
        if offset is None or path in self._spoiled or self.store is None or path not in self.file_sha256:
            self.spoil(path)
            return
        self._entries.append([trace_id, offset, summary.to_json()])
        self._traces += 1
        if len(self._entries) >= PAGE:
            self._store_page(path)

    def _store_page(self, path: str) -> None:
        page, self._entries = self._entries, []
        try:
            self.store.set(self._key(self.file_sha256[path], str(self._pages)), {"entries": page})  # type: ignore[union-attr]
        except (CorruptStoreError, OSError) as exc:
            self._give_up(exc)
            return
        self._pages += 1

    def spoil(self, path: str) -> None:
        """``path`` is not planned whole (an invalid or skipped trace): no head record is stored for it (pages
        already stored are never read without one)."""
        self._spoiled.add(path)
        if path == self._path:
            self._entries = []

    def flush(self) -> None:
        """Store the last page and the head record of the file being recorded, when it was planned whole."""
        path, self._path = self._path, None
        if self.store is None or path is None or path in self._spoiled or not self._traces:
            self._entries = []
            return
        if self._entries:
            self._store_page(path)
        if self.store is None or _stat_of(Path(path)) != self._stat.get(path):  # written to since it was hashed
            return
        head = {"pages": self._pages, "traces": self._traces}
        try:
            self.store.set(self._key(self.file_sha256[path], "head"), head)
        except (CorruptStoreError, OSError) as exc:
            self._give_up(exc)
            return
        self.stored_files += 1

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
