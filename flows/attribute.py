"""The ``attribute`` flow: the run engine over a trace corpus as chunk tasks, then the report (:mod:`flows.engine`).

Its input is an :class:`~agentcausal.attribution.plan_model.AttributionPlan` (built by the CLI, written to the run
folder) and the :class:`~agentcausal.runs.options.RunOptions` of the invocation; a scheduled deployment gives an
:class:`~agentcausal.attribution.plan_model.AttributionRequest` instead, planned at the start of the flow run
(:func:`plan_request`).
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from agentcausal.attribution.plan import plan_attribution
from agentcausal.attribution.plan_model import AttributionPlan, AttributionRequest
from agentcausal.registry import ATTRIBUTION, ATTRIBUTION_METHODS
from agentcausal.report.artifacts import corpus_label
from agentcausal.report.attribution_tables import table_records
from agentcausal.runs.folder import default_run_dir
from agentcausal.runs.options import RunOptions
from agentcausal.runs.plan import as_plan
from agentcausal.settings import RunSettings
from flows import naming
from flows.engine import ended, frozen_heap, publish_report, run_dir_of, run_engine
from flows.runners import RunnerChoice, with_runner
from tasks.attribution import attribute_chunk, evaluate_run

__all__ = ["attribute", "run_attribute", "plan_request"]


def plan_request(request: AttributionRequest, settings: RunSettings, run_dir: str) -> tuple[AttributionPlan, list[str]]:
    """The plan of ``request`` in ``run_dir`` (its items in ``plan.items.jsonl``), and the corpus it read: the
    request's paths resolved (empty: the Who&When folder of ``settings``).

    Raises
    ------
    ConfigError, TraceFormatError
        As :func:`agentcausal.attribution.plan.plan_attribution`.
    """
    paths = naming.corpus_paths(request.paths, settings)  # empty: the Who&When folder of the settings, resolved now
    plan = plan_attribution(request.model_copy(update={"paths": paths}), settings, ATTRIBUTION_METHODS, run_dir=run_dir)
    return plan, [str(Path(p).resolve()) for p in paths]


@flow(name="attribute", log_prints=True, flow_run_name=naming.attribute_run_name)
def attribute(
    plan: AttributionPlan | AttributionRequest | str,
    run: RunOptions | None = None,
    settings: RunSettings | None = None,
) -> str:
    """Every planned (trace, method) pair; the run folder.

    Parameters
    ----------
    plan : AttributionPlan (or the path of its ``plan.json``), or an AttributionRequest planned here
        (:func:`plan_request`)
    run : RunOptions, the run folder, caps (``max_cost`` USD, ``max_tokens``: jobs past them ``not_run``,
        :class:`agentcausal.runs.budget.BudgetGate`), chunk size, progress, ``run.json`` extras; None: the defaults
    settings : RunSettings, where and how (routing, caches, ``refresh``); None: from the environment

    With rows not computed (``failed``, ``not_run``) the flow run ends **Failed** (:class:`flows.engine.FailedRows`,
    its run folder complete) so that a Prefect automation on failed flow runs alerts; else Completed.
    """
    with frozen_heap():  # the objects alive at the start left out of full collections (flows/engine.py)
        settings = settings or RunSettings.from_env()
        run = run or RunOptions()
        run_dir = run.out_dir or default_run_dir("attribute")
        if isinstance(plan, AttributionRequest):
            plan, corpus = plan_request(plan, settings, run_dir)
        else:
            plan = as_plan(plan, AttributionPlan)
            corpus = list(run.meta.get("corpus") or dict.fromkeys(i.path for i in plan.iter_items()))
        subject = corpus_label(corpus)
        naming.add_run_tags(plan.methods, settings, preset=plan.preset)
        summary = run_engine(
            ATTRIBUTION,
            plan,
            settings,
            attribute_chunk,
            run_dir,
            chunk_size=run.chunk_size,
            subject=subject,
            bar=run.progress,
            meta={**{k: v for k, v in run.meta.items() if k != "corpus"}, "corpus": corpus},
            max_cost=run.max_cost,
            spent_before_usd=run.spent_before_usd,
            max_tokens=run.max_tokens,
        )
        report = evaluate_run(run_dir, None if settings.refresh else settings.cache_dir)  # refresh: every figure drawn
        naming.add_run_tags(
            plan.methods, settings, preset=plan.preset, subsets=set(report.evaluation.by_subset["subset"])
        )
        publish_report(
            subject,
            run_dir,
            table_key="attribution-accuracy",
            table=table_records(report.evaluation.overall),
            table_description="Step, agent and both-correct accuracy per method",
            report_key="attribution-report",
            markdown=report.markdown,
        )
        return ended("attribute", summary, run_dir)  # type: ignore[return-value]  # Failed when rows were not computed


def run_attribute(
    plan: AttributionPlan | AttributionRequest | str,
    run: RunOptions | None = None,
    *,
    settings: RunSettings | None = None,
    runner: RunnerChoice | None = None,
) -> str:
    """Plain-Python entry point (CLI, demo, benchmarks): :func:`attribute` on ``runner``'s task runner; the run
    folder, also when the flow run ended Failed for rows not computed (the caller reads ``run.json``)."""
    return run_dir_of(lambda: with_runner(attribute, runner)(plan=plan, run=run, settings=settings))
