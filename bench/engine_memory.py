"""Peak memory of the ``attribute`` flow's process at two corpus sizes (issue 22, item 3), on the fake server.

Each size runs in a fresh process (spawned, so ``ru_maxrss`` is that run's peak alone): Prefect's
temporary API started first (its server is a process of its own and not counted), then the
``attribute`` flow with All-at-Once over :func:`agentcausal_fakes.synthetic.synthetic_traces` written as one JSONL
file (by another process), against the fake OpenAI server (test double, :mod:`bench.server`, its
own process). Target: the peak at the larger size at most 1.2 times the peak at the smaller, and
under 1 GB. Also prints the wall time, requests and whether every trace came back once::

    python -m bench.engine_memory 5000 50000 --concurrency 64 --latency-ms 0
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from agentcausal_fakes.profiles import profiles_toml
from agentcausal_fakes.synthetic import synthetic_traces
from bench.common import machine, scratch_dir
from bench.server import ServerProcess

__all__ = ["memory_row", "main"]


def _write_corpus(n: int, path: str) -> list[str]:
    """``n`` synthetic traces as JSONL at ``path``; their ids (run in a child process)."""
    from agentcausal.traces.jsonl import write_jsonl

    traces = synthetic_traces(n)
    write_jsonl(traces, path)
    return [t.id for t in traces]


def _flow_run(corpus: str, n: int, base_url: str, concurrency: int, work: str) -> dict[str, Any]:
    """One flow run in this (fresh) process; its peak resident memory."""
    import pandas as pd

    from agentcausal.settings import RunSettings
    from bench.throughput import _prefect_warmup
    from flows.attribute import run_attribute

    warm = _prefect_warmup()
    rss_warm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    toml = profiles_toml(Path(work) / f"profiles-{n}.toml", base_url, concurrency, model=f"mem-{n}-{time.time_ns()}")
    settings = RunSettings(profiles_path=str(toml), cache_dir=str(Path(work) / f"cache-{n}"))
    t0 = time.perf_counter()
    run_dir = run_attribute([corpus], ["all_at_once"], settings=settings, out_dir=str(Path(work) / f"run-{n}"))
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    df = pd.read_parquet(Path(run_dir) / "results.parquet", columns=["trace_id", "status"])
    return {
        "traces": n,
        "peak_rss_mb": round(rss, 1),
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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("sizes", type=int, nargs="+", help="corpus sizes, smallest first")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--out", default=None, help="write the payload as JSON here")
    args = p.parse_args(argv)
    work = scratch_dir("agentcausal-bench-memory-")
    rows = []
    with ServerProcess(latency_s=args.latency_ms / 1000) as server:
        for n in args.sizes:
            rows.append(memory_row(n, server, args.concurrency, work))
            print(json.dumps(rows[-1]), flush=True)
    first, last = rows[0]["peak_rss_mb"], rows[-1]["peak_rss_mb"]
    payload = {
        "rows": rows,
        "ratio_largest_to_smallest": round(last / first, 3),
        "machine": machine(),
        "target": "ratio <= 1.2 and largest <= 1024 MB",
        "holds": bool(last / first <= 1.2 and last <= 1024),
    }
    print(json.dumps({k: v for k, v in payload.items() if k != "rows"}))
    if args.out:
        Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    return payload


if __name__ == "__main__":
    main()
