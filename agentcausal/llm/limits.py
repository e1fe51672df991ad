"""The gateway's requests: an endpoint per profile, the concurrency limit per profile, the per-call timer,
the count of HTTP requests sent, and the transport's errors as ours.

**Endpoints** (:class:`EndpointClients`, held by the gateway): one :class:`Endpoint` per profile and base
URL (the embedded server started on first use, with its per-process key): a urllib3 connection pool
that POSTs JSON with the bearer key and retries as the ``openai`` client does (:class:`RetryPolicy`). A
request holds a slot of the profile's limit through its retries; what is left of its errors becomes
:class:`~agentcausal.exceptions.EndpointUnreachableError` (timeouts, connection errors, 408, 409, 429,
5xx) or :class:`~agentcausal.exceptions.LLMCallError` (any other HTTP status). The ``openai`` client
cost about 0.5 ms of CPU more per request in its request and response models (bench/README.md);
the wire format is the same JSON.

**Concurrency limit** per profile, in-process: a semaphore sized by the profile's
``max_concurrency`` (:func:`semaphore`); profiles naming one ``limit_group`` share one
semaphore of the group's size. The gateway holds a slot for one client call, its retries
and backoff included, and releases it however the call ends. Prefect's global concurrency
limits cost about 1 s per acquisition here: too slow per call.

**Requests sent**: every attempt an endpoint sends is counted per thread (:func:`count_request`),
retries included (:func:`requests_sent`).
"""

from __future__ import annotations

import dataclasses
import json
import random
import threading
import time
from typing import Any

import orjson
import urllib3
from urllib3.exceptions import InvalidHeader, MaxRetryError, NewConnectionError
from urllib3.response import BaseHTTPResponse
from urllib3.util import Retry

from agentcausal.exceptions import EndpointUnreachableError, LLMCallError
from agentcausal.llm import local
from agentcausal.llm.profiles import Profile, ProfileSet

__all__ = [
    "Endpoint",
    "EndpointClients",
    "HTTPStatusError",
    "RETRIED_STATUSES",
    "RetryPolicy",
    "Timer",
    "count_request",
    "requests_sent",
    "retry_policy",
    "semaphore",
]

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


_SENT = threading.local()  # HTTP requests sent by this thread, retries included (see :func:`count_request`)


def count_request(n: int = 1) -> None:
    """``n`` more HTTP requests sent by this thread (an endpoint counts each attempt it sends)."""
    _SENT.n = getattr(_SENT, "n", 0) + n


def requests_sent() -> int:
    """HTTP requests this thread has sent so far through any :class:`Endpoint`."""
    return getattr(_SENT, "n", 0)


#: HTTP statuses retried (as the ``openai`` client retries them)
RETRIED_STATUSES = frozenset({408, 409, 429, *range(500, 600)})


class RetryPolicy(Retry):
    """The ``openai`` client's retry policy on urllib3's :class:`~urllib3.util.Retry`.

    Retried: connection errors, timeouts and HTTP 408, 409, 429 and 5xx, on POST too. The wait before retry k
    (1, 2 ...) is the reply's ``retry-after-ms`` or ``Retry-After`` when it says 0-60 s, else 0.5 s x 2^(k-1),
    at most 8 s, less up to 25 % jitter (the ``openai`` client's own numbers). Each retry that goes out is
    counted (:func:`count_request`).
    """

    def get_backoff_time(self) -> float:
        k = len(self.history)
        if k == 0:
            return 0.0
        return float(min(0.5 * 2.0 ** (k - 1), 8.0) * (1 - 0.25 * random.random()))

    def get_retry_after(self, response: BaseHTTPResponse) -> float | None:
        ms = response.headers.get("retry-after-ms")
        try:
            wait = float(ms) / 1000 if ms is not None else super().get_retry_after(response)
        except (ValueError, InvalidHeader):
            wait = None
        return wait if wait is not None and 0 <= wait <= 60 else None

    def increment(self, *args: Any, **kwargs: Any) -> "RetryPolicy":
        new = super().increment(*args, **kwargs)  # raises MaxRetryError when no retry is left
        count_request()  # the retry it allows goes out
        return new


def retry_policy(max_retries: int) -> RetryPolicy:
    """``max_retries`` retries of one request (see :class:`RetryPolicy`); the last reply is returned, not raised."""
    return RetryPolicy(
        total=max_retries,
        redirect=0,
        allowed_methods=None,  # POST too: a completion has no side effect to repeat
        status_forcelist=RETRIED_STATUSES,
        raise_on_status=False,
        respect_retry_after_header=True,
    )


