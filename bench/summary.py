"""The README's "Performance" section, written from the latest results (``bench/results/summary.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcausal.discovery.graphs.metrics import METRIC_COLUMNS, METRICS_FOOTER
from bench.common import md_table
from bench.performance import scale_targets
from bench.throughput import economies

__all__ = ["summary_markdown", "update_readme", "COMMAND"]

COMMAND = ".venv/bin/python -m bench"


def _stamp(payload: dict[str, Any]) -> str:
    """When, where and at which commit a result was measured (its ``machine`` record)."""
    m = payload.get("machine") or {}
    start = (payload.get("machine_at_start") or m).get("load_avg_1_5_15", ["?"])[0]
    return f"measured {m.get('when', '?')[:16]} at commit {m.get('commit', '?')}, load average {start} at the start"


def _throughput(t: dict[str, Any]) -> str:
    rows = []
    for r in t["library"] + t["prefect_flow"]:
        rows.append(
            {
                "method": r["method"],
                "path": r["path"],
                "concurrency": r["concurrency"],
                "requests": r["requests"],
                "wall s": r["wall_s"],
                "bound s": r["bound_s"],
                "wall / bound": r["wall_over_bound"],
                "overhead ms / request": r["overhead_ms_per_request"],
                "CPU ms / request": r.get("cpu_ms_per_request"),
            }
        )
    flow = ""
    if t.get("prefect_api_start_s") is not None:
        flow = (
            f" The Prefect row is the `attribute` flow (thread pool, cached tasks, Parquet, report, artifacts);"
            f" starting Prefect's temporary API took a further {t['prefect_api_start_s']:.0f} s."
        )
    n = t["library"][0]["traces"] if t["library"] else "?"
    preset = f"method-settings preset `{t['preset']}`" if t.get("preset") else "no preset named"
    return (
        f"**Throughput** ({_stamp(t)}; {preset}; {n} traces, fake "
        f"OpenAI server with {t['latency_s'] * 1000:.0f} ms per request; bound = requests x latency / "
        "concurrency, overhead = (wall - bound) x concurrency / requests, CPU = the pipeline process's CPU "
        "time per request; the server runs in another process)." + flow + "\n\n" + md_table(rows)
    )


def _cache(c: dict[str, Any]) -> str:
    rows = [
        {
            "method": r["method"],
            "path": r["path"],
            "concurrency": r["concurrency"],
            "wall s": r["wall_s"],
            "requests": r["requests"],
        }
        for r in c["rows"]
    ]
    return "**Cache reuse** (the same corpus again, same cache folder; target 0 requests).\n\n" + md_table(rows)


def _economy(e: dict[str, Any]) -> str:
    ecos = economies(e)
    if not ecos:
        return ""
    cells = []
    for name, eco in ecos.items():
        s = eco["summary"]
        cells.append(
            f"under preset `{name}`: {s['requests_per_trace']} requests ({s['gca_requests_per_trace']} GCA, "
            f"{s['lce_requests_per_trace']} LCE, {s['embed_requests_per_trace']} embedding), "
            f"{s['neighbours_evaluated_per_trace']} neighbours evaluated over "
            f"{s['distinct_steps_evaluated_per_trace']} distinct steps, **{s['simulations_per_trace']} simulations** "
            f"after memoisation, {s.get('moves_per_trace', '?')} accepted moves; prompt tokens mean "
            f"{s['prompt_tokens_per_trace'] / 1000:.1f}k, median {s['median_prompt_tokens_per_trace'] / 1000:.1f}k "
            f"(GCA {s['gca_prompt_tokens_per_trace'] / 1000:.1f}k)"
        )
    s = next(iter(ecos.values()))["summary"]
    same = ""
    keys = ("simulations_per_trace", "neighbours_evaluated_per_trace", "lce_requests_per_trace", "moves_per_trace")
    if len(ecos) > 1 and len({tuple(eco["summary"].get(k) for k in keys) for eco in ecos.values()}) == 1:
        rows = [r for eco in ecos.values() for r in eco.get("per_trace", [])]
        peak = (
            (
                f" (at most {max(r['moves'] for r in rows)} accepted moves and {max(r['simulations'] for r in rows)} "
                "simulations on any trace)"
            )
            if rows
            else ""
        )
        same = (
            " The presets' search counts are identical: under this script the search stops early"
            + peak
            + ", so no cap of `small` binds; only the prompt wording (tokens) differs. How far `paper`'s "
            "uncapped search goes on a real model is not measured here."
        )
    return (
        f"**LCE economy** ({_stamp(e)}; DCFA on the same corpus at the highest concurrency; scripted simulated "
        "outcomes, so the search depth follows the script, not a model; tokens = characters / 4; `paper` has no "
        "cap on edges, deviations or iterations, `small` keeps 3 iterations, 5 deviations, 10 edges; "
        "`bench/results/lce_economy.md` has both presets' settings and tables). Per trace "
        + "; ".join(cells)
        + f". The DCFA paper: m ≈ {s['paper_expansions_per_trace']} expansions, ~{s['paper_tokens_per_trace'] // 1000}k "
        f"prompt tokens, ~{s['paper_gca_tokens_per_trace'] // 1000}k of them GCA." + same + "\n"
    )


def _mac(m: dict[str, Any]) -> str:
    algs = list(dict.fromkeys(r["algorithm"] for r in m["summary"]))
    by: dict[str, dict[str, Any]] = {}
    mismatches = []
    for r in m["summary"]:

        def mean(x: str) -> str:
            return x.split(" ± ")[0]

        cell = " / ".join(mean(r[k]) for k in METRIC_COLUMNS) + f" ({mean(r['seconds'])} s)"
        by.setdefault(r["dataset"], {"dataset (n)": f"{r['dataset']} ({r.get('n', m['n'])})"})[r["algorithm"]] = cell
        if r.get("anchor_shd", "") != "" and str(r["anchor_shd"]) != str(r["seed0_shd"]):
            mismatches.append(f"{r['dataset']} {r['algorithm']}: seed 0 {r['seed0_shd']}, anchor {r['anchor_shd']}")
    n_anchor = sum(1 for r in m["summary"] if r.get("anchor_shd", "") != "")
    check = (
        "Seed 0 reproduces all {} SHD anchors of issue 7.".format(n_anchor)
        if not mismatches
        else "Seed 0 against the SHD anchors of issue 7 differs on: " + "; ".join(mismatches) + "."
    )
    cols = " / ".join(METRIC_COLUMNS.values())
    return (
        f"**MAC statistical stage** (measured {(m.get('machine') or {}).get('when', '?')[:16]}, load average "
        f"{(m.get('machine') or {}).get('load_avg_1_5_15', ['?'])[0]}; "
        f"causal-learn pool, n = {m['n']}, seeds {', '.join(map(str, m['seeds']))}, "
        f"Auto MPG its 392 rows once; each cell: mean {cols} (mean seconds); "
        f"Exact Search bounded: {m['exact_search_bound']}). {check}\n\n"
        + md_table(list(by.values()), ["dataset (n)", *algs])
        + f"\n{METRICS_FOOTER}\n"
    )


def _exact(e: dict[str, Any]) -> str:
    rows = [
        {"variant": r["variant"], "n": r["n"], **{h: r[k] for k, h in METRIC_COLUMNS.items()}} for r in e["summary"]
    ]
    return (
        f"**Exact search on discrete data** (measured {(e.get('machine') or {}).get('when', '?')[:16]}; "
        f"{e['dataset']}, seeds {', '.join(map(str, e['seeds']))}; "
        f"mean over seeds; n per row). {e['finding']}\n\n" + md_table(rows) + f"\n{METRICS_FOOTER}\n"
    )


def summary_markdown(written: dict[str, dict[str, Any]], run: dict[str, Any]) -> str:
    """The Performance section: latest numbers and the command that reproduces them."""
    ms, me = run["machine_at_start"], run["machine_at_end"]
    parts = [
        "## Performance\n",
        f"The last full run of `{COMMAND}` took {run['seconds'] / 60:.1f} minutes ({me['when'][:10]}, commit "
        f"{me['commit']}, {me['cpus']} CPU cores, load average {ms['load_avg_1_5_15'][0]} at the start, "
        f"{me['load_avg_1_5_15'][0]} at the end); a benchmark re-run alone since (`--only`) says when and at "
        "which commit it was measured. It writes JSON and markdown for each benchmark "
        "into `bench/results/`; `bench/README.md` says what each measures.\n",
    ]
    if "throughput" in written:
        parts.append(_throughput(written["throughput"]))
    if "cache_reuse" in written:
        parts.append(_cache(written["cache_reuse"]))
    if "lce_economy" in written:
        parts.append(_economy(written["lce_economy"]))
    if "mac_statistical" in written:
        parts.append(_mac(written["mac_statistical"]))
    if "exact_discrete" in written:
        parts.append(_exact(written["exact_discrete"]))
    parts.append(_embedded())
    parts.append(scale_section())
    parts.append(
        f"Reproduce: `{COMMAND}` (benchmarks 1-4 and 6; `--only throughput` re-measures 1-3 alone, "
        "then `--summary` rewrites this section); `bench/README.md` explains each measure and, under "
        '"Scale: where the time goes", where the flow\'s time goes at scale.\n'
    )
    return "\n".join(parts)


def scale_section(path: Path = Path(__file__).with_name("results") / "scale.json") -> str:
    """A pointer to ``docs/performance.md`` (the scale rows and their targets, generated by ``--only scale``), with
    the last run's verdict in one sentence."""
    import json

    how = (
        f"**Scale** (opt-in, about 15 minutes: `{COMMAND} --only scale`): the `attribute` flow on 2,000 and 500 "
        "synthetic traces at 1 s and 200 ms per request, on threads and on a Dask cluster started before timing, "
        "a 5,000 / 50,000 memory pair and the `discover` flow's over 100 / 1,000 datasets; `docs/performance.md` "
        "has the rows, their targets (issues 22, 29 and 31) and the per-call CPU, generated from `bench/results/`."
    )
    if not path.is_file():
        return how + "\n"
    res = json.loads(path.read_text())
    targets = scale_targets(res)
    held = sum(1 for t in targets if t["held"])
    missed = [t["target"] for t in targets if t["held"] is False]
    m = res.get("machine") or {}
    return (
        f"{how} Last run {m.get('when', '')[:16]} at commit {m.get('commit', '')}: {held} of {len(targets)} "
        f"targets held" + (f"; missed: {'; '.join(missed)}" if missed else "") + ".\n"
    )


