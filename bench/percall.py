"""Per-call CPU of one attribution method: ``python -m bench.percall [--n 500] [--method all_at_once]``.

A micro-benchmark, not a test: ``n`` synthetic traces (:func:`bench.common.synthetic_traces`)
run one after another (concurrency 1) through ``run_method`` against the fake server
(:class:`bench.server.ServerProcess`, 0 ms latency, its own process so its work is not
counted), each pass with a fresh cache folder (every call a request). Two passes over the
same traces: the first unprofiled (process CPU per item, ``time.process_time``, and CPU per
request: what the client costs without a profiler's overhead), the second under ``cProfile``
(Python function calls per item, nearly load-independent, and the cumulative time of the
functions named in bench/README.md "Scale: where the time goes", inflated by the profiler).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time

from agentcausal.attribution.common import run_method
from bench.common import bench_gateway, synthetic_traces
from bench.server import ServerProcess

WATCH = ("_transform", "create_model", "model_json_schema", "_single_flight", "httpx2/_client.py:9",
         "httpx/_client.py:9", "reply_model", "structured", "_cache_get", "_cache_set", "_post")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--method", default="all_at_once")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stats", default=None, help="also print pstats' cumulative listing of files matching this regex")
    args = ap.parse_args()
    traces = synthetic_traces(args.n, seed=args.seed)
    with ServerProcess(latency_s=0.0) as server, tempfile.TemporaryDirectory() as cache:
        gw = bench_gateway(server.base_url, 1, cache + "/warm", model="percall", preset="paper")
        run_method(traces[0], args.method, gw)  # warm: imports, HTTP connection (a different cache below)
        gw.close()
        server.reset()
        gw = bench_gateway(server.base_url, 1, cache + "/plain", model="percall", preset="paper")
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for t in traces:
            run_method(t, args.method, gw)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        gw.close()
        requests = server.stats()["requests"]
        gw = bench_gateway(server.base_url, 1, cache + "/profiled", model="percall", preset="paper")
        prof = cProfile.Profile()
        pcpu0 = time.process_time()
        prof.enable()
        for t in traces:
            run_method(t, args.method, gw)
        prof.disable()
        pcpu = time.process_time() - pcpu0
        gw.close()
    stats = pstats.Stats(prof)
    print(f"{args.method}: {args.n} items, {requests} requests; unprofiled: {1000 * cpu / args.n:.2f} ms CPU per item, "
          f"{1000 * cpu / max(requests, 1):.2f} ms CPU per request, {1000 * wall / args.n:.2f} ms wall per item; "
          f"profiled: {1000 * pcpu / args.n:.2f} ms CPU per item, "
          f"{stats.total_calls / args.n:.0f} Python function calls per item (nearly load-independent)")
    for (file, line, func), (_cc, nc, _tt, ct, _callers) in sorted(stats.stats.items(), key=lambda kv: -kv[1][3]):
        where = f"{file}:{line}({func})"
        if any(w in where for w in WATCH) and ct / args.n > 0.0002:
            print(f"  {1000 * ct / args.n:6.2f} ms/item  {nc:6d} calls  {where[-90:]}")
    if args.stats:
        stats.sort_stats("cumulative").print_stats(args.stats, 40)


if __name__ == "__main__":
    main()
