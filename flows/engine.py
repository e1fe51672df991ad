"""How a flow runs the engine on Prefect: chunks as task runs, progress, and the reused rows as an artifact.

Wiring shared by the ``attribute`` and ``discover`` flows: the engine
(:mod:`agentcausal.runs.engine`) decides what runs and writes the run folder; this module submits
its chunks to the half's chunk task (at most the engine's window in flight, on the flow's task
runner: threads or Dask), feeds back each result, keeps a progress bar and artifact, and lists the
rows this run paid nothing for in a table artifact; :func:`publish_report` adds the report's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from prefect import Task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.utilities.annotations import quote

from agentcausal.report.artifacts import self_contained_markdown
from agentcausal.runs.budget import BudgetGate  # --max-cost
from agentcausal.runs.engine import REUSED_LISTED, RunEngine, RunSummary, drive, gateway_for
from agentcausal.runs.half import RunHalf
from agentcausal.runs.heartbeat import meter_for
from agentcausal.runs.lock import run_folder_lock
from agentcausal.runs.plan import Plan
from agentcausal.settings import RunSettings
from flows import naming
from flows.progress import RunProgress

__all__ = ["run_engine", "publish_report"]

F = TypeVar("F", bound=Callable[..., Any])

#: what one job of each half is called in progress lines and artifacts
UNITS = {"attribute": "(trace, method) result", "discover": "(dataset, seed, method) run"}


def _holding_run_folder(fn: F) -> F:
    """``fn(half, plan, settings, task, run_dir, ...)`` holding ``run_dir``'s lock (:mod:`agentcausal.runs.lock`):
    one run per folder; re-entrant, so a CLI that holds it already goes on."""

    @functools.wraps(fn)
    def holding(half: RunHalf, plan: Plan, settings: RunSettings, task: Task, run_dir: str, **kw: Any) -> Any:
        with run_folder_lock(run_dir):
            return fn(half, plan, settings, task, run_dir, **kw)

    return holding  # type: ignore[return-value]  # functools.wraps: fn's signature


@_holding_run_folder
def run_engine(
    half: RunHalf,
    plan: Plan,
    settings: RunSettings,
    task: Task,
    run_dir: str,
    *,
    chunk_size: int | None,
    subject: str,
    bar: bool,
    meta: Mapping[str, Any],
    max_cost: float | None = None,
    spent_before_usd: float = 0.0,
    max_tokens: int | None = None,
) -> RunSummary:
    """Run ``plan`` through the engine with ``task`` as the chunk task; write the run folder; its summary.

    Parameters
    ----------
    half : the half (:data:`agentcausal.attribution.jobs.ATTRIBUTION`, :data:`agentcausal.discovery.jobs.DISCOVERY`)
    plan, settings : what runs, and where (routing, caches, ``refresh``, ``retry_failed``)
    task : the half's chunk task (:func:`tasks.attribution.attribute_chunk`, :func:`tasks.discovery.discover_chunk`)
    run_dir : the run folder
    chunk_size : jobs per chunk task at most (None: the half's default)
    subject : the corpus or datasets, for artifact keys
    bar : show a tqdm bar
    meta : facts for ``run.json`` beside the engine's
    max_cost : USD or None, ``--max-cost`` for this invocation: chunks past it are held back as ``not_run``
        (:class:`agentcausal.runs.budget.BudgetGate`; a routed profile without a price: ConfigError, nothing sent)
    spent_before_usd : USD the run folder's earlier invocations spent (``--resume``), reported beside this one's
    max_tokens : int or None, ``--max-tokens``: the same cap on prompt + completion tokens
    """
    kind, unit = half.kind, UNITS[half.kind]
    engine = RunEngine(
        half,
        plan,
        settings,
        chunk_size=chunk_size,
        budget=None
        if max_cost is None and max_tokens is None
        else BudgetGate.from_plan(plan, max_cost, spent_before_usd, max_tokens=max_tokens),
    )
    engine.spend.before = spent_before_usd
    shown = RunProgress(
        engine.total,
        0,
        desc=kind,
        unit=unit.split()[-1],
        bar=bar,
        key=naming.key(f"{kind}-progress", subject),
        description=f"{engine.total} {unit}s",
        meter=meter_for(kind, engine.started),
        live=lambda: _in_flight(settings),
    )
    engine.on_progress = shown.advance
    try:
        drive(engine, submit=lambda chunk: task.submit(quote(chunk)), result=lambda f: f.result(raise_on_failure=False))
    finally:
        shown.close()
    summary = engine.finish(run_dir, meta)
    print(
        f"{kind}: {summary.reused} of {summary.rows} {unit}s reused ({summary.from_store} from the results store "
        f"without a task run)"
        + (f"; {summary.dropped} stored records failed their check and were computed again" if summary.dropped else "")
    )
    if summary.stopped:
        print(f"{kind}: stopped early: {summary.stopped}; {summary.not_run} {unit}s not run")
    if summary.reused_rows:
        create_table_artifact(
            summary.reused_rows,
            key=naming.key(f"{kind}-reused", subject),
            description=f"{summary.reused} of {summary.rows} {unit}s reused, {summary.from_store} "
            f"from the results store (no task run)"
            + (f"; first {REUSED_LISTED:,} listed" if summary.reused > REUSED_LISTED else ""),
        )
    if engine.budget is not None and engine.budget.refused_jobs:
        print(
            f"{kind}: {engine.budget.refused_jobs} of {summary.rows} {unit}s not run (budget: "
            f"{engine.budget.describe()}); the next invocation with --resume computes them"
        )
    return summary


def _in_flight(settings: RunSettings) -> tuple[int, int]:
    """LLM calls and tokens of this process's items in flight (the gateway's ledger holds them until done); none
    before a task made the process's gateway (the heartbeat never makes one: on Dask the workers hold theirs)."""
    if not gateway_for.cache_info().currsize:
        return 0, 0
    u = gateway_for(settings).usage.total()
    return u.calls, u.prompt_tokens + u.completion_tokens


def publish_report(
    subject: str,
    run_dir: str,
    *,
    table_key: str,
    table: list[dict[str, Any]],
    table_description: str,
    report_key: str,
    markdown: str,
) -> None:
    """The run's summary table and its markdown report (made self-contained) as Prefect artifacts."""
    create_table_artifact(table, key=naming.key(table_key, subject), description=table_description)
    create_markdown_artifact(
        self_contained_markdown(markdown, run_dir),
        key=naming.key(report_key, subject),
        description=f"run folder {run_dir}",
    )
