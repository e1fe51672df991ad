"""Markdown and HTML report and printable tables of a failure-attribution run.

Both reports open on the blamed steps (:mod:`agentcausal.report.blamed`), with the
run's settings folded. :func:`markdown_report` then renders an
:class:`~agentcausal.attribution.evaluate.Evaluation`: accuracy overall, per subset,
per trace length and the step-error histogram, each only when some trace is
labelled (:mod:`agentcausal.report.accuracy`: counts ``k/n`` beside percentages,
exact match, Hit@k, top-3, Who&When's rule); cost per trace and per stage; failed
traces with their errors. :func:`accuracy_text` is the table the CLI prints.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from agentcausal.attribution.evaluate import Evaluation, evaluate_frame
from agentcausal.attribution.paper_tables import (
    WHO_WHEN_LEVELS,
    accuracy_by_level,
    accuracy_over_repeats,
    dcfa_accuracy,
    gca_only_accuracy,
    graph_stats,
    lce_diagnostics,
    lce_effect,
    outside_levels,
    signed_step_error_histogram,
)
from agentcausal.attribution.results import AttributionSummary, load_results
from agentcausal.exceptions import AgentCausalError
from agentcausal.report.accuracy import ACCURACY_NOTE, accuracy_display, has_labels
from agentcausal.report.blamed import blamed_html, blamed_markdown
from agentcausal.report.dcfa import dependency_graph_edge_table, dependency_graph_mermaid
from agentcausal.report.html import attribution_tables, facts_markdown, html_table, readable_value, write_html_report
from agentcausal.report.plots import attribution_figures, figures_markdown
from agentcausal.report.traces_html import per_trace_html, trace_sections_html
from agentcausal.runs.folder import atomic_write_text, load_run_meta
from agentcausal.runs.items import load_trace_item
from agentcausal.runs.plan import PLAN_FILE, read_plan
from agentcausal.traces.io import load_traces
from agentcausal.traces.model import Attribution, Trace

__all__ = [
    "RunReport",
    "markdown_table",
    "markdown_report",
    "accuracy_text",
    "write_report",
    "report_run",
    "table_records",
    "paper_tables_markdown",
    "MAX_SHOWN_TRACES",
]


class RunReport(NamedTuple):
    """The evaluation of a run folder and where its report went.

    Attributes
    ----------
    evaluation : Evaluation
    markdown : str, the report text
    path : Path of ``report.md``
    """

    evaluation: Evaluation
    markdown: str
    path: Path


_PCT = ("step_acc", "agent_acc", "both_acc")


def _fmt(v: Any, col: str) -> str:  # v: a frame cell
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "–"
    if col in _PCT:
        return f"{100 * float(v):.1f}%"
    if isinstance(v, float):
        return f"{v:,.1f}" if abs(v) >= 1 or v == 0 else f"{v:.3f}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown_table(df: pd.DataFrame, *, index: bool = False) -> str:
    """A DataFrame as a GitHub markdown table (accuracy columns as percentages).

    Parameters
    ----------
    df : DataFrame
    index : bool, include the index as the first column

    Returns
    -------
    str; ``"(none)"`` for an empty frame.
    """
    if index:
        df = df.reset_index()
    if df.empty:
        return "(none)"
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v, c) for v, c in zip(row, cols)) + " |")
    return "\n".join(lines)


def accuracy_text(ev: Evaluation | AttributionSummary) -> str:
    """The overall accuracy table as plain text for a terminal: each metric ``k/n (x%)``
    (:func:`~agentcausal.report.accuracy.accuracy_display`).

    Parameters
    ----------
    ev : Evaluation, or the AttributionSummary of a run folder (only ``overall`` is shown)

    Returns
    -------
    str
    """
    shown = accuracy_display(ev.overall)
    short = {
        "step (exact)": "step",
        "step and agent": "both",
        "Hit@1 (±1 step)": "Hit@1 ±1",
        "Hit@3 (±3)": "Hit@3 ±3",
        "Hit@5 (±5)": "Hit@5 ±5",
        "top-3 (candidates)": "top-3",
    }
    ww = [c for c in shown.columns if "Who&When" in c]  # in the reports, for comparing with published numbers
    text = (
        shown.drop(columns=ww + [c for c in ("degraded", "reused") if c in shown and not shown[c].any()])
        .rename(columns=short)
        .to_string(index=False)
    )
    return text + (
        "\n(k/n over labelled traces; Who&When's substring rule and the per-subset tables are in the report)"
        if ww
        else ""
    )


def _split_facts(meta: Mapping[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """(facts for the header, facts to fold): mappings (per-method settings, models) are folded, scalars and
    lists shown; a ``methods`` mapping is shown by its names and folded with its settings."""
    head = {k: v for k, v in meta.items() if not isinstance(v, Mapping)}
    folded = {k: v for k, v in meta.items() if k not in head}
    methods = meta.get("methods")
    if isinstance(methods, Mapping):
        head = {"methods": list(methods), **head}
    return head, folded


def markdown_report(
    ev: Evaluation, *, title: str = "Failure attribution", meta: Mapping[str, object] | None = None, lead: str = ""
) -> str:
    """The whole evaluation as one markdown document: the run's facts, ``lead`` (the blamed steps), the accuracy
    tables (only when some trace is labelled), cost, failed traces.

    Parameters
    ----------
    ev : Evaluation
    title : str
    meta : the run's facts (corpus, routing, run folder, per-method settings ...): corpus, methods,
        routing, preset and traces on one line under the title, every fact as readable text
        (:func:`~agentcausal.report.html.facts_markdown`) folded in a ``<details>`` block after ``lead``
    lead : markdown placed before the accuracy tables (the blamed steps,
        :func:`~agentcausal.report.blamed.blamed_markdown`)

    Returns
    -------
    str
    """
    head, folded = _split_facts(meta or {})
    short = {k: head[k] for k in ("corpus", "methods", "routing", "preset", "traces") if k in head}
    line = " · ".join(f"**{k}**: {readable_value(v)}" for k, v in short.items())
    parts = [f"# {title}", *(["", line] if line else [])]
    if lead:
        parts += ["", lead.rstrip()]
    if meta:
        parts += [
            "",
            "<details><summary>Run settings (methods, models, settings)</summary>",
            "",
            *facts_markdown({**head, **folded}),
            "",
            "</details>",
        ]
    if has_labels(ev.overall):
        parts += [
            "",
            "## Accuracy",
            "",
            ACCURACY_NOTE,
            "",
            markdown_table(accuracy_display(ev.overall)),
            "",
            "## Per subset",
            "",
            markdown_table(accuracy_display(ev.by_subset, ("subset",))),
            "",
            "## Per trace length (steps)",
            "",
            markdown_table(accuracy_display(ev.by_length, ("length_bucket",))),
            "",
            "## |predicted step − true step|",
            "",
            markdown_table(ev.step_error_hist, index=True),
        ]
    else:
        parts += [
            "",
            "No trace is labelled: the accuracy sections are left out (the blamed steps above are the result).",
        ]
    parts += [
        "",
        "## Cost per trace (means)",
        "",
        markdown_table(ev.cost_per_trace),
        "",
        "## Cost per stage",
        "",
        markdown_table(ev.cost_by_stage),
        *_cost_this_run_section(ev, meta),
        "",
        f"## Failed traces ({len(ev.failures)})",
        "",
        markdown_table(ev.failures),
        "",
    ]
    return "\n".join(parts)


def _cost_this_run_section(ev: Evaluation, meta: Mapping[str, object] | None) -> list[str]:
    """ "This run" vs "original" cost (totals), request seconds and the run's wall time."""
    if ev.cost_this_run is None or ev.cost_this_run.empty:
        return []
    wall = (meta or {}).get("wall_seconds")
    return [
        "",
        "## Cost: this run vs original (totals)",
        "",
        "Reused rows (read from the results store, or every LLM call a cache hit) cost this run nothing; "
        "*original* is what the records cost when computed. Request seconds: time inside HTTP requests, "
        "summed over calls (concurrent calls overlap, so it can exceed the wall time)."
        + (f" Wall time of this run: {float(wall):,.1f} s." if isinstance(wall, (int, float)) else ""),
        "",
        markdown_table(ev.cost_this_run),
    ]


