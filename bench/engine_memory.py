"""Peak memory of the ``attribute`` flow's process at two corpus sizes (issue 22, item 3), and of the ``discover``
flow's at two numbers of datasets (issue 29, item 6), on the fake server.

Each size runs in a fresh process (spawned; its ``VmHWM`` is that run's peak alone, where ``ru_maxrss``
would keep a larger parent's): Prefect's
temporary API started first (its server is a process of its own and not counted), then the
``attribute`` flow with All-at-Once over :func:`agentcausal_fakes.synthetic.synthetic_traces` written as one JSONL
file (by another process), against the fake OpenAI server (test double, :mod:`bench.server`, its
own process). Target: the peak at the larger size at most 1.2 times the peak at the smaller, and
under 1 GB. Also prints the wall time, requests and whether every trace came back once::

    python -m bench.engine_memory 5000 50000 --concurrency 64 --latency-ms 0

``--half discover``: the sizes are numbers of datasets, each a small user table (three continuous
variables, 100 rows, its metadata file; written by another process), run with ``llm_zero_shot`` (one
call per dataset, no algorithm worker process) and seed 0. A row of either half also gives the peak before the
report step (``peak_rss_before_report_mb``: the plan, the jobs and the run folder's files)::

    python -m bench.engine_memory 500 5000 --half discover --out bench/results/discovery_memory.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.runs.options import RunOptions
from agentcausal_fakes.profiles import profiles_toml
from agentcausal_fakes.synthetic import synthetic_traces
from bench.common import machine, peak_rss_mb, scratch_dir
from bench.server import ServerProcess

__all__ = ["memory_row", "discovery_row", "main"]


def _write_corpus(n: int, path: str) -> list[str]:
    """``n`` synthetic traces as JSONL at ``path``; their ids (run in a child process)."""
    from agentcausal.traces.jsonl import write_jsonl

    traces = synthetic_traces(n)
    write_jsonl(traces, path)
    return [t.id for t in traces]


def _flow_run(corpus: str, n: int, base_url: str, concurrency: int, work: str) -> dict[str, Any]:
    """One flow run in this (fresh) process; its peak resident memory."""
    import pandas as pd

    import tasks.attribution
    from agentcausal.settings import RunSettings
    from bench.throughput import _prefect_warmup
    from flows.attribute import run_attribute

    warm = _prefect_warmup()
    rss_warm = peak_rss_mb()
    before_report: list[float] = []
    report_run = tasks.attribution.report_run

    def measured(*a: Any, **k: Any) -> Any:  # the peak of the run itself: plan, jobs, run folder
        before_report.append(peak_rss_mb())
        return report_run(*a, **k)

    tasks.attribution.report_run = measured  # type: ignore[assignment]  # this child process only
    toml = profiles_toml(Path(work) / f"profiles-{n}.toml", base_url, concurrency, model=f"mem-{n}-{time.time_ns()}")
    settings = RunSettings(profiles_path=str(toml), cache_dir=str(Path(work) / f"cache-{n}"))
    t0 = time.perf_counter()
    run_dir = run_attribute(
        AttributionRequest(paths=[corpus], methods=["all_at_once"]),
        RunOptions(out_dir=str(Path(work) / f"run-{n}")),
        settings=settings,
    )
    wall = time.perf_counter() - t0
    rss = peak_rss_mb()
    df = pd.read_parquet(Path(run_dir) / "results.parquet", columns=["trace_id", "status"])
    return {
        "traces": n,
        "peak_rss_mb": round(rss, 1),
        "peak_rss_before_report_mb": round(before_report[0], 1) if before_report else None,
        "rss_after_prefect_start_mb": round(rss_warm, 1),
        "wall_s": round(wall, 1),
        "prefect_start_s": round(warm, 1),
        "rows": len(df),
        "rows_ok": bool(len(df) == n and df["trace_id"].is_unique and (df["status"] == "complete").all()),
    }


def memory_row(n: int, server: ServerProcess, concurrency: int, work: Path) -> dict[str, Any]:
    """The corpus of ``n`` traces, then one flow run over it in a fresh process; its row."""
    spawn = get_context("spawn")
    corpus = str(work / f"corpus-{n}.jsonl")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as child:
        child.submit(_write_corpus, n, corpus).result()
    server.reset()
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as child:
        row = child.submit(_flow_run, corpus, n, server.base_url, concurrency, str(work)).result()
    return {**row, "requests": server.stats()["requests"], "concurrency": concurrency, "latency_s": server.latency_s}


def _write_datasets(n: int, folder: str) -> str:
    """``n`` small user datasets (``<folder>/ds<i>.csv`` and ``.json``), their paths one a line in
    ``<folder>/datasets.txt``; that file's path (run in a child process)."""
    import numpy as np
    import pandas as pd

    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    variables = {"x": "the cause", "y": "the mediator", "z": "the effect"}
    edges = [["x", "y"], ["y", "z"]]
    paths = []
    for i in range(n):
        rng = np.random.default_rng(i)
        x = rng.normal(size=100)
        y = x + rng.normal(size=100)
        pd.DataFrame({"x": x, "y": y, "z": y + rng.normal(size=100)}).round(4).to_csv(root / f"ds{i}.csv", index=False)
        meta = {"title": f"chain {i}", "domain": f"simulated chain {i}", "variables": variables, "true_edges": edges}
        (root / f"ds{i}.json").write_text(json.dumps(meta))  # a prompt of its own: one request per dataset
        paths.append(str(root / f"ds{i}.csv"))
    listing = root / "datasets.txt"
    listing.write_text("\n".join(paths) + "\n")
    return str(listing)


