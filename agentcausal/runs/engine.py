"""The run engine: plan → item stream → envelope → results store → run folder, for both halves.

One loop, written once and free of Prefect; each half plugs in through one small protocol
(:class:`~agentcausal.runs.half.RunHalf`: its jobs, their cache key, how to run one in the envelope,
the record of a failure, and the sink that scores its records into the run folder). ``flows/`` only hands the
engine's chunks to Prefect tasks and publishes artifacts::

    engine = RunEngine(half, plan, settings, chunk_size=25)
    drive(engine, submit=lambda c: task.submit(c), result=lambda f: f.result(raise_on_failure=False))
    summary = engine.finish(run_dir, meta)

1. **Resume** (:meth:`RunEngine.chunks`, in the orchestrating process): the plan's items are read
   one at a time (:meth:`agentcausal.runs.plan.Plan.iter_items`); each job's cache key is looked up
   in the results store (:mod:`agentcausal.runs.store`, a few hundred keys per query). A stored
   record is reused; the others are cut into chunks of one method (:func:`agentcausal.runs.scheduling.chunk_lengths`)
   as they come, so the first tasks start while the plan is still being read.
2. **Run** (:func:`run_chunk`, in a task: a thread, a Dask worker or a plain call): each job of a chunk
   loads its own item, runs its method in the envelope (the half's ``run``) on the process's item pool
   and stores its record as it finishes; the chunk returns only the records it could not store.
   A failure of the run (transport, 401, timeout) is raised after every job was tried, so the
   orchestrator retries the chunk and only its unfinished jobs run again.
3. **Collect** (:meth:`RunEngine.done`): a chunk that failed after its retries gives a ``failed``
   record to each job it did not finish (never stored: the next run computes it again).
4. **Finish** (:meth:`RunEngine.finish`): the jobs again, in the plan's order; each record read back
   from the store (or the chunk's answer), marked ``reused`` when this run paid nothing for it, and
   handed to the half's sink, which scores it into ``results.parquet`` (and discovery's
   ``outcomes.jsonl``) and lets it go; then ``run.json``.

Nothing holds the corpus: at most :func:`drive`'s window of chunks is in flight, records are read
back one batch at a time, and a trace is parsed only while its job runs or is scored.
"""

from __future__ import annotations

import functools
import math
import queue
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from agentcausal.exceptions import AgentCausalError, EndpointDownError
from agentcausal.integrity import take_heals
from agentcausal.llm import Gateway
from agentcausal.records import FailureTally, RunRecord
from agentcausal.runs.breaker import breaker_for, method_profiles
from agentcausal.runs.budget import (  # --max-cost / --max-tokens, spend
    BudgetGate,
    SpendTally,
    not_run_record,
    record_cost,
    record_tokens,
)
from agentcausal.runs.folder import load_run_meta, write_run_meta
from agentcausal.runs.half import Chunk, Job, RecordSink, RunHalf
from agentcausal.runs.heartbeat import meter_for
from agentcausal.runs.plan import Plan, write_plan
from agentcausal.runs.scheduling import chunk_lengths, item_pools_held, run_items
from agentcausal.runs.store import RETRIED_STATUSES, ResultStore
from agentcausal.settings import RunSettings

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "RunSummary",
    "RunEngine",
    "run_chunk",
    "drive",
    "gateway_for",
    "result_store",
    "spent_in",
    "REUSED_LISTED",
    "REUSED_REPORT_EVERY_S",
]

#: jobs per chunk task by default (``--chunk-size``; at least 8 chunks per method: a small corpus keeps a task run
#: per job, a progress line comes at least every eighth of a method's jobs). A Prefect task run costs the flow's
#: process about 13 ms of CPU whatever it holds, while a chunk's items share one item pool however the jobs are cut
#: (:mod:`agentcausal.runs.scheduling`): 2,000 traces at 100 per chunk run 20 task runs, not 80 (concurrency 64,
#: five pairs: 1.40-1.63 -> 0.54-0.86 s of CPU in Prefect's task threads and event loop, 0.3-0.5 ms per request)
DEFAULT_CHUNK_SIZE = 100

#: reused rows listed by name in a run's summary (the count is always given)
REUSED_LISTED = 1000

#: jobs looked up in the store per query, and records read back per query at the end
_BATCH = 256

#: seconds between two progress reports of the jobs the results store answers while the plan is read (pass 1):
#: a rerun answers thousands in a fraction of a second, and each report is a line and an update of the run's
#: progress artifact (a round trip to the Prefect API on the flow's main thread); the count also goes out before
#: each chunk is handed to the drive loop and when the plan has been read
REUSED_REPORT_EVERY_S = 1.0

