"""``docs/performance.md``, written from the benchmark results: the scale rows against issue 22's targets, and the
per-call CPU (``bench.percall``). Generated, never edited by hand: ``python -m bench --only scale`` rewrites it after
its rows, ``python -m bench --perf-doc`` from the results already in ``bench/results/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.common import REPO, RESULTS_DIR, md_table
from bench.scale import COLUMNS, DEFAULT_MEMORY_TRACES, DEFAULT_PLAN

__all__ = ["DOC", "scale_targets", "is_full_run", "performance_markdown", "write_performance_doc"]

DOC = REPO / "docs" / "performance.md"
COMMAND = ".venv/bin/python -m bench"
#: the columns docs/performance.md shows: scale.json's, less the chunk size and the failed-row count
ROW_COLUMNS = [c for c in COLUMNS if c not in ("chunk_size", "failed_rows")]
#: memory-pair limits of issue 22 item 3: the large corpus's peak over the small one's, and its peak in MB
MEMORY_GROWTH, MEMORY_MB = 1.2, 1024


def _name(r: dict[str, Any]) -> str:
    return (
        f"{r.get('runner', 'thread')} {r['method']} {r['traces']} traces, c={r['concurrency']}, "
        f"{r['latency_s'] * 1000:g} ms"
    )


def _worst(label: str, sel: list[dict], key: str, limit: float) -> dict[str, Any]:
    if not sel:
        return {"target": label, "rows": 0, "worst": "not measured", "held": None}
    worst = max(sel, key=lambda r: float("inf") if r.get(key) is None else r[key])
    ok = worst.get(key) is not None and worst[key] <= limit
    return {"target": label, "rows": len(sel), "worst": f"{worst.get(key)} ({_name(worst)})", "held": ok}


def _every(label: str, sel: list[dict], test, show) -> dict[str, Any]:
    if not sel:
        return {"target": label, "rows": 0, "worst": "not measured", "held": None}
    bad = [r for r in sel if not test(r)]
    return {
        "target": label,
        "rows": len(sel),
        "worst": f"{show(bad[0])} ({_name(bad[0])})" if bad else "every row",
        "held": not bad,
    }


def scale_targets(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 22 item 5's targets (and item 3's memory pair), and issue 31's client CPU per request, against a
    ``scale.json`` payload.

    Returns one dict per target: ``target``, ``rows`` (how many rows it applies to), ``worst`` (the
    value and row that decide it), ``held`` (True, False, or None when no row measured it).

    >>> row = {"runner": "thread", "method": "m", "traces": 10, "concurrency": 4, "latency_s": 1.0, "ratio": 1.2,
    ...        "rerun_fraction": 0.01, "rerun_requests": 0, "peak_in_flight": 4, "rows_ok": True}
    >>> [(t["target"][:22], t["held"]) for t in scale_targets({"rows": [row]})][:2]
    [('ratio <= 1.10 at 1 s, ', False), ('ratio <= 1.5 at 200 ms', None)]
    """
    rows = list(payload.get("rows") or [])
    mem = list(payload.get("memory_rows") or [])
    top = max((r["concurrency"] for r in rows), default=0)
    thread = [r for r in rows if r.get("runner", "thread") == "thread"]
    out = [
        _worst(
            "ratio <= 1.10 at 1 s, threads, every concurrency",
            [r for r in thread if r["latency_s"] == 1.0],
            "ratio",
            1.10,
        ),
        _worst(
            "ratio <= 1.5 at 200 ms, threads, highest concurrency",
            [r for r in thread if r["latency_s"] == 0.2 and r["concurrency"] == top],
            "ratio",
            1.5,
        ),
        _worst(
            "ratio <= 1.2 on Dask, highest concurrency, 1 s",
            [
                r
                for r in rows
                if str(r.get("runner", "")).startswith("dask") and r["concurrency"] == top and r["latency_s"] == 1.0
            ],
            "ratio",
            1.2,
        ),
        _worst("rerun <= 5 % of the first run", rows, "rerun_fraction", 0.05),
        _worst(
            "client CPU <= 2 ms per request, threads, 2,000 traces (issue 31)",
            [r for r in thread if r["traces"] == 2000],
            "cpu_ms_per_request",
            2.0,
        ),
        _worst(
            "client CPU <= 4 ms per request on Dask, 2,000 traces (issue 31)",
            [r for r in rows if str(r.get("runner", "")).startswith("dask") and r["traces"] == 2000],
            "cpu_ms_per_request",
            4.0,
        ),
        _every(
            "rerun sends 0 requests",
            rows,
            lambda r: r["rerun_requests"] == 0,
            lambda r: f"{r['rerun_requests']} requests",
        ),
        _every(
            "peak in flight = the limit",
            rows + mem,
            lambda r: r["peak_in_flight"] == r["concurrency"],
            lambda r: f"peak {r['peak_in_flight']}",
        ),
        _every(
            "nothing lost: every trace once under its own id, none failed",
            rows + mem,
            lambda r: r["rows_ok"],
            lambda r: f"{r.get('failed_rows')} failed",
        ),
    ]
    if len(mem) >= 2:
        small, large = min(mem, key=lambda r: r["traces"]), max(mem, key=lambda r: r["traces"])
        growth = large["rss_mb"] / small["rss_mb"] if small["rss_mb"] else float("inf")
        out.append(
            {
                "target": f"memory: peak RSS at {large['traces']:,} traces <= {MEMORY_GROWTH} x its peak at "
                f"{small['traces']:,}, and <= {MEMORY_MB} MB",
                "rows": 2,
                "worst": f"{large['rss_mb']:.0f} MB / {small['rss_mb']:.0f} MB = {growth:.2f}",
                "held": growth <= MEMORY_GROWTH and large["rss_mb"] <= MEMORY_MB,
            }
        )
    else:
        out.append(
            {
                "target": f"memory: peak RSS of the large corpus <= {MEMORY_GROWTH} x the small one's, and <= "
                f"{MEMORY_MB} MB",
                "rows": len(mem),
                "worst": "not measured",
                "held": None,
            }
        )
    dmem = list(payload.get("discovery_memory_rows") or [])
    if len(dmem) >= 2:
        small, large = min(dmem, key=lambda r: r["datasets"]), max(dmem, key=lambda r: r["datasets"])
        growth = large["peak_rss_mb"] / small["peak_rss_mb"] if small["peak_rss_mb"] else float("inf")
        out.append(
            {
                "target": f"memory: discover's peak RSS at {large['datasets']:,} datasets <= {MEMORY_GROWTH} x its "
                f"peak at {small['datasets']:,}",
                "rows": 2,
                "worst": f"{large['peak_rss_mb']:.0f} MB / {small['peak_rss_mb']:.0f} MB = {growth:.2f}",
                "held": growth <= MEMORY_GROWTH and all(r["rows_ok"] for r in dmem),
            }
        )
    return out


