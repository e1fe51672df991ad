"""Benchmark 7 (opt-in, ``--only scale``): the ``attribute`` flow over large synthetic corpora.

Each row runs the Prefect ``attribute`` flow (the CLI's default thread runner,
the temporary Prefect API already started by a warm-up flow and timed apart)
over :func:`bench.common.synthetic_traces` written as one JSONL file, against
the fake OpenAI server (test double, :mod:`bench.server`) in a child process
with a fixed latency per request, one profile with ``max_concurrency = c``
shared by chat and embedding requests (a new model label per row, so no row
reads another's LLM cache). Then the same flow again on the same cache
folder (a fully cached rerun).

With ``runners=("thread", "dask")`` the all_at_once rows of the first latency run once more on
the Dask runner (``flows.runners``: a local cluster of ``dask_workers`` worker
processes, started inside the timed flow call); the concurrency limit holds
per process, so each worker's profile gets ``concurrency / dask_workers``
slots and the row's ``concurrency`` is their sum (the bound's denominator).

Per row: ``runner``, ``traces``, ``method``, ``concurrency``, ``chunk_size``,
``latency_s``, ``requests`` (at the server), ``peak_in_flight`` (the server's
peak of requests in flight), ``wall_s`` (the flow call, first run),
``bound_s = requests x latency / concurrency`` (a lower bound of the wall
time), ``ratio = wall_s / bound_s``, ``rerun_s`` and ``rerun_requests`` (the
second run), ``rerun_fraction = rerun_s / wall_s``, ``rss_mb`` (peak resident
memory of the benchmark process so far, ``ru_maxrss``: the flow runs in this
process; the server and the corpus generator do not), ``rows_ok`` (the run's Parquet holds every
trace once under its own id and no ``failed`` row, on both runs) and
``failed_rows`` (rows of both runs whose status is ``failed``: a failure of
the run, such as a task that raised, which ``rows_ok`` alone would not show).
"""

from __future__ import annotations

import resource
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from bench.common import md_table, profiles_toml, synthetic_traces
from bench.server import ServerProcess

__all__ = ["scale_row", "run_scale", "scale_markdown", "DEFAULT_PLAN"]

#: (method, traces) of the full benchmark (issue 15); ``--scale-traces`` replaces the all_at_once size
DEFAULT_PLAN = (("all_at_once", 2000), ("dcfa", 500))

COLUMNS = ["runner", "traces", "method", "concurrency", "chunk_size", "latency_s", "requests", "peak_in_flight", "wall_s",
           "bound_s", "ratio", "rerun_s", "rerun_requests", "rerun_fraction", "rss_mb", "rows_ok", "failed_rows"]


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


def _rows_ok(run_dir: str, ids: Sequence[str]) -> tuple[bool, int]:
    """(every trace once under its own id, rows whose status is ``failed``)."""
    import pandas as pd

    df = pd.read_parquet(Path(run_dir) / "results.parquet", columns=["trace_id", "status"])
    return (len(df) == len(ids) and list(sorted(df["trace_id"])) == sorted(ids)), int((df["status"] == "failed").sum())


def _write_corpus(n: int, path: Path) -> list[str]:
    """``n`` synthetic traces as JSONL at ``path`` (run in a child process); their ids."""
    from agentcausal.traces.io import write_jsonl

    traces = synthetic_traces(n)
    write_jsonl(traces, path)
    return [t.id for t in traces]


