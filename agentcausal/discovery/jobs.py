"""Discovery jobs: one method on one dataset and seed, in the run envelope, as one :class:`DiscoveryOutcome`;
the discovery half of the run engine (:class:`DiscoveryHalf`, built with its method table in
:mod:`agentcausal.registry`).

:func:`run_discovery` never raises for a content failure (a reply still
invalid after all repairs, an algorithm failing on the data): the
:class:`DiscoveryOutcome` records the error with ``status="content_failed"``,
so one failure does not stop a benchmark. Failures of the run (transport,
401, rate limit, an algorithm timeout or dead worker) are re-raised when
``raise_transient`` is set, so an orchestrator retries them and never caches
them; otherwise they are recorded with ``status="failed"``. A MAC run that
fell back after a failed stage (coding executor to typed, an invalid
Negative or Judge reply) is ``status="degraded"``.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1-§4.4.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from agentcausal.discovery.cache_key import discovery_key, planned_key
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.dataset_model import Dataset, DatasetHeader
from agentcausal.discovery.data.datasets import load_header, load_spec
from agentcausal.discovery.evaluate import ScoredWriter, truth_notes
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.mac.calls import sample_index
from agentcausal.discovery.mac.prompts import PROMPT_VERSIONS
from agentcausal.discovery.method_settings import llm_temperature, method_handler, method_stages
from agentcausal.discovery.outcome import DiscoveryOutcome, OutcomesWriter, degradation
from agentcausal.discovery.plan_model import DiscoveryPlan
from agentcausal.discovery.spec import DiscoverySpec
from agentcausal.discovery.variants import RunVariant, variant
from agentcausal.exceptions import AgentCausalError, ConfigError, ItemChangedError
from agentcausal.llm import Gateway, LLMCall
from agentcausal.methods import MethodTable
from agentcausal.records import RunRecord, failure_fields
from agentcausal.runs.engine import gateway_for
from agentcausal.runs.envelope import run_enveloped
from agentcausal.runs.half import Job
from agentcausal.runs.items import check_file_item
from agentcausal.runs.plan import Plan, PlanItem
from agentcausal.settings import RunSettings

__all__ = ["run_discovery", "usage_item", "DiscoveryHalf", "DISCOVER_WORKERS"]


def usage_item(dataset: str, seed: int, method: str) -> str:
    """The usage-ledger item of one discovery run: ``"<dataset>:<seed>:<method>"``.

    >>> usage_item("asia", 0, "mac")
    'asia:0:mac'
    """
    return f"{dataset}:{seed}:{method}"


def run_discovery(
    method: RunVariant,
    ds: Dataset,
    gw: Gateway | None = None,
    config: DiscoveryConfig = DiscoveryConfig(),
    *,
    seed: int = 0,
    raise_transient: bool = False,
) -> DiscoveryOutcome:
    """Run one method on one dataset.

    Parameters
    ----------
    method : RunVariant, the method variant (``mac``, ``pc``, ``mac@names (rounds 2)``, checked by
        :func:`~agentcausal.discovery.variants.variant`)
    ds : Dataset
    gw : Gateway, required for LLM methods (None is fine for statistical ones); an LLM method's calls go through
        an :class:`~agentcausal.llm.call.LLMCall` of the usage item :func:`usage_item`, the sample index of
        (``seed``, ``config.repeat``) (:func:`~agentcausal.discovery.mac.calls.sample_index`) and the method's
        temperature (:func:`~agentcausal.discovery.method_settings.llm_temperature`)
    config : DiscoveryConfig
    seed : int, the dataset seed (also draws MAC's subset S)
    raise_transient : re-raise a failure that is not a content failure
        (:func:`~agentcausal.exceptions.is_content_failure`) instead of recording it

    Returns
    -------
    DiscoveryOutcome, with ``error`` and ``status`` set when the method failed, ``status="degraded"``
    and ``status_detail`` after a fallback, ``reused`` when every LLM call was a cache hit.

    Raises
    ------
    ConfigError on an LLM method without a gateway.
    AgentCausalError when ``raise_transient`` is set and the failure is not a content failure
    (EndpointUnreachableError, LLMCallError, an AlgorithmError timeout ...).
    """
    handler, config = method_handler(method, config)  # "auto": the executor here
    stages = method_stages(method.spec, config)
    if stages and gw is None:
        raise ConfigError(f"method {method.name!r} calls an LLM; pass a gateway")
    item = usage_item(ds.name, seed, method.name)
    call = None
    if stages and gw is not None:
        call = LLMCall(
            gw, item=item, sample=sample_index(seed, config.repeat), temperature=llm_temperature(method.spec, config)
        )
    env = run_enveloped(
        lambda: handler(call, ds, config, seed),
        gw=gw,
        stages=stages,
        usage_items=(item,),
        raise_transient=raise_transient,
    )
    common = dict(
        dataset=ds.name,
        seed=seed,
        n=ds.n,
        method=method.name,
        true_graph=ds.true_graph,
        prompt_version=PROMPT_VERSIONS[config.mac.prompts] if stages else "",
        data_hash=ds.content_hash(),
        **env.stamp(),
    )
    if env.error is not None:
        return DiscoveryOutcome(**common, **failure_fields(env.error, max_chars=2000))
    assert env.result is not None, f"{method.name} returned None"  # a method returns (graph, details) or raises
    graph, details = env.result
    if config.executor_fallback and method.spec.runs_dcm:
        details = {**details, "executor_fallback": config.executor_fallback}
    detail = degradation(details)
    return DiscoveryOutcome(
        **common, graph=graph, details=details, status="degraded" if detail else "complete", status_detail=detail
    )


T = TypeVar("T")

#: discovery jobs one process runs at once (algorithm runs are worker processes of their own)
DISCOVER_WORKERS = 3


def _discovery(plan: Plan) -> DiscoveryPlan:
    """``plan`` as the discovery plan it is (the engine hands a half the plan by its shared type).

    Raises
    ------
    ConfigError
        If it is another half's plan.
    """
    if not isinstance(plan, DiscoveryPlan):
        raise ConfigError(f"the discovery half runs a discover plan, not a {plan.kind} plan")
    return plan


def _config(plan: Plan, repeat: int) -> DiscoveryConfig:
    """The run's config (the plan's), repeat ``repeat`` of it (in the key and in MAC's samples)."""
    config = _discovery(plan).run_config()
    return config if repeat == 0 else config.model_copy(update={"repeat": repeat})


def _load(item: PlanItem, plan: Plan, seed: int) -> Dataset:
    """A dataset item's rows for ``seed``, its file's sha256 checked first
    (:func:`agentcausal.runs.items.check_file_item`)."""
    check_file_item(item)
    return load_spec(item.spec or item.id, n=_discovery(plan).n or 1000, seed=seed, name=item.id)


def _header(item: PlanItem) -> DatasetHeader:
    """A dataset item without its rows (a network: no row sampled), its file's sha256 checked first."""
    check_file_item(item)
    return load_header(item.spec or item.id, name=item.id)


class _Last(Generic[T]):
    """The value of the last key asked for (jobs come item by item: one dataset held at a time)."""

    def __init__(self, load: Callable[[Job], T], key: Callable[[Job], Hashable]) -> None:
        self.load, self.key = load, key
        self._last: tuple[Hashable, T] | None = None

    def __call__(self, job: Job) -> T:
        k = self.key(job)
        if self._last is None or self._last[0] != k:
            self._last = (k, self.load(job))
        return self._last[1]


class _DiscoverySink:
    """``outcomes.jsonl`` and the scored ``results.parquet`` of a discovery run, each outcome written and
    scored against the current truth as it comes (the truth read from the item's network or file, one
    item at a time), then let go."""

    def __init__(self, plan: Plan, run_dir: Path, reversal_cost: int) -> None:
        self.plan, self.reversal_cost = _discovery(plan), reversal_cost
        self.outcomes = OutcomesWriter(run_dir)
        self.scored = ScoredWriter(run_dir / "results.parquet", reversal_cost=reversal_cost)  # type: ignore[arg-type]
        self.models: dict[str, str] = {}
        self.untrue: dict[str, None] = {}  # datasets without a true graph, in order
        self._truth: tuple[str, CausalGraph | None] | None = None  # the current item's id and true graph

    def _true_graph(self, job: Job, record: DiscoveryOutcome) -> CausalGraph | None:
        if self._truth is None or self._truth[0] != job.item.id:  # jobs come item by item
            try:  # scored against the truth of now, not of when it was cached
                truth = _header(job.item).true_graph
            except AgentCausalError:
                truth = record.true_graph
            self._truth = (job.item.id, truth)
        return self._truth[1]

    def add(self, job: Job, record: RunRecord) -> None:
        assert isinstance(record, DiscoveryOutcome)  # the records of the discovery half
        out = record.model_copy(update={"true_graph": self._true_graph(job, record), "dataset": job.item.id})
        try:
            self.outcomes.add(out)
            self.scored.add(out)
        except BaseException:
            self.outcomes.abort()
            self.scored.abort()
            raise
        self.models.update(out.models)
        if out.true_graph is None:
            self.untrue[out.dataset] = None

    def close(self) -> dict[str, Any]:
        self.outcomes.close()
        self.scored.close()
        return {
            "datasets": [i.spec or i.id for i in self.plan.iter_items()],
            "methods": list(self.plan.methods),
            "llm_datasets": self.plan.llm_datasets,
            "seeds": self.plan.seeds,
            "n": self.plan.n,
            "config": None if self.plan.config is None else self.plan.config.model_dump(mode="json"),
            "models": dict(sorted(self.models.items())),
            "reversal_cost": self.reversal_cost,
            "notes": truth_notes(self.untrue),
            **({"skipped": self.plan.skipped} if self.plan.skipped is not None else {}),
        }


class DiscoveryHalf:
    """The discovery half of the run engine (:class:`agentcausal.runs.half.RunHalf`): a job is one method
    on one dataset item and seed (LLM methods once per repeat, and only on the plan's ``llm_datasets``);
    its key is :func:`~agentcausal.discovery.cache_key.discovery_key` from the plan item's data hash
    (:func:`~agentcausal.discovery.cache_key.planned_key`: the orchestrator samples no row); a task samples
    the dataset's rows once from its plan item (file and data hash checked) and runs :func:`run_discovery`;
    outcomes are scored as they come against the current true graph, read from the network or file. The plan's
    method names are looked up in ``methods``."""

    kind = "discover"
    record_type = DiscoveryOutcome
    default_chunk_size = 1  # a discovery job runs for seconds to minutes: one task run each
    remote_chunk_range = (1, 1)

    def __init__(self, methods: MethodTable[DiscoverySpec]) -> None:
        self.methods = methods

    def _variant(self, method: str) -> RunVariant:
        """The plan's method (a display name) as its checked variant."""
        return variant(self.methods, method)

    def _llm(self, method: str) -> bool:
        """True when the plan's method calls an LLM."""
        return self._variant(method).spec.needs_llm

    def _methods(self, plan: Plan, item: PlanItem) -> Iterator[str]:
        llm = _discovery(plan).llm_datasets
        llm_only = None if llm is None else set(llm)
        for m in plan.methods:
            if not self._llm(m) or llm_only is None or item.id in llm_only:
                yield m

    def job_counts(self, plan: Plan) -> dict[str, int]:
        counts = dict.fromkeys(plan.methods, 0)
        for job in self.jobs(plan):
            counts[job.method] += 1
        return counts

    def jobs(self, plan: Plan) -> Iterator[Job]:
        for item in plan.iter_items():  # dataset-major, methods in the order asked, then seed and repeat
            for m in self._methods(plan, item):
                reps = range(plan.repeats) if self._llm(m) else (0,)
                for seed in _discovery(plan).seeds or [0]:
                    for r in reps:
                        yield Job(item, m, seed=seed, repeat=r)

    def submission_order(self, plan: Plan) -> Iterator[Job]:
        """LLM methods first, so the long debates start while the statistical baselines run (two passes
        over the plan's items)."""
        yield from (j for j in self.jobs(plan) if self._llm(j.method))
        yield from (j for j in self.jobs(plan) if not self._llm(j.method))

    def keyer(self, plan: Plan, settings: RunSettings) -> Callable[[Job], str]:
        """The key of a job from its plan item's data hash (no row sampled; only an LLM method's key reads
        the dataset's metadata); a plan without the hashes samples the rows again, one dataset at a time."""
        header = _Last(lambda j: _header(j.item), lambda j: j.item.id)
        rows = _Last(lambda j: _load(j.item, plan, j.seed), lambda j: (j.item.id, j.seed))

        def key(job: Job) -> str:
            config, v = _config(plan, job.repeat), self._variant(job.method)
            gw = gateway_for(settings) if method_stages(v.spec, config) else None
            planned = job.item.data_hash(job.seed)
            if planned is None:
                return "discover-" + discovery_key(rows(job), v, config, gw, seed=job.seed)
            return "discover-" + planned_key(planned, job.item.id, lambda: header(job), v, config, gw, seed=job.seed)

        return key

    def run(self, job: Job, plan: Plan, settings: RunSettings) -> DiscoveryOutcome:
        """Sample the job's rows (once) and run its method on them.

        Raises
        ------
        ItemChangedError
            If the dataset file changed since the plan was built, or the rows hash to another value than the
            plan's (then the job's key would not describe its data).
        """
        config, v = _config(plan, job.repeat), self._variant(job.method)
        gw = gateway_for(settings) if method_stages(v.spec, config) else None
        ds = _load(job.item, plan, job.seed)
        planned = job.item.data_hash(job.seed)
        if planned is not None and (got := ds.content_hash()) != planned:
            raise ItemChangedError(
                job.item.id,
                job.item.path,
                f"the rows of seed {job.seed} hash to {got[:12]}…, not the plan's {planned[:12]}…",
            )
        out = run_discovery(v, ds, gw, config, seed=job.seed, raise_transient=True)
        if gw is not None and plan.repeats == 1:  # the record holds its usage now (repeats share the item)
            gw.usage.release(usage_item(ds.name, job.seed, job.method))
        return out

    def storable(self, record: RunRecord) -> bool:
        return True  # a failure of the run raises; every returned outcome may be stored

    def failed(self, job: Job, exc: BaseException) -> DiscoveryOutcome:
        return DiscoveryOutcome(
            dataset=job.item.id,
            seed=job.seed,
            n=job.item.n or 0,
            method=job.method,
            **failure_fields(exc, "failed", max_chars=2000),
        )

    def item_workers(self, settings: RunSettings) -> int:
        return DISCOVER_WORKERS

    def sink(self, plan: Plan, run_dir: Path, meta: Mapping[str, Any]) -> _DiscoverySink:
        return _DiscoverySink(plan, run_dir, int(meta.get("reversal_cost", 1)))
