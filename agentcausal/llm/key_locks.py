"""Single flight across processes on one reply cache folder: one paid call per key.

A POSIX record lock per key (``fcntl.lockf`` on one byte of ``<cache>/locks/keys.lock``, at an offset
read from the key's first 15 hex digits): one system call each way when no other process holds the
key (about a microsecond, where a lock file per key cost about 0.4 ms of CPU), a wait in the kernel
when one does, released by the OS when the holder dies. Record locks belong to a process, not a
thread, so the threads of one process are serialised per key first (:func:`thread_flights`, one
table per cache folder shared by every gateway of the process), and the lock file stays open for the
life of the process (closing any descriptor of it would drop all the process's locks on it).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: lock files per key prefix (filelock) instead
    fcntl = None  # type: ignore[assignment]  # not POSIX: checked before each use

__all__ = ["thread_flights"]

_HEX = re.compile(r"[0-9a-f]{15}")


_FLIGHT_TABLES: dict[str, tuple[threading.Lock, dict[str, list]]] = {}
_LOCK_FILES: dict[str, int] = {}
_RESOLVED: dict[str, str] = {}  # a lock folder as given -> its lock file's real path
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
    """This process's one descriptor of ``folder/keys.lock`` (opened again if the file was replaced).

    A folder is resolved (``os.path.realpath``, a system call per path component) once per process, not per key.
    """
    given = str(folder)
    path = _RESOLVED.get(given)
    if path is None:
        path = _RESOLVED[given] = os.path.realpath(folder / "keys.lock")
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
