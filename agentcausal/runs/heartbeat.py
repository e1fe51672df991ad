"""A heartbeat for runs nobody watches on a terminal: one line every ``interval`` seconds, on stderr.

Without a terminal (a scheduled run, ``nohup``, CI) a progress bar is not shown and a long item (a DCFA
trace, a MAC debate) can run for minutes without a line. :class:`Heartbeat` prints, every ``interval``
seconds whether or not an item finished::

    attribute: heartbeat: 3/10 items done (30%), 4m10s; 45 LLM calls, 12,345 tokens so far

The calls and tokens are those of the jobs finished in this run (:class:`UsageMeter`: fed by the engine's
jobs when they run in this process; on Dask, by the flow as each chunk comes back, from the usage of the records
it stored) plus what this process's gateway counts for the items still in flight (on Dask the workers' calls in
flight are not seen: the line counts finished chunks).

The interval is ``$AGENTCAUSAL_HEARTBEAT_S`` (``--heartbeat SECONDS``; default :data:`DEFAULT_HEARTBEAT_S`;
0 turns it off).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, TextIO, TypeVar

__all__ = ["DEFAULT_HEARTBEAT_S", "HEARTBEAT_ENV", "heartbeat_interval", "UsageMeter", "meter_for", "Heartbeat"]

#: seconds between heartbeat lines by default
DEFAULT_HEARTBEAT_S = 30.0
#: the environment variable holding the interval (seconds; 0 = off)
HEARTBEAT_ENV = "AGENTCAUSAL_HEARTBEAT_S"

R = TypeVar("R")


def heartbeat_interval() -> float:
    """Seconds between heartbeat lines: ``$AGENTCAUSAL_HEARTBEAT_S`` (a number >= 0), else the default."""
    raw = os.environ.get(HEARTBEAT_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_HEARTBEAT_S
    except ValueError:
        return DEFAULT_HEARTBEAT_S
    return value if value >= 0 else DEFAULT_HEARTBEAT_S


class UsageMeter:
    """LLM calls and tokens of the jobs one process finished in one run (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.tokens = 0

    def add(self, usage: Mapping[str, Mapping[str, Any]]) -> None:
        """Add a record's ``usage`` (stage -> totals with ``calls``, ``prompt_tokens``, ``completion_tokens``)."""
        calls = sum(int(u.get("calls", 0) or 0) for u in usage.values())
        tokens = sum(
            int(u.get("prompt_tokens", 0) or 0) + int(u.get("completion_tokens", 0) or 0) for u in usage.values()
        )
        with self._lock:
            self.calls += calls
            self.tokens += tokens

    def counted(self, fn: Callable[[], R]) -> Callable[[], R]:
        """``fn`` (a job returning a record) whose record's usage is added when it returns."""

        def run() -> R:
            rec = fn()
            usage = getattr(rec, "usage", None)
            if isinstance(usage, Mapping) and not getattr(rec, "reused", False):
                self.add(usage)
            return rec

        return run


_meters: OrderedDict[tuple[str, float], UsageMeter] = OrderedDict()
_meters_lock = threading.Lock()


def meter_for(kind: str, started: float) -> UsageMeter:
    """The meter of one run in this process (``kind`` and its start time identify the run); the last 16 kept."""
    with _meters_lock:
        key = (kind, started)
        if key not in _meters:
            _meters[key] = UsageMeter()
            while len(_meters) > 16:
                _meters.popitem(last=False)
        return _meters[key]


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class Heartbeat:
    """A daemon thread printing a line every ``interval`` seconds until :meth:`stop`.

    Parameters
    ----------
    label : str, the line's prefix (``attribute``, ``discover``)
    total : int, items of the run
    done : callable returning the items done so far
    meter : UsageMeter or None, calls and tokens of finished jobs
    live : callable returning (calls, tokens) of the items in flight, or None
    interval : float, seconds (default :func:`heartbeat_interval`); 0 = no thread
    stream : where to print (default ``sys.stderr``)
    """

    def __init__(
        self,
        label: str,
        total: int,
        done: Callable[[], int],
        *,
        meter: UsageMeter | None = None,
        live: Callable[[], tuple[int, int]] | None = None,
        interval: float | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.label, self.total, self.done, self.meter, self.live = label, int(total), done, meter, live
        self.interval = heartbeat_interval() if interval is None else float(interval)
        self.stream = stream
        self.start_time = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self) -> str:
        """The heartbeat line now."""
        done = self.done()
        pct = f" ({100 * done / self.total:.0f}%)" if self.total else ""
        text = (
            f"{self.label}: heartbeat: {done}/{self.total} items done{pct}, "
            f"{_duration(time.monotonic() - self.start_time)}"
        )
        calls = tokens = 0
        if self.meter is not None:
            calls, tokens = self.meter.calls, self.meter.tokens
        if self.live is not None:
            try:
                c, t = self.live()
                calls, tokens = calls + c, tokens + t
            except Exception:  # a heartbeat never fails the run
                pass
        if self.meter is not None or self.live is not None:
            text += f"; {calls:,} LLM calls, {tokens:,} tokens so far"
        return text

    def start(self) -> "Heartbeat":
        if self.interval > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
            self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            print(self.line(), file=self.stream or sys.stderr, flush=True)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
