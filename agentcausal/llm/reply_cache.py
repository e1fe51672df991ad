"""The LLM reply cache on disk: data only, every record checked on read, one paid call per key.

Storage is diskcache (SQLite plus value files) with :class:`ReplyDisk`: diskcache's
``JSONDisk`` (JSON in a zlib stream, level 0: stored, so the text stays greppable), read
back without ever unpickling: a row in diskcache's pickle or text mode, a pickled key, a
value file outside diskcache's own file pattern or larger than :data:`MAX_RECORD_BYTES`
is a corrupt record, never code or an unbounded read. Each value is a record::

    {"v": 1, "key": <cache key>, "sha256": sha256(key + "\\n" + canonical JSON of value), "value": {...}}

so a flipped bit, a torn value file or a record filed under another key fails on read. With a
cache key set (:func:`agentcausal.integrity.cache_key`: ``AGENTCAUSAL_CACHE_KEY`` or
``AGENTCAUSAL_CACHE_KEY_FILE``) each record also carries ``"mac"``, the HMAC-SHA256 of what the
checksum covers, and a record without a valid one fails too: the checksum catches corruption,
the MAC a record forged by someone who can write the folder but does not hold the key (records
written without a key are read without one; switching a key on asks every earlier reply again).
A failing record is dropped (deleted), counted (:attr:`ReplyCache.dropped`, by reason in
:attr:`ReplyCache.drop_reasons`), logged as one warning line (the first :data:`WARNED_DROPS` of a
store; the rest at debug level), and read as a miss: the caller asks the endpoint again (one
request) and stores a good record over it. Nothing read back runs as code.

A ``cache.db`` that fails its integrity check (not a database, cut short, malformed pages), at open
or later, heals: it is moved aside to ``cache.db.damaged-<UTC time>`` (with its ``-wal``/``-shm``),
the records still readable in it that pass their check are copied into a new ``cache.db``, and one
warning line says how many were kept and where the damaged copy is (:attr:`ReplyCache.heals`); the
replies it lost are asked again. Only a file that cannot be moved aside is a
:class:`~agentcausal.exceptions.CorruptStoreError`, one line naming it and what to do.

**Single flight across processes**: :mod:`agentcausal.llm.key_locks` (a POSIX record lock per key on
``<cache>/locks/keys.lock``; threads of a process first wait on a table per cache folder).
"""

from __future__ import annotations

import base64
import collections
import contextlib
import hashlib
import json
import logging
import os
import re
import sqlite3
import stat
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import diskcache
import numpy as np
from diskcache.core import MODE_BINARY, MODE_PICKLE, MODE_RAW, UNKNOWN

from agentcausal.exceptions import CorruptStoreError
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
from agentcausal.llm.key_locks import _key_lock, thread_flights

__all__ = [
    "ReplyCache",
    "ReplyDisk",
    "CorruptRecord",
    "check_cache",
    "record_problem",
    "MAX_RECORD_BYTES",
    "thread_flights",
    "encode_vector",
    "decode_vector",
]

log = logging.getLogger(__name__)

#: the largest record read back, bytes (stored or decompressed); larger is a corrupt record
MAX_RECORD_BYTES = 64 * 2**20
#: the reply cache's size limit in bytes; past it, the records stored first are evicted when a store opens
SIZE_LIMIT_BYTES = 2**34
RECORD_VERSION = 1
#: dropped records logged one warning line each; later ones are counted (and logged at debug level)
WARNED_DROPS = 3
_VALUE_FILE = re.compile(r"[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{28}\.val")  # diskcache's Disk.filename pattern


_UNSET = object()


class _Damaged(Exception):
    """``cache.db`` failed its integrity check at open (the reason as message)."""


class CorruptRecord(ValueError):
    """A stored record that is not a readable data record (never an OSError: diskcache reads those as a miss)."""


def _message(key: str, value: Any) -> str:
    return f"{key}\n{json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(',', ':'))}"


def _digest(key: str, value: Any) -> str:
    return hashlib.sha256(_message(key, value).encode()).hexdigest()


def record_problem(key: str, rec: Any, mac_key: bytes | None) -> str | None:
    """Why ``rec`` is no good reply record for ``key`` (with ``mac_key``: no valid MAC either), or None."""
    if not (isinstance(rec, dict) and rec.get("v") == RECORD_VERSION and isinstance(rec.get("value"), dict)):
        return "not a reply record"
    if rec.get("key") != key:
        return "a record of another key"
    if rec.get("sha256") != _digest(key, rec["value"]):
        return "checksum mismatch"
    if mac_key is not None and not mac_matches(mac_key, _message(key, rec["value"]), rec.get("mac")):
        return "no valid MAC (written without the cache key, or forged)"
    return None