def dependency_graphs_markdown(results: pd.DataFrame, *, max_graphs: int = 50) -> str:
    """A markdown section drawing each DCFA attribution's dependency graph (mermaid), like DCFA's Figure 4.

    Parameters
    ----------
    results : results frame (``results.parquet``) with ``details_json``
    max_graphs : int, at most this many graphs (first by trace id)

    Returns
    -------
    str, empty when no row has DCFA details.

    References
    ----------
    DCFA seed paper, section 5.4.4, Figure 4.
    """
    rows = results[results["method"].astype(str).str.startswith("dcfa") & results["details_json"].notna()].sort_values(
        ["trace_id", "method"]
    )
    parts: list[str] = []
    for _, r in rows.head(max_graphs).iterrows():
        details = json.loads(r["details_json"] or "{}")
        if not details:
            continue
        a = Attribution(
            trace_id=str(r["trace_id"]),
            method=str(r["method"]),
            step=None if pd.isna(r["pred_step"]) else int(r["pred_step"]),
            agent=None if pd.isna(r["pred_agent"]) else str(r["pred_agent"]),
            details=details,
        )
        truth = "" if pd.isna(r["true_step"]) else f" (annotated decisive step: {int(r['true_step'])})"
        parts += [
            f"### {r['trace_id']} · {r['method']}{truth}",
            "",
            dependency_graph_edge_table(a),
            "",
            "```mermaid",
            dependency_graph_mermaid(a).rstrip(),
            "```",
            "",
        ]
    if not parts:
        return ""
    return "\n".join(
        [
            "",
            "## Dependency graphs (DCFA)",
            "",
            "Yellow: minor deviation; orange: GCA hypothesis; red: final decisive step; "
            "dashed: accepted LCE search moves with their ΔS.",
            "",
            *parts,
        ]
    )