def scale_row(corpus_file: Path, ids: Sequence[str], method: str, concurrency: int, server: ServerProcess,
              work: Path, *, chunk_size: int | None = None, label: str, runner: str = "thread",
              dask_workers: int = 2) -> dict[str, Any]:
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
    runner : ``thread`` (the flow's default) or ``dask`` (a local cluster of ``dask_workers`` processes,
        each with ``concurrency / dask_workers`` slots)
    dask_workers : local Dask worker processes

    Returns
    -------
    dict with the fields of :data:`COLUMNS`
    """
    from agentcausal.settings import RunSettings
    from agentcausal.runs.engine import DEFAULT_CHUNK_SIZE
    from flows.attribute import run_attribute
    from flows.runners import RunnerChoice, RunnerKind

    choice = None
    per_process = concurrency
    if runner == "dask":
        choice = RunnerChoice(kind=RunnerKind.DASK, n_workers=dask_workers)
        per_process = max(1, concurrency // dask_workers)
        concurrency = per_process * dask_workers
    toml = profiles_toml(work / f"profiles-{label}.toml", server.base_url, per_process, model=f"bench-{label}")
    settings = RunSettings(profiles_path=str(toml), cache_dir=str((work / f"cache-{label}").resolve()),
                           routing="default")
    times, stats, ok = [], [], []
    for rep in ("first", "rerun"):
        server.reset()
        t0 = time.perf_counter()
        run_dir = run_attribute([str(corpus_file)], [method], settings=settings, chunk_size=chunk_size,
                                out_dir=str(work / f"run-{label}-{rep}"), runner=choice)
        times.append(time.perf_counter() - t0)
        stats.append(server.stats())
        ok.append(_rows_ok(run_dir, ids))
        del run_dir
    req = stats[0]["requests"]
    bound = req * server.latency_s / concurrency
    return {
        "runner": runner if runner == "thread" else f"dask x{dask_workers}", "traces": len(ids), "method": method, "concurrency": concurrency,
        "chunk_size": chunk_size or DEFAULT_CHUNK_SIZE, "latency_s": server.latency_s, "requests": req,
        "peak_in_flight": max(s["max_in_flight"] for s in stats), "wall_s": round(times[0], 2),
        "bound_s": round(bound, 2), "ratio": round(times[0] / bound, 3) if bound else None,
        "rerun_s": round(times[1], 2), "rerun_requests": stats[1]["requests"],
        "rerun_fraction": round(times[1] / times[0], 3), "rss_mb": _rss_mb(),
        "rows_ok": all(o for o, _ in ok) and not any(f for _, f in ok), "failed_rows": sum(f for _, f in ok),
    }


def run_scale(plan: Sequence[tuple[str, int]] = DEFAULT_PLAN, *, latencies_s: Sequence[float] = (1.0, 0.2),
              concurrencies: Sequence[int] = (16, 64), chunk_sizes: Sequence[int | None] = (None,),
              runners: Sequence[str] = ("thread",), dask_workers: int = 2,
              work: Path | None = None, log=print, on_row=None) -> dict[str, Any]:
    """Every (latency, method and corpus size, concurrency, chunk size) row; the ``scale.json`` payload.

    Parameters
    ----------
    plan : (method, traces) pairs
    latencies_s : fake-server latencies per request, seconds (one server each)
    concurrencies : ``max_concurrency`` levels
    chunk_sizes : traces per task to compare (None: the flow's default)
    runners : ``thread`` and/or ``dask``; Dask rows only for all_at_once at the first latency (issue 15 item 6)
    dask_workers : local Dask worker processes of the ``dask`` rows
    work : scratch folder (default: a new temporary folder)
    on_row : callable or None, called with the payload so far after each row (partial results on disk)

    Returns
    -------
    dict with ``rows`` (see :data:`COLUMNS`), ``prefect_api_start_s`` and the plan
    """
    from bench.throughput import _prefect_warmup

    work = work or Path(tempfile.mkdtemp(prefix="agentcausal-bench-scale-"))
    corpora = {}
    sizes = sorted({n for _, n in plan})
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as child:  # rss_mb: the flow's alone
        for n, ids in zip(sizes, child.map(_write_corpus, sizes, [work / f"corpus-{n}.jsonl" for n in sizes])):
            corpora[n] = (work / f"corpus-{n}.jsonl", ids)
    warm = _prefect_warmup()
    log(f"  Prefect temporary API up in {warm:.1f} s")
    rows: list[dict[str, Any]] = []
    for lat in latencies_s:
        with ServerProcess(latency_s=lat) as server:
            for method, n in plan:
                for c in concurrencies:
                    for cs, rn in [(cs, rn) for rn in runners for cs in chunk_sizes
                                   if rn == "thread" or (method == "all_at_once" and lat == latencies_s[0])]:
                        label = f"{method}-n{n}-c{c}-l{int(lat * 1000)}-k{cs or 0}-{rn}-{time.time_ns()}"
                        row = scale_row(corpora[n][0], corpora[n][1], method, c, server, work, chunk_size=cs,
                                        label=label, runner=rn, dask_workers=dask_workers)
                        rows.append(row)
                        if on_row is not None:
                            on_row({"rows": list(rows), "prefect_api_start_s": round(warm, 2), "partial": True,
                                    "plan": [list(p) for p in plan], "latencies_s": list(latencies_s),
                                    "concurrencies": list(concurrencies)})
                        log(f"  {row['runner']} {method} n={n} c={c} chunk={row['chunk_size']} latency={lat}: "
                            f"wall {row['wall_s']} s / bound {row['bound_s']} s = {row['ratio']}, "
                            f"rerun {row['rerun_s']} s ({row['rerun_requests']} requests), "
                            f"peak {row['peak_in_flight']}, rss {row['rss_mb']} MB, rows ok {row['rows_ok']}")
    return {"rows": rows, "prefect_api_start_s": round(warm, 2), "plan": [list(p) for p in plan],
            "latencies_s": list(latencies_s), "concurrencies": list(concurrencies)}


def scale_markdown(payload: dict[str, Any], machine: dict[str, Any]) -> str:
    return ("# Scale: the attribute flow on synthetic corpora\n\n"
            f"Machine: {machine['cpus']} cores, load average {machine['load_avg_1_5_15']} at the end, commit "
            f"{machine['commit']}, {machine['when']}. Fake server in a child process; bound = requests x latency / "
            "concurrency; ratio = wall / bound; rerun = the same flow again on the same cache folder; rss = peak "
            "resident memory of the benchmark process (the flow's process) so far. The temporary Prefect API "
            f"start ({payload.get('prefect_api_start_s')} s) is not in any row.\n\n"
            + md_table(payload["rows"], COLUMNS))
