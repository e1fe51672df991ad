"""Benchmark 7 (opt-in, ``--only scale``): the ``attribute`` flow over large synthetic corpora.

Each row runs the Prefect ``attribute`` flow over :func:`agentcausal_fakes.synthetic.synthetic_traces`
written as one JSONL file, against the fake OpenAI server (test double,
:mod:`bench.server`) in a child process with a fixed latency per request, one profile
with ``max_concurrency = c`` shared by chat and embedding requests (a new model label per
row, so no row reads another's LLM cache). Prefect's temporary API is started before any
row by a warm-up flow (timed apart, ``prefect_api_start_s``). Every row runs in a fresh process of
its own on that API (:func:`fresh_row`), warmed by an untimed 10-trace flow, so no row carries
the heap, threads or Dask clients of the rows before it. Then the same flow again on the same
cache folder (a fully cached rerun, in the same process).

Rows (issue 22 item 5), from ``plan`` (method, traces), ``latencies_s`` and ``concurrencies``:
every method at the first latency and every concurrency, and at the other latencies the
highest concurrency only; with ``"dask"`` in ``runners``, all_at_once once more at the first
latency and the highest concurrency on a local Dask cluster of ``dask_workers`` worker
processes **started and warmed (imports) before the timed call**, as a standing cluster is;
the concurrency limit holds per process, so each worker's profile gets ``concurrency /
dask_workers`` slots and the row's ``concurrency`` is their sum (the bound's denominator).
With ``memory_traces`` (e.g. 5,000 and 50,000), all_at_once at the highest concurrency and
``memory_latency_s`` once per size, each in a fresh process of its own (first run only):
the memory pair, whose ``rss_mb`` is that process's peak.

Per row: ``runner``, ``traces``, ``method``, ``concurrency``, ``chunk_size`` (jobs per chunk task, as the run's
``run.json`` records it: on Dask the engine sizes it by the cluster's workers), ``latency_s``,
``requests`` (at the server), ``peak_in_flight`` (the server's peak of requests in flight),
``wall_s`` (the flow call, first run), ``bound_s = requests x latency / concurrency`` (a
lower bound of the wall time), ``ratio = wall_s / bound_s``, ``cpu_ms_per_request`` (CPU of
the client's processes during the first run, the flow's and for Dask its workers', per
request at the server: what binds when it nears ``1000 x latency / concurrency`` ms on a
core), ``cpu_s`` (those CPU seconds), ``rerun_s`` and ``rerun_requests`` (the second run), ``rerun_fraction = rerun_s /
wall_s``, ``rss_mb`` (peak resident memory of the flow's process during the row: Linux's
``VmHWM`` reset before the row through ``/proc/self/clear_refs``; elsewhere the process's
peak so far, said in ``rss_scope``), ``rows_ok`` (the run's Parquet holds every trace once
under its own id and no ``failed`` row, on both runs), ``failed_rows``, and where it ran: ``cpus`` and the 1-minute
load average at the row's start (``load_avg_1``) and end (``load_avg_1_at_end``). The server and the
corpus generator never count: they are other processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.runs.folder import load_run_meta
from agentcausal.runs.options import RunOptions
from agentcausal_fakes.profiles import profiles_toml
from agentcausal_fakes.synthetic import iter_synthetic_traces
from bench.common import in_fresh_process, md_table, peak_rss_mb, reset_peak_rss, scratch_dir
from bench.server import ServerProcess

__all__ = ["scale_row", "fresh_row", "run_scale", "scale_markdown", "DEFAULT_PLAN", "DEFAULT_MEMORY_TRACES", "COLUMNS"]

#: (method, traces) of the full benchmark (issue 22 item 5)
DEFAULT_PLAN = (("all_at_once", 2000), ("dcfa", 500))
#: corpus sizes of the memory pair (issue 22 item 3)
DEFAULT_MEMORY_TRACES = (5000, 50000)
#: numbers of datasets of the discovery half's memory pair (issue 29 item 6)
DEFAULT_MEMORY_DATASETS = (100, 1000)

COLUMNS = [
    "runner",
    "traces",
    "method",
    "concurrency",
    "chunk_size",
    "latency_s",
    "requests",
    "peak_in_flight",
    "wall_s",
    "bound_s",
    "ratio",
    "cpu_ms_per_request",
    "rerun_s",
    "rerun_requests",
    "rerun_fraction",
    "rss_mb",
    "rows_ok",
    "failed_rows",
    "cpus",
    "load_avg_1",
]


# ------------------------------------------------------------------ measuring
def _cpu_s(pids: Sequence[int] = ()) -> float:
    """CPU seconds of this process plus the processes ``pids`` (Dask workers), user and system."""
    total = time.process_time()
    if pids:
        import psutil

        for pid in pids:
            try:
                t = psutil.Process(pid).cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
    return total


def _rows_ok(run_dir: str, ids: Sequence[str]) -> tuple[bool, int]:
    """(every trace once under its own id, rows whose status is ``failed``)."""
    import pandas as pd

    df = pd.read_parquet(Path(run_dir) / "results.parquet", columns=["trace_id", "status"])
    return (len(df) == len(ids) and list(sorted(df["trace_id"])) == sorted(ids)), int((df["status"] == "failed").sum())


def _write_corpus(n: int, path: Path) -> list[str]:
    """``n`` synthetic traces as JSONL at ``path``, streamed (run in a child process); their ids."""
    from agentcausal.traces.jsonl import write_jsonl

    ids: list[str] = []

    def stream():
        for t in iter_synthetic_traces(n):
            ids.append(t.id)
            yield t

    write_jsonl(stream(), path)
    return ids


# ------------------------------------------------------------------ Dask
def _warm_worker() -> int:
    """Import what a chunk task needs (run on each worker before timing); the worker's pid."""
    import flows.attribute  # noqa: F401  (the tasks and every registered method)

    return os.getpid()


