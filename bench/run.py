"""Run the benchmarks and write JSON and markdown into ``bench/results/``.

Usage (from the repository root)::

    .venv/bin/python -m bench                  # 1-4: throughput, cache reuse, LCE economy, MAC statistical stage
    .venv/bin/python -m bench --only mac       # one benchmark (throughput also writes cache_reuse and lce_economy)
    .venv/bin/python -m bench --only exact     # 6: which score lets exact search recover Earthquake (by n)
    .venv/bin/python -m bench --quick          # a smoke run: 10 traces, seed 0, no Prefect flow
    .venv/bin/python -m bench --embedded --embedded-traces 1   # 5: the embedded model (long; opt-in)
    .venv/bin/python -m bench --only scale     # 7: the attribute flow at scale (~20 min; opt-in); docs/performance.md
    .venv/bin/python -m bench --perf-doc       # rewrite docs/performance.md from bench/results/ alone
    .venv/bin/python -m bench --only alarm     # 8: MAC and zero-shot on Alarm, embedded model (long; opt-in)
    .venv/bin/python -m bench --embedded --embedded-traces 1 --methods a2p echo --preset small \
        --out bench/results/a2p-echo               # A2P and ECHO on the shortest development trace

Results: ``throughput``, ``cache_reuse``, ``lce_economy``, ``mac_statistical``,
``exact_discrete`` (and ``embedded``) as ``.json`` and ``.md``, plus ``summary.md`` (the
README's Performance section, also written into ``bench/README.md``) and ``summary.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench.common import scratch_dir  # imports neither Prefect nor a model

__all__ = ["main"]

SECTIONS = ("throughput", "mac", "exact")
#: opt-in sections, run only when named with ``--only``
OPT_IN = ("scale", "alarm")


def _env() -> None:
    """Prefect and hub settings before anything imports them (as tests/conftest.py does)."""
    os.environ.setdefault("PREFECT_HOME", str(scratch_dir("agentcausal-bench-prefect-")))
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--only",
        choices=SECTIONS + OPT_IN,
        action="append",
        help="run only this benchmark (repeatable); default: all of 1-4",
    )
    p.add_argument("--traces", type=int, default=50, help="traces in the throughput corpus (default 50)")
    p.add_argument("--latency-ms", type=float, default=200.0, help="fake server latency per request (default 200)")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16], help="levels (default 1 4 16)")
    p.add_argument(
        "--flow-concurrency",
        type=int,
        default=4,
        help="concurrency of the Prefect-flow run of All-at-Once; 0 skips it (default 4)",
    )
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="MAC-stage seeds (default 0-4)")
    p.add_argument("--jobs", type=int, default=2, help="MAC-stage algorithm runs at a time (default 2)")
    p.add_argument("--quick", action="store_true", help="smoke run: 10 traces, concurrency 1 and 16, seed 0, no flow")
    p.add_argument("--embedded", action="store_true", help="only benchmark 5: the embedded model (long)")
    p.add_argument("--embedded-traces", type=int, default=6, help="shortest dev traces for --embedded (default 6)")
    p.add_argument("--methods", nargs="+", default=None, help="methods for --embedded (default: all registered)")
    p.add_argument(
        "--scale-traces", type=int, default=None, help="--only scale: all_at_once corpus size (default 2000)"
    )
    p.add_argument("--scale-dcfa-traces", type=int, default=500, help="--only scale: dcfa corpus size; 0 skips dcfa")
    p.add_argument(
        "--scale-latency-ms",
        type=float,
        nargs="+",
        default=[1000.0, 200.0],
        help="--only scale: fake server latencies (default 1000 200)",
    )
    p.add_argument(
        "--scale-concurrency",
        type=int,
        nargs="+",
        default=[16, 64],
        help="--only scale: concurrency levels (default 16 64)",
    )
    p.add_argument(
        "--runner",
        nargs="+",
        choices=("thread", "dask"),
        default=["thread", "dask"],
        help="--only scale: task runners (default both; dask adds one all_at_once row on a local cluster "
        "started before timing)",
    )
    p.add_argument(
        "--scale-memory-traces",
        type=int,
        nargs="*",
        default=[5000, 50000],
        help="--only scale: corpus sizes of the memory pair, each in a fresh process (default 5000 50000; "
        "none: skip it)",
    )
    p.add_argument(
        "--scale-memory-datasets",
        type=int,
        nargs="*",
        default=[100, 1000],
        help="--only scale: numbers of datasets of the discovery memory pair, each in a fresh process (default "
        "100 1000; none: skip it)",
    )
    p.add_argument(
        "--scale-memory-latency-ms",
        type=float,
        default=200.0,
        help="--only scale: the memory pair's latency per request (default 200)",
    )
    p.add_argument(
        "--perf-doc",
        action="store_true",
        help="only rewrite docs/performance.md from the results already in the folder",
    )
    p.add_argument("--dask-workers", type=int, default=2, help="--only scale: local Dask workers (default 2)")
    p.add_argument(
        "--chunk-size",
        type=int,
        nargs="+",
        default=None,
        help="--only scale: traces per task to compare (default: the flow's default)",
    )
    p.add_argument(
        "--preset",
        default=None,
        choices=("paper", "small"),
        help="method-settings preset: of the throughput runs (default paper) and of --embedded "
        "(default: the routing's preset, small for the default routing)",
    )
    p.add_argument(
        "--economy-presets",
        nargs="*",
        default=["small"],
        choices=("paper", "small"),
        help="presets whose LCE economy is measured beside --preset (one more DCFA run each; default small)",
    )
    p.add_argument(
        "--summary",
        action="store_true",
        help="only rewrite summary.md and the README section from the results already in the folder",
    )
    p.add_argument("--out", type=Path, default=None, help="results folder (default bench/results)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import logging

    args = parse_args(argv)
    _env()
    logging.getLogger("pgmpy").setLevel(logging.ERROR)  # "probability values don't exactly sum to 1" per load
    from bench.common import RESULTS_DIR, bench_corpus, machine, who_and_when_dir, write_result

    out = args.out or RESULTS_DIR
    if args.quick:
        args.traces, args.concurrency, args.seeds, args.flow_concurrency = 10, [1, 16], [0], 0
    started = time.perf_counter()
    before = machine()
    print(f"machine: {before['cpus']} cores, load average {before['load_avg_1_5_15']}", flush=True)

    if args.perf_doc:
        from bench.performance import DOC, write_performance_doc

        print(f"wrote {write_performance_doc(out, DOC if out == RESULTS_DIR else out / 'performance.md')}")
        return 0

    if args.summary:
        from bench.summary import summary_markdown, update_readme

        written = {
            n: json.loads((out / f"{n}.json").read_text())
            for n in ("throughput", "cache_reuse", "lce_economy", "mac_statistical", "exact_discrete")
            if (out / f"{n}.json").is_file()
        }
        summary = json.loads((out / "summary.json").read_text())
        section = summary_markdown(written, summary)
        write_result("summary", summary, section, out)
        if out == RESULTS_DIR:
            update_readme(section)
        print(section)
        return 0

    if args.embedded:
        from bench.embedded import embedded_markdown, embedded_preset, embedded_selection, run_embedded, summarise

        root = who_and_when_dir()
        if root is None:
            print("the Who&When development split was not found (set AGENTCAUSAL_WHO_AND_WHEN_DIR)", file=sys.stderr)
            return 2
        traces = embedded_selection(root, args.embedded_traces)
        preset = embedded_preset(args.preset)  # --preset, else the routing's (small for the default routing)
        print(f"embedded: method-settings preset {preset}", flush=True)

        def save(rows: list) -> None:
            payload = {
                "traces": [t.id for t in traces],
                "methods": args.methods,
                "preset": preset,
                "rows": rows,
                "summary": summarise(rows),
                "machine": machine(),
                "partial": True,
            }
            write_result("embedded", payload, embedded_markdown(payload, payload["machine"]), out)

        res = run_embedded(traces, args.methods, preset=preset, on_row=save)
        res.update(machine=machine(), argv=sys.argv[1:])
        write_result("embedded", res, embedded_markdown(res, res["machine"]), out)
        print(f"embedded: {time.perf_counter() - started:.0f} s; results in {out}", flush=True)
        return 0

    sections = args.only or list(SECTIONS)
    written: dict[str, dict] = {}
    timings: dict[str, float] = {}
    if "throughput" in sections:
        from bench.throughput import cache_markdown, economy_markdown, run_throughput, throughput_markdown

        traces, corpus = bench_corpus(args.traces)
        print(f"1-3. throughput, cache reuse, LCE economy: {corpus}", flush=True)
        t0 = time.perf_counter()
        res = run_throughput(
            traces,
            corpus,
            latency_s=args.latency_ms / 1000,
            concurrencies=args.concurrency,
            flow_concurrency=args.flow_concurrency or None,
            preset=args.preset or "paper",
            economy_presets=args.economy_presets,
        )
        timings["throughput"] = round(time.perf_counter() - t0, 1)
        m = machine()
        for name, md in (
            ("throughput", throughput_markdown),
            ("cache_reuse", cache_markdown),
            ("lce_economy", economy_markdown),
        ):
            payload = {**res[name], "machine": m, "machine_at_start": before}
            write_result(name, payload, md(res[name], m), out)
            written[name] = payload
    if "mac" in sections:
        from bench.mac_stage import mac_markdown, run_mac_stage

        print(f"4. MAC statistical stage: seeds {args.seeds}, {args.jobs} at a time", flush=True)
        t0 = time.perf_counter()
        res = run_mac_stage(seeds=args.seeds, jobs=args.jobs)
        timings["mac"] = round(time.perf_counter() - t0, 1)
        m = machine()
        payload = {**res, "machine": m}
        write_result("mac_statistical", payload, mac_markdown(res, m), out)
        written["mac_statistical"] = payload
    if "exact" in sections:
        from bench.exact_discrete import exact_markdown, run_exact_discrete

        print("6. exact search on discrete data (Earthquake, n 1000 5000 20000, seeds 0 1)", flush=True)
        t0 = time.perf_counter()
        res = run_exact_discrete(
            seeds=args.seeds[:2] if args.quick else (0, 1), ns=(1000,) if args.quick else (1000, 5000, 20000)
        )
        timings["exact"] = round(time.perf_counter() - t0, 1)
        m = machine()
        payload = {**res, "machine": m}
        write_result("exact_discrete", payload, exact_markdown(res, m), out)
        written["exact_discrete"] = payload
    if "scale" in sections:
        from bench.scale import run_scale, scale_markdown

        plan = [("all_at_once", args.scale_traces or 2000)] + (
            [("dcfa", args.scale_dcfa_traces)] if args.scale_dcfa_traces else []
        )
        print(
            f"7. scale: {plan}, latency {args.scale_latency_ms} ms, concurrency {args.scale_concurrency}, runners "
            f"{args.runner}, memory pair {args.scale_memory_traces}",
            flush=True,
        )
        t0 = time.perf_counter()

        def save_scale(partial: dict) -> None:  # after each row: a long run interrupted keeps its rows
            payload = {**partial, "machine": machine(), "machine_at_start": before, "argv": sys.argv[1:]}
            write_result("scale", payload, scale_markdown(partial, payload["machine"]), out)

        res = run_scale(
            plan,
            latencies_s=[x / 1000 for x in args.scale_latency_ms],
            concurrencies=args.scale_concurrency,
            chunk_sizes=args.chunk_size or [None],
            runners=args.runner,
            dask_workers=args.dask_workers,
            memory_traces=args.scale_memory_traces,
            memory_latency_s=args.scale_memory_latency_ms / 1000,
            memory_datasets=args.scale_memory_datasets,
            on_row=save_scale,
        )
        timings["scale"] = round(time.perf_counter() - t0, 1)
        m = machine()
        payload = {**res, "machine": m, "machine_at_start": before, "argv": sys.argv[1:], "seconds": timings["scale"]}
        write_result("scale", payload, scale_markdown(res, m), out)
        written["scale"] = payload
        from bench.performance import DOC, write_performance_doc

        print(
            f"  wrote {write_performance_doc(out, DOC if out == RESULTS_DIR else out / 'performance.md')}", flush=True
        )
    if "alarm" in sections:  # bench/alarm.py
        from bench.alarm import alarm_markdown, run_alarm

        print(f"8. alarm: MAC and zero-shot, seed {args.seeds[0]}, preset {args.preset or 'small'}", flush=True)
        t0 = time.perf_counter()
        res = run_alarm(
            seed=args.seeds[0],
            preset=args.preset or "small",
            on_row=lambda r: write_result(
                "alarm",
                {**r, "partial": True, "machine": machine()},
                alarm_markdown({**r, "partial": True}, machine()),
                out,
            ),
        )
        timings["alarm"] = round(time.perf_counter() - t0, 1)
        payload = {**res, "machine": machine(), "argv": sys.argv[1:]}
        write_result("alarm", payload, alarm_markdown(res, payload["machine"]), out)
    total = time.perf_counter() - started
    if not args.only and not args.quick:
        from bench.summary import summary_markdown, update_readme

        after = machine()
        summary = {
            "seconds": round(total, 1),
            "sections_s": timings,
            "machine_at_start": before,
            "machine_at_end": after,
            "argv": sys.argv[1:],
        }
        section = summary_markdown(written, summary)
        write_result("summary", summary, section, out)
        if out == RESULTS_DIR:
            update_readme(section)
    print(f"done in {total:.0f} s; results in {out}", flush=True)
    print(json.dumps(timings), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
