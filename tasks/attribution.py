"""Prefect tasks of the ``attribute`` flow: attribute one trace (or a chunk), save, evaluate.

Tasks receive plan items (:class:`agentcausal.runs.plan.PlanItem`: id, path,
sha256), never traces: each loads its own trace with
:func:`agentcausal.runs.items.load_trace_item` (parsed once per process and
file, its content hash checked against the plan).

``attribute_trace`` is cached across flow runs: its key
(:func:`agentcausal.attribution.cache_key.attribution_key`) is the trace id and
content hash, the method, its validated settings, the prompt version and the
model and context window per stage; results persist under
``<cache_dir>/prefect`` (set with ``with_options`` by the flow, see
:func:`attribute_options`). The label is not in the key and not in the
record: evaluation reads the current trace's label. Only content failures (a
reply still invalid after all repairs) are returned and so cached, marked
``content_failed``; transport, 401, rate-limit and timeout failures raise, so
Prefect never caches them (it retries transport errors within the run,
:func:`tasks.common.retry_transport`) and the next run tries again.

``attribute_chunk`` runs one method on a chunk of traces (``--chunk-size``):
not cached by Prefect as a whole; each trace's record is stored under the same
key in the results index (:mod:`agentcausal.resume`) as it finishes, so a
retry of the chunk repeats only its unfinished traces.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext

from agentcausal.attribution.cache_key import attribution_key
from agentcausal.attribution.jobs import run_method
from agentcausal.attribution.paper_tables import speaker_mismatches
from agentcausal.runs.plan import PlanItem
from agentcausal.repeats import mark_repeat, with_sample
from agentcausal.report.attribution import RunReport, report_run
from agentcausal.runs.scheduling import chunk_items, item_workers, routed_limits, run_chunk
from agentcausal.attribution.evaluate import save_run
from agentcausal.runs.items import load_trace_item, load_trace_items
from agentcausal.settings import RunSettings
from agentcausal.traces.model import Attribution
from tasks.common import chunk_run_name, gateway_for, result_index, result_storage, retry_transport

__all__ = ["attribute_trace", "attribute_chunk", "UncachedDegraded", "attribute_options",
           "attribute_task_key", "save_attributions", "evaluate_run"]


def attribute_task_key(item: PlanItem, method: str, method_settings: Mapping[str, Any], settings: RunSettings,
                       repeat: int = 0) -> str:
    """The Prefect cache key of :func:`attribute_trace` for these arguments (repeat 0 = the key without repeats).

    ``item`` is the trace's plan item (its id and content hash are what the key holds; a
    :class:`~agentcausal.traces.model.Trace` gives the same key)."""
    return "attribute-" + attribution_key(item, method, method_settings, gateway_for(settings), repeat)


def _attribution_cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    return attribute_task_key(parameters["item"], parameters["method"], parameters["method_settings"],
                              parameters["settings"], parameters.get("repeat", 0))


def _attribute_one(item: PlanItem, method: str, method_settings: Mapping[str, Any], settings: RunSettings,
                   repeat: int = 0) -> Attribution:
    return mark_repeat(run_method(load_trace_item(item), method, with_sample(gateway_for(settings), repeat),
                                  method_settings, raise_transient=True), repeat)


def _cacheable(out: Attribution) -> bool:
    """False for a degraded record whose fallback followed a failure of the run (never cached)."""
    return not (out.status == "degraded" and ((out.details.get("lce") or {}).get("cause") == "run"))


@task(name="attribute-trace", retries=2, retry_delay_seconds=2, retry_condition_fn=retry_transport,
      cache_key_fn=_attribution_cache_key, persist_result=True, task_run_name="{method}:{item.id}")
def attribute_trace(item: PlanItem, method: str, method_settings: Mapping[str, Any],
                    settings: RunSettings, repeat: int = 0) -> Attribution:
    """One method on the trace of one plan item, repeat ``repeat`` (see
    :func:`agentcausal.attribution.jobs.run_method` and :mod:`agentcausal.repeats`)."""
    out = _attribute_one(item, method, method_settings, settings, repeat)
    if not _cacheable(out):
        raise UncachedDegraded(out)  # a fallback after a failure of the run: recorded, never cached
    return out


class UncachedDegraded(Exception):
    """A degraded record whose fallback followed a failure of the run (transport, 401, timeout):
    the flow records ``attribution`` and the next run computes it again (never cached)."""

    def __init__(self, attribution: Attribution) -> None:
        super().__init__(attribution.status_detail or "degraded")
        self.attribution = attribution

    def __reduce__(self):  # picklable for process and Dask workers
        return (UncachedDegraded, (self.attribution,))


@task(name="attribute-chunk", retries=2, retry_delay_seconds=2, retry_condition_fn=retry_transport,
      cache_policy=NO_CACHE, persist_result=False, task_run_name=chunk_run_name)
def attribute_chunk(items: Sequence[PlanItem], method: str, method_settings: Mapping[str, Any],
                    settings: RunSettings, repeats: Sequence[int] | None = None,
                    not_before: float | None = None) -> list[Attribution]:
    """One method on a chunk of (plan item, repeat) pairs, each cached on its own in the results index
    (:func:`agentcausal.runs.scheduling.run_chunk`; a retry repeats only the unfinished items)."""
    items = chunk_items(items)  # Dask delivers the flow's quote(...) as a one-element sequence
    return run_chunk([(attribute_task_key(t, method, method_settings, settings, r),
                       functools.partial(_attribute_one, t, method, method_settings, settings, r))
                      for t, r in zip(items, repeats or [0] * len(items))],
                     result_index(settings, "attribute"), not_before=not_before, store_if=_cacheable,
                     workers=item_workers(routed_limits(gateway_for(settings).profiles)))


def attribute_options(settings: RunSettings, *, refresh: bool = False) -> dict[str, Any]:
    """``with_options`` for :func:`attribute_trace`: persisted result storage and refresh.

    ``refresh=True`` recomputes and overwrites the cached record under the same key
    (``--retry-failed`` on a content-failed or degraded record).
    """
    return {"result_storage": Path(result_storage(settings)), "refresh_cache": settings.refresh or refresh}


@task(name="save-attributions")
def save_attributions(attributions: Sequence[Attribution], items: Sequence[PlanItem], run_dir: str,
                      meta: Mapping[str, Any]) -> str:
    """``results.parquet`` and ``run.json`` in the run folder (traces read from their plan items, for the
    current labels; ``run.json`` gains ``speaker_mismatch``)."""
    traces = load_trace_items(items)
    meta = {**meta, "speaker_mismatch": speaker_mismatches(traces)}
    return str(save_run(attributions, traces, run_dir, meta))


@task(name="evaluate-run")
def evaluate_run(run_dir: str) -> RunReport:
    """Accuracy tables and ``report.md`` of a run folder."""
    return report_run(run_dir)
