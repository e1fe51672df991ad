"""The markdown and HTML report of a failure-attribution run: ``report.md`` and ``report.html``.

Both reports open on the blamed steps (:mod:`agentcausal.report.blamed`), then the
ranked candidates of the methods that rank (DCFA, ECHO), with the run's settings folded. :func:`markdown_report` then renders an
:class:`~agentcausal.attribution.evaluate.Evaluation`: accuracy overall, per subset,
per trace length and the step-error histogram, each only when some trace is
labelled (:mod:`agentcausal.report.accuracy`: counts ``k/n`` beside percentages,
exact match, Hit@k, top-3, Who&When's rule); cost per trace and per stage; failed
traces with their errors. :func:`write_report` adds the DCFA paper's tables
(:mod:`agentcausal.report.attribution_paper_tables`), the plots and DCFA's dependency
graphs, and the per-trace parts of ``report.html`` for the traces it shows
(:mod:`agentcausal.report.attribution_load`). The tables themselves, and the one the
CLI prints: :mod:`agentcausal.report.attribution_tables`.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from agentcausal.attribution.evaluate import Evaluation
from agentcausal.report.accuracy import ACCURACY_NOTE, AccuracyDisplays, has_labels
from agentcausal.report.attribution_load import MAX_GRAPHS, MAX_RANKED_ROWS, ResultsDigest, shown_traces
from agentcausal.report.attribution_paper_tables import paper_tables_markdown
from agentcausal.report.attribution_tables import RANKED_NOTE, evaluation_tables, markdown_table, ranked_candidates
from agentcausal.report.blamed import blamed_frame, blamed_html, blamed_markdown
from agentcausal.report.dcfa import dependency_graph_edge_table, dependency_graph_mermaid
from agentcausal.report.figure_cache import FigureCache, figure_cache_under
from agentcausal.report.html import facts_markdown, html_table, readable_value, write_html_report
from agentcausal.report.plots import attribution_figures, figures_markdown
from agentcausal.report.traces_html import per_trace_html, trace_sections_html
from agentcausal.runs.folder import atomic_write_text, load_run_meta
from agentcausal.traces.display import visible
from agentcausal.traces.model import Attribution, Trace

log = logging.getLogger(__name__)

__all__ = [
    "RunReport",
    "markdown_report",
    "ranked_markdown",
    "dependency_graphs_markdown",
    "write_report",
    "report_run",
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
    ev: Evaluation,
    *,
    title: str = "Failure attribution",
    meta: Mapping[str, object] | None = None,
    lead: str = "",
    shown: AccuracyDisplays | None = None,
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
    shown : the accuracy tables as text when already made (:class:`~agentcausal.report.accuracy.AccuracyDisplays`)

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
        shown = AccuracyDisplays.of(ev) if shown is None else shown
        parts += [
            "",
            "## Accuracy",
            "",
            ACCURACY_NOTE,
            "",
            markdown_table(shown.overall),
            "",
            "## Per subset",
            "",
            markdown_table(shown.by_subset),
            "",
            "## Per trace length (steps)",
            "",
            markdown_table(shown.by_length),
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


def ranked_markdown(ranked: pd.DataFrame, *, max_rows: int = 500, total: int | None = None) -> str:
    """The "Ranked candidates" section of ``report.md`` (:func:`~agentcausal.report.attribution_tables.ranked_candidates`;
    ``total``: the rows in all when ``ranked`` holds only the first ones, None: ``len(ranked)``)."""
    total = len(ranked) if total is None else total
    more = ["", f"… {total - max_rows} more row(s) in `results.parquet`."] if total > max_rows else []
    return "\n".join(
        [f"## Ranked candidates ({total})", "", RANKED_NOTE, "", markdown_table(ranked.head(max_rows)), *more, ""]
    )


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
    results: pd.DataFrame | ResultsDigest | None = None,
    traces: Mapping[str, Trace] | None = None,
    run_meta: Mapping[str, object] | None = None,
    figure_cache: FigureCache | None = None,
    trace_hashes: Mapping[str, str] | None = None,
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
    results : the results (for the blamed steps, the per-trace table and sections): a frame, or the
        :class:`~agentcausal.report.attribution_load.ResultsDigest` a report reading ``results.parquet`` a batch at a
        time keeps of it; None leaves them out
    traces : trace id -> Trace, for the step text in the per-trace sections
    run_meta : the run's ``run.json`` (the paper tables' ``speaker_mismatch``)
    figure_cache : PNGs kept by the tables they draw (:mod:`agentcausal.report.figure_cache`); None: drawn
    trace_hashes : trace id -> content hash of a trace of ``traces`` known without hashing it
        (:class:`~agentcausal.report.attribution_load.ShownTraces`)

    Returns
    -------
    Path of ``report.md``.
    """
    d = Path(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    ev.overall.to_csv(d / "accuracy.csv", index=False)
    p = d / "report.md"
    figs = attribution_figures(
        ev, d, cache=figure_cache
    )  # PNGs in the run folder; text charts in report.md, images in report.html
    digest = ResultsDigest.of_frame(results) if isinstance(results, pd.DataFrame) else results
    labelled = has_labels(ev.overall)
    blamed, graphs, paper = "", "", ""
    shown_blamed = None
    if digest is not None:
        graphs = dependency_graphs_markdown(digest.graphs, max_graphs=MAX_GRAPHS)
        shown_blamed = blamed_frame(digest.shown)  # the first rows of every view: report.md lists the first of them
        blamed = blamed_markdown(digest.shown, blamed=shown_blamed, whole=digest.blamed)
        if digest.ranked_total:  # after the blamed steps: the other steps each ranking method weighed
            blamed += "\n" + ranked_markdown(digest.ranked, max_rows=MAX_RANKED_ROWS, total=digest.ranked_total)
        if labelled:
            paper = paper_tables_markdown(digest.scores, dict(run_meta or {}))
    shown_accuracy = AccuracyDisplays.of(ev)  # both reports' accuracy tables, made once
    md = markdown_report(ev, meta=meta, lead=blamed, shown=shown_accuracy) + paper + figures_markdown(figs) + graphs
    atomic_write_text(p, visible(md))  # trace text: control and bidi characters shown as \x1b, \u202e
    lead: list[str] = []
    sections: list[str] = []
    if digest is not None and digest.rows:
        shown = digest.shown  # the blamed table too: a page of 48,000 rows weighed about 110 MB
        cut = (
            f" The first {len(digest.shown_ids):,} of {digest.traces:,} traces are shown "
            "here; every row is in results.parquet."
            if len(digest.shown_ids) < digest.traces
            else ""
        )
        lead = [blamed_html(shown, note=cut, blamed=shown_blamed)]
        ranked_shown = ranked_candidates(shown)
        if len(ranked_shown):
            lead.append(
                f"<h2>Ranked candidates ({len(ranked_shown)})</h2><p class='note'>{html.escape(RANKED_NOTE)}{cut}</p>"
                + html_table(
                    ranked_shown, table_id="ranked-candidates", sortable=True, filterable=len(ranked_shown) > 10
                )
            )
        sections = [
            "<h2>Per trace</h2><p class='note'>One row per trace and method; click a header to sort, "
            f"type to filter, click a trace to see its steps.{cut}</p>",
            per_trace_html(shown),
            trace_sections_html(shown, traces, hashes=trace_hashes),
        ]

    tables = evaluation_tables(ev, shown_accuracy)  # accuracy (4 tables: only with labels), cost, failures
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
        sections=[visible(s) for s in [*sections, *_later_tables(tables[2:] if labelled else tables[4:])]],
        lead=[visible(s) for s in lead],
    )
    return p


