"""The process tree of a command under test, as the signal tests and the soak benchmark walk it (a test helper
beside the doubles: tests and bench share it, the product never imports it).

* :func:`process_tree` — the live processes under a pid: its descendants and the rest of its session;
* :func:`alive` — which of some pids still run (zombies are not);
* :func:`reap` — SIGKILL to those that still run, so a test leaves the machine clean whatever its verdict.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable

import psutil

__all__ = ["process_tree", "alive", "reap"]


def process_tree(pid: int) -> dict[int, str]:
    """The live processes under ``pid`` (descendants, and every process whose session ``pid`` leads, so one
    that was re-parented after its parent died is still found): pid -> command line (160 characters)."""
    found: set[int] = set()
    try:
        found.update(p.pid for p in psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        pass
    for p in psutil.process_iter(["pid"]):
        try:
            if p.pid != pid and os.getsid(p.pid) == pid:
                found.add(p.pid)
        except (OSError, psutil.Error):
            pass
    out = {}
    for q in found:
        try:
            out[q] = " ".join(psutil.Process(q).cmdline())[:160]
        except psutil.Error:
            pass
    return out


def alive(pids: Iterable[int]) -> list[int]:
    """The pids of ``pids`` that still run (a zombie, waiting for its parent to reap it, does not)."""
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.Error:
            pass
    return out


def reap(pids: Iterable[int]) -> None:
    """SIGKILL every pid of ``pids`` that still runs."""
    for pid in alive(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