F = TypeVar("F")


@functools.lru_cache(maxsize=8)
def gateway_for(settings: RunSettings) -> Gateway:
    """One gateway per (process, settings): shares HTTP clients, semaphores and the disk cache handle."""
    return settings.gateway()


def result_store(settings: RunSettings, kind: str, model: type[RunRecord]) -> ResultStore:
    """The results store of ``kind`` under ``<cache_dir>/results`` (one handle per process and folder; a new
    one when the file was removed since)."""
    store = _store(str(Path(settings.cache_dir).resolve()), kind, model)
    if not store.path.is_file():
        _store.cache_clear()
        store = _store(str(Path(settings.cache_dir).resolve()), kind, model)
    return store


@functools.lru_cache(maxsize=8)
def _store(cache_dir: str, kind: str, model: type[RunRecord]) -> ResultStore:
    return ResultStore(cache_dir, kind, model)


def spent_in(run_dir: str | Path) -> float:
    """USD a run folder's invocations spent so far: its ``run.json``'s ``spend.run_total_usd`` (0 without a readable
    one). Reported beside an invocation's own spend; never counted against its cap."""
    try:
        spend = load_run_meta(run_dir).get("spend")
        return float(spend.get("run_total_usd") or 0.0) if isinstance(spend, dict) else 0.0
    except (AgentCausalError, OSError, ValueError, TypeError):
        return 0.0


def run_chunk(half: RunHalf, chunk: Chunk) -> list[RunRecord | None] | None:
    """Run one chunk (the body of a chunk task): every job on the process's item pool, each record stored
    as it finishes (:func:`agentcausal.runs.scheduling.run_items`).

    Returns
    -------
    None when every record is in the store (the common case: nothing for the orchestrator to hold), else a
    list in job order: None where the record is in the store, the record that could not be stored elsewhere

    Raises
    ------
    AgentCausalError
        The first failure of the run, after every job was tried (the orchestrator retries the chunk).
    """
    store = result_store(chunk.settings, half.kind, half.record_type)
    breaker = breaker_for(half.kind, chunk.not_before, chunk.settings.breaker_after)  # runs/breaker.py
    profiles = method_profiles(chunk.plan, chunk.method)
    meter = meter_for(half.kind, chunk.not_before)  # calls and tokens so far (runs/heartbeat.py)
    jobs = [
        (key, breaker.guard(meter.counted(functools.partial(half.run, job, chunk.plan, chunk.settings)), profiles))
        for job, key in zip(chunk.jobs, chunk.keys, strict=True)
    ]
    out = run_items(
        jobs, store, not_before=chunk.not_before, workers=half.item_workers(chunk.settings), store_if=half.storable
    )
    return None if all(r is None for r in out) else out


@dataclass
class RunSummary:
    """What a run did.

    Attributes
    ----------
    run_dir : str
    rows : int, records written (one per job)
    reused : int, rows this run paid nothing for
    from_store : int, jobs the store answered before any task ran
    failed : int, rows whose status is ``failed`` (not stored; the next run computes them again)
    not_run : int, rows whose status is ``not_run`` (the circuit breaker stopped the run first; not stored)
    stopped : str or None, why the run stopped early (the circuit breaker's message)
    failures : FailureTally, rows by failure kind with the fields of each kind's first (``run.json``'s ``failures``)
    dropped : int, stored rows that failed their checksum or schema (recomputed)
    reused_rows : list of dict, the first :data:`REUSED_LISTED` reused rows (``id``, ``method``, ``status``)
    wall_seconds : float
    """

    run_dir: str
    rows: int = 0
    reused: int = 0
    from_store: int = 0
    failed: int = 0
    not_run: int = 0
    stopped: str | None = None
    failures: FailureTally = field(default_factory=FailureTally)
    dropped: int = 0
    reused_rows: list[dict[str, Any]] = field(default_factory=list)
    wall_seconds: float = 0.0


