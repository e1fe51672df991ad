"""The ``discover`` flow: the run engine over datasets x seeds x methods as chunk tasks, then the report
(:mod:`flows.engine`).

Its input is a :class:`~agentcausal.discovery.plan_model.DiscoveryPlan` (built by the CLI, written to the run
folder) and the :class:`~agentcausal.runs.options.RunOptions` of the invocation; a scheduled deployment gives a
:class:`~agentcausal.discovery.plan_model.DiscoveryRequest` instead, planned at the start of the flow run
(:func:`agentcausal.discovery.plan.plan_discovery`).
"""

from __future__ import annotations

from prefect import flow

from agentcausal.discovery.plan import plan_discovery
from agentcausal.discovery.plan_model import DiscoveryPlan, DiscoveryRequest
from agentcausal.registry import DISCOVERY, DISCOVERY_METHODS
from agentcausal.report.artifacts import corpus_label
from agentcausal.report.discovery_tables import table_records
from agentcausal.runs.folder import default_run_dir
from agentcausal.runs.options import RunOptions
from agentcausal.runs.plan import as_plan
from agentcausal.settings import RunSettings
from flows import naming
from flows.engine import ended, frozen_heap, publish_report, run_dir_of, run_engine
from flows.runners import RunnerChoice, with_runner
from tasks.discovery import discover_chunk, report_discovery

__all__ = ["discover", "run_discover"]


@flow(name="discover", log_prints=True, flow_run_name=naming.discover_run_name)
def discover(
    plan: DiscoveryPlan | DiscoveryRequest | str,
    run: RunOptions | None = None,
    settings: RunSettings | None = None,
    reversal_cost: int = 1,
) -> str:
    """Every planned (dataset, seed, method) run; the run folder.

    Parameters
    ----------
    plan : DiscoveryPlan (or the path of its ``plan.json``), or a DiscoveryRequest planned here
        (:func:`agentcausal.discovery.plan.plan_discovery`)
    run : RunOptions, the run folder, caps (``max_cost`` USD, ``max_tokens``: jobs past them ``not_run``,
        :class:`agentcausal.runs.budget.BudgetGate`), chunk size, progress, ``run.json`` extras; None: the defaults
    settings : RunSettings, where and how (routing, caches, ``refresh``); None: from the environment
    reversal_cost : int, what a reversed edge costs in the report's SHD (1 or 2)

    With rows not computed (``failed``, ``not_run``) the flow run ends **Failed** (:class:`flows.engine.FailedRows`,
    its run folder complete) so that a Prefect automation on failed flow runs alerts; else Completed.
    """
    with frozen_heap():  # the objects alive at the start left out of full collections (flows/engine.py)
        settings = settings or RunSettings.from_env()
        run = run or RunOptions()
        if isinstance(plan, DiscoveryRequest):
            datasets = list(plan.datasets)
            plan = plan_discovery(plan, settings, DISCOVERY_METHODS)
        else:
            plan = as_plan(plan, DiscoveryPlan)
            datasets = [i.spec or i.id for i in plan.iter_items()]
        naming.add_run_tags(plan.methods, settings, preset=plan.preset)
        run_dir, subject = run.out_dir or default_run_dir("discover"), corpus_label(datasets, default="datasets")
        summary = run_engine(
            DISCOVERY,
            plan,
            settings,
            discover_chunk,
            run_dir,
            chunk_size=run.chunk_size,
            subject=subject,
            bar=run.progress,
            meta={**run.meta, "reversal_cost": reversal_cost},
            max_cost=run.max_cost,
            spent_before_usd=run.spent_before_usd,
            max_tokens=run.max_tokens,
        )
        files = report_discovery(run_dir, reversal_cost, None if settings.refresh else settings.cache_dir)
        publish_report(
            subject,
            run_dir,
            table_key="discovery-metrics",
            table=table_records(files.frame),
            table_description=f"SHD / NHD / F1 per dataset and method (SHD reversal cost {reversal_cost})",
            report_key="discovery-report",
            markdown=files.report.read_text(),
        )
        return ended("discover", summary, run_dir)  # type: ignore[return-value]  # Failed when rows were not computed


def run_discover(
    plan: DiscoveryPlan | DiscoveryRequest | str,
    run: RunOptions | None = None,
    *,
    settings: RunSettings | None = None,
    reversal_cost: int = 1,
    runner: RunnerChoice | None = None,
) -> str:
    """Plain-Python entry point (CLI, demo, benchmarks): :func:`discover` on ``runner``'s task runner (default:
    threads; each process runs 3 jobs at once, algorithm runs in worker processes of their own); the run folder,
    also when the flow run ended Failed for rows not computed (the caller reads ``run.json``)."""
    return run_dir_of(
        lambda: with_runner(discover, runner)(plan=plan, run=run, settings=settings, reversal_cost=reversal_cost)
    )