@dataclasses.dataclass
class Endpoint:
    """One OpenAI-compatible endpoint: a urllib3 connection pool, its bearer key, timeout and retry policy.

    Attributes
    ----------
    base_url : str, e.g. ``http://127.0.0.1:8000/v1``
    api_key : str, sent as ``Authorization: Bearer <key>``
    timeout_s : float, connect and read timeout of one request
    max_retries : int, retries of one request (see :class:`RetryPolicy`)
    pool_size : int, connections kept open (the profile's limit: more are never in flight)
    """

    base_url: str
    api_key: str
    timeout_s: float
    max_retries: int
    pool_size: int = 10
    pool: urllib3.HTTPConnectionPool = dataclasses.field(init=False, repr=False)
    _prefix: str = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        self._prefix = urllib3.util.parse_url(self.base_url).path or ""
        self.pool = urllib3.connection_from_url(
            self.base_url,
            maxsize=max(1, self.pool_size),
            timeout=urllib3.Timeout(connect=self.timeout_s, read=self.timeout_s),
            retries=retry_policy(self.max_retries),
            headers={
                "Authorization": f"Bearer {self.api_key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )

    def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` as JSON to ``base_url + path``, retried by the policy; the reply's JSON object.

        Raises
        ------
        urllib3.exceptions.MaxRetryError
            No reply after the retries (``reason``: the last timeout or connection error).
        HTTPStatusError
            The last reply's status is 400 or above (after the retries for a retried status).
        ValueError
            The reply is not a JSON object.
        """
        count_request()
        r = self.pool.urlopen("POST", self._prefix + path, body=_json_body(body))
        if r.status >= 400:
            raise HTTPStatusError(r.status, r.data.decode("utf-8", "replace"))
        data = _json_reply(r.data)
        if not isinstance(data, dict):
            raise ValueError(f"reply is {type(data).__name__}, not a JSON object")
        return data

    def close(self) -> None:
        self.pool.close()


def _json_body(body: dict[str, Any]) -> bytes:
    """``body`` as JSON bytes: orjson (UTF-8, about a tenth of ``json.dumps``' CPU for a 9 KB prompt), or
    ``json.dumps`` where orjson refuses the value (a lone surrogate in a text, a key that is not a string)."""
    try:
        return orjson.dumps(body)
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(body).encode()


def _json_reply(raw: bytes) -> Any:
    """A reply's JSON: orjson, or ``json.loads`` where orjson refuses it (``NaN``, ``Infinity``). Raises ValueError."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


class HTTPStatusError(Exception):
    """An endpoint's reply with status >= 400: ``status`` and the reply ``body`` (text)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"Error code: {status} - {body}")
        self.status = status
        self.body = body


class EndpointClients:
    """The endpoints of one gateway, one per profile and base URL, and the requests through them.

    Parameters
    ----------
    profiles : ProfileSet, for the limits (a ``limit_group``'s size)
    max_retries : int, retries of one request on 408, 409, 429, 5xx, timeouts and connection errors
    """

    def __init__(self, profiles: ProfileSet, max_retries: int) -> None:
        self.profiles = profiles
        self.max_retries = max_retries
        self._endpoints: dict[str, Endpoint] = {}
        self._lock = threading.Lock()

    def endpoint(self, profile: Profile) -> Endpoint:
        """The endpoint of ``profile`` (the embedded server started if it is not running).

        Raises MissingAPIKeyError (the profile's key variable unset), ModelFileError (the embedded model).
        """
        base_url = local.ensure_embedded_server(profile) if profile.is_embedded else profile.base_url
        key = f"{profile.name}|{base_url}"
        with self._lock:
            if key not in self._endpoints:
                if profile.is_embedded:
                    api_key = local.embedded_api_key(base_url)  # the server's per-process key
                else:
                    api_key = profile.api_key()
                size = (
                    self.profiles.limit_group_size(profile.limit_group)
                    if profile.limit_group is not None
                    else profile.max_concurrency
                )
                self._endpoints[key] = Endpoint(base_url, api_key, profile.timeout_s, self.max_retries, size)
            return self._endpoints[key]

    def post(self, stage: str, profile: Profile, path: str, body: dict[str, Any], timer: Timer) -> dict[str, Any]:
        """POST ``body`` to the profile's endpoint holding a slot of the profile's limit; its errors as ours.

        The endpoint has already retried (with backoff and jitter) when an error reaches here, so a
        retryable error means the endpoint stayed unavailable. The slot is held through those retries (so
        requests in flight never exceed the limit) and released however the call ends; ``timer`` gets the
        wait for the slot, the seconds in the call and the requests sent.

        Raises
        ------
        EndpointUnreachableError
            Timed out, connection failed, 408, 409, 429 or 5xx after the retries.
        LLMCallError
            Any other HTTP error status, or a reply that is not a JSON object.
        """
        ep = self.endpoint(profile)
        sem = semaphore(self.profiles, profile, ep.base_url)
        t0 = time.perf_counter()
        sem.acquire()
        t1 = time.perf_counter()
        timer.wait += t1 - t0
        sent = requests_sent()
        try:
            return ep.post_json(path, body)
        except MaxRetryError as exc:
            err = exc.reason
            timed_out = isinstance(err, TimeoutError | urllib3.exceptions.TimeoutError)
            if timed_out and not isinstance(err, NewConnectionError):  # a refused connection is a subclass too
                cause = f"stage {stage!r}: timed out after {profile.timeout_s:g} s ({self.max_retries} retries)"
            else:
                cause = f"stage {stage!r}: connection failed ({self.max_retries} retries): {err}"
            raise EndpointUnreachableError(profile.name, ep.base_url, cause) from exc
        except HTTPStatusError as exc:
            if exc.status in RETRIED_STATUSES:
                cause = f"stage {stage!r}: HTTP {exc.status} ({self.max_retries} retries): {str(exc)[:300]}"
                raise EndpointUnreachableError(profile.name, ep.base_url, cause) from exc
            raise LLMCallError(profile.name, stage, exc.status, str(exc)[:500]) from exc
        except ValueError as exc:
            raise LLMCallError(profile.name, stage, None, f"reply is not JSON: {str(exc)[:300]}") from exc
        finally:
            sem.release()
            timer.request += time.perf_counter() - t1
            timer.requests += requests_sent() - sent

    def close(self) -> None:
        """Close every endpoint's HTTP connections."""
        for e in self._endpoints.values():
            e.close()
        self._endpoints.clear()
