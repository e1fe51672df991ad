"""Per-call CPU of attribution methods: ``python -m bench.percall [--n 500] [--methods all_at_once ...] [--label L]``.

A micro-benchmark, not a test: ``n`` synthetic traces (:func:`agentcausal_fakes.synthetic.synthetic_traces`)
run one after another (concurrency 1) through ``run_method`` against the fake server
(:class:`bench.server.ServerProcess`, 0 ms latency, its own process so its work is not
counted), each pass with a fresh cache folder (every call a request). Two passes over the
same traces: the first unprofiled (process CPU per item, ``time.process_time``, and CPU per
request: what the client costs without a profiler's overhead), the second under ``cProfile``
(Python function calls per item, nearly load-independent, and the cumulative CPU time of the
functions named in bench/README.md "Scale: where the time goes", inflated by the profiler).
With ``--label`` the rows (and the machine: commit, load) go into ``bench/results/percall.json``
under that label, for ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import tempfile
import time
from typing import Any

from agentcausal.attribution.jobs import run_method
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal_fakes.profiles import bench_gateway
from agentcausal_fakes.synthetic import synthetic_traces
from bench.common import RESULTS_DIR, machine
from bench.server import ServerProcess

WATCH = (
    "_transform",
    "create_model",
    "model_json_schema",
    "single_flight",
    "(post_json)",
    "connectionpool.py",
    "reply_model",
    "structured",
    "gateway_cache.py:1",
    "gateway_cache.py:135(put)",
    "_post",
)


def measure(method: str, n: int, seed: int = 0, stats_regex: str | None = None) -> dict[str, Any]:
    """One method's per-call row (see the module docstring); prints the profile's watched functions."""
    traces, spec = synthetic_traces(n, seed=seed), ATTRIBUTION_METHODS[method]
    with ServerProcess(latency_s=0.0) as server, tempfile.TemporaryDirectory() as cache:
        gw = bench_gateway(server.base_url, 1, cache + "/warm", model="percall", preset="paper")
        run_method(traces[0], spec, gw)  # warm: imports, HTTP connection (a different cache below)
        gw.close()
        server.reset()
        gw = bench_gateway(server.base_url, 1, cache + "/plain", model="percall", preset="paper")
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for t in traces:
            run_method(t, spec, gw)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        gw.close()
        requests = server.stats()["requests"]
        gw = bench_gateway(server.base_url, 1, cache + "/profiled", model="percall", preset="paper")
        prof = cProfile.Profile(time.process_time)  # CPU, not wall: waiting for the server is no cost here
        pcpu0 = time.process_time()
        prof.enable()
        for t in traces:
            run_method(t, spec, gw)
        prof.disable()
        pcpu = time.process_time() - pcpu0
        gw.close()
    stats = pstats.Stats(prof)
    row = {
        "method": method,
        "items": n,
        "requests": requests,
        "cpu_ms_per_item": round(1000 * cpu / n, 2),
        "cpu_ms_per_request": round(1000 * cpu / max(requests, 1), 2),
        "wall_ms_per_item": round(1000 * wall / n, 2),
        "profiled_cpu_ms_per_item": round(1000 * pcpu / n, 2),
        "calls_per_item": round(stats.total_calls / n),
    }
    print(
        f"{method}: {n} items, {requests} requests; unprofiled: {row['cpu_ms_per_item']:.2f} ms CPU per item, "
        f"{row['cpu_ms_per_request']:.2f} ms CPU per request, {row['wall_ms_per_item']:.2f} ms wall per item; "
        f"profiled: {row['profiled_cpu_ms_per_item']:.2f} ms CPU per item, {row['calls_per_item']} Python function "
        "calls per item (nearly load-independent)",
        flush=True,
    )
    for (file, line, func), (_cc, nc, _tt, ct, _callers) in sorted(stats.stats.items(), key=lambda kv: -kv[1][3]):
        where = f"{file}:{line}({func})"
        if any(w in where for w in WATCH) and ct / n > 0.0002:
            print(f"  {1000 * ct / n:6.2f} ms/item  {nc:6d} calls  {where[-90:]}")
    if stats_regex:
        stats.sort_stats("cumulative").print_stats(stats_regex, 40)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--method", "--methods", nargs="+", default=["all_at_once"], dest="methods")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stats", default=None, help="also print pstats' cumulative listing of files matching this regex")
    ap.add_argument(
        "--label",
        default=None,
        help="store the rows under this label (e.g. before, after) in bench/results/percall.json, "
        "which docs/performance.md quotes",
    )
    args = ap.parse_args()
    started = machine()
    rows = [measure(m, args.n, args.seed, args.stats) for m in args.methods]
    if args.label:
        path = RESULTS_DIR / "percall.json"
        stored = json.loads(path.read_text()) if path.is_file() else {}
        stored[args.label] = {
            "rows": rows,
            "machine_at_start": started,
            "machine": machine(),
            "n": args.n,
            "seed": args.seed,
        }
        path.write_text(json.dumps(stored, indent=2) + "\n")
        print(f"stored under {args.label!r} in {path}")


if __name__ == "__main__":
    main()
