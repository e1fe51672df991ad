"""Stopping a run on request: SIGTERM, SIGINT or a Prefect cancellation, within seconds.

One process-wide flag, set once by :func:`request_stop`. Setting it runs the registered stop hooks at once
(:func:`on_stop`; the statistical pool's kills its workers, its forkserver and its resource tracker), and the
pieces that wait check it: the item pool stops waiting for a chunk's items (:class:`RunStopped`), and no new
algorithm worker starts. Records already in the results store stay there, so ``--resume`` computes only what
was not finished (the LLM reply cache repays only the calls that were in flight).

When the stop comes from a signal (:func:`stop_on_signal`, the CLI's handler; :func:`stop_for_signal`, called by
a flow whose wait Prefect's own SIGTERM handler interrupted), a watchdog thread makes sure the process ends:
:data:`HARD_EXIT_AFTER_S` seconds later it kills every process this one started (walking the process tree)
and exits with ``128 + signal`` (143 for SIGTERM, 130 for SIGINT), whatever is still waiting (an HTTP
request in flight); once the main thread is done the process exits at once, without joining the threads of
items left running. A second signal exits at once.

Only the standard library and psutil here (no Prefect).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TypeVar

from agentcausal.exceptions import AgentCausalError

__all__ = [
    "HARD_EXIT_AFTER_S",
    "RunStopped",
    "StopSignal",
    "on_stop",
    "request_stop",
    "stop_requested",
    "stop_signal",
    "reset",
    "exit_status",
    "kill_descendants",
    "hard_exit",
    "stop_on_signal",
    "stop_for_signal",
]

#: seconds between the first signal and the forced exit (the issue asks for an exit within 10 s)
HARD_EXIT_AFTER_S = 6.0
#: seconds :func:`request_stop` waits for the stop hooks
HOOKS_WAIT_S = 3.0


class RunStopped(AgentCausalError):
    """The run was asked to stop (a signal or a cancellation); raised where work would otherwise wait or start.

    Never a content failure: nothing is stored for the job, and the next run (``--resume``) computes it.
    """

    def __init__(self, what: str = "run") -> None:
        self.what = what
        super().__init__(f"{what} stopped on request")


class StopSignal(KeyboardInterrupt):
    """Raised in the main thread by :func:`stop_on_signal`'s handler: the command unwinds as from Ctrl-C
    (a Prefect flow run ends Crashed, locks are released). ``signum``: the signal."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


_lock = threading.RLock()
_event = threading.Event()
_signal: int | None = None
_hooks: list[Callable[[], object]] = []
_watchdog: threading.Thread | None = None


H = TypeVar("H", bound=Callable[[], object])


def on_stop(hook: H) -> H:
    """Register ``hook`` to run (once per stop, on the thread that requests it) when a stop is requested;
    returns it (usable as a decorator). A hook registered twice runs once."""
    with _lock:
        if hook not in _hooks:
            _hooks.append(hook)
    return hook


def stop_requested() -> bool:
    """Whether a stop was requested in this process."""
    return _event.is_set()


def stop_signal() -> int | None:
    """The signal that asked for the stop (``signal.SIGTERM``, ``signal.SIGINT``), or None."""
    return _signal


def exit_status(signum: int | None = None) -> int:
    """The exit status of a run stopped by ``signum`` (default: the stop's signal, else SIGINT): 128 + signal.

    Examples
    --------
    >>> exit_status(signal.SIGTERM), exit_status(signal.SIGINT)
    (143, 130)
    """
    sig = signum if signum is not None else (_signal or signal.SIGINT)
    return 128 + int(sig)


def request_stop(signum: int | None = None) -> bool:
    """Ask this process's run to stop; run the stop hooks. Returns True the first time, False after.

    Parameters
    ----------
    signum : the signal that asked (kept for :func:`exit_status`), or None (a cancellation from code)
    """
    global _signal
    with _lock:
        first = not _event.is_set()
        if first:
            _signal = signum
            _event.set()
            hooks = list(_hooks)
    if first:  # on a thread of their own: a signal handler may interrupt the main thread inside a hook's lock

        def run_hooks() -> None:
            for hook in hooks:
                with contextlib.suppress(Exception):  # a hook never keeps the others from running
                    hook()

        t = threading.Thread(target=run_hooks, name="stop-hooks", daemon=True)
        t.start()
        t.join(HOOKS_WAIT_S)
    return first


