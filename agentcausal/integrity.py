"""What both stores (the results store, the LLM reply cache) share to check and heal themselves.

* **Damage** (:func:`header_problem`, :func:`is_corruption`): an SQLite file cut short, not a database,
  or with malformed pages. A damaged file is moved aside (:func:`move_aside`, to
  ``<name>.damaged-<UTC time>`` with its ``-wal`` and ``-shm`` beside it, so ``sqlite3`` still opens the
  copy), its readable rows are read out of the copy (:func:`salvage_rows`), and the store starts again
  with those that pass their check; what was lost is recomputed.
* **Keyed integrity** (:func:`cache_key`, :func:`record_mac`): with a key in ``AGENTCAUSAL_CACHE_KEY``
  or in the file ``AGENTCAUSAL_CACHE_KEY_FILE`` (readable by its owner only), every stored record
  carries an HMAC-SHA256 (RFC 2104) of what its checksum covers. A checksum catches corruption; only a
  MAC catches a record rewritten, checksum and all, by someone who can write the cache but does not
  hold the key. The key is never stored, logged or part of a cache key.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import hmac
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from agentcausal.exceptions import ConfigError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock between processes healing at once
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "Heal",
    "Check",
    "record_heal",
    "heals_of",
    "take_heals",
    "integrity_problem",
    "check_file",
    "KEY_ENV",
    "KEY_FILE_ENV",
    "cache_key",
    "record_mac",
    "mac_matches",
    "header_problem",
    "is_corruption",
    "move_aside",
    "inode_of",
    "salvage_rows",
]

KEY_ENV = "AGENTCAUSAL_CACHE_KEY"
KEY_FILE_ENV = "AGENTCAUSAL_CACHE_KEY_FILE"


def cache_key() -> bytes | None:
    """The key of keyed integrity, or None when neither variable is set.

    ``AGENTCAUSAL_CACHE_KEY`` (its UTF-8 bytes) wins over ``AGENTCAUSAL_CACHE_KEY_FILE`` (the file's
    bytes, surrounding whitespace stripped).

    Raises
    ------
    ConfigError
        The key file is missing, unreadable, empty, or readable or writable by group or others.
    """
    value = os.environ.get(KEY_ENV)
    if value:
        return value.encode("utf-8")
    name = os.environ.get(KEY_FILE_ENV)
    if not name:
        return None
    try:
        st = os.stat(name)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{KEY_FILE_ENV}={name} is no regular file", path=name)
        if st.st_mode & 0o077:
            raise ConfigError(
                f"{KEY_FILE_ENV}={name} is readable or writable by others (mode {stat.S_IMODE(st.st_mode):o}): "
                f"chmod 600 {name}",
                path=name,
            )
        key = Path(name).read_bytes().strip()
    except OSError as exc:
        raise ConfigError(f"{KEY_FILE_ENV}={name} cannot be read ({os.strerror(exc.errno or 0)})", path=name) from exc
    if not key:
        raise ConfigError(f"{KEY_FILE_ENV}={name} is empty", path=name)
    return key


def record_mac(key: bytes, message: str) -> str:
    """HMAC-SHA256 hex of ``message`` (what a record's checksum covers) under ``key``.

    >>> record_mac(b"k", "m") == record_mac(b"k", "m") != record_mac(b"k2", "m")
    True
    """
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).hexdigest()


def mac_matches(key: bytes, message: str, mac: object) -> bool:
    """Whether ``mac`` is the MAC of ``message`` under ``key`` (constant-time compare)."""
    return isinstance(mac, str) and hmac.compare_digest(mac, record_mac(key, message))


def header_problem(path: Path) -> str | None:
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


def is_corruption(exc: BaseException) -> bool:
    """SQLite's "malformed" and "not a database" errors (not "locked" or "busy", which are no damage)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text)


def inode_of(path: Path) -> int | None:
    """The inode of ``path``, or None when it is absent (what a heal compares to tell a replaced file)."""
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def move_aside(path: Path, inode: int | None = None) -> Path | None:
    """Rename ``path`` and its ``-wal``/``-shm`` to ``<name>.damaged-<UTC time>[-wal|-shm]``; the new name.

    With ``inode`` (the file found damaged), nothing is moved and None is returned when the file at
    ``path`` is no longer that one: another process healed it first. Processes healing one file at
    once are serialised by an ``flock`` on ``<name>.heal-lock`` beside it.

    Raises OSError when the file cannot be renamed (the caller says what to do by hand).
    """
    lock = os.open(f"{path}.heal-lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if inode is not None and inode_of(path) != inode:
            return None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = path.with_name(f"{path.name}.damaged-{stamp}")
        n = 1
        while aside.exists():
            n += 1
            aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
        os.replace(path, aside)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{path}{suffix}", f"{aside}{suffix}")
        return aside
    finally:
        os.close(lock)  # releases the flock


def salvage_rows(path: Path, table: str, columns: str, order: str) -> Iterator[tuple]:
    """The rows (``order`` first, then ``columns``) of ``table`` in a damaged database that SQLite can still read.

    Reads forward by ``order`` until the first damaged page, then backward until the first damaged
    page from the other end, so a damaged page in the middle costs only the rows it held. Rows are
    yielded as read: the caller checks each one (checksum, MAC) before keeping it.
    """
    try:
        db = sqlite3.connect(path, timeout=5.0)
    except sqlite3.DatabaseError:
        return
    seen: set = set()
    try:
        for direction in ("ASC", "DESC"):
            try:
                for row in db.execute(f"SELECT {order}, {columns} FROM {table} ORDER BY {order} {direction}"):
                    if row[0] in seen:
                        return  # the two scans met: every readable row was yielded
                    seen.add(row[0])
                    yield row  # one row a step: the rows before a damaged page are kept
            except sqlite3.DatabaseError:
                continue
    finally:
        db.close()


class Heal(NamedTuple):
    """A damaged store file moved aside and replaced.

    Attributes
    ----------
    path : str, the store file
    damaged : str, where the damaged copy now is (``<path>.damaged-<UTC time>``)
    reason : str, what failed (SQLite's error, or the header check's finding)
    kept : int, rows read out of the damaged copy that passed their check, now in the new store
    """

    path: str
    damaged: str
    reason: str
    kept: int

    def line(self, what: str, lost: str) -> str:
        """The one console line: ``WHAT PATH was damaged (REASON): moved aside to COPY; N readable records kept, LOST``."""
        return (
            f"{what} {self.path} was damaged ({self.reason}): moved aside to {self.damaged}; "
            f"{self.kept} readable record(s) kept, {lost}"
        )


class Check(NamedTuple):
    """What ``agentcausal cache check`` found in one store file.

    Attributes
    ----------
    what : str, ``results store`` or ``LLM reply cache``
    path : str, the file
    damage : str or None, why the file fails its integrity check (header, SQLite's ``integrity_check``)
    records : int, rows read
    failing : dict reason -> rows that fail their check (checksum, MAC with a key, not a record)
    """

    what: str
    path: str
    damage: str | None
    records: int
    failing: dict[str, int]

    @property
    def ok(self) -> bool:
        return self.damage is None and not self.failing

    def line(self) -> str:
        """One line: ``WHAT PATH: ok, N records`` or what is wrong."""
        if self.damage is not None:
            return f"{self.what} {self.path}: damaged ({self.damage})"
        if self.failing:
            why = ", ".join(f"{r}: {n}" for r, n in sorted(self.failing.items(), key=lambda x: -x[1]))
            return f"{self.what} {self.path}: {self.records} records, {sum(self.failing.values())} fail their check ({why})"
        return f"{self.what} {self.path}: ok, {self.records} records"


def integrity_problem(db: sqlite3.Connection) -> str | None:
    """SQLite's ``PRAGMA quick_check`` (every page and cell of every table and index) as one line, or None."""
    try:
        rows = db.execute("PRAGMA quick_check(5)").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    found = [str(r[0]) for r in rows]
    return None if found == ["ok"] else "; ".join(found)[:300]


def check_file(
    what: str,
    path: Path,
    sql: str,
    row_problem: Callable[[tuple[Any, ...]], str | None],
) -> Check:
    """Check one SQLite store file without changing it: its header (:func:`header_problem`), SQLite's
    :func:`integrity_problem`, then each row of ``sql`` through ``row_problem`` (a row -> what is wrong, or None).

    Parameters
    ----------
    what : the store as the report names it ("results store", "LLM reply cache")
    path : the SQLite file, opened read-only
    sql : the SELECT whose rows are checked
    row_problem : one row's problem; raising ``sqlite3.DatabaseError`` reports the file as damaged

    Returns
    -------
    :class:`Check`: the damage (None when the file reads), the rows read and the failing ones by problem.
    """
    damage = header_problem(path)
    records, failing = 0, collections.Counter[str]()
    if damage is None:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60.0)
        try:
            damage = integrity_problem(db)
            if damage is None:
                for row in db.execute(sql):
                    records += 1
                    problem = row_problem(row)
                    if problem is not None:
                        failing[problem] += 1
        except sqlite3.DatabaseError as exc:
            damage = str(exc)
        finally:
            db.close()
    return Check(what, str(path), damage, records, dict(failing))


_HEALS: dict[str, list[Heal]] = {}
_HEALS_LOCK = threading.Lock()


def record_heal(heal: Heal) -> None:
    """Note a heal made by this process (for the run that reports it: :func:`take_heals`)."""
    with _HEALS_LOCK:
        _HEALS.setdefault(heal.path, []).append(heal)


def heals_of(path: str | Path) -> list[Heal]:
    """The heals of the store file ``path`` this process made and no run has reported yet, oldest first."""
    with _HEALS_LOCK:
        return list(_HEALS.get(str(Path(path).resolve()), ()))


def take_heals(*paths: str | Path) -> list[Heal]:
    """The heals of ``paths`` not reported yet, oldest first per path; a run reports each once (``run.json``)."""
    with _HEALS_LOCK:
        return [h for p in paths for h in _HEALS.pop(str(Path(p).resolve()), [])]
