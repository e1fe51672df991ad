"""The markdown and HTML report of a causal-discovery run: ``report.md``, ``report.html`` and the files beside.

* :func:`markdown_report`: ``report.md``'s sections: the run's facts and notes, rows dropped for missing values,
  the summary table (:mod:`agentcausal.report.discovery_tables`), the memorisation control, cost, how DCM ran
  its algorithm (:func:`executor_lines`), failures, degraded runs, then per dataset and method the first
  seed's graph against the truth (:mod:`agentcausal.report.discovery_graphs`) with its debates.
* :func:`write_report`: from a scored run folder (``results.parquet``, :mod:`agentcausal.report.discovery_load`;
  ``outcomes.jsonl``, ``run.json``): ``summary.csv``, ``graphs/*``, ``report.md``, ``report.html``, the plots
  and the MAC paper's analyses (:mod:`agentcausal.report.discovery_analyses`).
* :class:`OutcomeDigest`: what the report keeps of the outcomes, read in one pass. Each outcome is counted into
  the stage totals and cost rows and its graph files written; the first seed of each (dataset, method) is drawn
  and rendered as it first appears; then the outcome is dropped. Kept: per (dataset, method) its first seed's
  graphs (:class:`~agentcausal.report.discovery_graphs.FirstSeed`) and markdown section, per (method, stage)
  the usage totals, per outcome one row of cost scalars, and the datasets without a true graph.

The scored frame is read, never recomputed here.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4, app. B.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

import pandas as pd

from agentcausal.discovery.analyses import COST_COLUMNS, cost_row
from agentcausal.discovery.evaluate import truth_notes
from agentcausal.discovery.graphs.metrics import METRIC_COLUMNS, METRICS_FOOTER, SHD_CONVENTION
from agentcausal.discovery.outcome import DiscoveryOutcome, iter_outcomes
from agentcausal.discovery.variants import MethodVariant
from agentcausal.registry import DISCOVERY_METHODS
from agentcausal.report.discovery_analyses import analyses_report
from agentcausal.report.discovery_graphs import (
    FirstSeed,
    GraphOutputs,
    draw_graph_png_kept,
    edge_table_markdown,
    graph_mermaid,
    graphs_html,
)
from agentcausal.report.discovery_load import load_scored
from agentcausal.report.discovery_tables import (
    REUSED_NOTE,
    SECONDS_NOTE,
    memorisation_text,
    summary_table,
    summary_text,
    table_records,
)
from agentcausal.report.figure_cache import FigureCache, figure_cache_under
from agentcausal.report.html import facts_markdown, html_table, write_html_report
from agentcausal.report.plots import StageUsage, discovery_figures, figures_markdown
from agentcausal.runs.folder import atomic_path, atomic_write_text, load_run_meta

__all__ = [
    "markdown_report",
    "write_report",
    "OutcomeDigest",
    "debate_lines",
    "graph_section",
    "RunFiles",
    "executor_lines",
    "config_for_methods",
    "missing_values_lines",
]


def debate_lines(o: DiscoveryOutcome) -> list[str]:
    """Markdown lines of an outcome's MAC records: DCM's debate and what it ran, Meta Fusion's sentences,
    MDM's verdict and what it dropped, the debates' notes (none for other methods)."""
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


def _png_name(o: DiscoveryOutcome) -> str:
    return f"{o.dataset}__{MethodVariant.parse(o.method).file_stem}.png"


def graph_section(o: DiscoveryOutcome, graphs_dir: str = "graphs") -> list[str]:
    """``report.md``'s lines for one outcome with a graph: its heading, debates, PNG link, edge table and Mermaid
    source (``graphs_dir``: the PNGs' folder, relative to the report)."""
    assert o.graph is not None
    png = Path(graphs_dir) / _png_name(o)
    return [
        f"### {o.dataset} / {o.method} (seed {o.seed})",
        "",
        *debate_lines(o),
        "",
        f"![{o.dataset} {o.method}]({png.as_posix()})",
        "",
        edge_table_markdown(o.graph, o.true_graph),
        "",
        "```mermaid",
        graph_mermaid(o.graph, o.true_graph),
        "```",
        "",
    ]


class OutcomeDigest:
    """A run's outcomes as its report needs them, taken one at a time (:meth:`add`, :meth:`read`).

    Parameters
    ----------
    run_dir : the run folder, where the graph files go (``graphs/*.dot`` / ``.csv`` of every outcome with a
        graph, ``graphs/<dataset>__<method>.png`` of the first seed with one when ``draw``); None writes nothing
    draw : bool, draw the PNGs (first seed with a graph of each dataset and method)
    graphs_dir : folder of the PNGs relative to the report, for the markdown links
    figures : FigureCache or None, where a PNG of the same drawing is copied from instead of drawn

    Attributes
    ----------
    first : (dataset, method) -> FirstSeed, the first outcome of each, in order of appearance
    sections : list of str, ``report.md``'s graph lines (first seeds that have a graph), in the same order
    stage_usage : StageUsage, tokens and seconds per (method, stage)
    outcomes : int, how many were read
    """

    def __init__(
        self,
        run_dir: str | Path | None = None,
        *,
        draw: bool = False,
        graphs_dir: str = "graphs",
        figures: FigureCache | None = None,
    ) -> None:
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.draw = draw and self.run_dir is not None
        self.figures = figures
        self.graphs_dir = graphs_dir
        self.first: dict[tuple[str, str], FirstSeed] = {}
        self.sections: list[str] = []
        self.stage_usage = StageUsage()
        self.outcomes = 0
        self._cost_rows: list[dict[str, Any]] = []
        self._untrue: dict[str, None] = {}
        self._drawn: set[tuple[str, str]] = set()
        self._files = GraphOutputs(self.run_dir) if self.run_dir is not None else None

    def add(self, o: DiscoveryOutcome) -> None:
        """Take one outcome: count it, write its graph files, draw and render it when it is the first of its
        dataset and method."""
        self.outcomes += 1
        key = (o.dataset, o.method)
        if o.true_graph is None:
            self._untrue.setdefault(o.dataset)
        if key not in self.first:
            self.first[key] = FirstSeed.of(o)
            if o.graph is not None:
                self.sections += graph_section(o, self.graphs_dir)
        if self.draw and o.graph is not None and key not in self._drawn:
            assert self.run_dir is not None
            self._drawn.add(key)
            title = f"{o.dataset} / {o.method} (seed {o.seed})"
            png = self.run_dir / "graphs" / _png_name(o)
            draw_graph_png_kept(o.graph, o.true_graph, png, title=title, cache=self.figures)
        if self._files is not None:
            self._files.add(o)
        self.stage_usage.add(o)
        self._cost_rows.append(cost_row(o))

    def read(self, outcomes: Iterable[DiscoveryOutcome]) -> OutcomeDigest:
        """Take every outcome of ``outcomes`` (e.g. :func:`~agentcausal.discovery.outcome.iter_outcomes`); self."""
        for o in outcomes:
            self.add(o)
        return self

    def notes(self) -> list[str]:
        """:func:`~agentcausal.discovery.evaluate.run_notes` of the outcomes read: each dataset without a true
        graph."""
        return truth_notes(self._untrue)

    def costs(self) -> pd.DataFrame:
        """:func:`~agentcausal.discovery.analyses.cost_frame` of the outcomes read."""
        return pd.DataFrame(self._cost_rows, columns=list(COST_COLUMNS))


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
    bases = {MethodVariant.parse(str(m)).base for m in methods}  # "mac@names (rounds 2)" reads config.mac
    specs = [DISCOVERY_METHODS[b] for b in bases if b in DISCOVERY_METHODS]
    keep = {"repeat"} | {s.settings_field for s in specs if s.settings_field}
    if any(s.reads_mac for s in specs):
        keep |= {"mac", "executor_fallback"}
    if any(not s.needs_llm for s in specs):
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
    outcomes: Iterable[DiscoveryOutcome],
    meta: Mapping[str, Any],
    *,
    reversal_cost: int = 1,
    graphs_dir: str = "graphs",
) -> str:
    """The run's ``report.md``: settings, the summary table, failures, and per-dataset graphs and debates.

    Parameters
    ----------
    df : DataFrame from :func:`outcomes_frame`
    outcomes : the outcomes (for graphs and debate records), read once
    meta : run metadata (datasets, methods, seeds, n, settings, models, wall time)
    reversal_cost : int, for the caption
    graphs_dir : folder of the PNGs, relative to the report

    Returns
    -------
    str, markdown.
    """
    digest = OutcomeDigest(graphs_dir=graphs_dir).read(outcomes)
    return _markdown(df, digest, meta, reversal_cost=reversal_cost)