def _embedded() -> str:
    """The last embedded run (``results/embedded.json``), if any, and how to run it."""
    import json

    how = (
        "Embedded-model accuracy (all attribution methods on the shortest development traces, seconds and "
        f"tokens per trace) is opt-in and long: `{COMMAND} --embedded --embedded-traces 6`."
    )
    path = Path(__file__).with_name("results") / "embedded.json"
    if not path.is_file():
        return how + "\n"
    e = json.loads(path.read_text())
    cells = ", ".join(
        f"{r['method']} {r['seconds_per_trace']:.0f} s / {r['prompt_tokens_per_trace']} prompt tokens"
        for r in e.get("summary", [])
    )
    load = (e.get("machine") or {}).get("load_avg_1_5_15", ["?"])[0]
    return (
        f"{how} Last run ({(e.get('machine') or {}).get('when', '')[:10]}, {len(e.get('traces', []))} trace(s): "
        f"{', '.join(e.get('traces', []))}; load average {load}), per trace: {cells} "
        "(`dcfa_gca_only` reuses DCFA's cached GCA calls)." + _a2p_echo() + _small_vs_before() + "\n"
    )


def _small_vs_before(path: Path = Path(__file__).with_name("results") / "embedded_small_vs_before.json") -> str:
    """One sentence on the before/after check of the ``small`` preset (``bench.embedded_compare``), if any."""
    import json

    if not path.is_file():
        return ""
    e = json.loads(path.read_text())
    cells = ", ".join(
        f"{m} step {r['step_correct_before']}→{r['step_correct_after']}, agent "
        f"{r['agent_correct_before']}→{r['agent_correct_after']} of {r['n']}"
        for m, r in e.get("methods", {}).items()
    )
    verdict = (
        "not worse for any method"
        if all(r["not_worse"] for r in e.get("methods", {}).values())
        else "WORSE for " + ", ".join(m for m, r in e["methods"].items() if not r["not_worse"])
    )
    return (
        f" Preset `small` after the DCFA-fidelity change vs the settings before it "
        f"(`bench/results/embedded_small_vs_before.md`, {len(e.get('traces', []))} traces): {verdict} "
        f"({cells}). {e.get('note', '')}"
    )


