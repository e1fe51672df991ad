"""The sandbox's watch over its process tree: output tails, memory and tmpfs accounting, cgroup v2, the kill.

:func:`agentcausal.discovery.mac.sandbox.run_sandboxed` polls these while a script runs: the tree's
memory (:func:`over_memory`: an RSS sum confirmed by PSS, plus the pages its tmpfs holds and its pipes and page
tables, :func:`kernel_bytes`) and the tmpfs's
fill (:func:`tmpfs_usage`, :func:`final_usage`), a cgroup v2 ``memory.max``/``pids.max`` where one is
delegated (:func:`make_cgroup`), and :func:`kill_tree` at a limit or the timeout.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import NamedTuple

import psutil

from agentcausal.discovery.mac.sandbox_command import SandboxLimits
from agentcausal.redact import redact

__all__ = [
    "OutputTail",
    "TmpfsUsage",
    "over_memory",
    "kernel_bytes",
    "PIPE_BYTES",
    "tmpfs_usage",
    "final_usage",
    "kill_tree",
    "make_cgroup",
    "cgroup_v2",
    "remove_cgroup",
    "tasks_of",
]


class OutputTail:
    """Drains a pipe on a thread and keeps its last ``cap`` bytes."""

    def __init__(self, pipe, cap: int) -> None:
        self.buf = bytearray()
        self.cap = cap
        self.dropped = 0
        self.thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self.thread.start()

    def _drain(self, pipe) -> None:
        try:
            while chunk := pipe.read1(65536):
                self.buf += chunk
                if len(self.buf) > 2 * self.cap:
                    cut = len(self.buf) - self.cap
                    self.dropped += cut
                    del self.buf[:cut]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        data = bytes(self.buf[-self.cap :])
        dropped = self.dropped + len(self.buf) - len(data)
        head = f"[... {dropped} earlier bytes dropped ...]\n" if dropped else ""
        return redact(head + data.decode(errors="replace"))


def _tree(pid: int) -> list[psutil.Process]:
    try:
        top = psutil.Process(pid)
        return [top, *top.children(recursive=True)]
    except psutil.Error:
        return []


def _rss_bytes(procs: list[psutil.Process]) -> int:
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _pss_bytes(procs: list[psutil.Process]) -> int:
    """Proportional set size of the tree (pages shared after ``fork`` counted once), from smaps_rollup."""
    total = 0
    for p in procs:
        try:
            with open(f"/proc/{p.pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError):
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
    return total


#: what one pipe can hold: 16 pages (``F_SETPIPE_SZ`` is refused, so no pipe grows past its default)
PIPE_BYTES = 16 * 4096


def kernel_bytes(procs: list[psutil.Process]) -> int:
    """Kernel memory the tree pins outside RSS, counted from above: 64 KiB per distinct pipe or FIFO any of its
    processes holds open (:data:`PIPE_BYTES`, whatever it holds now) plus each process's page tables (``VmPTE``).

    Sockets, memfd, System V memory, vmsplice and inotify are refused by the seccomp filter, so an open file
    descriptor is the only way to keep a kernel buffer, and no descriptor can be passed to another process.
    """
    pipes: set[tuple[int, int]] = set()
    tables = 0
    for p in procs:
        base = f"/proc/{p.pid}"
        try:
            names = os.listdir(f"{base}/fd")
        except OSError:
            continue
        for name in names:
            try:
                st = os.stat(f"{base}/fd/{name}")
            except OSError:
                continue
            if stat.S_ISFIFO(st.st_mode):
                pipes.add((st.st_dev, st.st_ino))
        try:
            with open(f"{base}/status") as f:
                tables += next((int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmPTE:")), 0)
        except (OSError, ValueError, IndexError):
            pass
    return len(pipes) * PIPE_BYTES + tables


def over_memory(pid: int, cap: int, tmpfs_bytes: int) -> bool:
    """True when the tree's memory plus its tmpfs pages and kernel buffers (:func:`kernel_bytes`) exceed ``cap``
    bytes: cheap RSS sum first, confirmed by PSS."""
    procs = _tree(pid)
    pinned = tmpfs_bytes + kernel_bytes(procs)
    return _rss_bytes(procs) + pinned > cap and _pss_bytes(procs) + pinned > cap


class TmpfsUsage(NamedTuple):
    used: int  # bytes of pages the tmpfs holds
    full: bool  # no room left (under 64 KiB free, or no free inode)


#: a tmpfs with less room than this is full
_FULL_BYTES = 64 * 1024


def _usage(st_blocks: int, st_bfree: int, frsize: int, st_ffree: int) -> TmpfsUsage:
    return TmpfsUsage((st_blocks - st_bfree) * frsize, st_bfree * frsize < _FULL_BYTES or st_ffree <= 0)


def tmpfs_usage(pid: int, fs: Path, size: int) -> TmpfsUsage:
    """The sandbox tmpfs's usage, seen through the wrapper's mount namespace (``/proc/<pid>/root``).

    Zero until the wrapper has mounted it (the path shows the host's file system until then:
    told apart by its size).
    """
    try:
        st = os.statvfs(f"/proc/{pid}/root{fs}")
    except OSError:
        return TmpfsUsage(0, False)
    if st.f_blocks * st.f_frsize != size:
        return TmpfsUsage(0, False)
    return _usage(st.f_blocks, st.f_bfree, st.f_frsize, st.f_ffree)


def final_usage(host_tmp: Path, size: int) -> TmpfsUsage:
    """The tmpfs's usage when the sandbox ended, as the wrapper wrote it (``stat -f``: blocks free size files ffree)."""
    try:
        blocks, bfree, frsize, _files, ffree = (int(x) for x in (host_tmp / "usage").read_text().split())
    except (OSError, ValueError):
        return TmpfsUsage(0, False)
    if blocks * frsize != size:
        return TmpfsUsage(0, False)
    return _usage(blocks, bfree, frsize, ffree)


