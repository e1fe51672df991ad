"""The results store: every finished record by its cache key, as checked data; the one store a rerun reads.

The run engine asks the store, before it submits anything, which of its jobs already have a record
under their cache key (the key holds the item's id and content hash, the method, its settings, the
prompt version and the model per stage, and the repeat where a method has one), and runs only the
missing ones; a chunk task stores each record as it finishes. A finished corpus therefore reruns
without a task run per item, and adding one method to a finished corpus runs only that method.

Storage: one SQLite file per kind, ``<cache_dir>/results/<kind>/records.sqlite3`` (WAL journal, every
write a transaction, safe for several processes and threads: one connection per thread), one row per
key: the record as JSON text (never pickled: nothing on the read path runs code), the time it was
stored, whether every LLM call of its run was a cache hit (``cache_hits_only``), and the sha256 of the
key, that flag and the JSON together; with a cache key set (:func:`agentcausal.integrity.cache_key`)
the HMAC-SHA256 of the same text follows it (``<sha256>:<hmac>``). A read checks the checksum, the MAC
when a key is set (a row without a valid one fails), and the record's schema; a row that fails (a
flipped bit, a crafted or truncated value, a forged row, a record of an older schema) is deleted,
counted (:attr:`ResultStore.dropped`), logged (the first :data:`WARNED_DROPS` a line each) and read
as absent, so the job is recomputed.

A store file that fails its integrity check (not a database, cut short, malformed pages), at open or
later, heals: it is moved aside to ``records.sqlite3.damaged-<UTC time>`` (with its ``-wal``/``-shm``),
the rows still readable in it that pass their check are copied into a new store, and one warning line
says how many were kept and where the damaged copy is (:attr:`ResultStore.heals`; ``run.json``
``store.healed`` through :func:`agentcausal.integrity.take_heals`); the run recomputes the rest. Only
a store that cannot be moved aside, or stays locked, is a :class:`~agentcausal.exceptions.ResultStoreError`.

What is stored follows the cache rules: only results a later run may reuse (``complete``,
``degraded``, ``content_failed``); a ``failed`` record (a transport, 401, rate-limit or timeout
failure) is refused. ``refresh`` recomputes everything; ``retry_failed`` recomputes the
``content_failed`` and ``degraded`` records (the new record replaces the old under the same key).
"""

from __future__ import annotations

import collections
import hashlib
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from pydantic import ValidationError

from agentcausal.exceptions import ResultStoreError
from agentcausal.integrity import (
    Check,
    Heal,
    cache_key,
    check_file,
    header_problem,
    inode_of,
    is_corruption,
    mac_matches,
    move_aside,
    record_heal,
    record_mac,
    salvage_rows,
)
from agentcausal.records import RunRecord

__all__ = [
    "RETRIED_STATUSES",
    "STORE_FILE",
    "WARNED_DROPS",
    "ResultStore",
    "Stored",
    "Heal",
    "row_problem",
    "check_store",
    "close_ended_connections",
]

log = logging.getLogger(__name__)

#: statuses of stored results that ``retry_failed`` recomputes
RETRIED_STATUSES = ("content_failed", "degraded")

#: the store file of one kind, under ``<cache_dir>/results/<kind>/``
STORE_FILE = "records.sqlite3"

#: keys per ``SELECT ... IN (...)`` of :meth:`ResultStore.get_many` (below SQLite's variable limit)
_BATCH = 500

#: dropped rows logged one warning line each; later ones are counted (and logged at debug level)
WARNED_DROPS = 3

_COLUMNS = "key, stored, cache_hits_only, sha256, body"

R = TypeVar("R", bound=RunRecord)

_UNSET: Any = object()


class Stored(NamedTuple, Generic[R]):
    """One record read back from the store.

    Attributes
    ----------
    record : the record, its ``reused`` mark False (a stored record is what was computed)
    stored_at : float, seconds since the epoch when it was stored
    cache_hits_only : bool, every LLM call of the run that computed it was a cache hit on an entry an
        earlier run wrote (that run paid nothing for it)
    """

    record: R
    stored_at: float
    cache_hits_only: bool


def checksum(key: str, cache_hits_only: bool, body: str) -> str:
    """sha256 hex of a row's key, flag and JSON body (what a read checks).

    >>> checksum("k", False, "{}") == checksum("k", False, "{}") != checksum("k2", False, "{}")
    True
    """
    return hashlib.sha256(_message(key, cache_hits_only, body).encode()).hexdigest()


