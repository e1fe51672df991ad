"""The gateway's reply cache: checked reads and writes, entries written this run, one paid call per prompt.

:class:`GatewayCache` is held by :class:`~agentcausal.llm.gateway.Gateway` (``gw.cache``); the store on
disk is :class:`~agentcausal.llm.reply_cache.ReplyCache` (default ``cache/llm/``), keyed by
:func:`~agentcausal.llm.dialect.cache_key`.

* **What is stored**: only complete, valid replies (diskcache writes are atomic), so a crash
  leaves nothing half-written. Records are JSON, never unpickled, each with a checksum of its
  content and key (and an HMAC with a cache key set, :mod:`agentcausal.integrity`); one that fails
  its check is dropped, counted (:attr:`GatewayCache.dropped`, :meth:`GatewayCache.notice`),
  logged and asked again; a damaged ``cache.db`` heals (moved aside, its readable records kept:
  :class:`~agentcausal.llm.reply_cache.ReplyCache`). ``refresh=True`` bypasses reads of earlier
  entries but still writes (entries written since this cache opened stay readable).
* **One paid call per prompt** (:meth:`GatewayCache.single_flight`): identical requests in flight
  (chat, structured and embedding batches) wait for the first, across threads (a lock per cache
  key, shared by every gateway of the process on one cache folder) and processes sharing the
  cache folder (a POSIX record lock per key on ``<cache>/locks/keys.lock``: one system call when
  nobody else holds the key); after the wait the cache is read again. The wait counts as wait time.
* **Run hits** (:meth:`GatewayCache.run_hit`): a hit on an entry written since this cache opened
  (an identical call earlier in the run, or one in flight that was waited for) is not reuse of an
  earlier run's result.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from agentcausal.llm.limits import Timer
from agentcausal.llm.reply_cache import CorruptRecord, ReplyCache, decode_vector, thread_flights

__all__ = ["GatewayCache"]


class GatewayCache:
    """The reply cache of one gateway (and its :meth:`~agentcausal.llm.gateway.Gateway.namespaced` views).

    Parameters
    ----------
    directory : path or None
        The cache folder; ``None``: nothing is stored or read, and identical calls in flight
        still share one request (a table of keys in flight of its own).
    refresh : bool
        Read only entries written since this cache opened.

    Raises
    ------
    CorruptStoreError, ConfigError
        See :class:`~agentcausal.llm.reply_cache.ReplyCache`.

    Attributes
    ----------
    store : ReplyCache or None, the store on disk (None without a folder)
    refresh : bool

    Examples
    --------
    >>> c = GatewayCache(None)
    >>> c.put("k", {"text": "hi"}); (c.text("k"), c.run_hit("k"), c.keys_in_flight)
    (None, 0, 0)
    """

    def __init__(self, directory: str | Path | None, *, refresh: bool = False) -> None:
        self.refresh = refresh
        # a damaged cache file heals (moved aside); CorruptStoreError (one line) only when it cannot be moved
        self.store: ReplyCache | None = ReplyCache(directory, refresh=refresh) if directory is not None else None
        self._flights_lock, self._flights = thread_flights(directory)  # keys in flight, per cache folder
        self._fresh: set[str] = set()  # keys written since this cache opened (readable under refresh)
        self._fresh_lock = threading.Lock()

    @contextlib.contextmanager
    def single_flight(self, key: str, timer: Timer) -> Iterator[None]:
        """Serialise identical requests: a second caller waits for the first, then reads the cache.

        Threads of this process (every gateway on this cache folder) wait on a
        lock per key; processes sharing the cache folder wait on a record lock
        per key (:meth:`ReplyCache.process_lock`; the OS releases it if the holder
        dies). Without it, two methods or two runs sending the same prompt at the
        same moment would both miss the cache and pay twice. Time spent here
        counts as wait time (``timer.wait``, s).
        """
        t0 = time.perf_counter()
        with self._flights_lock:
            entry = self._flights.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0], self.store.process_lock(key) if self.store is not None else contextlib.nullcontext():
                timer.wait += time.perf_counter() - t0
                yield
        finally:
            with self._flights_lock:
                entry[1] -= 1
                if entry[1] == 0:
                    self._flights.pop(key, None)

    @property
    def keys_in_flight(self) -> int:
        """Distinct cache keys some thread of this process is asking (or waiting for) on this folder now."""
        with self._flights_lock:
            return len(self._flights)

    def _get(self, key: str) -> dict[str, Any] | None:
        """The checked cached value (a JSON object), or None; under ``refresh`` only entries written since opening."""
        if self.store is None or (self.refresh and key not in self._fresh):
            return None
        return self.store.get(key)

    def text(self, key: str) -> str | None:
        """The reply text cached under ``key``, or None (a record without text is dropped as corrupt)."""
        hit = self._get(key)
        if hit is None or self.store is None:  # a hit comes from the store
            return None
        if not isinstance(hit.get("text"), str):
            self.store.drop(key, "a reply record without text")
            return None
        return hit["text"]

    def vector(self, key: str) -> np.ndarray | None:
        """The embedding cached under ``key``, or None (a record that is no vector is dropped as corrupt)."""
        hit = self._get(key)
        if hit is None or self.store is None:  # a hit comes from the store
            return None
        try:
            return decode_vector(hit)
        except CorruptRecord as exc:
            self.store.drop(key, str(exc))
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` (a JSON object) under ``key`` and mark the key written this run; no-op without a store."""
        if self.store is not None:
            self.store.set(key, value)
            with self._fresh_lock:
                self._fresh.add(key)

    def run_hit(self, key: str) -> int:
        """1 when a hit on ``key`` is served by an entry written since this cache opened, else 0."""
        with self._fresh_lock:
            return int(key in self._fresh)

    @property
    def dropped(self) -> int:
        """Records that failed their check (bit flip, torn file, pickled or misfiled entry, no valid MAC
        with a cache key), dropped and asked again since this cache opened; 0 without a store."""
        return self.store.dropped if self.store is not None else 0

    def notice(self) -> str | None:
        """One console line when records were dropped (how many, why, where), else None.

        Example: ``LLM reply cache cache/llm/cache.db: 2 record(s) failed their check and were
        dropped and asked again (checksum mismatch: 1, undecodable (error): 1)``.
        """
        if self.store is None or not self.store.dropped:
            return None
        why = ", ".join(f"{r}: {n}" for r, n in self.store.drop_reasons.most_common())
        return (
            f"LLM reply cache {self.store.path}: {self.store.dropped} record(s) failed their check and were "
            f"dropped and asked again ({why})"
        )

    def close(self) -> None:
        """Close the store (its SQLite connection in this thread)."""
        if self.store is not None:
            self.store.close()