def is_full_run(payload: dict[str, Any]) -> bool:
    """Whether ``payload`` measured the issue's sizes: the default plan, latencies, concurrencies, Dask and memory."""
    return (
        [tuple(p) for p in payload.get("plan", [])] == [tuple(p) for p in DEFAULT_PLAN]
        and payload.get("latencies_s") == [1.0, 0.2]
        and payload.get("concurrencies") == [16, 64]
        and "dask" in payload.get("runners", [])
        and payload.get("memory_traces") == list(DEFAULT_MEMORY_TRACES)
        and not payload.get("partial")
    )


def _machine_line(p: dict[str, Any]) -> str:
    m, s = p.get("machine") or {}, p.get("machine_at_start") or {}
    return (
        f"{m.get('when', '?')[:16].replace('T', ' ')} (end), commit {m.get('commit') or '?'}, {m.get('cpus', '?')} "
        f"cores, load average {(s.get('load_avg_1_5_15') or ['?'])[0]} at the start and "
        f"{(m.get('load_avg_1_5_15') or ['?'])[0]} at the end"
    )


def _held(h: bool | None) -> str:
    return "not measured" if h is None else ("held" if h else "MISSED")


def _percall_section(percall: dict[str, Any]) -> str:
    rows = []
    for label, run in percall.items():
        for r in run["rows"]:
            rows.append({"label": label, **r})
    head = (
        "## Per-call CPU of the client (`bench.percall`)\n\n"
        f"`{COMMAND.replace(' -m bench', ' -m bench.percall')} --n N --methods ... --label L`: N synthetic traces "
        "one after another through `run_method` against the fake server at 0 ms (its own process), a fresh cache "
        "(every call a request); CPU = this process's CPU time without the profiler, per item and per request; "
        "calls = Python function calls per item under `cProfile` (nearly load-independent, so the fairest "
        "comparison on a shared machine). Each label was measured on:\n\n"
        + "".join(
            f"- `{label}`: {_machine_line(run)}, {run.get('n')} traces, seed {run.get('seed')}\n"
            for label, run in percall.items()
        )
        + "\n"
    )
    return (
        head
        + md_table(
            rows,
            [
                "label",
                "method",
                "items",
                "requests",
                "calls_per_item",
                "cpu_ms_per_item",
                "cpu_ms_per_request",
                "wall_ms_per_item",
            ],
        )
        + "\n"
    )


