"""How a flow runs the engine on Prefect: chunks as task runs, progress, and the reused rows as an artifact.

Wiring shared by the ``attribute`` and ``discover`` flows: the engine
(:mod:`agentcausal.runs.engine`) decides what runs and writes the run folder; this module submits
its chunks to the half's chunk task (at most the engine's window in flight, on the flow's task
runner: threads or Dask), feeds back each result, keeps a progress bar and artifact, and lists the
rows this run paid nothing for in a table artifact; :func:`publish_report` adds the report's.

A signal that interrupts the run's wait (Prefect's own SIGTERM handler: a cancellation or a scheduler's stop;
SIGINT) stops the run (:mod:`agentcausal.runs.stop`: workers killed, items abandoned, exit within seconds);
finished records stay in the results store. A run with rows not computed ends its flow run **Failed**
(:func:`ended`, :class:`FailedRows`); its run folder is written all the same.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import signal
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from prefect import Task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Failed, State
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from agentcausal.report.artifacts import self_contained_markdown
from agentcausal.runs import stop
from agentcausal.runs.budget import BudgetGate  # --max-cost
from agentcausal.runs.engine import REUSED_LISTED, RunEngine, RunSummary, drive, gateway_for
from agentcausal.runs.half import Chunk, RunHalf
from agentcausal.runs.heartbeat import meter_for
from agentcausal.runs.lock import run_folder_lock
from agentcausal.runs.plan import Plan
from agentcausal.settings import RunSettings
from flows import naming
from flows.api_server import unwatched_heartbeats_off
from flows.progress import RunProgress
from flows.runners import dask_workers

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["run_engine", "publish_report", "FailedRows", "ended", "run_dir_of", "frozen_heap"]


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Run a flow's body with the objects alive at its start set aside from the cyclic garbage collector.

    A flow process holds about 400,000 objects before its run makes any (modules, Prefect's client, settings
    and models); a full collection walked every one of them, 0.25-0.3 s of CPU each time (two per 2,000-trace
    run, charged to whatever allocated next). :func:`gc.freeze` moves them to the permanent generation for the
    run, so a collection walks only what the run made; :func:`gc.unfreeze` when the run ends hands them back, so
    a long-lived process (``serve``, the nightly loop) still collects what it drops. A flow inside a frozen one
    (``demo``'s subflows) runs as it is. bench: a 2,000-trace rerun 2.15 -> 1.13 s.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


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
    half : the half (:data:`agentcausal.registry.ATTRIBUTION`, :data:`agentcausal.registry.DISCOVERY`)
    plan, settings : what runs, and where (routing, caches, ``refresh``, ``retry_failed``)
    task : the half's chunk task (:func:`tasks.attribution.attribute_chunk`, :func:`tasks.discovery.discover_chunk`)
    run_dir : the run folder
    chunk_size : jobs per chunk task at most (None: the half's default; on Dask its ``remote_chunk_range`` for the
        cluster's workers, :func:`agentcausal.runs.scheduling.chunk_lengths`)
    subject : the corpus or datasets, for artifact keys
    bar : show a tqdm bar
    meta : facts for ``run.json`` beside the engine's
    max_cost : USD or None, ``--max-cost`` for this invocation: chunks past it are held back as ``not_run``
        (:class:`agentcausal.runs.budget.BudgetGate`; a routed profile without a price: ConfigError, nothing sent)
    spent_before_usd : USD the run folder's earlier invocations spent (``--resume``), reported beside this one's
    max_tokens : int or None, ``--max-tokens``: the same cap on prompt + completion tokens
    """
    kind, unit = half.kind, UNITS[half.kind]
    runner = _task_runner()
    elsewhere = runner is not None and not isinstance(runner, ThreadPoolTaskRunner)  # Dask: other processes
    engine = RunEngine(
        half,
        plan,
        settings,
        chunk_size=chunk_size,
        remote=elsewhere,
        workers=functools.partial(dask_workers, runner) if elsewhere else None,  # asked at the first chunk
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
    sent: dict[int, Chunk] = {}

    def submit(chunk: Chunk) -> Any:
        fut = task.submit(quote(chunk))
        if elsewhere:
            sent[id(fut)] = chunk
        return fut

    def result(fut: Any) -> Any:
        out = fut.result(raise_on_failure=False)
        chunk = sent.pop(id(fut), None)
        if chunk is not None:  # ran in another process (Dask): its calls and tokens reach the heartbeat from here
            _count_usage(engine, chunk, out)
        return out

    try:
        drive(engine, submit=submit, result=result)
    except BaseException as exc:
        signum = _signal_of(exc)
        if signum is not None:  # the run's wait was interrupted: end its workers and items, exit within seconds
            stop.stop_for_signal(signum)
        raise
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


class FailedRows(Exception):
    """A flow run that wrote its run folder but left rows not computed (``failed``, or ``not_run``: the circuit
    breaker, ``--max-cost``): the exception of its Failed state, so the Prefect UI shows the run Failed and an
    automation on "flow run failed" alerts on it. ``run_dir``: the run folder (complete: every row is in
    ``results.parquet``, the ones not computed with their status); the next run computes them."""

    def __init__(self, message: str, run_dir: str) -> None:
        super().__init__(message)
        self.run_dir = run_dir

    def __reduce__(self) -> tuple[Any, ...]:  # pickled with its run folder (Dask, Prefect's result records)
        return (type(self), (str(self), self.run_dir))


def ended(kind: str, summary: RunSummary, run_dir: str) -> str | State[Any]:
    """A flow's return value: ``run_dir`` when every row was computed, else a Failed state (:class:`FailedRows`)
    whose message counts the rows not computed."""
    if not summary.failed and not summary.not_run:
        return run_dir
    message = (
        f"{summary.failed + summary.not_run} of {summary.rows} {UNITS[kind]}s not computed ({summary.failed} failed, "
        f"{summary.not_run} not run){f': {summary.stopped}' if summary.stopped else ''}; run folder {run_dir}; "
        "the next run computes them"
    )
    return Failed(message=message, data=FailedRows(message, run_dir))


def run_dir_of(call: Callable[[], str]) -> str:
    """The run folder of a flow called in this process, also when it ended Failed for rows not computed
    (:func:`ended`); any other failure is raised. Prefect's flow-run heartbeats are off where nobody asked for
    them (:func:`flows.api_server.unwatched_heartbeats_off`)."""
    with unwatched_heartbeats_off():
        try:
            return call()
        except FailedRows as exc:
            return exc.run_dir


def _signal_of(exc: BaseException) -> int | None:
    """The signal behind ``exc``: Prefect's ``TerminationSignal`` (its SIGTERM handler, installed for the flow run:
    a Prefect cancellation, a scheduler's stop), a ``KeyboardInterrupt`` (SIGINT); None for anything else.

    Prefect's handler stays installed as it is: its runner checks for it before it acknowledges a cancellation,
    which then ends the flow run Cancelled rather than Crashed."""
    from prefect.exceptions import TerminationSignal

    if isinstance(exc, TerminationSignal):
        return int(exc.signal)
    if isinstance(exc, stop.StopSignal):
        return exc.signum
    if isinstance(exc, KeyboardInterrupt):
        return int(signal.SIGINT)
    return None


def _task_runner() -> TaskRunner[Any] | None:
    """The flow run's task runner: Prefect's thread pool runs chunks in this process; any other (Dask) in processes
    whose usage meters this process cannot read."""
    from prefect.context import FlowRunContext

    return getattr(FlowRunContext.get(), "task_runner", None)


def _count_usage(engine: RunEngine, chunk: Chunk, out: Any) -> None:
    """Add to this run's usage meter the LLM calls and tokens of a chunk that ran elsewhere: its records stored by
    this run (read back from the results store) and those it returned unstored; cache-only records add nothing."""
    meter = meter_for(engine.half.kind, engine.started)
    with contextlib.suppress(Exception):  # the heartbeat never fails the run
        for s in engine.store.get_many(list(chunk.keys)):
            if s is not None and s.stored_at >= engine.started and not s.cache_hits_only:
                meter.add(s.record.usage)
        if isinstance(out, list):
            for rec in out:
                if rec is not None and not rec.reused:
                    meter.add(rec.usage)


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
