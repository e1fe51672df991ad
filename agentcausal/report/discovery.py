"""Tables, graph drawings and the markdown report of a causal-discovery run.

* the scored frame (:func:`agentcausal.discovery.evaluate.outcomes_frame`, ``results.parquet``) is read, never
  recomputed here, apart from :func:`write_report`, which scores a saved run first.
* :func:`summary_table`: mean ± std over seeds per dataset and method.
* :func:`summary_text`: the SHD / NHD / F1 table the CLI prints.
* the graphs, each predicted graph against the truth (Mermaid, PNG, SVG, DOT):
  :mod:`agentcausal.report.discovery_graphs`.
* :func:`write_report`: ``results.parquet``,
  ``outcomes.jsonl``, ``run.json``, ``graphs/*.png`` and ``report.md``.

Every table states its conventions (:data:`~agentcausal.discovery.graphs.metrics.SHD_CONVENTION`,
:data:`~agentcausal.discovery.graphs.metrics.METRICS_FOOTER`).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4, app. B.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple, cast

import pandas as pd

from agentcausal.discovery.evaluate import run_notes
from agentcausal.discovery.graphs.metrics import METRIC_COLUMNS, METRICS_FOOTER, SHD_CONVENTION
from agentcausal.discovery.outcome import DiscoveryOutcome, load_outcomes
from agentcausal.discovery.registry import LLM_METHODS, STATISTICAL_METHODS
from agentcausal.discovery.rounds import base_method, file_stem, rounds_variant, split_rounds
from agentcausal.exceptions import RunFileError
from agentcausal.report.discovery_analyses import analyses_report
from agentcausal.report.discovery_graphs import (
    draw_graph_png,
    edge_table_markdown,
    graph_mermaid,
    graphs_html,
    write_graph_outputs,
)
from agentcausal.report.html import facts_markdown, html_table, write_html_report
from agentcausal.report.plots import discovery_figures, figures_markdown
from agentcausal.runs.folder import atomic_path, atomic_write_text, load_run_meta

__all__ = [
    "summary_table",
    "summary_text",
    "markdown_report",
    "memorisation_text",
    "write_report",
    "load_scored",
    "table_records",
    "RunFiles",
    "executor_lines",
    "IDENTICAL_NOTE",
]

_METRICS = (*METRIC_COLUMNS, "precision", "recall")


def _identical_samples(g: pd.DataFrame) -> bool:
    """Two or more LLM samples, every one the same graph, none drawn above temperature 0: their std is 0
    because the samples are one answer repeated (the MAC paper's temperature 0), not because the method is
    stable."""
    ok = g[g["error"] == ""]
    if len(ok) < 2 or base_method(str(g["method"].iloc[0])) not in LLM_METHODS:
        return False
    temps = ok["temperature"] if "temperature" in ok else pd.Series([float("nan")] * len(ok))
    return ok["edges"].nunique() == 1 and bool(((temps.isna()) | (temps == 0)).all())


#: what the note after an LLM method's row says (and why)
IDENTICAL_NOTE = "identical samples: std not informative"
IDENTICAL_EXPLAINED = (
    f"{IDENTICAL_NOTE}: every sample of that LLM method was the same graph at temperature 0 "
    "(the profile's, as in the MAC paper), so its std is 0 by construction; a preset's "
    "sampling_temperature (e.g. --preset small, or --set mac.sampling_temperature=0.7) draws "
    "distinct samples when a run asks for several."
)


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds of SHD, NHD, F1 (and skeleton F1) per dataset and method.

    Returns
    -------
    DataFrame indexed by (dataset, method) with columns ``<metric>_mean``,
    ``<metric>_std``, ``runs``, ``errors`` and ``identical_samples`` (an LLM method whose two or
    more samples were all the same graph at temperature 0: its std says nothing, see
    :data:`IDENTICAL_NOTE`).
    """
    if df.empty:
        return pd.DataFrame()
    # rows grouped by dataset (in order of first appearance), methods in order of first appearance
    df = df.assign(
        dataset=pd.Categorical(df["dataset"], categories=list(dict.fromkeys(df["dataset"]))),
        method=pd.Categorical(df["method"], categories=list(dict.fromkeys(df["method"]))),
    )
    g = df.groupby(["dataset", "method"], sort=True, observed=True)
    out = g[list(_METRICS)].agg(["mean", "std"])
    out.columns = [f"{a}_{b}" for a, b in out.columns]  # type: ignore[str-unpack]  # (metric, statistic) pairs
    out["runs"] = g.size()
    out["errors"] = g["error"].apply(lambda s: int((s != "").sum()))
    if "status" in df:
        out["degraded"] = g["status"].apply(lambda s: int((s == "degraded").sum()))
        out["reused"] = g["reused"].apply(lambda s: int(s.astype(bool).sum()))
    same = {k: _identical_samples(part) for k, part in g} if "edges" in df else {}
    out["identical_samples"] = [bool(same.get(k, False)) for k in out.index]
    out["seconds_mean"] = g["seconds"].mean()
    out["n"] = g["n"].agg(lambda s: "/".join(str(int(v)) for v in dict.fromkeys(s)))
    return out


#: what the "s" column measures
SECONDS_NOTE = (
    "s: mean wall time of the method per run in seconds, timed around the whole method call: for a "
    "statistical algorithm it includes starting its worker process (often more than the algorithm "
    "itself on a small dataset), for an LLM method the waits for the endpoint; a reused run shows the "
    "time it took when computed."
)
#: what the "reused" column counts
REUSED_NOTE = "reused: runs taken from an earlier run's results (cache), which cost this run nothing."


def _cell(mean: float, std: float, digits: int) -> str:
    if pd.isna(mean):
        return "–"
    s = f"{mean:.{digits}f}"
    return s if pd.isna(std) or std == 0 else f"{s}±{std:.{digits}f}"


def summary_text(df: pd.DataFrame, *, reversal_cost: int = 1) -> str:
    """The SHD / NHD / F1 table as fixed-width text, one row per (dataset, method), with the conventions.

    Parameters
    ----------
    df : DataFrame from :func:`outcomes_frame`
    reversal_cost : int, only for the caption

    Returns
    -------
    str
    """
    if df.empty:
        return "(no results)"
    s = summary_table(df)
    digits = {"shd": 1, "shd2": 1, "nhd": 3, "f1": 2, "skeleton_f1": 2}
    lines = [
        f"{'dataset':<11} {'n':>6} {'method':<14} "
        + " ".join(f"{h:>11}" for h in METRIC_COLUMNS.values())
        + f" {'s':>6} {'runs':>4} {'reused':>6}"
    ]
    for key, r in s.iterrows():
        ds, m = cast(tuple[str, str], key)  # a two-level index: (dataset, method)
        err = f"  ({r['errors']} failed)" if r["errors"] else ""
        err += f"  ({int(r['degraded'])} degraded)" if r.get("degraded", 0) else ""
        err += f"  ({IDENTICAL_NOTE})" if r.get("identical_samples", False) else ""
        cells = " ".join(f"{_cell(r[f'{k}_mean'], r[f'{k}_std'], digits[k]):>11}" for k in METRIC_COLUMNS)
        reused = int(r["reused"]) if "reused" in r and pd.notna(r["reused"]) else 0
        lines.append(f"{ds:<11} {r['n']:>6} {m:<14} {cells} {r.seconds_mean:>6.1f} {int(r.runs):>4} {reused:>6}{err}")
    caption = (
        METRICS_FOOTER
        if reversal_cost == 1
        else f"{SHD_CONVENTION[reversal_cost]} in the SHD column. " + METRICS_FOOTER
    )
    lines.append(
        f"{caption} n: rows of data. Mean±std over seeds. {SECONDS_NOTE} {REUSED_NOTE}"
        + (f" {IDENTICAL_EXPLAINED}" if bool(s.get("identical_samples", pd.Series(dtype=bool)).any()) else "")
    )
    return "\n".join(lines)


def memorisation_text(df: pd.DataFrame) -> str:
    """Memorisation control: each LLM method's mean SHD / F1 per anonymise mode, side by side.

    Methods named ``m@names`` / ``m@all`` (:func:`agentcausal.discovery.registry.with_anonymise`) are
    grouped with ``m``; columns ``none``, ``names``, ``all``. Empty string when no method was anonymised.
    """
    if df.empty or not df["method"].str.contains("@").any():
        return ""
    plain = [split_rounds(str(m)) for m in df["method"]]  # "mac@names (rounds 2)": mac (rounds 2), names
    d = df.assign(
        base=[b.partition("@")[0] if r is None else rounds_variant(b.partition("@")[0], r) for b, r in plain],
        mode=[b.partition("@")[2] or "none" for b, _ in plain],
    )
    d = d[d["base"].isin(set(d.loc[d["mode"] != "none", "base"]))]
    g = d.groupby(["dataset", "n", "base", "mode"], sort=False)[["shd", "f1"]].mean()
    modes = [m for m in ("none", "names", "all") if m in set(d["mode"])]
    lines = [f"{'dataset':<11} {'n':>6} {'method':<14} " + " ".join(f"{m:>13}" for m in modes)]
    for (ds, n, base), _ in d.groupby(["dataset", "n", "base"], sort=False):
        cells = []
        for m in modes:
            if (ds, n, base, m) in g.index:
                r = g.loc[(ds, n, base, m)]  # type: ignore[index]  # a four-level index
                cells.append(f"{r.shd:.1f} / {r.f1:.2f}" if not pd.isna(r.shd) else "–")
            else:
                cells.append("")
        lines.append(f"{ds:<11} {n:>6} {base:<14} " + " ".join(f"{c:>13}" for c in cells))
    lines.append(
        "Cells: mean SHD / F1 over seeds. none: as is; names: neutral variable ids, descriptions kept; "
        "all: ids only (descriptions, state names and domain dropped)."
    )
    return "\n".join(lines)


def _debate_lines(o: DiscoveryOutcome) -> list[str]:
    d = o.details or {}
    out = []
    dcm = d.get("dcm")
    if dcm:
        deb, exe = dcm["debate"], dcm["execution"]
        aff = deb["rounds"][-1]["affirmative"]["choice"]["algorithm"]
        neg = (deb["rounds"][-1].get("negative") or {}).get("choice", {}).get("algorithm", "–")
        out.append(
            f"- DCM: Affirmative {aff}, Negative {neg}; verdict {deb['verdict']['winner']} "
            f"({deb['verdict']['reason'][:160]}); ran {exe['choice']['algorithm']} in {exe['mode']} mode"
            + (f" (fallback: {exe['fallback_reason'][:160]})" if exe.get("fallback_reason") else "")
        )
    if d.get("fusion"):
        out.append(f"- Meta Fusion: {len(d['fusion'])} sentences, e.g. " + "; ".join(d["fusion"][:4]))
    mdm = d.get("mdm")
    if mdm:
        v = mdm["debate"]["verdict"]
        out.append(f"- MDM: verdict {v['winner']} {v.get('votes') or ''} ({v['reason'][:160]})")
        if mdm.get("dropped"):
            out.append("- dropped while validating: " + "; ".join(mdm["dropped"]))
    for note in (dcm or {}).get("debate", {}).get("notes", []) + (mdm or {}).get("debate", {}).get("notes", []):
        out.append(f"- note: {note}")
    return out


_MAC_VARIANTS = ("mac", "mac_single", "dcm_only", "mdm_only", "llm_zero_shot")  # read config.mac


def config_for_methods(config: Mapping[str, Any], methods: Sequence[str]) -> dict[str, Any]:
    """The part of a run's ``config`` (a dumped ``DiscoveryConfig``) that the given methods read.

    ``mac`` for MAC and its ablations (and ``llm_zero_shot``, which reads ``mac.max_tokens_scale``);
    ``react`` / ``llm_scd`` / ``ils_csl`` for those baselines; ``algorithm_timeout_s`` for the
    statistical algorithms; ``repeat`` and a non-empty ``executor_fallback`` whenever present.
    An ``@mode`` suffix (anonymised variant) counts as its method.

    Parameters
    ----------
    config : mapping, ``run.json``'s ``config``
    methods : method names that ran

    Returns
    -------
    dict, the kept keys in the config's order.
    """
    bases = {base_method(str(m)) for m in methods}  # "mac@names (rounds 2)" reads config.mac
    keep = {"repeat"}
    if bases & set(_MAC_VARIANTS):
        keep |= {"mac", "executor_fallback"}
    keep |= bases & {"react", "llm_scd", "ils_csl"}
    if bases & set(STATISTICAL_METHODS):
        keep.add("algorithm_timeout_s")
    return {k: v for k, v in config.items() if k in keep and v not in ("", None)}


def _shown_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The run facts a report shows; the config only for the methods that ran."""
    shown = {
        k: meta[k]
        for k in ("datasets", "methods", "seeds", "n", "routing", "wall_seconds", "models", "config")
        if k in meta
    }
    if isinstance(shown.get("config"), Mapping):
        shown["config"] = config_for_methods(shown["config"], list(meta.get("methods") or []))
    return shown


def missing_values_lines(meta: Mapping[str, Any]) -> list[str]:
    """Markdown lines naming, per user dataset, the rows ``--drop-missing`` left out and the missing-value
    markers per column (``run.json``'s ``missing_values``); none when no row was dropped."""
    dropped = meta.get("missing_values") or {}
    if not dropped:
        return []
    out = ["", "## Rows dropped for missing values (--drop-missing)", ""]
    for name, facts in dropped.items():
        cols = "; ".join(
            f"{c}: " + (", ".join(f"{m!r} x{k}" for m, k in n.items()) if isinstance(n, Mapping) else str(n))
            for c, n in (facts.get("missing_by_column") or {}).items()
        )
        out.append(
            f"- {name}: {facts.get('rows_dropped_missing', 0)} of {facts.get('rows_read', '?')} rows dropped"
            + (f" (missing values by column: {cols})" if cols else "")
        )
    return out


def markdown_report(
    df: pd.DataFrame,
    outcomes: Sequence[DiscoveryOutcome],
    meta: Mapping[str, Any],
    *,
    reversal_cost: int = 1,
    graphs_dir: str = "graphs",
) -> str:
    """The run's ``report.md``: settings, the summary table, failures, and per-dataset graphs and debates.

    Parameters
    ----------
    df : DataFrame from :func:`outcomes_frame`
    outcomes : the outcomes (for graphs and debate records)
    meta : run metadata (datasets, methods, seeds, n, settings, models, wall time)
    reversal_cost : int, for the caption
    graphs_dir : folder of the PNGs, relative to the report

    Returns
    -------
    str, markdown.
    """
    lines = ["# Causal discovery run", "", *facts_markdown(_shown_meta(meta))]
    notes = list(dict.fromkeys([*(meta.get("notes") or []), *run_notes(outcomes)]))
    if notes:
        lines += ["", "## Notes", "", *[f"- {n}" for n in notes]]
    lines += missing_values_lines(meta)
    lines += [
        "",
        "## Results (mean ± std over seeds)",
        "",
        "```",
        summary_text(df, reversal_cost=reversal_cost),
        "```",
        "",
    ]
    if mem := memorisation_text(df):
        lines += ["## Memorisation control (anonymise modes side by side)", "", "```", mem, "```", ""]
    lines += _cost_this_run_lines(df, meta)
    lines += executor_lines(df)
    failed = df[df["error"] != ""] if not df.empty else df
    if len(failed):
        lines += ["## Failures", ""]
        lines += [
            f"- {r.dataset} seed {r.seed} {r.method} ({getattr(r, 'status', 'failed')}): {str(r.error)[:300]}"
            for r in failed.itertuples()
        ]
        lines.append("")
    degraded = df[df["status"] == "degraded"] if "status" in df else df.iloc[0:0]
    if len(degraded):
        lines += [f"## Degraded ({len(degraded)}: a fallback after a failed stage; scored as returned)", ""]
        lines += [
            f"- {r.dataset} seed {r.seed} {r.method}: {str(r.status_detail)[:300]}" for r in degraded.itertuples()
        ]
        lines.append("")
    lines += [
        "## Graphs (first seed)",
        "",
        "Legend: solid correct; `reversed`; `extra` (not in the truth); `missing` (true edge not found).",
        "",
    ]
    first_seed: dict[tuple[str, str], DiscoveryOutcome] = {}
    for o in outcomes:
        first_seed.setdefault((o.dataset, o.method), o)
    for (ds, m), o in first_seed.items():
        if o.graph is None:
            continue
        lines += [f"### {ds} / {m} (seed {o.seed})", ""]
        lines += _debate_lines(o)
        png = Path(graphs_dir) / f"{ds}__{file_stem(m)}.png"
        lines += [
            "",
            f"![{ds} {m}]({png.as_posix()})",
            "",
            edge_table_markdown(o.graph, o.true_graph),
            "",
            "```mermaid",
            graph_mermaid(o.graph, o.true_graph),
            "```",
            "",
        ]
    return "\n".join(lines)


def executor_lines(df: pd.DataFrame) -> list[str]:
    """How DCM ran its algorithm: per method, runs by the coding agent and by the typed executor, and why
    the typed executor ran instead of the coding agent (count per reason).

    Parameters
    ----------
    df : DataFrame from :func:`outcomes_frame` (columns ``executor`` and ``executor_fallback``)

    Returns
    -------
    list of markdown lines (empty when no run used DCM).
    """
    if df.empty or "executor" not in df or not (df["executor"] != "").any():
        return []
    lines = [
        "## DCM executor",
        "",
        "How DCM ran the algorithm its debate chose: *coding* = the Causal Coding Executor (an LLM-written "
        "causal-learn script in the sandbox), *typed* = the pool's own call. A fallback is a run meant for "
        "the coding agent that ran typed (the sandbox unavailable under `--executor auto`, or every script "
        "failed: those runs are also degraded).",
        "",
    ]
    for m, g in df[df["executor"] != ""].groupby("method", sort=False):
        fb = g["executor_fallback"][g["executor_fallback"] != ""]
        line = (
            f"- {m}: coding {int((g['executor'] == 'coding').sum())}, typed {int((g['executor'] == 'typed').sum())}"
            f" of {len(g)} runs; fallbacks {len(fb)}"
        )
        if len(fb):
            line += ": " + "; ".join(f"{str(reason)[:200]} ({count}x)" for reason, count in fb.value_counts().items())
        lines.append(line)
    return lines + [""]


def _cost_this_run_lines(df: pd.DataFrame, meta: Mapping[str, Any]) -> list[str]:
    """ "This run" vs "original" LLM cost per method (totals), with request seconds and the wall time."""
    if df.empty or "run_llm_requests" not in df:
        return []
    lines = [
        "## Cost: this run vs original (totals)",
        "",
        "Reused outcomes (read from the results store, or every LLM call a cache hit) cost this run nothing; "
        "*original* is what they cost when computed. Request s: time inside HTTP requests, summed over "
        "calls."
        + (
            f" Wall time of this run: {float(meta['wall_seconds']):,.1f} s."
            if isinstance(meta.get("wall_seconds"), (int, float))
            else ""
        ),
        "",
        "| method | runs | reused | requests this run | requests original | tokens this run | tokens original "
        "| request s this run | request s original |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m, g in df.groupby("method", sort=False):
        lines.append(
            f"| {m} | {len(g)} | {int(g['reused'].astype(bool).sum())} | {int(g['run_llm_requests'].sum())} "
            f"| {int(g['llm_requests'].sum())} "
            f"| {int(g['run_prompt_tokens'].sum() + g['run_completion_tokens'].sum())} "
            f"| {int(g['prompt_tokens'].sum() + g['completion_tokens'].sum())} "
            f"| {g['run_request_seconds'].sum():.1f} | {g['request_seconds'].sum():.1f} |"
        )
    return lines + [""]


class RunFiles(NamedTuple):
    """Where a run's files went and its results table."""

    run_dir: Path
    frame: pd.DataFrame
    report: Path


def load_scored(run_dir: str | Path) -> pd.DataFrame:
    """The scored frame of a discovery run folder (``results.parquet``, written by the run or by
    :func:`agentcausal.discovery.evaluate.score_run`).

    Raises
    ------
    RunFileError
        If the file is missing or unreadable.
    """
    p = Path(run_dir) / "results.parquet"
    if not p.is_file():
        raise RunFileError(
            "no results.parquet here: the outcomes are not scored "
            "(`agentcausal discover --report RUN_DIR` scores them)",
            path=str(p),
        )
    try:
        return pd.read_parquet(p)
    except Exception as exc:  # pyarrow raises several types for a torn or empty file
        raise RunFileError(f"not a readable Parquet file (torn or empty?): {type(exc).__name__}", path=str(p)) from exc


def write_report(run_dir: str | Path, *, reversal_cost: Literal[1, 2] = 1, draw: bool = True) -> RunFiles:
    """Report a scored run: ``summary.csv``, ``graphs/*.png``, ``report.md``, ``report.html`` and the plots
    (``shd.png``, ``stage_cost.png``), from its ``results.parquet`` and ``outcomes.jsonl``.

    Parameters
    ----------
    run_dir : folder holding ``outcomes.jsonl`` and the scored ``results.parquet``
        (:func:`agentcausal.discovery.evaluate.score_run`)
    reversal_cost : 1 or 2, the SHD convention the frame was scored with (for the report's text)
    draw : bool, draw PNGs (first seed of each dataset and method)

    Returns
    -------
    RunFiles(run_dir, frame, report)
    """
    run = Path(run_dir)
    outcomes = load_outcomes(run)
    meta = load_run_meta(run)
    df = load_scored(run)
    with atomic_path(run / "summary.csv") as tmp:
        summary_table(df).to_csv(tmp)
    if draw:
        done: set[tuple[str, str]] = set()
        for o in outcomes:
            if o.graph is not None and (o.dataset, o.method) not in done:
                done.add((o.dataset, o.method))
                draw_graph_png(
                    o.graph,
                    o.true_graph,
                    run / "graphs" / f"{o.dataset}__{file_stem(o.method)}.png",
                    title=f"{o.dataset} / {o.method} (seed {o.seed})",
                )
    md = markdown_report(df, outcomes, meta, reversal_cost=reversal_cost)
    figs = discovery_figures(df, outcomes, run)  # PNGs in the run folder; text charts in report.md
    paper = analyses_report(df, outcomes, run, meta)  # the MAC paper's analyses: rounds plot, ranks, wins, cost
    figs += paper.figures
    atomic_write_text(run / "report.md", md + "\n".join(["", *paper.markdown]) + figures_markdown(figs))
    write_graph_outputs(outcomes, run)
    shown = (
        "dataset",
        "seed",
        "n",
        "method",
        "status",
        "reused",
        "executor",
        "executor_fallback",
        *METRIC_COLUMNS,
        "seconds",
        "prompt_tokens",
        "completion_tokens",
        "error",
    )
    runs = df[[c for c in shown if c in df]] if not df.empty else df
    summary = pd.DataFrame(table_records(df))
    facts = _shown_meta(meta)
    facts["run folder"] = str(run)
    shd_note = "" if reversal_cost == 1 else f"{SHD_CONVENTION[reversal_cost]} in the SHD column. "
    conventions = (
        f"<p class='note'>{shd_note}{METRICS_FOOTER} n: rows of data. Mean±std over seeds. "
        f"{SECONDS_NOTE} {REUSED_NOTE} Graphs also as DOT and edge-list CSV in graphs/.</p>"
    )
    write_html_report(
        run / "report.html",
        "Causal discovery",
        facts,
        figs,
        [("Results (mean ± std over seeds)", summary)],
        sections=[
            conventions,
            *paper.html,
            graphs_html(outcomes),
            "<h2>Runs</h2>",
            html_table(runs, table_id="runs", sortable=True, filterable=True),
        ],
    )
    return RunFiles(run, df, run / "report.md")


def table_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Summary rows as JSON-able dicts (for a Prefect table artifact)."""
    s = summary_table(df)
    if s.empty:
        return []
    out = []
    for key, r in s.iterrows():
        ds, m = cast(tuple[str, str], key)  # a two-level index: (dataset, method)
        digits = {"shd": 2, "shd2": 2, "nhd": 3, "f1": 2, "skeleton_f1": 2}
        out.append(
            {
                "dataset": ds,
                "n": r["n"],
                "method": m,
                **{h: _cell(r[f"{k}_mean"], r[f"{k}_std"], digits[k]) for k, h in METRIC_COLUMNS.items()},
                "runs": int(r.runs),
                "errors": int(r.errors),
                "reused": int(r["reused"]) if "reused" in r else 0,
                "note": IDENTICAL_NOTE if r.get("identical_samples", False) else "",
                "seconds": round(float(r.seconds_mean), 2),
            }
        )
    return out