def performance_markdown(scale: dict[str, Any] | None, percall: dict[str, Any] | None) -> str:
    """The text of ``docs/performance.md`` from a ``scale.json`` payload and ``percall.json`` (either may be None)."""
    parts = [
        "# Performance\n",
        "Generated by `bench/performance.py` from `bench/results/scale.json` and `bench/results/percall.json` "
        f"(`{COMMAND} --only scale` rewrites it after its rows; `{COMMAND} --perf-doc` from the stored results). "
        "Do not edit by hand: rerun the benchmark. `bench/README.md` says what each benchmark measures and where "
        "the time goes.\n",
    ]
    if scale:
        full = is_full_run(scale)
        targets = scale_targets(scale)
        held = [t for t in targets if t["held"]]
        missed = [t for t in targets if t["held"] is False]
        parts.append("## Scale: the `attribute` flow on synthetic corpora (issue 22, item 5)\n")
        old = "runners" not in scale  # written before the rows of issue 22 (Dask started inside the timed call)
        parts.append(
            f"Measured {_machine_line(scale)} (`python -m bench {' '.join(scale.get('argv') or [])}`). "
            + (
                "**Measured before this benchmark had issue 22's rows**: its Dask rows start the cluster inside the "
                "timed call, it has no CPU column and no memory pair, and its rss is the process's peak so far. "
                if old
                else ""
            )
            + (
                ""
                if old
                else "The issue's full sizes. "
                if full
                else "**A reduced run** (not the issue's sizes: it validates the benchmark's code; the targets below are "
                "judged on these rows only, and the full run, `python -m bench --only scale`, is still to be made). "
            )
            + "Fake OpenAI server (test double) in its own process with a fixed latency per request; Prefect's "
            f"temporary API started before timing ({scale.get('prefect_api_start_s')} s, in no row); bound = "
            "requests x "
            "latency / concurrency (a lower bound of the wall time); ratio = wall / bound; cpu_ms_per_request = CPU "
            "of the client's processes (the flow's, and on Dask its workers') during the first run per request: it "
            "binds where it nears 1000 x latency / concurrency ms per core; rerun = the same flow again on the same "
            "cache folder; peak = the server's peak of requests in flight; rss_mb = peak resident memory of the "
            "flow's process during the row (Linux `VmHWM`, reset before each row); rows_ok = every trace once under "
            "its own id and none failed, on both runs.\n"
        )
        parts.append(md_table(scale.get("rows") or [], ROW_COLUMNS))
        if scale.get("memory_rows"):
            parts.append(
                f"\nThe memory pair: all_at_once at the highest concurrency and "
                f"{scale.get('memory_latency_s', 0) * 1000:g} ms, each in a fresh process of its own (first "
                "run only; rss_mb is that process's peak):\n"
            )
            parts.append(md_table(scale["memory_rows"], ROW_COLUMNS))
        if scale.get("discovery_memory_rows"):
            parts.append(
                "\nThe discovery memory pair: `discover` with `llm_zero_shot` over small user tables (latency 0), "
                "each size in a fresh process of its own (peak_rss_mb is that process's peak):\n"
            )
            parts.append(md_table(scale["discovery_memory_rows"]))
        parts.append(
            "\n### Targets\n\n"
            + md_table(
                [
                    {"target": t["target"], "rows": t["rows"], "worst (row)": t["worst"], "verdict": _held(t["held"])}
                    for t in targets
                ],
                ["target", "rows", "worst (row)", "verdict"],
            )
        )
        parts.append(
            f"\n{len(held)} of {len(targets)} targets held, {len(missed)} missed"
            + (f" ({'; '.join(t['target'] for t in missed)})" if missed else "")
            + f", {len(targets) - len(held) - len(missed)} not measured"
            + ("" if full or old else " (a reduced run: no verdict on the issue's sizes)")
            + ".\n"
        )
    else:
        parts.append("## Scale\n\nNot measured yet: `python -m bench --only scale` (about 20 minutes of both cores).\n")
    if percall:
        parts.append("\n" + _percall_section(percall))
    return "\n".join(parts)


def write_performance_doc(results: Path = RESULTS_DIR, doc: Path = DOC) -> Path:
    """Rewrite ``doc`` from ``results/scale.json`` and ``results/percall.json`` (whichever exist)."""

    def load(name: str) -> dict[str, Any] | None:
        p = results / name
        return json.loads(p.read_text()) if p.is_file() else None

    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(performance_markdown(load("scale.json"), load("percall.json")))
    return doc