class RunEngine:
    """One run of a plan through the results store.

    Parameters
    ----------
    half : RunHalf
    plan : Plan (its items in memory or in its items file)
    settings : RunSettings (``refresh``: nothing reused; ``retry_failed``: stored ``content_failed`` and
        ``degraded`` records computed again)
    chunk_size : int or None, jobs per chunk at most (1: a task per job); None or 0: from the half's sizes
        (:func:`~agentcausal.runs.scheduling.chunk_lengths`)
    remote : bool, chunks run in other processes (Dask workers); ``workers``: how many (None: unknown), asked at
        the first chunk cut, so a run the results store answers whole never asks (asking may start a cluster)
    on_progress : callable or None, called with the number of jobs newly done (reused or finished)
    budget : BudgetGate or None, ``--max-cost`` / ``--max-tokens`` (:class:`agentcausal.runs.budget.BudgetGate`: this
        invocation's cap, jobs admitted by their expected cost and the measured spend): :func:`drive` asks it
        before each chunk; with one, a default chunk is one job (up to MAX_CHUNKS chunks): the gate acts per job

    Raises
    ------
    ResultStoreError
        If the results store cannot be read.
    """

    def __init__(
        self,
        half: RunHalf,
        plan: Plan,
        settings: RunSettings,
        *,
        chunk_size: int | None = None,
        on_progress: Callable[[int], None] | None = None,
        budget: BudgetGate | None = None,
        remote: bool = False,
        workers: Callable[[], int | None] | None = None,
    ) -> None:
        self.half, self.plan, self.settings = half, plan, settings
        self.header = plan.header()
        self.started = time.time()
        self.store = result_store(settings, half.kind, half.record_type)
        self.keyer = half.keyer(plan, settings)
        self._counts = half.job_counts(plan)
        self.total = sum(self._counts.values())
        self.budget, self.spend = budget, SpendTally()  # the --max-cost gate; what this run paid
        self._chunk_size, self._remote, self._workers = chunk_size, remote, workers
        self.on_progress = on_progress
        self.unstored: dict[str, RunRecord] = {}  # records no store holds: fallbacks after a run failure, failures
        self.from_store = 0
        self._unreported, self._reported_at = 0, time.monotonic()  # jobs the store answered, not yet reported
        self._dropped_before = self.store.dropped
        self.breaker = breaker_for(half.kind, self.started, settings.breaker_after)  # runs/breaker.py

    @functools.cached_property
    def chunk_len(self) -> dict[str, int]:
        """Jobs per chunk of each method (worked out when the first chunk is cut, or asked for)."""
        remote = self._remote and self.budget is None and not self._chunk_size  # with a budget: a job per chunk
        default = 1 if self.budget is not None else self.half.default_chunk_size
        bounds = self.half.remote_chunk_range if remote else None
        workers = self._workers() if bounds and self._workers is not None else None
        return chunk_lengths(self._counts, self._chunk_size, default, remote=bounds, workers=workers)

    @property
    def window(self) -> int:
        """Chunks to keep in flight: enough to keep twice the item pool busy (at least 8)."""
        per = max(self.chunk_len.values(), default=1)
        return max(8, 2 * math.ceil(self.half.item_workers(self.settings) / per))

    def _progress(self, n: int) -> None:
        if n and self.on_progress is not None:
            self.on_progress(n)

    def chunks(self) -> Iterator[Chunk]:
        """The chunks to run, cut from the jobs the store cannot answer, as the plan is read (pass 1); once the
        circuit breaker is open on an endpoint a method uses, none of that method's: their jobs get ``not_run``.
        The jobs the store answers go to ``on_progress`` before each chunk, at the end, and in between at most
        every :data:`REUSED_REPORT_EVERY_S` seconds."""
        for chunk in self._cut():
            self._report_reused()  # before the drive loop may wait for a chunk
            if not self.breaker.blocks(method_profiles(self.header, chunk.method)):
                yield chunk
            else:
                self._not_run(chunk, self.breaker.error)  # type: ignore[arg-type]  # blocks: error is set
        self._report_reused()

    def _report_reused(self) -> None:
        n, self._unreported, self._reported_at = self._unreported, 0, time.monotonic()
        self._progress(n)

    def _not_run(self, chunk: Chunk, error: EndpointDownError) -> None:
        for job, key in zip(chunk.jobs, chunk.keys, strict=True):
            if self.store.get(key, not_before=self.started) is None:
                self.unstored[key] = self.half.failed(job, error).model_copy(
                    update={"status": "not_run", "status_detail": f"endpoint down: {error.endpoint}"}
                )
        self._progress(len(chunk.jobs))

    def _cut(self) -> Iterator[Chunk]:
        buffers: dict[str, list[tuple[Job, str]]] = {}
        batch: list[Job] = []
        for job in self.half.submission_order(self.plan):
            batch.append(job)
            if len(batch) >= _BATCH:
                yield from self._resume(batch, buffers)
                batch = []
        yield from self._resume(batch, buffers)
        for method, pending in buffers.items():
            if pending:
                yield self._chunk(method, pending)

    def _resume(self, batch: list[Job], buffers: dict[str, list[tuple[Job, str]]]) -> Iterator[Chunk]:
        keys = [self.keyer(j) for j in batch]
        stored = [None] * len(keys) if self.settings.refresh else self.store.get_many(keys)
        reused = 0
        for job, key, s in zip(batch, keys, stored, strict=True):
            if s is not None and not (self.settings.retry_failed and s.record.status in RETRIED_STATUSES):
                reused += 1
                continue
            pending = buffers.setdefault(job.method, [])
            pending.append((job, key))
            if len(pending) >= self.chunk_len.get(job.method, 1):
                yield self._chunk(job.method, pending)
                buffers[job.method] = []
        self.from_store += reused
        self._unreported += reused
        if time.monotonic() - self._reported_at >= REUSED_REPORT_EVERY_S:
            self._report_reused()

    def _chunk(self, method: str, pending: list[tuple[Job, str]]) -> Chunk:
        return Chunk(
            kind=self.half.kind,
            method=method,
            jobs=tuple(j for j, _ in pending),
            keys=tuple(k for _, k in pending),
            plan=self.header,
            settings=self.settings,
            not_before=self.started,
        )

    def done(self, chunk: Chunk, result: list[RunRecord | None] | BaseException | None) -> None:
        """Take a finished chunk's answer: its unstored records (None: every record stored), or the failure
        left after its retries."""
        self._settle(chunk, result)  # --max-cost / --max-tokens: what it spent
        if isinstance(result, EndpointDownError):  # the circuit breaker (of this process or a worker's) is open
            self.breaker.trip(result)
            self._not_run(chunk, result)
            return
        if isinstance(result, BaseException):  # a failure of the run: its unfinished jobs get a failed row
            for job, key in zip(chunk.jobs, chunk.keys, strict=True):
                if self.store.get(key, not_before=self.started) is None:
                    self.unstored[key] = self.half.failed(job, result)
        elif result is not None:
            for key, rec in zip(chunk.keys, result, strict=True):
                if rec is not None:
                    self.unstored[key] = rec
        self._progress(len(chunk.jobs))

    def _settle(self, chunk: Chunk, result: list[RunRecord | None] | BaseException | None) -> None:
        """The budget gate learns what each job of a finished chunk measured: its record of this run (stored, or
        the chunk's answer); a job without one (failed) counts its expected cost."""
        if self.budget is None:
            return
        answered = result if isinstance(result, list) else [None] * len(chunk.keys)
        stored = self.store.get_many([k for k, r in zip(chunk.keys, answered, strict=True) if r is None])
        fresh = [s.record for s in stored if s is not None and s.stored_at >= self.started]
        fresh += [r for r in answered if r is not None and r.status != "failed"]
        self.budget.settle(chunk, [(record_cost(r), record_tokens(r)) for r in fresh])

    def hold_back(self, chunk: Chunk) -> None:
        """A chunk the budget refused: each job gets a ``not_run`` record (never stored)."""
        cap = self.budget.describe() if self.budget is not None else "the spend cap"
        for job, key in zip(chunk.jobs, chunk.keys, strict=True):
            self.unstored[key] = not_run_record(self.half, job, cap)
        self._progress(len(chunk.jobs))

    def finish(self, run_dir: str | Path, meta: Mapping[str, Any] | None = None) -> RunSummary:
        """Write the run folder (pass 2): ``plan.json``, every job's record in the plan's order to the half's sink,
        then ``run.json`` (``meta`` with the engine's facts and the sink's added).

        Returns
        -------
        RunSummary
        """
        d = Path(run_dir)
        if not self.spend.before:  # not given (a flow called from Python): the folder's earlier invocations
            self.spend.before = spent_in(d)
            if self.budget is not None:
                self.budget.spent_before = self.spend.before
        write_plan(self.plan, d)  # plan.json (and its items, when the plan held them in memory) beside the results
        meta = dict(meta or {})
        sink = self.half.sink(self.plan, d, meta)
        summary = RunSummary(run_dir=str(d), from_store=self.from_store)
        batch: list[Job] = []
        for job in self.half.jobs(self.plan):
            batch.append(job)
            if len(batch) >= _BATCH:
                self._write(batch, sink, summary)
                batch = []
        self._write(batch, sink, summary)
        extra = sink.close()
        extra["spend"] = {
            **self.spend.facts(self.plan.estimate),  # the actual beside the estimate (runs/budget.py)
            "budget": self.budget.facts() if self.budget is not None else None,
        }
        summary.dropped = self.store.dropped - self._dropped_before
        summary.stopped = str(self.breaker.error) if self.breaker.error is not None else None
        summary.wall_seconds = round(time.time() - self.started, 2)
        write_run_meta(
            d,
            {
                **meta,
                **extra,
                "plan": self.plan.to_json_dict(),
                "preset": self.plan.preset,
                "repeats": self.plan.repeats,
                "routing": self.settings.routing,
                "refresh": self.settings.refresh,
                "profiles": str(self.settings.profiles_path or "packaged"),
                "retry_failed": self.settings.retry_failed,
                "chunk_size": self.__dict__.get("chunk_len"),  # jobs per chunk task by method; None: no chunk ran
                "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.started)),
                "wall_seconds": summary.wall_seconds,
                "rows": {
                    "total": summary.rows,
                    "reused": summary.reused,
                    "from_store": summary.from_store,
                    "failed": summary.failed,
                    "not_run": summary.not_run,
                },
                **({"stopped": summary.stopped} if summary.stopped else {}),
                "failures": summary.failures.facts(),
                "store": {
                    "path": str(self.store.path),
                    "dropped": summary.dropped,
                    "healed": [
                        h._asdict() for h in take_heals(self.store.path, self.settings.llm_cache_dir / "cache.db")
                    ],
                },
            },
        )
        return summary

    def _write(self, batch: list[Job], sink: RecordSink, summary: RunSummary) -> None:
        keys = [self.keyer(j) for j in batch]
        wanted = [k for k in keys if k not in self.unstored]
        stored = dict(zip(wanted, self.store.get_many(wanted), strict=True))
        for job, key in zip(batch, keys, strict=True):
            rec = self.unstored.pop(key, None)
            if rec is None:
                s = stored.get(key)
                if s is None:  # dropped (failed its check) since it was stored, or never finished
                    rec = self.half.failed(job, RuntimeError("no record of this job in the results store"))
                else:
                    reused = s.stored_at < self.started or s.cache_hits_only
                    rec = s.record if reused == s.record.reused else s.record.model_copy(update={"reused": reused})
            summary.rows += 1
            summary.failed += rec.status == "failed"
            summary.not_run += rec.status == "not_run"
            summary.failures.add(rec)
            if rec.reused:
                summary.reused += 1
                if len(summary.reused_rows) < REUSED_LISTED:
                    summary.reused_rows.append(
                        {
                            "id": job.item.id,
                            "method": job.method,
                            "status": rec.status,
                            **({"seed": job.seed} if self.half.kind == "discover" else {}),
                        }
                    )
            self.spend.add(job.method, rec)
            sink.add(job, rec)