def _a2p_echo(path: Path = Path(__file__).with_name("results") / "a2p-echo" / "embedded.json") -> str:
    """One sentence on the A2P and ECHO embedded run (``results/a2p-echo``), if any."""
    import json

    if not path.is_file():
        return ""
    e = json.loads(path.read_text())
    cells = ", ".join(
        f"{r['method']} {r['seconds']:.0f} s / {r['requests']} requests / {r['prompt_tokens']} prompt "
        f"tokens, step {r['pred_step']} (labelled {r['true_step']})"
        for r in e.get("rows", [])
    )
    return (
        f" A2P and ECHO ran once on {', '.join(e.get('traces', []))} under preset `{e.get('preset') or 'paper'}` "
        f"({(e.get('machine') or {}).get('when', '')[:10]}): {cells}; `bench/README.md` (5) says what it shows."
    )


#: the READMEs whose ``## Performance`` section is this summary
READMES = (Path(__file__).with_name("README.md"), Path(__file__).resolve().parents[1] / "README.md")


def update_readme(section: str, readme: Path | None = None) -> list[Path]:
    """Replace the ``## Performance`` section (to the next ``## `` heading or the end) with ``section``.

    ``readme`` None: both :data:`READMES` (``bench/README.md`` and the project README), where
    they have such a section. Returns the files rewritten.
    """
    written = []
    for path in [readme] if readme is not None else READMES:
        if not path.is_file():
            continue
        text = path.read_text()
        if "\n## Performance\n" not in text:
            continue
        head, rest = text.split("\n## Performance\n", 1)
        tail = rest.split("\n## ", 1)
        after = "\n## " + tail[1] if len(tail) == 2 else ""
        path.write_text(head.rstrip() + "\n\n" + section.strip() + "\n" + ("\n" + after.lstrip("\n") if after else ""))
        written.append(path)
    return written
