"""The run's circuit breaker: stop sending work to an endpoint that is dead.

A job fails "on a dead endpoint" when one of its LLM requests is given up on after the client's own
retries because the endpoint refused the connection, timed out or answered 5xx
(:class:`~agentcausal.exceptions.EndpointUnreachableError`, or :class:`~agentcausal.exceptions.LLMCallError`
with a 5xx status). After ``limit`` such failures in a row on one endpoint (no job finishing in between)
the breaker opens: jobs not yet started of every method routed to that endpoint's profile raise
:class:`~agentcausal.exceptions.EndpointDownError` at once instead of calling it, the engine submits no
more of their chunks, and every such job left is recorded with status ``not_run`` (never stored: the
next run computes it) and the message naming the endpoint. Methods that do not use the profile
(statistical discovery, another routed endpoint) go on. A job that finishes (whatever its status)
closes the count of every endpoint, since its requests were answered.

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
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from agentcausal.exceptions import EndpointDownError, EndpointUnreachableError, LLMCallError
from agentcausal.settings import DEFAULT_BREAKER_AFTER

__all__ = ["DEFAULT_BREAKER_AFTER", "CircuitBreaker", "breaker_for", "dead_endpoint", "method_profiles"]

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


def method_profiles(plan: Any, method: str) -> set[str] | None:
    """The profiles a plan's method is routed to (its ``stages``' ``profile:model``); None when the plan does not say.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> method_profiles(NS(methods={"m": NS(stages={"baseline": "fake:fake-model"})}), "m")
    {'fake'}
    """
    spec = (getattr(plan, "methods", None) or {}).get(method)
    stages = getattr(spec, "stages", None)
    return None if stages is None else {str(v).split(":", 1)[0] for v in stages.values()}


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
                    self.error = EndpointDownError(
                        endpoint, n, str(getattr(exc, "cause", None) or exc), getattr(exc, "profile", None)
                    )
            return self.error is not None

    def trip(self, error: EndpointDownError) -> None:
        """Open the breaker with another process's verdict (a Dask worker's)."""
        with self._lock:
            if self.error is None:
                self.error = error

    def blocks(self, profiles: Collection[str] | None) -> bool:
        """Whether a job routed to ``profiles`` (None: not known) may not start: the breaker is open on one of them."""
        e = self.error
        return e is not None and (profiles is None or e.profile is None or e.profile in profiles)

    def _fresh(self) -> EndpointDownError:
        e = self.error
        assert e is not None
        return EndpointDownError(e.endpoint, e.failures, e.cause, e.profile)  # one object per raise (threads)

    def guard(self, fn: Callable[[], R], profiles: Collection[str] | None = None) -> Callable[[], R]:
        """``fn`` (a job routed to ``profiles``; None: not known) run only while the breaker lets it, its outcome
        counted.

        Raises
        ------
        EndpointDownError
            When the breaker is open on one of ``profiles`` before the job starts, or the job's failure opened it.
        """

        def guarded() -> R:
            if self.blocks(profiles):
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
