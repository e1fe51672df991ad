"""Attribution jobs: one method on one trace, in the run envelope, as one record; the attribution half of the
run engine (:class:`AttributionHalf`, built with its method table in :mod:`agentcausal.registry`).

:func:`run_method` runs a method and returns an :class:`~agentcausal.traces.model.Attribution` with
seconds, usage, models and settings filled in. A content failure (a reply still invalid after all
repairs, :func:`~agentcausal.exceptions.is_content_failure`) becomes an Attribution with ``error`` set
and ``status="content_failed"`` (it counts as wrong, and may be cached); any other failure
(transport, 401, rate limit, timeout) is re-raised under ``raise_transient`` so an orchestrator never
caches it, else recorded with ``status="failed"`` (:func:`failed_attribution`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentcausal.attribution.cache_key import attribution_keyer
from agentcausal.attribution.method_settings import method_settings
from agentcausal.attribution.paper_tables import speaker_mismatch
from agentcausal.attribution.results import ResultsWriter
from agentcausal.attribution.spec import AttributionSpec, usage_item
from agentcausal.llm import Gateway, LLMCall
from agentcausal.methods import MethodTable
from agentcausal.records import ResultStatus, RunRecord, failure_fields
from agentcausal.repeats import mark_repeat
from agentcausal.runs.engine import DEFAULT_CHUNK_SIZE, gateway_for
from agentcausal.runs.envelope import run_enveloped
from agentcausal.runs.half import Job
from agentcausal.runs.items import load_trace_item
from agentcausal.runs.plan import Plan
from agentcausal.runs.scheduling import item_workers, routed_limits
from agentcausal.settings import RunSettings, gateway_preset
from agentcausal.traces.model import Attribution, Trace, TraceFacts

__all__ = ["failed_attribution", "run_method", "AttributionHalf"]


def failed_attribution(
    trace_id: str, method: str, exc: BaseException, *, status: ResultStatus | None = None
) -> Attribution:
    """An Attribution recording a failure (``error = "<ErrorClass>: <message>"``); counts as wrong.

    Parameters
    ----------
    trace_id, method : str
    exc : the exception
    status : ``content_failed`` or ``failed``; None = from
        :func:`~agentcausal.exceptions.is_content_failure`

    Returns
    -------
    Attribution with step and agent None, ``status`` and ``status_detail`` (the error class) set.
    """
    return Attribution(trace_id=trace_id, method=method, **failure_fields(exc, status))


def run_method(
    trace: Trace,
    spec: AttributionSpec[Any],
    gw: Gateway,
    settings: BaseModel | Mapping[str, Any] | None = None,
    *,
    repeat: int = 0,
    raise_transient: bool = False,
) -> Attribution:
    """Run one attribution method on one trace; never raises for a method failure.

    Parameters
    ----------
    trace : Trace
    spec : AttributionSpec, the method (``ATTRIBUTION_METHODS["all_at_once"]``, :mod:`agentcausal.registry`)
    gw : Gateway
    settings : the method's settings (instance, used as it is; or mapping over the preset the gateway's routing
        names, :func:`agentcausal.settings.gateway_preset`); None = that preset (or the model defaults)
    repeat : int >= 0, the repeat index: the method's :class:`~agentcausal.llm.call.LLMCall` sends it as every
        request's ``sample`` (0: the ordinary requests; :mod:`agentcausal.repeats`)
    raise_transient : bool, re-raise every failure that is not a content failure
        (:func:`~agentcausal.exceptions.is_content_failure`: transport, 401, rate limit,
        timeout ...) instead of recording it, so an orchestrator retries it and never caches it

    Returns
    -------
    Attribution: the method's answer, ``details``, ``status`` and ``prompt_version`` (the
    registered one when the method sets none), stamped here once with ``trace_id``, ``method``,
    ``settings`` (validated, as a dict) and the envelope's ``models`` (stage -> ``profile:model``),
    ``usage`` (stage -> totals added during this run, from the ledger items ``trace.id`` and
    :func:`~agentcausal.attribution.spec.usage_item`), ``seconds`` and ``reused`` (every LLM
    call a cache hit on an entry an earlier run wrote: this run sent no request; a hit on an entry
    this run wrote, an identical call of another trace or one merged in flight, is not reuse).
    When the method raised an :class:`AgentCausalError`, ``step`` and ``agent`` are None,
    ``error`` holds ``"<ErrorClass>: <message>"`` and ``status`` is ``content_failed`` or
    ``failed``; a method that returned an error itself is ``content_failed`` (methods record
    only content failures); ``degraded`` is kept as the method set it.

    Raises
    ------
    ConfigError
        If the settings are invalid (a setup error, not a trace failure).
    ValueError
        If ``repeat`` is negative.
    AgentCausalError
        Only with ``raise_transient=True``: a failure that is not a content failure
        (e.g. EndpointUnreachableError, LLMCallError, a transient AlgorithmError).
    """
    method = spec.name
    st = method_settings(spec.settings_model, settings, spec.presets, gateway_preset(gw))  # routing's preset
    call = LLMCall(gw, item=usage_item(trace.id, method), sample=repeat)
    env = run_enveloped(
        lambda: spec.run(trace, call, st),
        gw=gw,
        stages=spec.stages,
        usage_items=(trace.id, usage_item(trace.id, method)),
        raise_transient=raise_transient,
    )
    out = env.result if env.error is None else failed_attribution(trace.id, method, env.error)
    assert out is not None, f"{method}.run returned None"  # a method returns an Attribution or raises
    if out.error and out.status == "complete":
        out = out.model_copy(update={"status": "content_failed", "status_detail": out.status_detail or "method error"})
    return out.model_copy(
        update={
            "trace_id": trace.id,
            "method": method,
            "settings": st.model_dump(mode="json"),
            "prompt_version": out.prompt_version or spec.prompt_version,
            **env.stamp(),
        }
    )


class _AttributionSink:
    """``results.parquet`` of an attribution run, each record scored against its trace's label as the plan pass
    read it (:attr:`PlanItem.facts <agentcausal.runs.plan.PlanItem.facts>`)."""

    def __init__(self, plan: Plan, run_dir: Path) -> None:
        self.plan = plan
        self.writer = ResultsWriter(run_dir / "results.parquet")
        self.models: dict[str, dict[str, str]] = {}
        self.mismatches: list[dict[str, Any]] = []
        self._facts: tuple[str, TraceFacts] | None = None  # the current item's id and facts

    def add(self, job: Job, record: RunRecord) -> None:
        if self._facts is None or self._facts[0] != job.item.id:  # jobs come item by item: one trace at a time
            # the plan's facts of the trace (taken when the plan pass read it); a plan without them: read it again
            facts = job.item.facts or load_trace_item(job.item).facts()
            self._facts = (job.item.id, facts)
            if (m := speaker_mismatch(job.item.id, facts)) is not None:
                self.mismatches.append(m)
        if record.models and job.method not in self.models:
            self.models[job.method] = dict(record.models)
        assert isinstance(record, Attribution)  # the records of the attribution half
        self.writer.add(record, self._facts[1])

    def close(self) -> dict[str, Any]:
        self.writer.close()
        return {
            "methods": {m: mp.settings for m, mp in self.plan.methods.items()},
            "models": self.models,
            "traces": self.plan.item_count,
            "speaker_mismatch": self.mismatches,
            **({"skipped": self.plan.skipped} if self.plan.skipped is not None else {}),
        }


class AttributionHalf:
    """The attribution half of the run engine (:class:`agentcausal.runs.half.RunHalf`) over ``methods``, the
    table the plan's method names are looked up in: a job is one method on one trace (repeat r); its key is
    :func:`~agentcausal.attribution.cache_key.attribution_key`; a task loads the trace from its plan item and
    runs :func:`run_method` (repeat r sends ``sample=r``, :mod:`agentcausal.repeats`); results are scored into
    ``results.parquet`` against the current labels."""

    kind = "attribute"
    record_type = Attribution
    default_chunk_size = DEFAULT_CHUNK_SIZE
    #: Dask: each task run costs a worker about 0.1 s of CPU and the flow's process about 0.04 s, so about four
    #: chunks per worker, as few as a cluster's workers can share (at least 100 jobs), and at most 400, so that a
    #: progress step (a remote chunk's end) stays small on a large corpus (bench/README.md, "Dask: chunks by workers")
    remote_chunk_range = (DEFAULT_CHUNK_SIZE, 4 * DEFAULT_CHUNK_SIZE)

    def __init__(self, methods: MethodTable[AttributionSpec[Any]]) -> None:
        self.methods = methods

    def job_counts(self, plan: Plan) -> dict[str, int]:
        return {m: plan.item_count * plan.repeats for m in plan.methods}

    def jobs(self, plan: Plan) -> Iterator[Job]:
        for item in plan.iter_items():
            for m in plan.methods:
                for r in range(plan.repeats):
                    yield Job(item, m, repeat=r)

    def submission_order(self, plan: Plan) -> Iterator[Job]:
        return self.jobs(plan)

    def keyer(self, plan: Plan, settings: RunSettings) -> Callable[[Job], str]:
        keys = attribution_keyer(gateway_for(settings))
        by_method: dict[str, Callable[..., str]] = {}  # the method's part of the key made once per plan, not per job

        def key(job: Job) -> str:
            k = by_method.get(job.method)
            if k is None:
                k = by_method[job.method] = keys.bound(self.methods[job.method], plan.methods[job.method].settings)
            return "attribute-" + k(job.item, job.repeat)

        return key

    def run(self, job: Job, plan: Plan, settings: RunSettings) -> Attribution:
        gw = gateway_for(settings)
        out = run_method(
            load_trace_item(job.item),
            self.methods[job.method],
            gw,
            plan.methods[job.method].settings,
            repeat=job.repeat,
            raise_transient=True,
        )
        if plan.repeats == 1:  # the record holds its usage now; repeats share the ledger item, so keep it then
            gw.usage.release(usage_item(job.item.id, job.method))
        return mark_repeat(out, job.repeat)

    def storable(self, record: RunRecord) -> bool:
        """False for a degraded record whose fallback followed a failure of the run (never cached)."""
        return not (record.status == "degraded" and (record.details.get("lce") or {}).get("cause") == "run")

    def failed(self, job: Job, exc: BaseException) -> Attribution:
        return mark_repeat(failed_attribution(job.item.id, job.method, exc, status="failed"), job.repeat)

    def item_workers(self, settings: RunSettings) -> int:
        return item_workers(routed_limits(gateway_for(settings).profiles))

    def sink(self, plan: Plan, run_dir: Path, meta: Mapping[str, Any]) -> _AttributionSink:
        return _AttributionSink(plan, run_dir)
