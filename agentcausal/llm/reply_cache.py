"""The LLM reply cache on disk: data only, every record checked on read, one paid call per key.

Storage is diskcache (SQLite plus value files) with :class:`ReplyDisk`: diskcache's
``JSONDisk`` (JSON in a zlib stream, level 0: stored, so the text stays greppable), read
back without ever unpickling: a row in diskcache's pickle or text mode, a pickled key, a
value file outside diskcache's own file pattern or larger than :data:`MAX_RECORD_BYTES`
is a corrupt record, never code or an unbounded read. Each value is a record::

    {"v": 1, "key": <cache key>, "sha256": sha256(key + "\\n" + canonical JSON of value), "value": {...}}

so a flipped bit, a torn value file or a record filed under another key fails on read. Such
a record is dropped (deleted), counted (:attr:`ReplyCache.dropped`, by reason in
:attr:`ReplyCache.drop_reasons`), logged as one warning line (the first
:data:`WARNED_DROPS` of a store; the rest at debug level), and read as a miss: the
caller asks the endpoint again (one request) and stores a good record over it. The
checksum catches corruption and misfiled records; it is no signature (anyone who can
write the folder can write a record that checks), but nothing written there runs as code.

A SQLite file that cannot be read (not a database, truncated, malformed pages) raises one
:class:`~agentcausal.exceptions.CorruptStoreError` whose one-line message names the file
and what to do; with ``refresh=True`` the file is moved aside and a new cache begins.

**Single flight across processes**: a POSIX record lock per key (``fcntl.lockf`` on one
byte of ``<cache>/locks/keys.lock``, at an offset read from the key's first 15 hex digits):
one system call each way when no other process holds the key (about a microsecond, where a
lock file per key cost about 0.4 ms of CPU), a wait in the kernel when one does, released
by the OS when the holder dies. Record locks belong to a process, not a thread, so the
threads of one process are serialised per key first (:func:`thread_flights`, one table per
cache folder shared by every gateway of the process), and the lock file stays open for the
life of the process (closing any descriptor of it would drop all the process's locks on it).
"""

from __future__ import annotations

import base64
import collections
import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import sqlite3
import stat
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import diskcache
import numpy as np
from diskcache.core import MODE_BINARY, MODE_PICKLE, MODE_RAW, UNKNOWN

from agentcausal.exceptions import CorruptStoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: lock files per key prefix (filelock) instead
    fcntl = None  # type: ignore[assignment]  # not POSIX: checked before each use

__all__ = [
    "ReplyCache",
    "ReplyDisk",
    "CorruptRecord",
    "MAX_RECORD_BYTES",
    "thread_flights",
    "encode_vector",
    "decode_vector",
]

log = logging.getLogger(__name__)

#: the largest record read back, bytes (stored or decompressed); larger is a corrupt record
MAX_RECORD_BYTES = 64 * 2**20
RECORD_VERSION = 1
#: dropped records logged one warning line each; later ones are counted (and logged at debug level)
WARNED_DROPS = 3
_VALUE_FILE = re.compile(r"[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{28}\.val")  # diskcache's Disk.filename pattern
_HEX = re.compile(r"[0-9a-f]{15}")


class CorruptRecord(ValueError):
    """A stored record that is not a readable data record (never an OSError: diskcache reads those as a miss)."""


def _digest(key: str, value: Any) -> str:
    body = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(f"{key}\n{body}".encode()).hexdigest()


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


# ------------------------------------------------------------------ single flight
_FLIGHT_TABLES: dict[str, tuple[threading.Lock, dict[str, list]]] = {}
_LOCK_FILES: dict[str, int] = {}
_GUARD = threading.Lock()


def thread_flights(directory: str | Path | None) -> tuple[threading.Lock, dict[str, list]]:
    """The process-wide table of keys in flight for a cache folder: (its lock, key -> [lock, waiters]).

    Every gateway of a process on one folder shares it (POSIX record locks do not exclude
    threads of one process); ``None`` (no cache) gets a table of its own.
    """
    if directory is None:
        return threading.Lock(), {}
    path = os.path.realpath(directory)
    with _GUARD:
        if path not in _FLIGHT_TABLES:
            _FLIGHT_TABLES[path] = (threading.Lock(), {})
        return _FLIGHT_TABLES[path]


def _lock_fd(folder: Path) -> int:
    """This process's one descriptor of ``folder/keys.lock`` (opened again if the file was replaced)."""
    path = os.path.realpath(folder / "keys.lock")
    with _GUARD:
        fd = _LOCK_FILES.get(path)
        if fd is not None and os.fstat(fd).st_nlink == 0:  # the folder was moved or deleted under us
            fd = None  # the old descriptor stays open: closing it would drop locks other threads hold
        if fd is None:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
            _LOCK_FILES[path] = fd
        return fd


@contextlib.contextmanager
def _key_lock(folder: Path, key: str) -> Iterator[None]:
    """Hold ``key`` against other processes on the same cache folder (see the module docstring)."""
    if fcntl is None:  # pragma: no cover - not POSIX
        import filelock

        folder.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(str(folder / f"{key[:3]}.lock")):
            yield
        return
    head = key[:15] if _HEX.fullmatch(key[:15]) else hashlib.sha256(key.encode()).hexdigest()[:15]
    offset = int(head, 16)  # 60 bits: two keys share a byte about never
    fd = _lock_fd(folder)
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX, 1, offset)
            break
        except OSError as exc:
            # the kernel sees locks per process: thread A of P holds k1 while thread B of P waits for
            # k2, held by Q, one of whose threads waits for k1. No thread holds two keys, so it passes.
            if exc.errno != errno.EDEADLK:
                raise
            time.sleep(0.002)
    try:
        yield
    finally:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)


