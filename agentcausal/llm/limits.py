"""The gateway's client calls: a client per endpoint, the concurrency limit per profile, the per-call timer,
the count of HTTP requests sent, and ``openai``'s errors as ours.

**Clients** (:class:`EndpointClients`, held by the gateway): one ``openai`` client per profile and
base URL (the embedded server started on first use, with its per-process key); a call holds a slot
of the profile's limit through the client's own retries and maps what is left of ``openai``'s
errors to :class:`~agentcausal.exceptions.EndpointUnreachableError` (timeouts, connection errors,
429, 5xx) or :class:`~agentcausal.exceptions.LLMCallError` (any other HTTP status).

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
import time
from collections.abc import Callable
from typing import Any, TypeVar

import openai

from agentcausal.exceptions import EndpointUnreachableError, LLMCallError
from agentcausal.llm import local
from agentcausal.llm.profiles import Profile, ProfileSet

__all__ = ["EndpointClients", "Timer", "count_request", "requests_sent", "semaphore"]

R = TypeVar("R")

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


class EndpointClients:
    """The ``openai`` clients of one gateway, one per profile and base URL, and the call through them.

    Parameters
    ----------
    profiles : ProfileSet, for the limits (a ``limit_group``'s size)
    max_retries : int, the client's retries of one request on 429, 5xx, timeouts and connection errors
    """

    def __init__(self, profiles: ProfileSet, max_retries: int) -> None:
        self.profiles = profiles
        self.max_retries = max_retries
        self._clients: dict[str, openai.OpenAI] = {}
        self._lock = threading.Lock()

    def client(self, profile: Profile) -> tuple[openai.OpenAI, str]:
        """The client of ``profile`` and its base URL (the embedded server started if it is not running).

        Raises MissingAPIKeyError (the profile's key variable unset), ModelFileError (the embedded model).
        """
        base_url = local.ensure_embedded_server(profile) if profile.is_embedded else profile.base_url
        key = f"{profile.name}|{base_url}"
        with self._lock:
            if key not in self._clients:
                if profile.is_embedded:
                    api_key = local.embedded_api_key(base_url)  # the server's per-process key
                else:
                    api_key = profile.api_key()
                self._clients[key] = openai.OpenAI(
                    base_url=base_url,
                    api_key=api_key,
                    timeout=profile.timeout_s,
                    max_retries=self.max_retries,
                    http_client=openai.DefaultHttpxClient(event_hooks={"request": [count_request]}),
                )
            return self._clients[key], base_url

    def call(self, stage: str, profile: Profile, fn: Callable[[openai.OpenAI], R], timer: Timer) -> R:
        """Run ``fn`` on the profile's client holding a slot of the profile's limit; map openai errors to ours.

        The ``openai`` client has already retried (with backoff and jitter) when
        an error reaches here, so a retryable error means the endpoint stayed
        unavailable. The slot is held through those retries (so requests in
        flight never exceed the limit) and released however the call ends;
        ``timer`` gets the wait for the slot, the seconds in the call and the requests sent.

        Raises
        ------
        EndpointUnreachableError
            Timed out, connection failed, 429 or 5xx after the retries.
        LLMCallError
            Any other HTTP error status.
        """
        client, base_url = self.client(profile)
        sem = semaphore(self.profiles, profile, base_url)
        t0 = time.perf_counter()
        sem.acquire()
        t1 = time.perf_counter()
        timer.wait += t1 - t0
        sent = requests_sent()
        try:
            return fn(client)
        except openai.APITimeoutError as exc:
            cause = f"stage {stage!r}: timed out after {profile.timeout_s:g} s ({self.max_retries} retries)"
            raise EndpointUnreachableError(profile.name, base_url, cause) from exc
        except openai.APIConnectionError as exc:
            cause = f"stage {stage!r}: connection failed ({self.max_retries} retries): {exc}"
            raise EndpointUnreachableError(profile.name, base_url, cause) from exc
        except (openai.RateLimitError, openai.InternalServerError) as exc:
            cause = f"stage {stage!r}: HTTP {exc.status_code} ({self.max_retries} retries): {str(exc)[:300]}"
            raise EndpointUnreachableError(profile.name, base_url, cause) from exc
        except openai.APIStatusError as exc:
            raise LLMCallError(profile.name, stage, exc.status_code, str(exc)[:500]) from exc
        finally:
            sem.release()
            timer.request += time.perf_counter() - t1
            timer.requests += requests_sent() - sent

    def close(self) -> None:
        """Close every client's HTTP connections."""
        for c in self._clients.values():
            c.close()
        self._clients.clear()
