"""The run's circuit breaker: stop sending work to an endpoint that is dead.

A job fails "on a dead endpoint" when one of its LLM requests is given up on after the client's own
retries because the endpoint refused the connection, timed out or answered 5xx
(:class:`~agentcausal.exceptions.EndpointUnreachableError`, or :class:`~agentcausal.exceptions.LLMCallError`
with a 5xx status). After ``limit`` such failures in a row on one endpoint (no job finishing in between)
the breaker opens: jobs not yet started raise :class:`~agentcausal.exceptions.EndpointDownError` at once
instead of calling the endpoint, the engine submits no more chunks, and every job left is recorded with
status ``not_run`` (never stored: the next run computes it) and the message naming the endpoint. A job
that finishes (whatever its status) closes the count of every endpoint, since its requests were answered.

``limit`` is :attr:`agentcausal.settings.RunSettings.breaker_after` (``--breaker-after``,
``$AGENTCAUSAL_BREAKER_AFTER``; default :data:`DEFAULT_BREAKER_AFTER`; 0 turns the breaker off). The
default is chosen so that one item pool's worth of jobs in flight when a server goes down (4 to 8 on the
shipped profiles) opens it, while a single flaky request never does: each counted failure has already
survived the client's retries.

One breaker per run and process (:func:`breaker_for`): the thread runner's tasks share the
orchestrator's; on Dask each worker process has its own, and the engine opens the orchestrator's when a
chunk comes back with :class:`~agentcausal.exceptions.EndpointDownError`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from agentcausal.exceptions import EndpointDownError, EndpointUnreachableError, LLMCallError
from agentcausal.settings import DEFAULT_BREAKER_AFTER

__all__ = ["DEFAULT_BREAKER_AFTER", "CircuitBreaker", "breaker_for", "dead_endpoint"]

R = TypeVar("R")


def dead_endpoint(exc: BaseException) -> str | None:
    """The endpoint ``exc`` says is dead (``profile at URL``), or None for any other failure.

    Examples
    --------
    >>> dead_endpoint(EndpointUnreachableError("fake", "http://h:1/v1", "refused"))
    'fake at http://h:1/v1'
    >>> dead_endpoint(LLMCallError("fake", "baseline", 503, "busy")), dead_endpoint(LLMCallError("f", "s", 401, "x"))
    ("profile 'fake'", None)
    """
    if isinstance(exc, EndpointUnreachableError):
        return f"{exc.profile} at {exc.base_url}"
    if isinstance(exc, LLMCallError) and exc.status is not None and exc.status >= 500:
        return f"profile {exc.profile!r}"
    return None


class CircuitBreaker:
    """Counts consecutive dead-endpoint failures of a run's jobs; opens at ``limit`` (0: never).

    Thread-safe. :meth:`guard` wraps a job; :attr:`error` is the :class:`EndpointDownError` once open.

    Examples
    --------
    >>> b = CircuitBreaker(2)
    >>> dead = EndpointUnreachableError("p", "http://h/v1", "refused")
    >>> for _ in range(2):
    ...     _ = b.failure(dead)
    >>> b.is_open, b.error.endpoint
    (True, 'p at http://h/v1')
    """

    def __init__(self, limit: int) -> None:
        self.limit = int(limit)
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self.error: EndpointDownError | None = None

    @property
    def is_open(self) -> bool:
        return self.error is not None

    def success(self) -> None:
        """A job finished: its requests were answered, so no endpoint is failing in a row."""
        with self._lock:
            self._counts.clear()

    def failure(self, exc: BaseException) -> bool:
        """Count a job's failure; True when it opened (or found open) the breaker."""
        endpoint = dead_endpoint(exc)
        with self._lock:
            if endpoint is not None and self.limit > 0 and self.error is None:
                n = self._counts[endpoint] = self._counts.get(endpoint, 0) + 1
                if n >= self.limit:
                    self.error = EndpointDownError(endpoint, n, str(getattr(exc, "cause", None) or exc))
            return self.error is not None

    def trip(self, error: EndpointDownError) -> None:
        """Open the breaker with another process's verdict (a Dask worker's)."""
        with self._lock:
            if self.error is None:
                self.error = error

    def _fresh(self) -> EndpointDownError:
        e = self.error
        assert e is not None
        return EndpointDownError(e.endpoint, e.failures, e.cause)  # one object per raise (threads)

    def guard(self, fn: Callable[[], R]) -> Callable[[], R]:
        """``fn`` run only while the breaker is closed, its outcome counted.

        Raises
        ------
        EndpointDownError
            When the breaker is open before the job starts, or the job's failure opened it.
        """
        def guarded() -> R:
            if self.error is not None:
                raise self._fresh()
            try:
                out = fn()
            except Exception as exc:
                if self.failure(exc) and not isinstance(exc, EndpointDownError):
                    raise self._fresh() from exc
                raise
            self.success()
            return out

        return guarded


_breakers: OrderedDict[tuple[str, float], CircuitBreaker] = OrderedDict()
_registry_lock = threading.Lock()


def breaker_for(kind: str, started: float, limit: int) -> CircuitBreaker:
    """The breaker of one run in this process (``kind`` and its start time identify the run); the last 16 kept."""
    with _registry_lock:
        key = (kind, started)
        if key not in _breakers:
            _breakers[key] = CircuitBreaker(limit)
            while len(_breakers) > 16:
                _breakers.popitem(last=False)
        return _breakers[key]