class _StandingCluster:
    """A local Dask cluster of ``n`` worker processes on loopback, started and warmed before the timed call."""

    def __init__(self, n: int, threads_per_worker: int = 4) -> None:
        import dask
        from distributed import Client, LocalCluster

        with dask.config.set({"distributed.worker.daemon": False}):  # as flows.runners starts one
            self.cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=threads_per_worker,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
            )
        self.client = Client(self.cluster)
        self.pids = list(self.client.run(_warm_worker).values())

    @property
    def address(self) -> str:
        return self.cluster.scheduler_address

    def close(self) -> None:
        self.client.close()
        self.cluster.close()


# ------------------------------------------------------------------ rows
def scale_row(
    corpus_file: Path,
    ids: Sequence[str],
    method: str,
    concurrency: int,
    server: ServerProcess,
    work: Path,
    *,
    chunk_size: int | None = None,
    label: str,
    runner: str = "thread",
    dask_workers: int = 2,
    rerun: bool = True,
) -> dict[str, Any]:
    """The flow twice on one corpus file (first run, then fully cached); one result row.

    Parameters
    ----------
    corpus_file : JSONL of the traces
    ids : their ids (every one must come back once)
    method : attribution method
    concurrency : the profile's ``max_concurrency``
    server : the running fake server (its latency is the row's)
    work : scratch folder (profiles, cache, run folders)
    chunk_size : traces per task (None: the flow's default)
    label : unique per row (model label, cache folder)
    runner : ``thread`` (the flow's default) or ``dask`` (a local cluster of ``dask_workers`` processes, started
        before timing, each with ``concurrency / dask_workers`` slots)
    dask_workers : local Dask worker processes
    rerun : also time the fully cached rerun (the memory pair skips it)

    Returns
    -------
    dict with the fields of :data:`COLUMNS` and ``rss_scope``
    """
    from agentcausal.runs.engine import DEFAULT_CHUNK_SIZE
    from agentcausal.settings import RunSettings
    from flows.attribute import run_attribute
    from flows.runners import RunnerChoice, RunnerKind

    choice, cluster, per_process = None, None, concurrency
    if runner == "dask":
        cluster = _StandingCluster(dask_workers)
        choice = RunnerChoice(kind=RunnerKind.DASK, dask_address=cluster.address)
        per_process = max(1, concurrency // dask_workers)
        concurrency = per_process * dask_workers
    try:
        toml = profiles_toml(work / f"profiles-{label}.toml", server.base_url, per_process, model=f"bench-{label}")
        settings = RunSettings(
            profiles_path=str(toml), cache_dir=str((work / f"cache-{label}").resolve()), routing="default"
        )
        times, stats, ok, cpu, used = [], [], [], 0.0, None
        load_start = round(os.getloadavg()[0], 2)
        scope = reset_peak_rss()
        for rep in ("first", "rerun") if rerun else ("first",):
            server.reset()
            c0, t0 = _cpu_s(cluster.pids if cluster else ()), time.perf_counter()
            run_dir = run_attribute(
                AttributionRequest(paths=[str(corpus_file)], methods=[method]),
                RunOptions(chunk_size=chunk_size, out_dir=str(work / f"run-{label}-{rep}")),
                settings=settings,
                runner=choice,
            )
            times.append(time.perf_counter() - t0)
            if rep == "first":
                cpu = _cpu_s(cluster.pids if cluster else ()) - c0
                used = (load_run_meta(run_dir).get("chunk_size") or {}).get(method)  # the engine's choice
            stats.append(server.stats())
            ok.append(_rows_ok(run_dir, ids))
    finally:
        if cluster is not None:
            cluster.close()
    req = stats[0]["requests"]
    bound = req * server.latency_s / concurrency
    return {
        "runner": runner if runner == "thread" else f"dask x{dask_workers}",
        "traces": len(ids),
        "method": method,
        "concurrency": concurrency,
        "chunk_size": used or chunk_size or DEFAULT_CHUNK_SIZE,
        "latency_s": server.latency_s,
        "requests": req,
        "peak_in_flight": max(s["max_in_flight"] for s in stats),
        "wall_s": round(times[0], 2),
        "bound_s": round(bound, 2),
        "ratio": round(times[0] / bound, 3) if bound else None,
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_request": round(1000 * cpu / req, 2) if req else None,
        "rerun_s": round(times[1], 2) if rerun else None,
        "rerun_requests": stats[1]["requests"] if rerun else None,
        "rerun_fraction": round(times[1] / times[0], 3) if rerun else None,
        "rss_mb": peak_rss_mb(),
        "rss_scope": scope,
        "rows_ok": all(o for o, _ in ok) and not any(f for _, f in ok),
        "failed_rows": sum(f for _, f in ok),
        "cpus": os.cpu_count(),
        "load_avg_1": load_start,
        "load_avg_1_at_end": round(os.getloadavg()[0], 2),
    }


def _fresh_row(
    latency_s: float,
    corpus_file: Path,
    ids: list[str],
    method: str,
    concurrency: int,
    work: Path,
    kwargs: dict[str, Any],
) -> dict[str, Any]:  # pragma: no cover - runs in a fresh child process
    """One :func:`scale_row` in this (fresh) process, with a fake server of its own at ``latency_s``, after an
    untimed 10-trace flow on its own cache (imports, Prefect's client, HTTP connections), as a user's command warms
    up before its corpus."""
    warm_file = work / f"warm-{kwargs['label']}.jsonl"
    warm_ids = _write_corpus(10, warm_file)
    with ServerProcess(latency_s=latency_s) as server:
        scale_row(
            warm_file, warm_ids, "all_at_once", concurrency, server, work, label=f"warm-{kwargs['label']}", rerun=False
        )
        return {**scale_row(corpus_file, ids, method, concurrency, server, work, **kwargs), "pid": os.getpid()}


def fresh_row(
    latency_s: float, corpus_file: Path, ids: list[str], method: str, concurrency: int, work: Path, **kwargs: Any
) -> dict[str, Any]:
    """:func:`scale_row` (``kwargs``: its keywords) in a fresh process of its own on this process's Prefect API
    (:func:`bench.common.in_fresh_process`), warmed by a 10-trace flow first; the row's ``rss_mb`` is that
    process's peak, ``pid`` its process id.

    A row run in this process would carry the earlier rows' heap, threads and Dask clients (its CPU and memory
    then depend on the rows before it); a user's command starts afresh.
    """
    return in_fresh_process(_fresh_row, latency_s, corpus_file, ids, method, concurrency, work, kwargs)


def _memory_row(
    corpus_file: Path,
    ids: list[str],
    concurrency: int,
    base_url: str,
    latency_s: float,
    work: Path,
    label: str,
) -> dict[str, Any]:  # pragma: no cover - runs in a fresh child process
    """One memory-pair row in this (fresh) process: first run only (the rest of the Prefect settings come with the
    parent's environment)."""

    class _Server:  # the parent's server: only its URL and latency are needed here; counts come from the parent
        def __init__(self) -> None:
            self.base_url, self.latency_s, self.requests = base_url, latency_s, 0

        def reset(self) -> None:
            pass

        def stats(self) -> dict[str, Any]:
            return {"requests": 0, "max_in_flight": 0}

    return scale_row(
        corpus_file,
        ids,
        "all_at_once",
        concurrency,
        _Server(),
        work,  # type: ignore[arg-type]
        label=label,
        rerun=False,
    )


def memory_row(
    corpus_file: Path, ids: list[str], concurrency: int, server: ServerProcess, work: Path, label: str
) -> dict[str, Any]:
    """A memory-pair row: the flow in a fresh process of its own on this process's Prefect API (first run only);
    ``rss_mb`` is that process's peak, the server's counts are read here."""
    server.reset()
    row = in_fresh_process(_memory_row, corpus_file, ids, concurrency, server.base_url, server.latency_s, work, label)
    stats = server.stats()
    row.update(requests=stats["requests"], peak_in_flight=stats["max_in_flight"])
    bound = stats["requests"] * server.latency_s / row["concurrency"]
    row.update(
        bound_s=round(bound, 2),
        ratio=round(row["wall_s"] / bound, 3) if bound else None,
        cpu_ms_per_request=round(1000 * row["cpu_s"] / stats["requests"], 2) if stats["requests"] else None,
        runner="thread (own process)",
    )
    return row


def plan_rows(
    plan: Sequence[tuple[str, int]],
    latencies_s: Sequence[float],
    concurrencies: Sequence[int],
    chunk_sizes: Sequence[int | None],
    runners: Sequence[str],
) -> list[tuple[float, str, int, int, Any, str]]:
    """The (latency, method, traces, concurrency, chunk size, runner) of every row, in run order (see module doc).

    >>> rows = plan_rows([("all_at_once", 10), ("dcfa", 5)], [1.0, 0.2], [16, 64], [None], ["thread", "dask"])
    >>> [(lat, m[:4], c, r) for lat, m, _, c, _, r in rows]  # doctest: +NORMALIZE_WHITESPACE
    [(1.0, 'all_', 16, 'thread'), (1.0, 'all_', 64, 'thread'), (1.0, 'all_', 64, 'dask'), (1.0, 'dcfa', 16, 'thread'),
     (1.0, 'dcfa', 64, 'thread'), (0.2, 'all_', 64, 'thread'), (0.2, 'dcfa', 64, 'thread')]
    """
    top = max(concurrencies)
    out = []
    for lat in latencies_s:
        for method, n in plan:
            for c in concurrencies:
                if lat != latencies_s[0] and c != top:
                    continue
                for rn in runners:
                    if rn == "dask" and not (method == "all_at_once" and lat == latencies_s[0] and c == top):
                        continue
                    for cs in chunk_sizes:
                        out.append((lat, method, n, c, cs, rn))
    return out


def run_scale(
    plan: Sequence[tuple[str, int]] = DEFAULT_PLAN,
    *,
    latencies_s: Sequence[float] = (1.0, 0.2),
    concurrencies: Sequence[int] = (16, 64),
    chunk_sizes: Sequence[int | None] = (None,),
    runners: Sequence[str] = ("thread", "dask"),
    dask_workers: int = 2,
    memory_traces: Sequence[int] = DEFAULT_MEMORY_TRACES,
    memory_latency_s: float = 0.2,
    memory_datasets: Sequence[int] = DEFAULT_MEMORY_DATASETS,
    work: Path | None = None,
    log=print,
    on_row=None,
) -> dict[str, Any]:
    """Every row of :func:`plan_rows`, then the memory pair; the ``scale.json`` payload.

    Parameters
    ----------
    plan : (method, traces) pairs
    latencies_s : fake-server latencies per request, seconds (one server each)
    concurrencies : ``max_concurrency`` levels
    chunk_sizes : traces per task to compare (None: the flow's default)
    runners : ``thread`` and/or ``dask``
    dask_workers : local Dask worker processes of the ``dask`` row
    memory_traces : corpus sizes of the memory pair (all_at_once, highest concurrency); empty: none
    memory_latency_s : the memory pair's latency per request, seconds
    memory_datasets : numbers of datasets of the discovery half's memory pair (``discover`` with
        ``llm_zero_shot`` over small user tables, each size in a fresh process: :func:`bench.engine_memory.discovery_row`);
        empty: none
    work : scratch folder (default: a new temporary folder)
    on_row : callable or None, called with the payload so far after each row (partial results on disk)

    Returns
    -------
    dict with ``rows`` and ``memory_rows`` (see :data:`COLUMNS`), ``discovery_memory_rows``, ``memory_ratios``
    (each half's largest peak over its smallest; target <= 1.2), ``prefect_api_start_s`` and the plan
    """
    from bench.throughput import _prefect_warmup

    work = work or scratch_dir("agentcausal-bench-scale-")
    corpora = {}
    sizes = sorted({n for _, n in plan} | set(memory_traces))
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as child:  # rss_mb: the flow's alone
        for n, ids in zip(sizes, child.map(_write_corpus, sizes, [work / f"corpus-{n}.jsonl" for n in sizes])):
            corpora[n] = (work / f"corpus-{n}.jsonl", ids)
    warm = _prefect_warmup()
    log(f"  Prefect temporary API up in {warm:.1f} s")
    payload: dict[str, Any] = {
        "rows": [],
        "memory_rows": [],
        "prefect_api_start_s": round(warm, 2),
        "plan": [list(p) for p in plan],
        "latencies_s": list(latencies_s),
        "concurrencies": list(concurrencies),
        "runners": list(runners),
        "dask_workers": dask_workers,
        "memory_traces": list(memory_traces),
        "memory_latency_s": memory_latency_s,
        "memory_datasets": list(memory_datasets),
        "discovery_memory_rows": [],
        "memory_ratios": {},
    }

    def done(row: dict[str, Any], into: str) -> None:
        payload[into].append(row)
        if on_row is not None:
            on_row({**payload, "partial": True})
        log(
            f"  {row['runner']} {row['method']} n={row['traces']} c={row['concurrency']} chunk={row['chunk_size']} "
            f"latency={row['latency_s']}: wall {row['wall_s']} s / bound {row['bound_s']} s = {row['ratio']}, "
            f"CPU {row['cpu_ms_per_request']} ms/request, rerun {row['rerun_s']} s ({row['rerun_requests']} "
            f"requests), peak {row['peak_in_flight']}, rss {row['rss_mb']} MB, rows ok {row['rows_ok']}"
        )

    for lat, method, n, c, cs, rn in plan_rows(plan, latencies_s, concurrencies, chunk_sizes, runners):
        label = f"{method}-n{n}-c{c}-l{int(lat * 1000)}-k{cs or 0}-{rn}-{time.time_ns()}"
        row = fresh_row(
            lat,
            corpora[n][0],
            corpora[n][1],
            method,
            c,
            work,
            chunk_size=cs,
            label=label,
            runner=rn,
            dask_workers=dask_workers,
        )
        done(row, "rows")
    if memory_traces:
        with ServerProcess(latency_s=memory_latency_s) as server:
            for n in memory_traces:
                label = f"memory-n{n}-{time.time_ns()}"
                done(memory_row(corpora[n][0], corpora[n][1], max(concurrencies), server, work, label), "memory_rows")
        peaks = [r["rss_mb"] for r in payload["memory_rows"]]
        payload["memory_ratios"]["attribute"] = round(peaks[-1] / peaks[0], 3)
    if memory_datasets:
        from bench.engine_memory import discovery_row

        with ServerProcess(latency_s=0.0) as server:
            for n in memory_datasets:
                row = discovery_row(n, server, max(concurrencies), work)
                payload["discovery_memory_rows"].append(row)
                if on_row is not None:
                    on_row({**payload, "partial": True})
                log(f"  discover memory: {n} datasets, peak {row['peak_rss_mb']} MB, rows ok {row['rows_ok']}")
        peaks = [r["peak_rss_mb"] for r in payload["discovery_memory_rows"]]
        payload["memory_ratios"]["discover"] = round(peaks[-1] / peaks[0], 3)
    return payload


def scale_markdown(payload: dict[str, Any], machine: dict[str, Any]) -> str:
    """``scale.md``: the rows and the memory pair as tables (``docs/performance.md`` adds the targets)."""
    return (
        "# Scale: the attribute flow on synthetic corpora\n\n"
        f"Machine: {machine['cpus']} cores, load average {machine['load_avg_1_5_15']} at the end, commit "
        f"{machine['commit']}, {machine['when']}. Fake server in a child process; bound = requests x latency / "
        "concurrency; ratio = wall / bound; CPU = the client's processes' CPU per request; rerun = the same flow "
        "again on the same cache folder; rss = peak resident memory of the flow's process during the row. The "
        f"temporary Prefect API start ({payload.get('prefect_api_start_s')} s) is not in any row.\n\n"
        + md_table(payload["rows"], COLUMNS)
        + (
            "\nMemory pair (each in a fresh process):\n\n" + md_table(payload["memory_rows"], COLUMNS)
            if payload.get("memory_rows")
            else ""
        )
        + (
            "\nDiscovery memory pair (`discover`, `llm_zero_shot` over small user tables, latency 0, each in a fresh "
            "process; peak resident memory of the flow's process):\n\n" + md_table(payload["discovery_memory_rows"])
            if payload.get("discovery_memory_rows")
            else ""
        )
        + (
            "\nLargest peak over smallest (target <= 1.2): "
            + ", ".join(f"{half} {ratio}" for half, ratio in payload["memory_ratios"].items())
            + "\n"
            if payload.get("memory_ratios")
            else ""
        )
    )
