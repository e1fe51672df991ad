"""Token and time accounting per stage and per item (trace or dataset).

The gateway records one :class:`CallRecord` per logical call (cache hits
included, with zero new tokens), so reports can show prompt and completion
tokens, cache hits, requests, seconds and cost by stage and by item.
"""

from __future__ import annotations

import threading
from collections import defaultdict

from pydantic import BaseModel

__all__ = ["StageUsage", "UsageLedger"]


class StageUsage(BaseModel):
    """Totals for one stage (and optionally one item).

    Attributes
    ----------
    calls : logical calls made by the method (failed ones included)
    requests : HTTP requests actually sent (the client's retries and the
        repairs included; a call that failed counts what it sent)
    cache_hits : calls served from the disk cache
    run_hits : those of ``cache_hits`` served by an entry written earlier in this run by the
        same gateway (an identical call made before, or in flight and waited for): not reuse
        of an earlier run's result
    prompt_tokens, completion_tokens : tokens reported by the endpoint
    seconds : seconds spent in requests (same as ``request_seconds``; kept for
        older readers and stored records)
    request_seconds : seconds spent in HTTP requests (their retries and backoff
        included), or in the in-process embedder; 0 for cache hits
    wait_seconds : seconds spent waiting for a concurrency slot or for an
        identical call in flight (not included in ``request_seconds``)
    cost_usd : from the profile's prices
    """

    calls: int = 0
    requests: int = 0
    cache_hits: int = 0
    run_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    request_seconds: float = 0.0
    wait_seconds: float = 0.0
    cost_usd: float = 0.0

    def add(self, other: "StageUsage") -> "StageUsage":
        return StageUsage(**{k: getattr(self, k) + getattr(other, k) for k in StageUsage.model_fields})


class UsageLedger:
    """Thread-safe totals keyed by item, then stage; ``item=None`` for unattributed calls.

    Looking one item up costs the same however many items the ledger holds; :meth:`release` drops an
    item's totals once its record holds them (the run engine does, so a long run's ledger stays small).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str | None, dict[str, StageUsage]] = {}

    def record(self, stage: str, item: str | None, usage: StageUsage) -> None:
        with self._lock:
            stages = self._data.setdefault(item, {})
            stages[stage] = stages[stage].add(usage) if stage in stages else usage

    def by_stage(self, item: str | None = None) -> dict[str, StageUsage]:
        """Totals per stage; for one item when ``item`` is given, else over all items."""
        with self._lock:
            if item is not None:
                return dict(self._data.get(item, {}))
            out: dict[str, StageUsage] = defaultdict(StageUsage)
            for stages in self._data.values():
                for stage, u in stages.items():
                    out[stage] = out[stage].add(u)
        return dict(out)

    def total(self, item: str | None = None) -> StageUsage:
        tot = StageUsage()
        for u in self.by_stage(item).values():
            tot = tot.add(u)
        return tot

    def release(self, *items: str) -> None:
        """Forget the totals of ``items`` (their records hold them now)."""
        with self._lock:
            for item in items:
                self._data.pop(item, None)

    def reset(self) -> None:
        with self._lock:
            self._data.clear()