def write_report(
    ev: Evaluation,
    run_dir: str | Path,
    *,
    meta: Mapping[str, object] | None = None,
    results: pd.DataFrame | None = None,
    traces: Mapping[str, Trace] | None = None,
    run_meta: Mapping[str, object] | None = None,
) -> Path:
    """Write ``report.md``, ``report.html``, the PNG plots and ``accuracy.csv`` into a run folder.

    Both reports lead with the blamed steps, the settings folded; the accuracy
    tables follow only when some trace is labelled. ``report.html`` then has the
    per-trace table (sortable, filterable) and one section per trace (steps with
    the blamed ones highlighted, each method's reason, evidence and fix beside
    them, DCFA's dependency graphs as SVG), the other tables, then the plots.

    Parameters
    ----------
    ev : Evaluation
    run_dir : folder
    meta : see :func:`markdown_report`
    results : the results frame (for the per-trace table and sections); None leaves them out
    traces : trace id -> Trace, for the step text in the per-trace sections

    Returns
    -------
    Path of ``report.md``.
    """
    d = Path(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    ev.overall.to_csv(d / "accuracy.csv", index=False)
    p = d / "report.md"
    figs = attribution_figures(ev, d)  # PNGs in the run folder; text charts in report.md, images in report.html
    graphs = dependency_graphs_markdown(results) if results is not None else ""
    blamed = blamed_markdown(results) if results is not None else ""
    labelled = has_labels(ev.overall)
    paper = paper_tables_markdown(results, dict(run_meta or {})) if results is not None and labelled else ""
    atomic_write_text(p, markdown_report(ev, meta=meta, lead=blamed) + paper + figures_markdown(figs) + graphs)
    lead: list[str] = []
    sections: list[str] = []
    if results is not None and not results.empty:
        shown = _shown_rows(results)  # the blamed table too: a page of 48,000 rows weighed about 110 MB
        cut = (
            f" The first {shown['trace_id'].nunique():,} of {results['trace_id'].nunique():,} traces are shown "
            "here; every row is in results.parquet."
            if len(shown) < len(results)
            else ""
        )
        lead = [blamed_html(shown, note=cut)]
        sections = [
            "<h2>Per trace</h2><p class='note'>One row per trace and method; click a header to sort, "
            f"type to filter, click a trace to see its steps.{cut}</p>",
            per_trace_html(shown),
            trace_sections_html(shown, traces),
        ]

    tables = attribution_tables(ev)  # accuracy (4 tables: only with labels), cost, failures
    if labelled:
        lead += [
            f"<h2>Accuracy</h2><p class='note'>{html.escape(ACCURACY_NOTE)}</p>{html_table(tables[0][1])}",
            *_later_tables(tables[1:2]),
        ]
    write_html_report(
        d / "report.html",
        "Failure attribution",
        meta or {},
        figs,
        [],
        sections=[*sections, *_later_tables(tables[2:] if labelled else tables[4:])],
        lead=lead,
    )
    return p


def _later_tables(tables: list[tuple[str, pd.DataFrame]]) -> list[str]:
    return [f"<h2>{html.escape(h)}</h2>{html_table(df)}" for h, df in tables]


#: traces the HTML report shows row by row and step by step at most (a report of a large corpus stays readable
#: and its writing stays in bounded memory; every row is in results.parquet)
MAX_SHOWN_TRACES = 500


def _shown_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of the first :data:`MAX_SHOWN_TRACES` traces (by id), every method's."""
    ids = results["trace_id"].drop_duplicates()
    if len(ids) <= MAX_SHOWN_TRACES:
        return results
    return results[results["trace_id"].isin(set(ids.sort_values().head(MAX_SHOWN_TRACES)))]


def _run_traces(run_dir: Path, meta: Mapping[str, object], results: pd.DataFrame) -> dict[str, Trace]:
    """The traces the report shows (:func:`_shown_rows`), read from the run's plan items (by path and offset,
    hash checked; :mod:`agentcausal.runs.items`) or, for a run folder without a plan, from its corpus paths
    (best effort: {} when they are gone or unreadable)."""
    wanted = set(_shown_rows(results)["trace_id"].astype(str))  # only the traces the report shows
    plan_file = run_dir / PLAN_FILE
    if plan_file.is_file():
        try:
            return {i.id: load_trace_item(i) for i in read_plan(plan_file).iter_items() if i.id in wanted}
        except (AgentCausalError, OSError, ValueError):
            pass  # changed since the run: the corpus as it is now, below
    corpus = meta.get("corpus")
    paths = [corpus] if isinstance(corpus, str) else list(corpus) if isinstance(corpus, (list, tuple)) else []
    try:
        return {t.id: t for t in load_traces([str(p) for p in paths]) if t.id in wanted}
    except (AgentCausalError, OSError, ValueError):
        return {}


def report_run(run_dir: str | Path) -> RunReport:
    """Evaluate a run folder from its ``results.parquet`` and write ``report.md`` and ``accuracy.csv``.

    Parameters
    ----------
    run_dir : folder written by the ``attribute`` flow

    Returns
    -------
    RunReport

    Raises
    ------
    TraceFormatError
        If the folder holds no valid ``results.parquet``.
    """
    meta = load_run_meta(run_dir)
    results = load_results(run_dir, without=("settings_json", "models_json"))  # never shown
    ev = evaluate_frame(results)
    shown: dict[str, object] = {
        k: meta[k] for k in ("corpus", "methods", "routing", "models", "traces", "started", "wall_seconds") if k in meta
    }
    plan = meta.get("plan")
    if isinstance(plan, Mapping) and plan.get("sources"):  # an imported corpus: its files, not the run's copy
        shown["corpus"] = [str(s.get("path")) for s in plan["sources"] if isinstance(s, Mapping)]
    shown["run folder"] = str(run_dir)
    path = write_report(
        ev, run_dir, meta=shown, results=results, traces=_run_traces(Path(run_dir), meta, results), run_meta=meta
    )
    return RunReport(ev, path.read_text(encoding="utf-8"), path)


def table_records(df: pd.DataFrame) -> list[dict[str, object]]:
    """Rows as JSON-friendly dicts (NaN as None, accuracies rounded), e.g. for a UI table artifact.

    Parameters
    ----------
    df : DataFrame

    Returns
    -------
    list of dict
    """
    out = []
    for rec in df.to_dict(orient="records"):
        out.append(
            {
                str(k): (
                    None if isinstance(v, float) and pd.isna(v) else (round(float(v), 4) if isinstance(v, float) else v)
                )
                for k, v in rec.items()
            }
        )
    return out


def paper_tables_markdown(df: pd.DataFrame, meta: dict[str, Any] | None = None) -> str:
    """The DCFA paper's tables (:mod:`agentcausal.attribution.paper_tables`) as markdown sections (empty ones left
    out), for ``report.md``."""
    parts: list[str] = []
    acc = dcfa_accuracy(df)
    if len(acc):
        shown = acc.assign(
            **{
                "step accuracy (agent and step)": [
                    f"{100 * a:.2f}% ({k}/{n})"
                    for a, k, n in zip(acc["agent_and_step_acc"], acc["agent_and_step_k"], acc["n"])
                ],
                "step-only accuracy": [
                    f"{100 * a:.2f}% ({k}/{n})" for a, k, n in zip(acc["step_acc"], acc["step_k"], acc["n"])
                ],
            }
        )[["method", "subset", "n", "step accuracy (agent and step)", "step-only accuracy"]]
        parts += [
            "## Step accuracy as the DCFA paper reports it (Table 1)",
            "",
            '"Step accuracy (agent and step)" is what DCFA\'s released `evaluate.py` computes and calls step '
            "accuracy: the labelled step and the labelled agent both right (the agent as the first word of "
            "the prediction, compared exactly), over every labelled trace of the subset in this run. "
            "Step-only accuracy is the step alone. Undetermined and failed rows count as wrong.",
            "",
            markdown_table(shown),
            "",
        ]
    lv = accuracy_by_level(df)
    if len(lv):
        out = outside_levels(df)
        parts += [
            "## Step-only accuracy by trace-length level (Hand-Crafted, Figure 3)",
            "",
            "Levels of the released `evaluate_in_different_length.py`: "
            + ", ".join(f"{n} {lo}-{hi} steps" for lo, hi, n in WHO_WHEN_LEVELS)
            + f". Traces of a length in no level: {out} (left out, as there). Undetermined rows count as wrong "
            "here; the released script leaves them out of n.",
            "",
            markdown_table(lv),
            "",
        ]
    if (df["method"] == "dcfa").any():
        g = gca_only_accuracy(df)
        g = g.assign(
            **{
                "w/o LCE (step only)": [
                    f"{100 * a:.2f}% ({k}/{n})" for a, k, n in zip(g["gca_step_acc"], g["gca_step_k"], g["n"])
                ],
                "DCFA (step only)": [
                    f"{100 * a:.2f}% ({k}/{n})" for a, k, n in zip(g["dcfa_step_acc"], g["dcfa_step_k"], g["n"])
                ],
            }
        )
        parts += [
            "## DCFA without LCE (from the stored GCA hypothesis)",
            "",
            markdown_table(g[["subset", "n", "w/o LCE (step only)", "DCFA (step only)"]]),
            "",
            "## What LCE did (step level)",
            "",
            markdown_table(lce_effect(df)),
            "",
            "## LCE diagnostics (means per trace that ran LCE)",
            "",
            markdown_table(lce_diagnostics(df)),
            "",
        ]
    gs = graph_stats(df)
    if len(gs):
        parts += ["## Dependency graphs: edges per trace", "", markdown_table(gs), ""]
    parts += ["## Predicted − labelled step", "", markdown_table(signed_step_error_histogram(df), index=True), ""]
    rep = accuracy_over_repeats(df)
    if len(rep) and rep["repeats"].max() > 1:
        parts += ["## Accuracy over repeats (mean ± sample std)", "", markdown_table(rep), ""]
    mism = (meta or {}).get("speaker_mismatch") or []
    if mism:
        parts += [
            f"## Labelled agent is not the speaker of the labelled step ({len(mism)} traces)",
            "",
            "These cannot score on agent level from the step alone.",
            "",
            markdown_table(pd.DataFrame(mism)),
            "",
        ]
    return "\n".join(["", *parts]) if parts else ""