def kill_tree(proc: subprocess.Popen) -> None:
    procs = _tree(proc.pid)
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def cgroup_v2() -> Path | None:
    """A writable cgroup v2 directory whose children get memory and pids controllers, or None."""
    try:
        line = next(ln for ln in Path("/proc/self/cgroup").read_text().splitlines() if ln.startswith("0::"))
        mount = next(
            ln.split()[4] for ln in Path("/proc/self/mountinfo").read_text().splitlines() if " - cgroup2 " in ln
        )
    except (OSError, StopIteration, IndexError):
        return None
    here = Path(mount) / line[3:].lstrip("/")
    try:
        controllers = set((here / "cgroup.subtree_control").read_text().split())
    except OSError:
        return None
    if not {"memory", "pids"} <= controllers or not os.access(here, os.W_OK):
        return None
    return here


def make_cgroup(limits: SandboxLimits) -> Path | None:  # pragma: no cover - needs a delegated cgroup v2
    parent = cgroup_v2()
    if parent is None:
        return None
    cg = parent / f"agentcausal-sandbox-{os.getpid()}-{threading.get_ident()}-{time.monotonic_ns()}"
    try:
        cg.mkdir()
        (cg / "memory.max").write_text(str(limits.memory_mb * 2**20))  # tmpfs pages are charged here too
        (cg / "memory.swap.max").write_text("0") if (cg / "memory.swap.max").exists() else None
        (cg / "pids.max").write_text(str(limits.max_processes))
        return cg
    except OSError:
        try:
            cg.rmdir()
        except OSError:
            pass
        return None


def remove_cgroup(cg: Path | None) -> None:  # pragma: no cover - needs a delegated cgroup v2
    if cg is None:
        return
    for _ in range(50):
        try:
            cg.rmdir()
            return
        except OSError:
            time.sleep(0.02)


def tasks_of(uid: int) -> int:
    """Tasks (processes and threads) whose real uid is ``uid`` now: what RLIMIT_NPROC counts."""
    n = 0
    for p in psutil.process_iter(["uids", "num_threads"]):
        try:
            if p.info["uids"] is not None and p.info["uids"].real == uid:
                n += p.info["num_threads"] or 1
        except (psutil.Error, AttributeError):
            pass
    return n