# ------------------------------------------------------------------ the store
def _header_problem(path: Path) -> str | None:
    """Why ``path`` is no whole SQLite database by its 100-byte header and size, or None (absent or empty is fine).

    The header's page count (valid when its change counter equals its version-valid-for
    number) times its page size is the file's size at the last commit or checkpoint; a shorter
    file lost its tail. Read before the size, and confirmed once after a pause, so a writer
    extending the file at that moment is not taken for damage.
    """
    for attempt in range(2):
        try:
            with open(path, "rb") as f:
                head = f.read(100)
            size = os.stat(path).st_size
        except FileNotFoundError:
            return None
        if not head:
            return None
        if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
            return "not an SQLite database"
        page = int.from_bytes(head[16:18], "big")
        page = 65536 if page == 1 else page
        pages = int.from_bytes(head[28:32], "big")
        if not (pages and head[24:28] == head[92:96] and size < pages * page):
            return None
        if attempt == 0:
            time.sleep(0.2)
    return f"truncated: {size} of {pages * page} bytes"


def _is_corruption(exc: BaseException) -> bool:
    """SQLite's "malformed" and "not a database" errors (not "locked" or "busy", which are no damage)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text)


class ReplyCache:
    """The checked, data-only reply store of one cache folder.

    Parameters
    ----------
    directory : path, the cache folder (created if absent; ``cache.db`` inside)
    refresh : bool
        Move an unreadable ``cache.db`` (with its ``-wal`` and ``-shm`` files) aside to
        ``cache.db.corrupt-<unix time>`` and start a new one, instead of raising.

    Raises
    ------
    CorruptStoreError
        ``cache.db`` cannot be read (and ``refresh`` is false); also from :meth:`get` and
        :meth:`set` when SQLite finds damage later.

    Attributes
    ----------
    path : Path, the SQLite file
    dropped : int, records that failed their check and were dropped since this store opened
    drop_reasons : collections.Counter of why
    """

    def __init__(self, directory: str | Path, *, refresh: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "cache.db"
        self.dropped = 0
        self.drop_reasons: collections.Counter[str] = collections.Counter()
        self._count_lock = threading.Lock()
        try:
            self._cache = self._open()
        except CorruptStoreError:
            if not refresh:
                raise
            aside = self._move_aside()
            log.warning(
                "LLM reply cache %s could not be read; moved aside to %s (--refresh), starting a new one",
                self.path,
                aside,
            )
            self._cache = self._open()

    def _open(self) -> diskcache.Cache:
        problem = _header_problem(self.path)
        if problem is None:
            try:
                # every calling thread holds its own SQLite connection: no memory map and a small page cache each
                # (diskcache's defaults, a 64 MiB map and 32 MiB cache per connection, grew a run's process with
                # the corpus: bench/engine_memory.py)
                return diskcache.Cache(
                    str(self.directory), size_limit=2**34, disk=ReplyDisk, sqlite_mmap_size=0, sqlite_cache_size=64
                )
            except sqlite3.DatabaseError as exc:
                if not _is_corruption(exc):
                    raise
                problem = str(exc)
        raise self._error(problem)

    def _error(self, problem: str) -> CorruptStoreError:
        return CorruptStoreError(
            f"the LLM reply cache {self.path} cannot be read ({problem}): run again with --refresh, which moves it "
            f"aside and starts a new cache, or move the folder aside yourself (mv {self.directory} "
            f"{self.directory}.broken)",
            path=str(self.path),
        )

    def _move_aside(self) -> Path:
        stamp = f"corrupt-{int(time.time())}"
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{self.path}{suffix}", f"{self.path}{suffix}.{stamp}")
        return self.path.with_name(f"{self.path.name}.{stamp}")

    @contextlib.contextmanager
    def _damage_is_one_line(self) -> Iterator[None]:
        """SQLite's damage errors as :class:`CorruptStoreError`; "locked" and the like pass unchanged."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if _is_corruption(exc):
                raise self._error(str(exc)) from exc
            raise

    def get(self, key: str) -> dict[str, Any] | None:
        """The checked value stored under ``key``, or None (absent, or dropped because it failed its check)."""
        try:
            with self._damage_is_one_line():
                rec = self._cache.get(key, default=None)
        except CorruptRecord as exc:
            self.drop(key, str(exc))
            return None
        if rec is None:
            return None
        if not (isinstance(rec, dict) and rec.get("v") == RECORD_VERSION and isinstance(rec.get("value"), dict)):
            self.drop(key, "not a reply record")
            return None
        if rec.get("key") != key:
            self.drop(key, "a record of another key")
            return None
        if rec.get("sha256") != _digest(key, rec["value"]):
            self.drop(key, "checksum mismatch")
            return None
        return rec["value"]

    def set(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` (a JSON object) under ``key`` with its checksum (atomic: diskcache)."""
        rec = {"v": RECORD_VERSION, "key": key, "sha256": _digest(key, value), "value": value}
        with self._damage_is_one_line():
            self._cache.set(key, rec)

    def drop(self, key: str, reason: str) -> None:
        """Delete the record under ``key``, count it, and log one line saying why."""
        with self._damage_is_one_line(), contextlib.suppress(sqlite3.OperationalError, diskcache.Timeout):
            self._cache.delete(key)  # busy: the good record stored next replaces it anyway
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
