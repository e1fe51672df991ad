"""The gateway's concurrency limit per profile, its per-call timer and its count of HTTP requests sent.

**Concurrency limit** per profile, in-process: a semaphore sized by the profile's
``max_concurrency`` (:func:`semaphore`); profiles naming one ``limit_group`` share one
semaphore of the group's size. The gateway holds a slot for one client call, its retries
and backoff included, and releases it however the call ends. Prefect's global concurrency
limits cost about 1 s per acquisition here: too slow per call.

**Requests sent**: an httpx request hook (:func:`count_request`) counts every HTTP request
a thread sends, the ``openai`` client's own retries included (:func:`requests_sent`).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from agentcausal.llm.profiles import Profile, ProfileSet

__all__ = ["Timer", "count_request", "requests_sent", "semaphore"]

_SEMAPHORES: dict[tuple, threading.BoundedSemaphore] = {}
_SEM_LOCK = threading.Lock()


def semaphore(profiles: ProfileSet, profile: Profile, base_url: str) -> threading.BoundedSemaphore:
    """The process-wide slot pool of a profile, or of its ``limit_group``.

    Keyed by the profile (name, URL, model, size), so two profiles on one
    endpoint each keep their own limit; profiles naming one ``limit_group``
    share a pool of the group's size (:meth:`ProfileSet.limit_group_size`).
    """
    if profile.limit_group is not None:
        size = profiles.limit_group_size(profile.limit_group)
        key: tuple = ("group", profile.limit_group, size)
    else:
        size = profile.max_concurrency
        key = ("profile", profile.name, base_url, profile.model, size)
    with _SEM_LOCK:
        if key not in _SEMAPHORES:
            _SEMAPHORES[key] = threading.BoundedSemaphore(size)
        return _SEMAPHORES[key]


@dataclasses.dataclass
class Timer:
    """Seconds one logical call spent waiting (for a slot or an identical call in flight) and in requests."""

    wait: float = 0.0
    request: float = 0.0
    requests: int = 0  # HTTP requests sent, the client's own retries included


_SENT = threading.local()  # HTTP requests sent by this thread (an httpx request hook counts them)


def count_request(_request: Any) -> None:
    """The httpx request hook: one more request sent by this thread."""
    _SENT.n = getattr(_SENT, "n", 0) + 1


def requests_sent() -> int:
    """HTTP requests this thread has sent so far (through clients carrying :func:`count_request`)."""
    return getattr(_SENT, "n", 0)