def reset() -> None:
    """Clear the stop flag (a new run in the same process; tests)."""
    global _signal
    with _lock:
        _event.clear()
        _signal = None


def kill_descendants(timeout_s: float = 2.0) -> list[int]:
    """SIGKILL every live descendant of this process (its process tree, children first listed by psutil);
    returns their pids. Processes that have left the tree (a double fork) are not found."""
    import psutil

    try:
        kids = psutil.Process().children(recursive=True)
    except psutil.Error:
        return []
    for p in kids:
        with contextlib.suppress(psutil.Error):
            p.kill()
    with contextlib.suppress(psutil.Error):
        psutil.wait_procs(kids, timeout=timeout_s)
    return [p.pid for p in kids]


def hard_exit(status: int, message: str | None = None) -> None:
    """Kill this process's descendants, print ``message`` (one line, stderr), flush and ``os._exit(status)``."""
    with contextlib.suppress(Exception):
        kill_descendants()
    with contextlib.suppress(Exception):
        if message:
            print(message, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(status)


def _arm_watchdog(status: int, message: str | None, after_s: float) -> None:
    global _watchdog
    with _lock:
        if _watchdog is not None:
            return

        def watch() -> None:
            time.sleep(after_s)
            hard_exit(status, message)

        _watchdog = threading.Thread(target=watch, name="stop-watchdog", daemon=True)
        _watchdog.start()
        # once the main thread is done, exit at once: the interpreter would join the threads of items left
        # running (an HTTP request in flight). Called before concurrent.futures' own join (registered after it).
        register = getattr(threading, "_register_atexit", None)
        if register is not None:
            with contextlib.suppress(RuntimeError):  # already shutting down
                register(hard_exit, status, None)


def _on_signal(signum: int, message: str | None, after_s: float) -> bool:
    """The first signal: arm the watchdog, then stop (True); a later one: exit now.

    The watchdog is armed before the stop hooks run: a hook that blocks (a lock the interrupted main thread
    holds) costs at most :data:`HOOKS_WAIT_S` of the watchdog's ``after_s``, never adds to it."""
    if stop_requested():
        hard_exit(exit_status(), message)
    _arm_watchdog(exit_status(signum), message, after_s)
    request_stop(signum)
    return True


@contextlib.contextmanager
def stop_on_signal(
    raise_: Callable[[int], BaseException],
    *,
    message: str | None = None,
    after_s: float = HARD_EXIT_AFTER_S,
    signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT),
) -> Iterator[None]:
    """While inside: the first of ``signals`` stops the run (:func:`request_stop`, the watchdog armed for
    ``after_s`` seconds) and raises ``raise_(signum)`` in the main thread; a second exits at once
    (:func:`hard_exit`, ``message`` printed). Outside the main thread it does nothing. The previous handlers
    come back on leaving. A signal ignored on entry (SIG_IGN) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        _on_signal(signum, message, after_s)
        raise raise_(signum)

    # a signal the process was started ignoring (SIGINT of a background job, nohup) stays ignored
    previous = {s: signal.signal(s, handler) for s in signals if signal.getsignal(s) != signal.SIG_IGN}
    try:
        yield
    finally:
        for s, h in previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(s, h)


def stop_for_signal(signum: int, *, message: str | None = None, after_s: float = HARD_EXIT_AFTER_S) -> None:
    """A signal reached the run some other way (Prefect's own SIGTERM handler raised its ``TerminationSignal``
    through the run's wait): stop the run (:func:`request_stop`) and arm the watchdog; no exit now. Calling it
    again adds nothing."""
    _arm_watchdog(exit_status(signum), message, after_s)  # first: the hooks' wait counts against it
    request_stop(signum)