def drive(
    engine: RunEngine, submit: Callable[[Chunk], F], result: Callable[[F], Any], *, window: int | None = None
) -> None:
    """Run every chunk of ``engine``: ``submit`` each (at most ``window`` in flight), hand each result back.

    Parameters
    ----------
    engine : RunEngine
    submit : callable Chunk -> future; the future must have ``add_done_callback(fn)`` calling ``fn(future)``
        (a Prefect future, a :class:`concurrent.futures.Future`)
    result : callable future -> the chunk's return value, or the exception it ended with (never raises)
    window : chunks in flight at most (default :attr:`RunEngine.window`, worked out at the first chunk)
    """
    finished: queue.SimpleQueue[Any] = queue.SimpleQueue()
    in_flight: dict[int, tuple[Chunk, F]] = {}

    def collect() -> None:
        fut = finished.get()
        chunk, _ = in_flight.pop(id(fut))
        engine.done(chunk, result(fut))

    with item_pools_held():  # the item threads end with the last run of the process, and their store connections
        for chunk in engine.chunks():
            window = window or engine.window
            while len(in_flight) >= window:
                collect()
            if engine.budget is not None:  # --max-cost: wait for the chunks in flight, then submit or hold back
                while in_flight and not engine.budget.fits(chunk):
                    collect()
                if not engine.budget.admit(chunk):
                    engine.hold_back(chunk)
                    continue
            fut = submit(chunk)
            in_flight[id(fut)] = (chunk, fut)
            fut.add_done_callback(finished.put)  # type: ignore[attr-defined]  # a Prefect future
        while in_flight:
            collect()