def _message(key: str, cache_hits_only: bool, body: str) -> str:
    return f"{key}\n{int(cache_hits_only)}\n{body}"


def seal(key: str, cache_hits_only: bool, body: str, mac_key: bytes | None) -> str:
    """The ``sha256`` column of a row: its checksum, then ``:`` and its HMAC when ``mac_key`` is given."""
    sha = checksum(key, cache_hits_only, body)
    return sha if mac_key is None else f"{sha}:{record_mac(mac_key, _message(key, cache_hits_only, body))}"


def row_problem(key: str, cache_hits_only: bool, sealed: object, body: object, mac_key: bytes | None) -> str | None:
    """Why a row fails its check (``checksum mismatch``, ``no valid MAC``), or None when it passes.

    Without ``mac_key`` a row's MAC, if it has one, is not checked (its checksum is); with one, a row
    without a valid MAC fails (written without the key, under another key, or forged).
    """
    if not isinstance(sealed, str) or not isinstance(body, str):
        return "not a record row"
    sha, _, mac = sealed.partition(":")
    if sha != checksum(key, cache_hits_only, body):
        return "checksum mismatch"
    if mac_key is not None and not mac_matches(mac_key, _message(key, cache_hits_only, body), mac):
        return "no valid MAC (written without the cache key, or forged)"
    return None


