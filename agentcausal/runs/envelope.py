"""One envelope around running a method on one item, shared by attribution and discovery.

:func:`run_enveloped` calls the method and returns an :class:`Envelope`: the
result or the content failure it raised, the wall time, the LLM usage the run
added (per stage, from the gateway's ledger items of this item), the model of
each stage (``profile:model``, ``"unrouted"`` when no route serves it),
whether every LLM call was served by a cache entry an earlier run wrote
(``reused``), and optionally the item's cache key. The two halves turn it into
their records (:func:`agentcausal.attribution.jobs.run_method`, an
``Attribution``; :func:`agentcausal.discovery.jobs.run_discovery`, a
``DiscoveryOutcome``), which take the measured fields from
:meth:`Envelope.stamp` and nowhere else; a failure becomes the record's
``error`` and ``status`` by :func:`agentcausal.records.failure_fields`.

Errors: a failure that is a content failure
(:func:`agentcausal.exceptions.is_content_failure`) is caught and returned in
``error``; any other :class:`~agentcausal.exceptions.AgentCausalError` is
re-raised when ``raise_transient`` is set (so the orchestrator retries it and
caches nothing), else caught as well.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from agentcausal.exceptions import AgentCausalError, is_content_failure
from agentcausal.llm.usage import StageUsage

__all__ = ["Envelope", "run_enveloped", "stage_models", "usage_added", "all_reused"]

T = TypeVar("T")


@dataclass(frozen=True)
class Envelope(Generic[T]):
    """What one run of a method on one item gave.

    Attributes
    ----------
    result : the method's return value, or None when it raised
    error : AgentCausalError or None, the failure caught (see the module docstring)
    seconds : float, wall time of the method call (s)
    usage : dict stage -> StageUsage, what this run added (stages without calls or requests left out)
    models : dict stage -> ``profile:model`` (``"unrouted"``)
    reused : bool, every LLM call was a cache hit on an entry an earlier run wrote (no request sent)
    key : str or None, the item's cache key when the caller asked for it
    """

    result: T | None
    error: AgentCausalError | None
    seconds: float
    usage: dict[str, StageUsage]
    models: dict[str, str]
    reused: bool
    key: str | None = None

    def stamp(self) -> dict[str, Any]:
        """The record fields the envelope measured: ``models``, ``usage`` (as dicts), ``seconds``, ``reused``.

        The one place a record gets them (:class:`agentcausal.records.RunRecord`); the method fills the rest.
        """
        return {
            "models": dict(self.models),
            "usage": {k: v.model_dump() for k, v in self.usage.items()},
            "seconds": self.seconds,
            "reused": self.reused,
        }


def stage_models(gw: Any, stages: Sequence[str]) -> dict[str, str]:
    """``{stage: gw.model_for(stage)}``, ``"unrouted"`` where no route serves the stage (or no gateway)."""
    out: dict[str, str] = {}
    for stage in stages:
        try:
            out[stage] = gw.model_for(stage)
        except (AgentCausalError, AttributeError):
            out[stage] = "unrouted"
    return out


def usage_added(
    before: Sequence[Mapping[str, StageUsage]], after: Sequence[Mapping[str, StageUsage]]
) -> dict[str, StageUsage]:
    """Per-stage usage added between ledger snapshots of several items, summed over the items
    (stages with no calls and no requests left out)."""
    usage: dict[str, StageUsage] = {}
    for b, a in zip(before, after):
        for stage, u in a.items():
            was = b.get(stage, StageUsage())
            d = StageUsage(**{k: getattr(u, k) - getattr(was, k) for k in StageUsage.model_fields})
            if d.calls or d.requests:
                usage[stage] = usage[stage].add(d) if stage in usage else d
    return usage


def all_reused(usage: Mapping[str, StageUsage]) -> bool:
    """True when there was LLM usage and every call was a hit on an entry an earlier run wrote."""
    return bool(usage) and all(u.requests == 0 and u.cache_hits > u.run_hits == 0 for u in usage.values())


def run_enveloped(
    call: Callable[[], T],
    *,
    gw: Any = None,
    stages: Sequence[str] = (),
    usage_items: Sequence[str] = (),
    raise_transient: bool = False,
    key: Callable[[], str] | None = None,
) -> Envelope[T]:
    """Run ``call()`` in the envelope.

    Parameters
    ----------
    call : the method on its item, no arguments
    gw : Gateway or None (no LLM stage)
    stages : the method's LLM stages (for ``models``)
    usage_items : the gateway ledger items the method books its calls under
    raise_transient : re-raise a failure that is not a content failure instead of returning it
    key : computes the item's cache key (None: ``Envelope.key`` is None)

    Returns
    -------
    Envelope

    Raises
    ------
    AgentCausalError
        Only with ``raise_transient``: a failure that is not a content failure.
    """
    ledger = getattr(gw, "usage", None)
    before = [ledger.by_stage(item=i) for i in usage_items] if ledger is not None else []
    models = stage_models(gw, stages)
    t0 = time.perf_counter()
    result, error = None, None
    try:
        result = call()
    except AgentCausalError as exc:
        if raise_transient and not is_content_failure(exc):
            raise
        error = exc
    seconds = time.perf_counter() - t0
    usage = usage_added(before, [ledger.by_stage(item=i) for i in usage_items]) if ledger is not None else {}
    return Envelope(
        result=result,
        error=error,
        seconds=seconds,
        usage=usage,
        models=models,
        reused=all_reused(usage),
        key=key() if key is not None else None,
    )