def _markdown(df: pd.DataFrame, digest: OutcomeDigest, meta: Mapping[str, Any], *, reversal_cost: int) -> str:
    """:func:`markdown_report` from the outcomes' digest (its notes and graph sections)."""
    lines = ["# Causal discovery run", "", *facts_markdown(_shown_meta(meta))]
    notes = list(dict.fromkeys([*(meta.get("notes") or []), *digest.notes()]))
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
        *digest.sections,
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


def write_report(
    run_dir: str | Path, *, reversal_cost: Literal[1, 2] = 1, draw: bool = True, cache_dir: str | Path | None = None
) -> RunFiles:
    """Report a scored run: ``summary.csv``, ``graphs/*.png``, ``report.md``, ``report.html`` and the plots
    (``shd.png``, ``stage_cost.png``), from its ``results.parquet`` and ``outcomes.jsonl``.

    Parameters
    ----------
    run_dir : folder holding ``outcomes.jsonl`` and the scored ``results.parquet``
        (:func:`agentcausal.discovery.evaluate.score_run`)
    reversal_cost : 1 or 2, the SHD convention the frame was scored with (for the report's text)
    draw : bool, draw PNGs (first seed of each dataset and method)
    cache_dir : the run's cache root: a graph PNG or plot of the same drawing as a run before is copied from
        ``<cache_dir>/figures`` (:mod:`agentcausal.report.figure_cache`); None draws every one

    Returns
    -------
    RunFiles(run_dir, frame, report)
    """
    run = Path(run_dir)
    outcomes = iter_outcomes(run)  # read once, below
    meta = load_run_meta(run)
    df = load_scored(run)
    with atomic_path(run / "summary.csv") as tmp:
        summary_table(df).to_csv(tmp)
    figures = figure_cache_under(cache_dir) if draw else None
    try:  # one pass: PNGs and graph files as each outcome comes
        digest = OutcomeDigest(run, draw=draw, figures=figures).read(outcomes)
        md = _markdown(df, digest, meta, reversal_cost=reversal_cost)
        usage = digest.stage_usage.frame()
        figs = discovery_figures(df, usage, run, cache=figures)  # PNGs; text charts in report.md
    finally:
        if figures is not None:
            figures.close()
    paper = analyses_report(df, (), run, meta, costs=digest.costs())  # the MAC paper's analyses: rounds, ranks, cost
    figs += paper.figures
    atomic_write_text(run / "report.md", md + "\n".join(["", *paper.markdown]) + figures_markdown(figs))
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
            graphs_html(digest.first.values()),
            "<h2>Runs</h2>",
            html_table(runs, table_id="runs", sortable=True, filterable=True),
        ],
    )
    return RunFiles(run, df, run / "report.md")
