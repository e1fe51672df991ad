"""One run at a time per run folder: an ``flock`` on ``<run folder>/.lock`` while a run writes the folder.

A run takes the lock before it writes anything into its folder (the CLI: before the plan; a flow called
from Python or a deployment: around the engine) and keeps it until it ends. A second run on the same
folder refuses at once with one line naming the holder's pid (:class:`~agentcausal.exceptions.RunFolderBusyError`).
The lock is the kernel's (``fcntl.flock`` on an open file description, not the pid written into the file,
which is only there to be named): it goes away with the process however it ends, ``kill -9`` included, so a
stale ``.lock`` file never blocks a later run. The file's descriptor is not inherited by child processes
(Python's descriptors are non-inheritable), so a server or worker a run starts never holds it.

Within one process the lock is re-entrant (the CLI holds it, the flow it calls takes it again): a count per
folder, released when the outermost holder lets go.

Local file systems only: ``flock`` on NFS is emulated with byte-range locks on recent Linux kernels and is
not to be relied on across hosts.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from agentcausal.exceptions import RunFolderBusyError

__all__ = ["LOCK_FILE", "run_folder_lock", "lock_holder"]

#: the lock file's name inside a run folder
LOCK_FILE = ".lock"

_held: dict[str, list[int]] = {}  # resolved folder -> [fd, count] of this process
_guard = threading.Lock()


def lock_holder(run_dir: str | Path) -> int | None:
    """The pid written into ``run_dir``'s lock file (None when there is none or it is unreadable).

    It names the last run that took the lock; whether that run still holds it only the lock itself tells.
    """
    try:
        text = (Path(run_dir) / LOCK_FILE).read_text(encoding="ascii").strip()
        return int(text) if text.isdigit() else None
    except (OSError, UnicodeDecodeError):
        return None


@contextlib.contextmanager
def run_folder_lock(run_dir: str | Path) -> Iterator[Path]:
    """Hold the run folder's lock (created with the folder if need be) for the ``with`` block.

    Parameters
    ----------
    run_dir : the run folder

    Yields
    ------
    Path of the lock file

    Raises
    ------
    RunFolderBusyError
        If another process holds the lock (the message names its pid); never waits.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with run_folder_lock(d) as p, run_folder_lock(d):  # re-entrant within a process
    ...     lock_holder(d) == os.getpid()
    True
    """
    d = Path(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / LOCK_FILE
    key = str(d.resolve())
    with _guard:
        if key in _held:
            _held[key][1] += 1
        else:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                pid = lock_holder(d)
                raise RunFolderBusyError(str(d), pid) from None
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
            _held[key] = [fd, 1]
    try:
        yield path
    finally:
        with _guard:
            entry = _held[key]
            entry[1] -= 1
            if entry[1] == 0:
                del _held[key]
                os.close(entry[0])  # closing the last descriptor releases the flock