def _discover_run(listing: str, n: int, base_url: str, concurrency: int, work: str) -> dict[str, Any]:
    """One ``discover`` flow run over the datasets listed in ``listing``, in this (fresh) process; its peak
    resident memory."""
    import pandas as pd

    import tasks.discovery
    from agentcausal.settings import RunSettings
    from bench.throughput import _prefect_warmup
    from flows.discover import run_discover

    warm = _prefect_warmup()
    rss_warm = peak_rss_mb()
    before_report: list[float] = []
    write_report = tasks.discovery.write_report

    def measured(*a: Any, **k: Any) -> Any:  # the peak of the run itself: plan, jobs, run folder
        before_report.append(peak_rss_mb())
        return write_report(*a, **k)

    tasks.discovery.write_report = measured  # this child process only
    datasets = Path(listing).read_text().split()
    toml = profiles_toml(Path(work) / f"profiles-d{n}.toml", base_url, concurrency, model=f"mem-d{n}-{time.time_ns()}")
    settings = RunSettings(profiles_path=str(toml), cache_dir=str(Path(work) / f"cache-d{n}"))
    t0 = time.perf_counter()
    run_dir = run_discover(
        DiscoveryRequest(datasets=datasets, methods=["llm_zero_shot"]),
        RunOptions(out_dir=str(Path(work) / f"run-d{n}")),
        settings=settings,
    )
    wall = time.perf_counter() - t0
    rss = peak_rss_mb()
    df = pd.read_parquet(Path(run_dir) / "results.parquet", columns=["dataset", "status"])
    return {
        "datasets": n,
        "method": "llm_zero_shot",
        "peak_rss_mb": round(rss, 1),
        "peak_rss_before_report_mb": round(before_report[0], 1) if before_report else None,
        "rss_after_prefect_start_mb": round(rss_warm, 1),
        "wall_s": round(wall, 1),
        "prefect_start_s": round(warm, 1),
        "rows": len(df),
        "statuses": {str(k): int(v) for k, v in df["status"].value_counts().items()},
        "rows_ok": bool(len(df) == n and df["dataset"].is_unique),
    }


def discovery_row(n: int, server: ServerProcess, concurrency: int, work: Path) -> dict[str, Any]:
    """``n`` small user datasets, then one ``discover`` flow run over them in a fresh process; its row."""
    spawn = get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as child:
        listing = child.submit(_write_datasets, n, str(work / f"datasets-{n}")).result()
    server.reset()
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as child:
        row = child.submit(_discover_run, listing, n, server.base_url, concurrency, str(work)).result()
    load = [round(x, 2) for x in os.getloadavg()]  # the machine is shared: how busy it was as this row ended
    return {
        **row,
        "requests": server.stats()["requests"],
        "concurrency": concurrency,
        "latency_s": server.latency_s,
        "load_avg_1_5_15": load,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("sizes", type=int, nargs="+", help="corpus sizes (traces, or datasets), smallest first")
    p.add_argument("--half", choices=("attribute", "discover"), default="attribute")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--out", default=None, help="write the payload as JSON here")
    args = p.parse_args(argv)
    work = scratch_dir("agentcausal-bench-memory-")
    rows = []
    with ServerProcess(latency_s=args.latency_ms / 1000) as server:
        for n in args.sizes:
            row_of = discovery_row if args.half == "discover" else memory_row
            rows.append(row_of(n, server, args.concurrency, work))
            print(json.dumps(rows[-1]), flush=True)
    first, last = rows[0]["peak_rss_mb"], rows[-1]["peak_rss_mb"]
    payload = {
        "half": args.half,
        "rows": rows,
        "ratio_largest_to_smallest": round(last / first, 3),
        "machine": machine(),
        "target": "ratio <= 1.2 and largest <= 1024 MB",
        "holds": bool(last / first <= 1.2 and last <= 1024),
    }
    if all(r.get("peak_rss_before_report_mb") for r in rows):  # the run without its report step
        before = [r["peak_rss_before_report_mb"] for r in rows]
        payload["ratio_before_report"] = round(before[-1] / before[0], 3) if all(before) else None
    print(json.dumps({k: v for k, v in payload.items() if k != "rows"}))
    if args.out:
        Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    return payload


if __name__ == "__main__":
    main()
