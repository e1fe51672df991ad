"""The gateway's side of the reply cache: reads, writes, dropped records and one paid call per prompt.

:class:`GatewayCache` is a mixin of :class:`~agentcausal.llm.gateway.Gateway`; the store itself
is :class:`~agentcausal.llm.reply_cache.ReplyCache` (default ``cache/llm/``), keyed by
:func:`~agentcausal.llm.dialect.cache_key`.

* **What is stored**: only complete, valid replies (diskcache writes are atomic), so a crash
  leaves nothing half-written. Records are JSON, never unpickled, each with a checksum of its
  content and key (and an HMAC with a cache key set, :mod:`agentcausal.integrity`); one that fails
  its check is dropped, counted (:attr:`GatewayCache.cache_dropped`, :meth:`GatewayCache.cache_notice`),
  logged and asked again; a damaged ``cache.db`` heals (moved aside, its readable records kept:
  :class:`~agentcausal.llm.reply_cache.ReplyCache`). ``refresh=True`` bypasses reads of earlier
  entries but still writes (entries this gateway wrote stay readable).
* **One paid call per prompt** (:meth:`GatewayCache._single_flight`): identical requests in flight
  (chat, structured and embedding batches) wait for the first, across threads (a lock per cache
  key, shared by every gateway of the process on one cache folder) and processes sharing the
  cache folder (a POSIX record lock per key on ``<cache>/locks/keys.lock``: one system call when
  nobody else holds the key); after the wait the cache is read again. The wait counts as wait time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from agentcausal.llm.limits import Timer
from agentcausal.llm.reply_cache import CorruptRecord, ReplyCache, decode_vector

__all__ = ["GatewayCache"]


class GatewayCache:
    """Reply-cache methods of :class:`~agentcausal.llm.gateway.Gateway`, which sets the attributes below.

    Attributes
    ----------
    refresh : bool, read only entries this gateway wrote
    _cache : ReplyCache or None (no cache)
    _lock : lock over ``_fresh`` (and the gateway's clients)
    _flights_lock, _flights : the process's table of keys in flight for this cache folder
        (:func:`~agentcausal.llm.reply_cache.thread_flights`)
    _fresh : keys written by this gateway
    """

    refresh: bool
    _cache: ReplyCache | None
    _lock: threading.Lock
    _flights_lock: threading.Lock
    _flights: dict[str, list]
    _fresh: set[str]

    @contextlib.contextmanager
    def _single_flight(self, key: str, timer: Timer) -> Iterator[None]:
        """Serialise identical requests: a second caller waits for the first, then reads the cache.

        Threads of this process (every gateway on this cache folder) wait on a
        lock per key; processes sharing the cache folder wait on a record lock
        per key (:meth:`ReplyCache.process_lock`; the OS releases it if the holder
        dies). Without it, two methods or two runs sending the same prompt at the
        same moment would both miss the cache and pay twice. Time spent here
        counts as wait time.
        """
        t0 = time.perf_counter()
        with self._flights_lock:
            entry = self._flights.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0], self._cache.process_lock(key) if self._cache is not None else contextlib.nullcontext():
                timer.wait += time.perf_counter() - t0
                yield
        finally:
            with self._flights_lock:
                entry[1] -= 1
                if entry[1] == 0:
                    self._flights.pop(key, None)

    def _cache_get(self, key: str) -> dict[str, Any] | None:
        """The checked cached value (a JSON object), or None; under ``refresh`` only entries this gateway wrote."""
        if self._cache is None or (self.refresh and key not in self._fresh):
            return None
        return self._cache.get(key)

    def _cached_text(self, key: str) -> str | None:
        """The reply text cached under ``key``, or None (a record without text is dropped as corrupt)."""
        hit = self._cache_get(key)
        if hit is None or self._cache is None:  # a hit comes from the cache
            return None
        if not isinstance(hit.get("text"), str):
            self._cache.drop(key, "a reply record without text")
            return None
        return hit["text"]

    def _cached_vector(self, key: str) -> np.ndarray | None:
        """The embedding cached under ``key``, or None (a record that is no vector is dropped as corrupt)."""
        hit = self._cache_get(key)
        if hit is None or self._cache is None:  # a hit comes from the cache
            return None
        try:
            return decode_vector(hit)
        except CorruptRecord as exc:
            self._cache.drop(key, str(exc))
            return None

    @property
    def cache_dropped(self) -> int:
        """Cache records that failed their check (bit flip, torn file, pickled or misfiled entry, no valid MAC
        with a cache key), dropped and asked again since this gateway opened its cache; 0 without a cache."""
        return self._cache.dropped if self._cache is not None else 0

    def cache_notice(self) -> str | None:
        """One console line when records were dropped (how many, why, where), else None.

        Example: ``LLM reply cache cache/llm/cache.db: 2 records failed their check and were
        dropped and asked again (checksum mismatch: 1, undecodable (error): 1)``.
        """
        if not self.cache_dropped or self._cache is None:  # no cache: nothing dropped
            return None
        why = ", ".join(f"{r}: {n}" for r, n in self._cache.drop_reasons.most_common())
        return (
            f"LLM reply cache {self._cache.path}: {self.cache_dropped} record(s) failed their check and were "
            f"dropped and asked again ({why})"
        )

    def _run_hit(self, key: str) -> int:
        """1 when a cache hit was served by an entry this gateway wrote (an identical call earlier
        in this run, or one in flight that this call waited for), else 0: such a hit is not reuse
        of an earlier run's result."""
        with self._lock:
            return int(key in self._fresh)

    def _cache_set(self, key: str, value: dict[str, Any]) -> None:
        if self._cache is not None:
            self._cache.set(key, value)
            with self._lock:
                self._fresh.add(key)