def _later_tables(tables: list[tuple[str, pd.DataFrame]]) -> list[str]:
    return [f"<h2>{html.escape(h)}</h2>{html_table(df)}" for h, df in tables]


def report_run(run_dir: str | Path, *, cache_dir: str | Path | None = None) -> RunReport:
    """Evaluate a run folder from its ``results.parquet`` and write ``report.md`` and ``accuracy.csv``.

    Parameters
    ----------
    run_dir : folder written by the ``attribute`` flow
    cache_dir : the run's cache root: figures drawn from unchanged tables are copied from
        ``<cache_dir>/figures`` (:mod:`agentcausal.report.figure_cache`); None draws every figure

    Returns
    -------
    RunReport

    Raises
    ------
    TraceFormatError
        If the folder holds no valid ``results.parquet``.
    """
    meta = load_run_meta(run_dir)
    digest = ResultsDigest.read(run_dir)  # a batch of rows at a time: what the report needs of every row kept
    ev = digest.evaluation()
    shown: dict[str, object] = {
        k: meta[k] for k in ("corpus", "methods", "routing", "models", "traces", "started", "wall_seconds") if k in meta
    }
    plan = meta.get("plan")
    if isinstance(plan, Mapping) and plan.get("sources"):  # an imported corpus: its files, not the run's copy
        shown["corpus"] = [str(s.get("path")) for s in plan["sources"] if isinstance(s, Mapping)]
    shown["run folder"] = str(run_dir)
    figures = figure_cache_under(cache_dir)
    traces = shown_traces(Path(run_dir), meta, digest.shown_ids)
    try:
        path = write_report(
            ev,
            run_dir,
            meta=shown,
            results=digest,
            traces=traces,
            run_meta=meta,
            figure_cache=figures,
            trace_hashes=traces.hashes,
        )
    finally:
        if figures is not None:
            figures.close()
    return RunReport(ev, path.read_text(encoding="utf-8"), path)
