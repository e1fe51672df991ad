"""Benchmarks 1 to 3: throughput against the fake server, cache reuse, and LCE economy.

All three run the same corpus (:func:`bench.common.bench_corpus`) against the
fake OpenAI server (test double, :mod:`bench.server`) with a fixed latency per
request, answered by :class:`agentcausal_fakes.responders.BenchResponder`.

* **Throughput** (library): after a two-trace warm-up per method (imports,
  HTTP clients, cache files: not timed), ``run_method`` on a thread pool of ``c`` traces,
  the profile's ``max_concurrency = c`` (one limit shared by chat and
  embedding requests), a fresh LLM cache. Reported: wall time, requests, the
  bound ``requests x latency / c``, peak requests in flight at the server, and
  the pipeline's own overhead per request ``(wall - bound) x c / requests``
  (at c = 1 exactly the time per request not spent waiting for the server;
  at high concurrency it also holds slots left idle because a trace's calls
  depend on each other), and the CPU time of the benchmark process per request
  (``time.process_time``; the server runs in another process).
* **Throughput** (Prefect): the ``attribute`` flow (mapped, cached tasks,
  Parquet, evaluation, report and artifacts) with its thread pool sized ``c``;
  the temporary Prefect API is started by a warm-up flow first and timed apart.
* **Cache reuse**: the same corpus again on the same cache folder (a new
  gateway, so the disk cache serves it; for the flow, Prefect's task cache).
* **LCE economy**: from the DCFA run: requests, simulations, neighbours
  evaluated, distinct steps evaluated and prompt tokens per trace, under the
  ``paper`` preset (the run above: no cap the paper does not have) and, beside
  it, each further preset named (default ``small``: one more DCFA run at the
  highest concurrency on a fresh cache).

Every run's gateway routing names its method-settings preset
(:mod:`agentcausal.settings`; default ``paper``), and the payloads record it.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentcausal.attribution.jobs import run_method
from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.runs.options import RunOptions
from agentcausal.traces.jsonl import write_jsonl
from agentcausal.traces.model import Attribution, Trace
from agentcausal_fakes.profiles import bench_gateway, profiles_toml
from agentcausal_fakes.synthetic import synthetic_traces
from bench.common import md_table, scratch_dir
from bench.server import ServerProcess

__all__ = ["library_run", "flow_run", "lce_economy", "run_throughput"]

#: the DCFA paper's cost figures (section 5.4.5 and appendix E)
PAPER_LCE_EXPANSIONS = 4.5
PAPER_DCFA_TOKENS = 32_000
PAPER_GCA_TOKENS = 13_000


def _usage_totals(atts: Sequence[Attribution]) -> dict[str, float]:
    keys = ("calls", "requests", "cache_hits", "prompt_tokens", "completion_tokens")
    tot = {k: 0.0 for k in keys}
    for a in atts:
        for u in a.usage.values():
            for k in keys:
                tot[k] += u.get(k, 0)
    return tot


def library_run(
    traces: Sequence[Trace],
    method: str,
    concurrency: int,
    server: ServerProcess,
    cache_dir: Path,
    *,
    label: str,
    preset: str | None = "paper",
) -> tuple[dict[str, Any], list[Attribution]]:
    """``run_method`` over the corpus on a pool of ``concurrency`` threads; one row of results.

    Returns
    -------
    (row, attributions); the row holds the preset, wall seconds, requests, the latency bound,
    peak in flight, overhead per request (ms), and errors.
    """
    server.reset()
    gw = bench_gateway(server.base_url, concurrency, cache_dir, model=f"bench-{label}", preset=preset)
    cpu0, t0 = time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="bench") as pool:
        atts = list(pool.map(lambda t: run_method(t, ATTRIBUTION_METHODS[method], gw), traces))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    gw.close()
    row = _row("library", method, concurrency, wall, server, atts, len(traces), cpu)
    row["preset"] = preset or "paper"
    return row, atts


def _row(
    path: str,
    method: str,
    c: int,
    wall: float,
    server: ServerProcess,
    atts: Sequence[Attribution],
    n_traces: int,
    cpu: float,
) -> dict[str, Any]:
    st = server.stats()
    req = st["requests"]
    bound = req * server.latency_s / c
    return {
        "path": path,
        "method": method,
        "concurrency": c,
        "traces": n_traces,
        "wall_s": round(wall, 3),
        "requests": req,
        "chat_requests": st["chat_requests"],
        "embedding_requests": st["embedding_requests"],
        "bound_s": round(bound, 3),
        "wall_over_bound": round(wall / bound, 3) if bound else None,
        "overhead_ms_per_request": round((wall - bound) * c / req * 1000, 1) if req else None,
        "cpu_ms_per_request": round(cpu / req * 1000, 1) if req else None,
        "max_in_flight": st["max_in_flight"],
        "errors": sum(1 for a in atts if a.error),
        "traces_per_s": round(n_traces / wall, 2),
        "ledger": _usage_totals(atts),
    }


_WARM = None


def _prefect_warmup() -> float:
    """Start Prefect's temporary API with a trivial flow; seconds it took.

    The server is a temporary one of this process (``AGENTCAUSAL_SHARED_API=0`` unless set), bound to it
    (:func:`flows.api_server.install`): a bench stopped by a signal leaves no API server behind.
    """
    global _WARM
    os.environ.setdefault("AGENTCAUSAL_SHARED_API", "0")
    from prefect import flow

    from flows import api_server

    api_server.install()

    @flow(name="bench-warmup")
    def warmup() -> int:
        return 1

    t0 = time.perf_counter()
    warmup()
    _WARM = time.perf_counter() - t0
    return _WARM


def flow_run(
    corpus_file: Path,
    method: str,
    concurrency: int,
    server: ServerProcess,
    work: Path,
    *,
    label: str,
    n_traces: int,
    preset: str | None = "paper",
) -> tuple[dict[str, Any], list[Attribution]]:
    """The ``attribute`` flow over the corpus file with a thread pool of ``concurrency``; one row of results.

    The flow's cache folder is ``work/cache`` and its profiles a TOML file on the fake
    server, so a second call with the same arguments is served from Prefect's task cache.
    """
    import pandas as pd

    from agentcausal.settings import RunSettings
    from flows.attribute import run_attribute
    from flows.runners import RunnerChoice

    toml = profiles_toml(
        work / f"profiles-{label}.toml", server.base_url, concurrency, model=f"bench-{label}", preset=preset
    )
    settings = RunSettings(profiles_path=str(toml), cache_dir=str(work / "cache"), routing="default")
    server.reset()
    out = work / f"run-{label}-{time.time_ns()}"
    cpu0, t0 = time.process_time(), time.perf_counter()
    run_dir = run_attribute(
        AttributionRequest(paths=[str(corpus_file)], methods=[method]),
        RunOptions(out_dir=str(out)),
        settings=settings,
        runner=RunnerChoice(max_workers=concurrency),
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    df = pd.read_parquet(Path(run_dir) / "results.parquet")
    errors = int(df["error"].notna().sum()) if "error" in df else 0
    row = _row("prefect flow", method, concurrency, wall, server, [], n_traces, cpu)
    row["errors"] = errors
    row["preset"] = preset or "paper"
    return row, []


# ------------------------------------------------------------------ LCE economy
#: DCFA settings that differ between the presets (recorded with each economy, as the run resolved them)
CAP_FIELDS = ("prompts", "max_iterations", "max_deviations", "max_edges", "max_corrected_step_chars")


def lce_economy(atts: Sequence[Attribution], traces: Sequence[Trace]) -> dict[str, Any]:
    """Requests, simulations, neighbours and prompt tokens per DCFA trace, and their means.

    Returns
    -------
    dict with ``per_trace`` rows, ``by_distinct_steps`` rows (traces grouped by the number of
    distinct steps the search evaluated), ``summary`` (means, and the paper's figures) and
    ``settings`` (the DCFA fields of :data:`CAP_FIELDS` as the first attribution resolved them;
    None = no cap).
    """
    n_by_id = {t.id: len(t) for t in traces}
    chars_by_id = {t.id: sum(len(s.content) for s in t.steps) for t in traces}
    rows = []
    for a in atts:
        lce = (a.details or {}).get("lce") or {}
        ev = lce.get("evaluated") or []
        u = a.usage
        gca, lce_u, emb = u.get("dcfa.gca", {}), u.get("dcfa.lce", {}), u.get("dcfa.embed", {})
        rows.append(
            {
                "trace": a.trace_id,
                "steps": n_by_id.get(a.trace_id),
                "kchars": round(chars_by_id.get(a.trace_id, 0) / 1000, 1),
                "requests": int(sum(x.get("requests", 0) for x in u.values())),
                "gca_requests": int(gca.get("requests", 0)),
                "lce_requests": int(lce_u.get("requests", 0)),
                "embed_requests": int(emb.get("requests", 0)),
                "neighbours_evaluated": len(ev),
                "distinct_steps_evaluated": len({e["step"] for e in ev}),
                "simulations": len(lce.get("outcomes") or []),
                "moves": len(lce.get("path") or []),
                "ded_called": not (lce.get("decision") or {}).get("skipped", True),
                "prompt_tokens": int(sum(x.get("prompt_tokens", 0) for x in u.values())),
                "gca_prompt_tokens": int(gca.get("prompt_tokens", 0)),
                "lce_prompt_tokens": int(lce_u.get("prompt_tokens", 0)),
                "error": a.error,
            }
        )
    groups: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["distinct_steps_evaluated"], []).append(r)
    by_distinct = [
        {
            "distinct_steps_evaluated": k,
            "traces": len(g),
            "requests_per_trace": round(statistics.mean(r["requests"] for r in g), 2),
            "simulations_per_trace": round(statistics.mean(r["simulations"] for r in g), 2),
            "neighbours_per_trace": round(statistics.mean(r["neighbours_evaluated"] for r in g), 2),
            "prompt_ktokens_per_trace": round(statistics.mean(r["prompt_tokens"] for r in g) / 1000, 1),
        }
        for k, g in sorted(groups.items())
    ]

    def mean(key: str) -> float:
        return round(statistics.mean(r[key] for r in rows), 2) if rows else 0.0

    summary = {
        "traces": len(rows),
        "errors": sum(1 for r in rows if r["error"]),
        "requests_per_trace": mean("requests"),
        "gca_requests_per_trace": mean("gca_requests"),
        "lce_requests_per_trace": mean("lce_requests"),
        "embed_requests_per_trace": mean("embed_requests"),
        "simulations_per_trace": mean("simulations"),
        "neighbours_evaluated_per_trace": mean("neighbours_evaluated"),
        "distinct_steps_evaluated_per_trace": mean("distinct_steps_evaluated"),
        "moves_per_trace": mean("moves"),
        "ded_called_share": round(statistics.mean(1.0 if r["ded_called"] else 0.0 for r in rows), 2) if rows else 0,
        "prompt_tokens_per_trace": mean("prompt_tokens"),
        "gca_prompt_tokens_per_trace": mean("gca_prompt_tokens"),
        "lce_prompt_tokens_per_trace": mean("lce_prompt_tokens"),
        "median_prompt_tokens_per_trace": statistics.median(r["prompt_tokens"] for r in rows) if rows else 0,
        "paper_expansions_per_trace": PAPER_LCE_EXPANSIONS,
        "paper_tokens_per_trace": PAPER_DCFA_TOKENS,
        "paper_gca_tokens_per_trace": PAPER_GCA_TOKENS,
    }
    settings = {k: (atts[0].settings or {}).get(k) for k in CAP_FIELDS} if atts else {}
    return {"per_trace": rows, "by_distinct_steps": by_distinct, "summary": summary, "settings": settings}


# ------------------------------------------------------------------ the section runner
def run_throughput(
    traces: Sequence[Trace],
    corpus: str,
    *,
    latency_s: float = 0.2,
    concurrencies: Sequence[int] = (1, 4, 16),
    methods: Sequence[str] = ("all_at_once", "dcfa"),
    flow_concurrency: int | None = 4,
    preset: str = "paper",
    economy_presets: Sequence[str] = ("small",),
    log=print,
) -> dict[str, Any]:
    """Benchmarks 1 to 3 on one fake server; returns the three result payloads.

    Parameters
    ----------
    traces, corpus : the corpus and its description
    latency_s : fake server latency per request (seconds)
    concurrencies, methods, flow_concurrency : the throughput grid (flow_concurrency None: no flow run)
    preset : the method-settings preset of every throughput run (default ``paper``); its DCFA run at the
        highest concurrency is the LCE economy's main measurement
    economy_presets : further presets whose LCE economy is measured beside it (one DCFA run each at the
        highest concurrency, fresh cache; not timed into the throughput table)

    Returns
    -------
    dict with keys ``throughput``, ``cache_reuse``, ``lce_economy`` (JSON-able); ``lce_economy`` holds
    ``preset`` and its economy at the top level and the others under ``other_presets``.
    """
    work = scratch_dir("agentcausal-bench-")
    rows: list[dict[str, Any]] = []
    cache_rows: list[dict[str, Any]] = []
    dcfa_atts: list[Attribution] = []
    with ServerProcess(latency_s=latency_s) as server:
        for method in methods:  # warm-up: imports, HTTP client, cache files; not timed
            library_run(
                synthetic_traces(2, seed=99), method, 2, server, work / f"warm-{method}", label=f"warm-{method}"
            )
        for method in methods:
            for c in concurrencies:
                cache_dir = work / f"llm-{method}-c{c}"
                row, atts = library_run(traces, method, c, server, cache_dir, label=f"{method}-c{c}", preset=preset)
                rows.append(row)
                log(
                    f"  {method} c={c}: {row['wall_s']:.1f} s, {row['requests']} requests, "
                    f"bound {row['bound_s']:.1f} s, overhead {row['overhead_ms_per_request']} ms/request"
                )
                if method == "dcfa" and c == max(concurrencies):
                    dcfa_atts = atts
                if c == max(concurrencies):
                    again, _ = library_run(traces, method, c, server, cache_dir, label=f"{method}-c{c}", preset=preset)
                    again.update(run="second (same cache folder, new gateway)")
                    cache_rows.append(again)
                    log(f"  {method} c={c} again: {again['wall_s']:.2f} s, {again['requests']} requests")
        other_economy: dict[str, dict[str, Any]] = {}
        if "dcfa" in methods:
            c = max(concurrencies)
            for p in (x for x in economy_presets if x != preset):
                row, atts = library_run(
                    traces, "dcfa", c, server, work / f"llm-dcfa-{p}", label=f"dcfa-{p}-c{c}", preset=p
                )
                other_economy[p] = {
                    **lce_economy(atts, traces),
                    "run": {k: row[k] for k in ("concurrency", "wall_s", "requests", "errors")},
                }
                log(f"  dcfa under {p!r} (LCE economy) c={c}: {row['wall_s']:.1f} s, {row['requests']} requests")
        flow_rows: list[dict[str, Any]] = []
        warm = None
        if flow_concurrency:
            os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
            corpus_file = write_jsonl(traces, work / "corpus.jsonl")
            warm = _prefect_warmup()
            log(f"  Prefect temporary API up in {warm:.1f} s")
            for rep in ("first", "second (same cache folder: Prefect task cache)"):
                row, _ = flow_run(
                    corpus_file,
                    "all_at_once",
                    flow_concurrency,
                    server,
                    work,
                    label=f"flow-c{flow_concurrency}",
                    n_traces=len(traces),
                    preset=preset,
                )
                row["run"] = rep
                (flow_rows if rep == "first" else cache_rows).append(row)
                log(
                    f"  flow all_at_once c={flow_concurrency} ({rep}): {row['wall_s']:.1f} s, "
                    f"{row['requests']} requests"
                )
    for r in rows + flow_rows + cache_rows:
        r.pop("ledger", None)
    for r in cache_rows:
        r.setdefault("run", "second")
    economy = lce_economy(dcfa_atts, traces) if dcfa_atts else {}
    return {
        "throughput": {
            "corpus": corpus,
            "preset": preset,
            "latency_s": latency_s,
            "library": rows,
            "prefect_flow": flow_rows,
            "prefect_api_start_s": round(warm, 2) if warm is not None else None,
        },
        "cache_reuse": {"corpus": corpus, "rows": cache_rows},
        "lce_economy": {"corpus": corpus, "preset": preset, **economy, "other_presets": other_economy},
    }


THROUGHPUT_COLUMNS = [
    "path",
    "method",
    "concurrency",
    "wall_s",
    "requests",
    "chat_requests",
    "embedding_requests",
    "bound_s",
    "wall_over_bound",
    "overhead_ms_per_request",
    "cpu_ms_per_request",
    "max_in_flight",
    "traces_per_s",
    "errors",
]
CACHE_COLUMNS = ["path", "method", "concurrency", "run", "wall_s", "requests", "errors"]


def throughput_markdown(payload: dict[str, Any], machine: dict[str, Any]) -> str:
    t = payload
    lines = [
        f"# Throughput against the fake server ({t['latency_s'] * 1000:.0f} ms per request)\n",
        f"Corpus: {t['corpus']}. Method-settings preset: `{t.get('preset', 'unnamed')}`. "
        f"Machine: {machine['cpus']} cores, load average "
        f"{machine['load_avg_1_5_15']} at the end, commit {machine['commit']}, {machine['when']}.\n",
        "bound = requests x latency / concurrency (one concurrency limit shared by chat and embedding "
        "requests); overhead per request = (wall - bound) x concurrency / requests (at concurrency > 1 it "
        "includes slots left idle while a trace waits on its own previous call); cpu = CPU time of the "
        "pipeline process per request (the fake server runs in another process). Embedding requests vary "
        "a little between runs: traces share the embedding cache, so which trace embeds a common outcome "
        "text first depends on timing; chat requests are the same every run.\n",
        md_table(t["library"] + t["prefect_flow"], THROUGHPUT_COLUMNS),
    ]
    if t.get("prefect_api_start_s") is not None:
        lines.append(
            f"\nThe Prefect rows exclude the temporary API start ({t['prefect_api_start_s']:.1f} s, "
            "a warm-up flow) and include the flow's Parquet, evaluation, report and artifacts.\n"
        )
    return "\n".join(lines)


def cache_markdown(payload: dict[str, Any], machine: dict[str, Any]) -> str:
    return (
        "# Cache reuse: the same corpus a second time\n\n"
        f"Corpus: {payload['corpus']}. Target: 0 requests. Load average {machine['load_avg_1_5_15']}.\n\n"
        + md_table(payload["rows"], CACHE_COLUMNS)
    )


#: (label, summary key, the DCFA paper's figure key or None) of the LCE economy's table
ECONOMY_MEASURES = [
    (
        "LCE expansions per trace (Simulation calls after memoisation; paper: m ≈ 4.5)",
        "simulations_per_trace",
        "paper_expansions_per_trace",
    ),
    ("neighbours evaluated per trace (before memoisation)", "neighbours_evaluated_per_trace", None),
    ("distinct steps evaluated per trace", "distinct_steps_evaluated_per_trace", None),
    ("accepted moves per trace", "moves_per_trace", None),
    ("requests per trace (all stages, embeddings included)", "requests_per_trace", None),
    ("LCE requests per trace (Simulation, Correct, DED)", "lce_requests_per_trace", None),
    ("prompt tokens per trace, mean (paper: ~32k)", "prompt_tokens_per_trace", "paper_tokens_per_trace"),
    ("prompt tokens per trace, median", "median_prompt_tokens_per_trace", None),
    ("GCA prompt tokens per trace (paper: ~13k)", "gca_prompt_tokens_per_trace", "paper_gca_tokens_per_trace"),
    ("DED called (share of traces)", "ded_called_share", None),
    ("errors (traces)", "errors", None),
]


def economies(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """preset -> economy (``per_trace``, ``by_distinct_steps``, ``summary``, ``settings``) of an
    ``lce_economy`` payload, main preset first (a payload written before presets: ``"unnamed"``)."""
    out = {payload.get("preset") or "unnamed": payload} if payload.get("summary") else {}
    out.update(payload.get("other_presets") or {})
    return out


def _settings_text(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k} {'none (no cap)' if v is None else v}" for k, v in settings.items())


def economy_markdown(payload: dict[str, Any], machine: dict[str, Any]) -> str:
    ecos = economies(payload)
    if not ecos:
        return "# LCE economy\n\n_no DCFA run_\n"
    first = next(iter(ecos.values()))["summary"]
    rows = []
    for label, key, paper_key in ECONOMY_MEASURES:
        row: dict[str, Any] = {"measure": label}
        for name, e in ecos.items():
            row[f"preset {name}"] = e["summary"].get(key)
        row["DCFA paper"] = first.get(paper_key) if paper_key else None
        rows.append(row)
    settings = "".join(f"- `{name}`: {_settings_text(e.get('settings') or {})}\n" for name, e in ecos.items())
    parts = [
        "# LCE economy (DCFA)\n\n"
        f"Corpus: {payload['corpus']}. Fake server with the bench responder: the simulated outcomes are "
        "scripted (the correct answer once the revised prefix covers a hidden culprit step chosen by a hash of "
        "the question, one of four wrong answers by step before it), so the search depth and these counts "
        "depend on that script, not on a real model. Prompt tokens are the fake server's count "
        "(characters / 4), with a 128k-token context window, so no trace is shortened. "
        f"Machine: {machine['cpus']} cores, load average {machine['load_avg_1_5_15']}, commit "
        f"{machine['commit']}, {machine['when']}.\n\nDCFA settings that differ between the presets, as the "
        "runs resolved them:\n\n" + settings + "\n" + md_table(rows)
    ]
    for name, e in ecos.items():
        parts.append(
            f"\n## By number of distinct steps evaluated (preset `{name}`)\n\n" + md_table(e["by_distinct_steps"])
        )
    return "".join(parts)
