"""The ``attribute`` flow: the run engine over a trace corpus as chunk tasks, then the report (:mod:`flows.engine`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow

from agentcausal.attribution.jobs import ATTRIBUTION
from agentcausal.attribution.plan import plan_attribution
from agentcausal.report.artifacts import corpus_label
from agentcausal.report.attribution_tables import table_records
from agentcausal.runs.folder import default_run_dir
from agentcausal.runs.plan import Plan, as_plan
from agentcausal.settings import RunSettings
from flows import naming
from flows.engine import ended, publish_report, run_dir_of, run_engine
from flows.runners import RunnerChoice, with_runner
from tasks.attribution import attribute_chunk, evaluate_run

__all__ = ["attribute", "run_attribute"]


@flow(name="attribute", log_prints=True, flow_run_name=naming.attribute_run_name)
def attribute(
    paths: list[str],
    methods: list[str] = ["all_at_once"],  # noqa: B006 (Prefect copies parameters)
    method_settings: dict[str, dict[str, Any]] | None = None,
    settings: RunSettings | None = None,
    limit: int | None = None,
    ids: list[str] | None = None,
    max_steps: int | None = None,
    with_ground_truth: bool | None = None,
    out_dir: str | None = None,
    progress: bool = False,
    skip_invalid: bool = False,
    meta: dict[str, Any] | None = None,
    preset: str | None = None,
    repeats: int = 1,
    plan: Plan | dict[str, Any] | str | None = None,
    chunk_size: int | None = None,
    max_cost: float | None = None,
    spent_before_usd: float = 0.0,
    max_tokens: int | None = None,
) -> str:
    """Every planned (trace, method) pair; the run folder. ``plan``: a Plan, its dict or its ``plan.json``; None:
    built from the other arguments (:func:`agentcausal.attribution.plan.plan_attribution`). ``max_cost`` (USD) and
    ``max_tokens``: caps on this invocation, jobs past them ``not_run`` (:class:`agentcausal.runs.budget.BudgetGate`);
    ``spent_before_usd``: what the run folder's earlier invocations spent (reported beside it).
    With rows not computed (``failed``, ``not_run``) the flow run ends **Failed** (:class:`flows.engine.FailedRows`,
    its run folder complete) so that a Prefect automation on failed flow runs alerts; else Completed."""
    settings = settings or RunSettings.from_env()
    paths = naming.corpus_paths(paths, settings)  # empty: the Who&When folder of the settings, resolved now
    run_dir, subject = out_dir or default_run_dir("attribute"), corpus_label(paths)
    plan = as_plan(plan) or plan_attribution(
        paths,
        methods,
        settings,
        method_settings=method_settings,
        ids=ids,
        limit=limit,
        max_steps=max_steps,
        with_ground_truth=with_ground_truth,
        skip_invalid=skip_invalid,
        preset=preset,
        repeats=max(1, repeats),
        run_dir=run_dir,
    )
    naming.add_run_tags(plan.methods, settings, preset=plan.preset)
    summary = run_engine(
        ATTRIBUTION,
        plan,
        settings,
        attribute_chunk,
        run_dir,
        chunk_size=chunk_size,
        subject=subject,
        bar=progress,
        meta={**(meta or {}), "corpus": [str(Path(p).resolve()) for p in paths]},
        max_cost=max_cost,
        spent_before_usd=spent_before_usd,
        max_tokens=max_tokens,
    )
    report = evaluate_run(run_dir)
    naming.add_run_tags(plan.methods, settings, preset=plan.preset, subsets=set(report.evaluation.by_subset["subset"]))
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
    paths: Sequence[str], methods: Sequence[str], *, runner: RunnerChoice | None = None, **kw: Any
) -> str:
    """Plain-Python entry point (CLI, demo): :func:`attribute` with list arguments, on ``runner``'s task runner; the
    run folder, also when the flow run ended Failed for rows not computed (the caller reads ``run.json``)."""
    return run_dir_of(
        lambda: with_runner(attribute, runner)(paths=[str(p) for p in paths], methods=list(methods), **kw)
    )