class ResultStore(Generic[R]):
    """Finished records of one kind (``attribute`` or ``discover``) by cache key.

    Parameters
    ----------
    cache_dir : str or Path, the run settings' cache root (the store is ``<cache_dir>/results/<kind>/records.sqlite3``)
    kind : str, the record kind (one file each)
    model : the record's pydantic model (``Attribution``, ``DiscoveryOutcome``)
    key : bytes or None, the key of keyed integrity; default :func:`agentcausal.integrity.cache_key`
        (``AGENTCAUSAL_CACHE_KEY`` or ``AGENTCAUSAL_CACHE_KEY_FILE``)

    Raises
    ------
    ResultStoreError
        If the file is damaged and cannot be moved aside, or stays locked for over 60 s.
    ConfigError
        If the key file is unsafe or unreadable.

    Attributes
    ----------
    path : Path, the store file
    dropped : int, rows that failed their check since this handle was opened
    drop_reasons : collections.Counter of why
    heals : list of :class:`Heal` made by this handle

    Examples
    --------
    >>> import tempfile
    >>> from agentcausal.traces.model import Attribution
    >>> store = ResultStore(tempfile.mkdtemp(), "attribute", Attribution)
    >>> store.put("k1", Attribution(trace_id="t", method="m", step=2, agent="A"))
    True
    >>> store.get("k1").record.step, store.get("nope")
    (2, None)
    """

    def __init__(self, cache_dir: str | Path, kind: str, model: type[R], *, key: bytes | None = _UNSET) -> None:
        self.path = Path(cache_dir, "results", kind, STORE_FILE).resolve()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.model = model
        self.mac_key = cache_key() if key is _UNSET else key
        self.dropped = 0  #: rows that failed their checksum, MAC or schema since this handle was opened
        self.drop_reasons: collections.Counter[str] = collections.Counter()
        self.heals: list[Heal] = []
        self._count_lock = threading.Lock()
        self._heal_lock = threading.Lock()
        self._local = threading.local()
        self._open: list[tuple[threading.Thread, sqlite3.Connection]] = []  # every thread's connection, for close()
        _HANDLES.add(self)
        self._inode = inode_of(self.path)  # the file this handle uses (a heal elsewhere replaces it)
        problem = header_problem(self.path)
        if problem is not None:
            self._heal(problem)
        else:
            self._do(self._create)

    def _create(self, db: sqlite3.Connection) -> None:
        db.execute(
            "CREATE TABLE IF NOT EXISTS records (key TEXT PRIMARY KEY, stored REAL NOT NULL, "
            "cache_hits_only INTEGER NOT NULL, sha256 TEXT NOT NULL, body TEXT NOT NULL) WITHOUT ROWID"
        )
        db.execute("SELECT COUNT(*) FROM (SELECT 1 FROM records LIMIT 1)").fetchone()  # the table's root page reads
        if self._inode is None:
            self._inode = os.stat(self.path).st_ino

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            # autocommit (one write, one transaction); another thread may close it: close(), or close_ended() once this
            # thread has ended
            db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA cache_size=-128")  # 128 KiB per connection: a pool has hundreds of threads
            db.execute("PRAGMA mmap_size=0")
            self._local.db = db
            with self._count_lock:
                self._open.append((threading.current_thread(), db))
        return db

    def close_ended(self) -> int:
        """Close the connections of threads that have ended (an item pool shut down at the end of a run); how many.

        A thread's connection lives in this handle's list until then (a connection cannot be closed from another
        thread while its own thread may still use it), with its page cache and statements: about 0.2 MB each.
        """
        with self._count_lock:
            ended = [db for t, db in self._open if not t.is_alive()]
            self._open = [(t, db) for t, db in self._open if t.is_alive()]
        for db in ended:
            db.close()
        return len(ended)

    def _follow(self) -> None:
        """Use the file now at the path when another process healed (replaced) the one this handle opened.

        Without it this handle's connections would keep writing into the damaged copy. One ``stat`` a call.
        """
        now = inode_of(self.path)
        if now is not None and self._inode is not None and now != self._inode:
            with self._heal_lock:
                if inode_of(self.path) != self._inode:
                    self._local = threading.local()
                    self._inode = None
                    self._create(self._connection())

    def _do(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """``fn`` on this thread's connection; damage heals the store and runs ``fn`` once more on the new one.

        SQLite's "locked" (over 60 s) and damage that cannot be healed are one :class:`ResultStoreError`.
        """
        for attempt in range(2):
            try:
                return fn(self._connection())
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                    raise ResultStoreError(str(self.path), f"locked by another process for over 60 s ({exc})") from exc
                if attempt or not is_corruption(exc):
                    raise ResultStoreError(str(self.path), str(exc)) from exc
                self._heal(str(exc))
        raise AssertionError("unreachable")  # pragma: no cover

    def _heal(self, reason: str) -> None:
        """Move the damaged file aside, start a new store holding its readable rows that pass their check."""
        with self._heal_lock:
            # another process (or handle) healed it already: the file at the path is a new one, use it
            healed_elsewhere = self._inode is not None and inode_of(self.path) != self._inode
            self._local = threading.local()  # every thread opens the file at the path afresh
            damaged = None
            if not healed_elsewhere:
                try:
                    damaged = move_aside(self.path, self._inode)
                except OSError as exc:
                    raise ResultStoreError(
                        str(self.path), f"{reason}; it could not be moved aside ({os.strerror(exc.errno or 0)})"
                    ) from exc
            self._inode = None
            if damaged is None:
                self._create(self._connection())
                return
            db = self._connection()
            self._create(db)
            kept = self._salvage(damaged, db)
            heal = Heal(str(self.path), str(damaged), reason, kept)
            self.heals.append(heal)
            record_heal(heal)
            log.warning("%s", heal.line("results store", "the records it lost are recomputed"))

    def _salvage(self, damaged: Path, db: sqlite3.Connection) -> int:
        kept = 0
        rows = []
        for key, stored, flag, sealed, body in salvage_rows(
            damaged, "records", "stored, cache_hits_only, sha256, body", "key"
        ):
            if isinstance(key, str) and row_problem(key, bool(flag), sealed, body, self.mac_key) is None:
                rows.append((key, stored, int(bool(flag)), sealed, body))
        for i in range(0, len(rows), _BATCH):
            db.execute("BEGIN")
            db.executemany("INSERT OR IGNORE INTO records VALUES (?, ?, ?, ?, ?)", rows[i : i + _BATCH])
            db.execute("COMMIT")
            kept += len(rows[i : i + _BATCH])
        return kept

    def heal(self, reason: str) -> Heal | None:
        """Move the store file aside now (``agentcausal cache repair``), keeping its readable rows; the heal made."""
        before = len(self.heals)
        self._heal(reason)
        return self.heals[-1] if len(self.heals) > before else None

    def verify(self) -> int:
        """Read every row, dropping those that fail their check (as a read would); how many were dropped."""
        before = self.dropped
        keys = [r[0] for r in self._do(lambda db: db.execute("SELECT key FROM records").fetchall())]
        for i in range(0, len(keys), _BATCH):
            self.get_many(keys[i : i + _BATCH])
        return self.dropped - before

    def put(self, key: str, record: R, *, cache_hits_only: bool = False) -> bool:
        """Store ``record`` under ``key`` unless its status is ``failed`` or ``not_run``; True when stored.

        The ``reused`` mark is not stored (a stored record is what was computed); ``cache_hits_only``
        says whether its run paid nothing (every LLM call a cache hit on an earlier run's entry).
        """
        if record.status in ("failed", "not_run"):
            return False
        body = record.model_dump_json(exclude={"reused"})
        row = (key, time.time(), int(cache_hits_only), seal(key, cache_hits_only, body, self.mac_key), body)
        self._follow()
        self._do(lambda db: db.execute("INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?)", row))
        return True

    def _decode(self, key: str, row: tuple[float, int, str, str]) -> Stored[R] | None:
        stored, flag, sealed, body = row
        problem = row_problem(key, bool(flag), sealed, body, self.mac_key)
        if problem is None:
            try:
                return Stored(self.model.model_validate_json(body), float(stored), bool(flag))
            except (ValueError, ValidationError, TypeError):
                problem = "not a record of this version"
        self._drop(key, problem)
        return None

    def _drop(self, key: str, reason: str) -> None:
        with self._count_lock:
            self.dropped += 1
            self.drop_reasons[reason] += 1
            n = self.dropped
        self._do(lambda db: db.execute("DELETE FROM records WHERE key = ?", (key,)))
        if n <= WARNED_DROPS:
            more = (
                "; further ones are counted without a line each (run.json store.dropped)" if n == WARNED_DROPS else ""
            )
            log.warning(
                "results store %s: the record %s failed its check (%s); dropped, recomputing it%s",
                self.path,
                key[:16],
                reason,
                more,
            )
        else:
            log.debug("results store %s: record %s dropped (%s)", self.path, key[:16], reason)

    def get(self, key: str, *, not_before: float | None = None) -> Stored[R] | None:
        """The record stored under ``key`` (stored at or after ``not_before`` when given), or None.

        A row that fails its checksum, its MAC (with a key) or no longer loads as the model is dropped,
        counted and read as None.
        """
        row = self._do(
            lambda db: db.execute(
                "SELECT stored, cache_hits_only, sha256, body FROM records WHERE key = ?", (key,)
            ).fetchone()
        )
        out = None if row is None else self._decode(key, row)
        if out is None or (not_before is not None and out.stored_at < not_before):
            return None
        return out

    def get_many(self, keys: Sequence[str]) -> list[Stored[R] | None]:
        """The records stored under ``keys`` (None where absent or dropped), in order, a few hundred per query."""
        found: dict[str, tuple[float, int, str, str]] = {}
        self._follow()
        for i in range(0, len(keys), _BATCH):
            part = list(dict.fromkeys(keys[i : i + _BATCH]))
            query = f"SELECT {_COLUMNS} FROM records WHERE key IN ({','.join('?' * len(part))})"
            rows = self._do(lambda db: db.execute(query, part).fetchall())  # noqa: B023 - called at once
            found.update((r[0], r[1:]) for r in rows)
        return [None if k not in found else self._decode(k, found[k]) for k in keys]

    def __len__(self) -> int:
        return int(self._do(lambda db: db.execute("SELECT COUNT(*) FROM records").fetchone()[0]))

    def close(self) -> None:
        """Close every thread's connection (call when no thread uses the store any more)."""
        with self._count_lock:
            open_, self._open = self._open, []
        for _, db in open_:
            db.close()
        self._local = threading.local()

    def __enter__(self) -> "ResultStore[R]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: every results-store handle of the process, for :func:`close_ended_connections`
_HANDLES: weakref.WeakSet[ResultStore[Any]] = weakref.WeakSet()


def close_ended_connections() -> int:
    """Close, in every results-store handle of the process, the connections of threads that have ended; how many."""
    return sum(store.close_ended() for store in list(_HANDLES))


def check_store(path: str | Path, *, key: bytes | None = _UNSET) -> Check:
    """Check a results store file without changing it: SQLite's integrity check, then every row's checksum
    (and MAC, with a key); the schema of each record is checked when a run reads it."""
    mac_key = cache_key() if key is _UNSET else key

    def problem(row: tuple[Any, ...]) -> str | None:
        k, _stored, flag, sealed, body = row
        return row_problem(k, bool(flag), sealed, body, mac_key) if isinstance(k, str) else "no key"

    return check_file("results store", Path(path), f"SELECT {_COLUMNS} FROM records", problem)
