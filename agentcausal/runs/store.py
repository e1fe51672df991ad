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
key, that flag and the JSON together. A read checks the checksum and the record's schema; a row that
fails either (a flipped bit, a crafted or truncated value, a record of an older schema) is deleted,
counted (:attr:`ResultStore.dropped`) and read as absent, so the job is recomputed and the run says
how many it dropped. A store file that SQLite cannot read at all is one
:class:`~agentcausal.exceptions.ResultStoreError` naming the file and what to do.

What is stored follows the cache rules: only results a later run may reuse (``complete``,
``degraded``, ``content_failed``); a ``failed`` record (a transport, 401, rate-limit or timeout
failure) is refused. ``refresh`` recomputes everything; ``retry_failed`` recomputes the
``content_failed`` and ``degraded`` records (the new record replaces the old under the same key).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from pydantic import ValidationError

from agentcausal.exceptions import ResultStoreError
from agentcausal.records import RunRecord

__all__ = ["RETRIED_STATUSES", "STORE_FILE", "ResultStore", "Stored"]

#: statuses of stored results that ``retry_failed`` recomputes
RETRIED_STATUSES = ("content_failed", "degraded")

#: the store file of one kind, under ``<cache_dir>/results/<kind>/``
STORE_FILE = "records.sqlite3"

#: keys per ``SELECT ... IN (...)`` of :meth:`ResultStore.get_many` (below SQLite's variable limit)
_BATCH = 500

R = TypeVar("R", bound=RunRecord)


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
    return hashlib.sha256(f"{key}\n{int(cache_hits_only)}\n{body}".encode()).hexdigest()


class ResultStore(Generic[R]):
    """Finished records of one kind (``attribute`` or ``discover``) by cache key.

    Parameters
    ----------
    cache_dir : str or Path, the run settings' cache root (the store is ``<cache_dir>/results/<kind>/records.sqlite3``)
    kind : str, the record kind (one file each)
    model : the record's pydantic model (``Attribution``, ``DiscoveryOutcome``)

    Raises
    ------
    ResultStoreError
        If the file exists but SQLite cannot read it (not a database, torn, malformed).

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

    def __init__(self, cache_dir: str | Path, kind: str, model: type[R]) -> None:
        self.path = Path(cache_dir, "results", kind, STORE_FILE).resolve()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.model = model
        self.dropped = 0  #: rows that failed their checksum or schema since this handle was opened
        self._count_lock = threading.Lock()
        self._local = threading.local()
        self._open: list[sqlite3.Connection] = []  # every thread's connection, for close()
        with self._sql() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS records (key TEXT PRIMARY KEY, stored REAL NOT NULL, "
                "cache_hits_only INTEGER NOT NULL, sha256 TEXT NOT NULL, body TEXT NOT NULL) WITHOUT ROWID"
            )

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            # autocommit (one write, one transaction); other threads may close it (close() at the end of a run)
            db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA cache_size=-128")  # 128 KiB per connection: a pool has hundreds of threads
            db.execute("PRAGMA mmap_size=0")
            self._local.db = db
            with self._count_lock:
                self._open.append(db)
        return db

    @contextmanager
    def _sql(self) -> Iterator[sqlite3.Connection]:
        """A thread's connection; SQLite's "not a database" / "malformed" as one :class:`ResultStoreError`."""
        try:
            yield self._connection()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise ResultStoreError(str(self.path), f"locked by another process for over 60 s ({exc})") from exc
            raise ResultStoreError(str(self.path), str(exc)) from exc

    def put(self, key: str, record: R, *, cache_hits_only: bool = False) -> bool:
        """Store ``record`` under ``key`` unless its status is ``failed`` or ``not_run``; True when stored.

        The ``reused`` mark is not stored (a stored record is what was computed); ``cache_hits_only``
        says whether its run paid nothing (every LLM call a cache hit on an earlier run's entry).
        """
        if record.status in ("failed", "not_run"):
            return False
        body = record.model_dump_json(exclude={"reused"})
        with self._sql() as db:
            db.execute(
                "INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?)",
                (key, time.time(), int(cache_hits_only), checksum(key, cache_hits_only, body), body),
            )
        return True

    def _decode(self, key: str, row: tuple[float, int, str, str]) -> Stored[R] | None:
        stored, flag, sha, body = row
        try:
            if sha != checksum(key, bool(flag), body):
                raise ValueError("checksum mismatch")
            return Stored(self.model.model_validate_json(body), float(stored), bool(flag))
        except (ValueError, ValidationError, TypeError):
            self._drop(key)
            return None

    def _drop(self, key: str) -> None:
        with self._count_lock:
            self.dropped += 1
        with self._sql() as db:
            db.execute("DELETE FROM records WHERE key = ?", (key,))

    def get(self, key: str, *, not_before: float | None = None) -> Stored[R] | None:
        """The record stored under ``key`` (stored at or after ``not_before`` when given), or None.

        A row that fails its checksum or no longer loads as the model is dropped, counted and read as None.
        """
        with self._sql() as db:
            row = db.execute(
                "SELECT stored, cache_hits_only, sha256, body FROM records WHERE key = ?", (key,)
            ).fetchone()
        out = None if row is None else self._decode(key, row)
        if out is None or (not_before is not None and out.stored_at < not_before):
            return None
        return out

    def get_many(self, keys: Sequence[str]) -> list[Stored[R] | None]:
        """The records stored under ``keys`` (None where absent or dropped), in order, a few hundred per query."""
        found: dict[str, tuple[float, int, str, str]] = {}
        for i in range(0, len(keys), _BATCH):
            part = list(dict.fromkeys(keys[i : i + _BATCH]))
            with self._sql() as db:
                rows = db.execute(
                    f"SELECT key, stored, cache_hits_only, sha256, body FROM records WHERE key IN "
                    f"({','.join('?' * len(part))})",
                    part,
                ).fetchall()
            found.update((r[0], r[1:]) for r in rows)
        return [None if k not in found else self._decode(k, found[k]) for k in keys]

    def __len__(self) -> int:
        with self._sql() as db:
            return int(db.execute("SELECT COUNT(*) FROM records").fetchone()[0])

    def close(self) -> None:
        """Close every thread's connection (call when no thread uses the store any more)."""
        with self._count_lock:
            open_, self._open = self._open, []
        for db in open_:
            db.close()
        self._local = threading.local()

    def __enter__(self) -> "ResultStore[R]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
