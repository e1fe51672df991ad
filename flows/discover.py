"""The ``discover`` flow: the run engine over datasets x seeds x methods as chunk tasks, then the report
(:mod:`flows.engine`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefect import flow

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.jobs import DISCOVERY
from agentcausal.discovery.plan import plan_discovery
from agentcausal.report.discovery_tables import table_records
from agentcausal.runs.folder import default_run_dir
from agentcausal.runs.plan import Plan, as_plan
from agentcausal.settings import RunSettings
from flows import naming
from flows.engine import ended, publish_report, run_dir_of, run_engine
from flows.runners import RunnerChoice, with_runner
from tasks.discovery import discover_chunk, report_discovery

__all__ = ["discover", "run_discover"]


@flow(name="discover", log_prints=True, flow_run_name=naming.discover_run_name)
def discover(
    datasets: list[str],
    methods: list[str] = ["mac"],  # noqa: B006 (copied)
    seeds: list[int] = [0],  # noqa: B006 (copied)
    n: int = 1000,
    config: DiscoveryConfig | None = None,
    settings: RunSettings | None = None,
    out_dir: str | None = None,
    reversal_cost: int = 1,
    progress: bool = False,
    llm_datasets: list[str] | None = None,
    meta: dict[str, Any] | None = None,
    plan: Plan | dict[str, Any] | str | None = None,
    repeats: int = 1,
    chunk_size: int | None = None,
    max_cost: float | None = None,
    spent_before_usd: float = 0.0,
    max_tokens: int | None = None,
) -> str:
    """Every planned (dataset, seed, method) run; the run folder. ``plan``: a Plan, its dict or its ``plan.json``;
    None: built from the other arguments (:func:`agentcausal.discovery.plan.plan_discovery`). ``max_cost`` (USD) and
    ``max_tokens``: caps on this invocation, jobs past them ``not_run`` (:class:`agentcausal.runs.budget.BudgetGate`);
    ``spent_before_usd``: what the run folder's earlier invocations spent (reported beside it).
    With rows not computed (``failed``, ``not_run``) the flow run ends **Failed** (:class:`flows.engine.FailedRows`,
    its run folder complete) so that a Prefect automation on failed flow runs alerts; else Completed."""
    settings = settings or RunSettings.from_env()
    plan = as_plan(plan) or plan_discovery(
        datasets, methods, settings, config=config, seeds=seeds, n=n, repeats=repeats, llm_datasets=llm_datasets
    )
    naming.add_run_tags(plan.methods, settings, preset=plan.preset)
    run_dir, subject = out_dir or default_run_dir("discover"), "+".join(datasets)
    summary = run_engine(
        DISCOVERY,
        plan,
        settings,
        discover_chunk,
        run_dir,
        chunk_size=chunk_size,
        subject=subject,
        bar=progress,
        meta={**(meta or {}), "reversal_cost": reversal_cost},
        max_cost=max_cost,
        spent_before_usd=spent_before_usd,
        max_tokens=max_tokens,
    )
    files = report_discovery(run_dir, reversal_cost)
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
    datasets: Sequence[str],
    methods: Sequence[str],
    *,
    seeds: Sequence[int] = (0,),
    n: int = 1000,
    runner: RunnerChoice | None = None,
    **kw: Any,
) -> str:
    """Plain-Python entry point (CLI, demo): :func:`discover` with list arguments, on ``runner``'s task runner
    (default: threads; each process runs 3 jobs at once, algorithm runs in worker processes of their own); the run
    folder, also when the flow run ended Failed for rows not computed (the caller reads ``run.json``)."""
    return run_dir_of(
        lambda: with_runner(discover, runner)(
            datasets=list(datasets), methods=list(methods), seeds=[int(s) for s in seeds], n=n, **kw
        )
    )