def encode_vector(vec: np.ndarray) -> dict[str, str]:
    """A float vector as a record value: little-endian float32, base64 (exact, data only)."""
    return {"f32le": base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii")}


def decode_vector(value: dict[str, Any]) -> np.ndarray:
    """The float32 vector of :func:`encode_vector`. Raises CorruptRecord if ``value`` is not one."""
    try:
        raw = base64.b64decode(value["f32le"], validate=True)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptRecord("not an embedding record") from exc
    if not raw or len(raw) % 4:
        raise CorruptRecord("embedding of a length that is no float32 vector")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


class ReplyDisk(diskcache.JSONDisk):
    """diskcache's ``JSONDisk`` that reads data only.

    Keys are stored as diskcache stores a ``str`` (plain SQLite text: the sha256 hex of the
    request). Values are JSON objects in a zlib stream, inline or in a value file. On read, a
    row in pickle or text mode, a pickled key, a value file whose name is not one diskcache
    makes, a value file that is no regular file (a FIFO, a device, a symbolic link), or more than
    :data:`MAX_RECORD_BYTES` stored or decompressed raise :class:`CorruptRecord`. Removal only
    touches value files of diskcache's own pattern inside the folder.
    """

    def __init__(self, directory, compress_level=0, **kwargs):
        # level 0 (stored): records stay greppable; a default here, not a diskcache setting, so the
        # cache's Settings table stays one that diskcache's plain Disk can open too
        super().__init__(directory, compress_level=compress_level, **kwargs)

    def put(self, key):
        if type(key) is not str:
            raise TypeError(f"reply cache keys are str, got {type(key).__name__}")
        return diskcache.Disk.put(self, key)

    def get(self, key, raw):
        if not raw:
            raise CorruptRecord("a pickled key")
        return diskcache.Disk.get(self, key, raw)

    def store(self, value, read, key=UNKNOWN):
        if read or not isinstance(value, dict):
            raise TypeError("reply cache values are JSON objects")
        return super().store(value, read, key=key)

    def fetch(self, mode, filename, value, read):
        if read:
            raise CorruptRecord("a file-handle read")
        if mode == MODE_RAW:
            if not isinstance(value, bytes):
                raise CorruptRecord(f"an inline value of type {type(value).__name__}")
            data = value
        elif mode == MODE_BINARY:
            data = self._read_value_file(filename)
        else:
            what = "pickle" if mode == MODE_PICKLE else f"mode {mode}"
            raise CorruptRecord(
                f"stored in diskcache's {what} format, which is never read (an older version or a crafted entry)"
            )
        if len(data) > MAX_RECORD_BYTES:
            raise CorruptRecord(f"{len(data)} bytes stored")
        try:
            unzip = zlib.decompressobj()
            text = unzip.decompress(data, MAX_RECORD_BYTES)
            if unzip.unconsumed_tail:
                raise CorruptRecord(f"more than {MAX_RECORD_BYTES} bytes decompressed")
            if not unzip.eof:
                raise CorruptRecord("a truncated zlib stream")
            return json.loads(text.decode("utf-8"))
        except CorruptRecord:
            raise
        except (zlib.error, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise CorruptRecord(f"undecodable ({type(exc).__name__})") from exc

    def _read_value_file(self, filename: Any) -> bytes:
        if not isinstance(filename, str) or not _VALUE_FILE.fullmatch(filename):
            raise CorruptRecord(f"a value file name diskcache never writes: {str(filename)[:80]!r}")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(os.path.join(self._directory, filename), flags)
        except FileNotFoundError:
            raise  # deleted by another process since the row was read: a miss (diskcache)
        except OSError as exc:  # a symbolic link (O_NOFOLLOW), no permission ...
            raise CorruptRecord(f"a value file that cannot be opened ({os.strerror(exc.errno or 0)})") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise CorruptRecord("a value file that is no regular file")
            if st.st_size > MAX_RECORD_BYTES:
                raise CorruptRecord(f"a value file of {st.st_size} bytes")
            chunks, left = [], st.st_size + 1
            while left > 0 and (chunk := os.read(fd, min(left, 2**20))):
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def remove(self, file_path):
        if isinstance(file_path, str) and _VALUE_FILE.fullmatch(file_path):
            super().remove(file_path)


# ------------------------------------------------------------------ the store
class ReplyCache:
    """The checked, data-only reply store of one cache folder.

    Parameters
    ----------
    directory : path, the cache folder (created if absent; ``cache.db`` inside)
    refresh : bool, kept for callers: a damaged ``cache.db`` heals with or without it
    key : bytes or None, the key of keyed integrity; default :func:`agentcausal.integrity.cache_key`

    Raises
    ------
    CorruptStoreError
        ``cache.db`` is damaged and cannot be moved aside (at open, or from :meth:`get` and :meth:`set`).
    ConfigError
        The key file is unsafe or unreadable.

    Attributes
    ----------
    path : Path, the SQLite file
    dropped : int, records that failed their check and were dropped since this store opened
    drop_reasons : collections.Counter of why
    heals : list of :class:`~agentcausal.integrity.Heal` made by this store
    """

    def __init__(self, directory: str | Path, *, refresh: bool = False, key: bytes | None | object = _UNSET) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "cache.db"
        self.mac_key: bytes | None = cache_key() if key is _UNSET else key  # type: ignore[assignment]
        self.dropped = 0
        self.drop_reasons: collections.Counter[str] = collections.Counter()
        self.heals: list[Heal] = []
        self._count_lock = threading.Lock()
        self._heal_lock = threading.Lock()
        self._inode = inode_of(self.path)  # the file this store uses (a heal elsewhere replaces it)
        try:
            self._cache = self._open()
        except _Damaged as exc:
            self._heal(str(exc))

    def _open(self) -> diskcache.Cache:
        problem = header_problem(self.path)
        if problem is None:
            try:
                # every calling thread holds its own SQLite connection: no memory map and a small page cache each
                # (diskcache's defaults, a 64 MiB map and 32 MiB cache per connection, grew a run's process with
                # the corpus: bench/engine_memory.py). The size limit is kept at each open, not at each write
                # (cull_limit 0): a write is then 4 SQL statements, not 7
                cache = diskcache.Cache(
                    str(self.directory),
                    size_limit=SIZE_LIMIT_BYTES,
                    cull_limit=0,
                    disk=ReplyDisk,
                    sqlite_mmap_size=0,
                    sqlite_cache_size=64,
                )
                with contextlib.suppress(diskcache.Timeout):  # another process is writing: its own open culled
                    cache.cull()
                self._inode = inode_of(self.path)
                return cache
            except sqlite3.DatabaseError as exc:
                if not is_corruption(exc):
                    raise
                problem = str(exc)
        raise _Damaged(problem)

    def _error(self, problem: str) -> CorruptStoreError:
        return CorruptStoreError(
            f"the LLM reply cache {self.path} is damaged ({problem}) and cannot be moved aside: move the folder "
            f"aside yourself (mv {self.directory} {self.directory}.broken) and run again",
            path=str(self.path),
        )

    def _heal(self, reason: str) -> None:
        """Move the damaged ``cache.db`` aside and open a new one holding its readable records that pass their check."""
        with self._heal_lock:
            old = getattr(self, "_cache", None)
            # another process (or store) healed it already: the file at the path is a new one, use it
            damaged = None
            if self._inode is None or inode_of(self.path) == self._inode:
                try:
                    damaged = move_aside(self.path, self._inode)
                except OSError as exc:
                    raise self._error(f"{reason}; {os.strerror(exc.errno or 0)}") from exc
            if damaged is None:
                self._cache = self._open()
                return
            if old is not None:
                with contextlib.suppress(Exception):
                    old.close()  # this thread's connection to the damaged copy (others are dropped with the object)
            self._cache = self._open()
            kept = self._salvage(damaged)
            heal = Heal(str(self.path.resolve()), str(damaged), reason, kept)
            self.heals.append(heal)
            record_heal(heal)
            log.warning("%s", heal.line("LLM reply cache", "the replies it lost are asked again"))

    def _salvage(self, damaged: Path) -> int:
        """Copy the records of the damaged copy that read and pass their check into the new cache; how many."""
        kept = 0
        disk = self._cache.disk
        for _rowid, key, raw, mode, filename, value in salvage_rows(
            damaged, "Cache", "key, raw, mode, filename, value", "rowid"
        ):
            if not (raw and isinstance(key, str)):
                continue
            try:
                rec = disk.fetch(mode, filename, value, False)
            except (CorruptRecord, OSError):
                continue
            if record_problem(key, rec, self.mac_key) is None:
                with contextlib.suppress(sqlite3.DatabaseError, diskcache.Timeout):
                    self._cache.set(key, rec)
                    kept += 1
        return kept

    def _do(self, fn: Callable[[diskcache.Cache], Any]) -> Any:
        """``fn`` on the cache; SQLite's damage heals it and ``fn`` runs once more on the new one.

        A ``cache.db`` another process healed (replaced) since this store opened it is opened again first
        (one ``stat`` a call), so no write goes into the damaged copy.
        """
        now = inode_of(self.path)
        if now is not None and self._inode is not None and now != self._inode:
            with self._heal_lock:
                if inode_of(self.path) != self._inode:
                    self._cache = self._open()
        for attempt in range(2):
            try:
                return fn(self._cache)
            except sqlite3.DatabaseError as exc:
                if not is_corruption(exc):
                    raise
                if attempt:
                    raise self._error(str(exc)) from exc
                self._heal(str(exc))
        raise AssertionError("unreachable")  # pragma: no cover

    def get(self, key: str) -> dict[str, Any] | None:
        """The checked value stored under ``key``, or None (absent, or dropped because it failed its check)."""
        try:
            rec = self._do(lambda c: c.get(key, default=None))
        except CorruptRecord as exc:
            self.drop(key, str(exc))
            return None
        if rec is None:
            return None
        problem = record_problem(key, rec, self.mac_key)
        if problem is not None:
            self.drop(key, problem)
            return None
        return rec["value"]

    def seal(self, key: str, value: dict[str, Any]) -> dict[str, Any]:
        """The record stored for ``value``: version, key, checksum, the MAC with a key, the value."""
        rec = {"v": RECORD_VERSION, "key": key, "sha256": _digest(key, value), "value": value}
        if self.mac_key is not None:
            rec["mac"] = record_mac(self.mac_key, _message(key, value))
        return rec

    def set(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` (a JSON object) under ``key`` with its checksum (and MAC) (atomic: diskcache)."""
        rec = self.seal(key, value)
        self._do(lambda c: c.set(key, rec))

    def drop(self, key: str, reason: str) -> None:
        """Delete the record under ``key``, count it, and log one line saying why."""
        with contextlib.suppress(sqlite3.OperationalError, diskcache.Timeout):
            self._do(lambda c: c.delete(key))  # busy: the good record stored next replaces it anyway
        with self._count_lock:
            self.dropped += 1
            self.drop_reasons[reason] += 1
            n = self.dropped
        if n <= WARNED_DROPS:  # a cache of an older version fails on every record: a few lines, then the count
            more = (
                "; further records that fail their check are counted without a line each (Gateway.cache_notice)"
                if n == WARNED_DROPS
                else ""
            )
            log.warning(
                "LLM reply cache %s: the record of request %s failed its check (%s); dropped, asking again%s",
                self.path,
                key[:12],
                reason,
                more,
            )
        else:
            log.debug("LLM reply cache %s: record %s dropped (%s)", self.path, key[:12], reason)

    def heal(self, reason: str) -> Heal | None:
        """Move ``cache.db`` aside now (``agentcausal cache repair``), keeping its readable records; the heal made."""
        before = len(self.heals)
        self._heal(reason)
        return self.heals[-1] if len(self.heals) > before else None

    def verify(self) -> int:
        """Read every record, dropping those that fail their check (as a read would); how many were dropped."""
        before = self.dropped
        for key in list(self.iterkeys()):
            self.get(key)
        return self.dropped - before

    @contextlib.contextmanager
    def process_lock(self, key: str) -> Iterator[None]:
        """Hold ``key`` against other processes on this folder (threads: :func:`thread_flights`)."""
        with _key_lock(self.directory / "locks", key):
            yield

    def iterkeys(self) -> Iterator[str]:
        """Every stored key (the sha256 hex of its request)."""
        return self._cache.iterkeys()

    def close(self) -> None:
        self._cache.close()


def check_cache(directory: str | Path, *, key: bytes | None | object = _UNSET) -> Check:
    """Check a reply cache folder's ``cache.db`` without changing it: SQLite's integrity check, then every
    record read as :meth:`ReplyCache.get` reads it (data only, checksum, MAC with a key)."""
    mac_key: bytes | None = cache_key() if key is _UNSET else key  # type: ignore[assignment]
    disk = ReplyDisk(str(directory))

    def problem(row: tuple[Any, ...]) -> str | None:
        k, raw, mode, filename, value = row
        try:
            if not raw:
                raise CorruptRecord("a pickled key")
            return record_problem(k, disk.fetch(mode, filename, value, False), mac_key)
        except CorruptRecord as exc:
            return str(exc)
        except OSError:
            return "a value file that cannot be read"

    sql = "SELECT key, raw, mode, filename, value FROM Cache"
    return check_file("LLM reply cache", Path(directory) / "cache.db", sql, problem)
