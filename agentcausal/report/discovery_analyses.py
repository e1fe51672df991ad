"""The MAC paper's analyses in a discovery report: the rounds plot and the rank, win-count and cost tables.

Computations live in :mod:`agentcausal.discovery.ranks` and :mod:`agentcausal.discovery.analyses`; this module draws
and writes them: :func:`rounds_png` (SHD and F1 against rounds, Fig. 4),
:func:`analyses_report` (every section as markdown, HTML fragments and
:class:`~agentcausal.report.plots.Figure` records, for ``report.md`` and
``report.html``), :func:`backbone_rank_sections` (the rank tables over the
backbones of several runs, for ``compare``). Every table opens with its ``n``
and its SHD convention.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.2-§4.4, Figs. 2, 4, 5.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from agentcausal.discovery import analyses as A
from agentcausal.discovery import ranks as R
from agentcausal.discovery import scope as S
from agentcausal.discovery.graphs.metrics import METRIC_COLUMNS
from agentcausal.report.html import html_table
from agentcausal.report.plots import Figure, _plt, _save, text_bars

__all__ = [
    "AnalysesReport",
    "rounds_png",
    "analyses_report",
    "price_notes",
    "markdown_table",
    "rank_sections",
    "backbone_label",
    "backbone_rank_sections",
]


class AnalysesReport(NamedTuple):
    """The analyses of one report: markdown lines, HTML fragments, and the figures drawn."""

    markdown: list[str]
    html: list[str]
    figures: list[Figure]


def markdown_table(df: pd.DataFrame, *, digits: int = 2) -> str:
    """A DataFrame as a markdown table (floats to ``digits`` places, NaN as ``-``).

    >>> print(markdown_table(pd.DataFrame({"m": ["a"], "x": [1.234]})))
    | m | x |
    |---|---|
    | a | 1.23 |
    """
    if df.empty:
        return "(none)"
    cols = [str(c) for c in df.columns]

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "-" if pd.isna(v) else f"{v:.{digits}f}"
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def _headed(df: pd.DataFrame, *, ranks: bool = False) -> pd.DataFrame:
    """Metric columns under their report names (``shd`` -> ``SHD``, ``shd_points`` -> ``SHD points``); in a
    rank table the two SHDs say how each counts a reversal (:data:`~agentcausal.discovery.ranks.SHD_LABELS`)."""
    names = {**METRIC_COLUMNS, **{f"{k}_points": f"{v} points" for k, v in METRIC_COLUMNS.items()}}
    if ranks:
        names.update(R.SHD_LABELS)
    return df.rename(columns=names)


def rounds_png(curve: pd.DataFrame, path: str | Path, *, n: str = "", convention: str = "") -> Path:
    """SHD and F1 against the number of debate rounds, one line per (method, dataset), mean ± std over seeds.

    Parameters
    ----------
    curve : table of :func:`agentcausal.discovery.analyses.rounds_curve`
    path : output PNG
    n, convention : the sample and the SHD convention, for the title

    Returns
    -------
    Path of the PNG.

    Raises
    ------
    ValueError when ``curve`` is empty (nothing to draw).
    """
    if curve.empty:
        raise ValueError("no rounds variant ran")
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, metric, label in ((axes[0], "shd", "SHD (lower is better)"), (axes[1], "f1", "F1 (higher is better)")):
        for (method, ds), g in curve.groupby(["method", "dataset"], sort=False):
            err = g[f"{metric}_std"].fillna(0.0)
            ax.errorbar(g["rounds"], g[metric], yerr=err, marker="o", capsize=2, label=f"{ds} · {method}")
        ax.set_xlabel("debate rounds")
        ax.set_ylabel(label)
        ax.set_xticks(sorted(curve["rounds"].unique()))
    axes[1].set_ylim(-0.02, 1.02)
    axes[0].set_ylim(bottom=0)
    axes[1].legend(fontsize=7)
    fig.suptitle(f"Rounds sweep (n = {n}; {convention})" if n else "Rounds sweep", fontsize=9)
    return _save(fig, path)


def _fmt(v: Any, pattern: str) -> str:
    return "-" if v is None or pd.isna(v) else pattern.format(v)


def _n_line(a: S.Analysis) -> str:
    return f"n = {a.n}; {a.convention}."


def rank_sections(df: pd.DataFrame, *, heading: str = "##", over: str = "datasets") -> AnalysesReport:
    """The rank sections of a scored frame (no figure), as markdown and HTML, by the paper's definitions:
    mean ranks of MAC and its baselines, the ablations' and variants' ranks apart, "first on k of N", and
    our pairwise wins / ties / losses; on the paper's datasets (:func:`~agentcausal.discovery.scope.paper_scope`).

    Parameters
    ----------
    df : scored frame (a ``backbone`` column: ranks over backbones × datasets)
    heading : markdown heading level of each section
    over : what the points are, for the headings ("datasets", "backbones and datasets")

    Returns
    -------
    AnalysesReport without figures.
    """
    md: list[str] = []
    parts: list[str] = []
    e = html.escape
    scoped, scope = S.paper_scope(df)

    def section(title: str, note: str, table: pd.DataFrame) -> None:
        md.extend([f"{heading} {title}", "", note, "", markdown_table(table), ""])
        parts.extend([f"<h2>{e(title)}</h2><p class='note'>{e(note)}</p>", html_table(table)])

    ranks = R.mean_ranks(scoped)
    if not ranks.table.empty:
        section(
            f"Mean rank over {over} (paper Fig. 2)",
            f"{_n_line(ranks)} MAC and its baselines only ({scope}). Each point ranks them on their mean over "
            "seeds; a method's mean rank is the mean over the points where it was scored (points).",
            _headed(ranks.table, ranks=True),
        )
    variants = R.variant_ranks(scoped)
    if not variants.table.empty:
        section(
            "Ablations and variants, ranked apart (paper §4.3-§4.4)",
            f"{_n_line(variants)} Each ablation or variant in MAC's place, against the same baselines (MAC "
            "left out), so none of them moves MAC's rank above.",
            _headed(variants.table, ranks=True),
        )
    firsts = R.first_places(scoped)
    if not firsts.table.empty:
        section(
            "First places: MAC first on k of N points (paper §4.2)",
            f"{_n_line(firsts)} N = the (dataset, metric) points where the row was scored ({scope}).",
            firsts.table,
        )
    wins = R.win_tie_loss(scoped)
    if not wins.table.empty:
        section(
            "MAC against each baseline: wins / ties / losses",
            f"{_n_line(wins)} W/T/L: points where MAC's seed mean is better / equal / worse (lower SHD and "
            "NHD, higher F1); points: where both were scored. Our pairwise view; the paper counts first "
            "places (above).",
            _headed(wins.table, ranks=True),
        )
    return AnalysesReport(md, parts, [])


def price_notes(meta: Mapping[str, Any] | None) -> list[str]:
    """The prices each model of a run was charged at, with their date, as its plan recorded them.

    Reads ``run.json``'s ``plan.methods[m].stages`` (stage -> ``profile:model``) and
    ``profile_params[stage]`` (``price_prompt_per_1k``, ``price_completion_per_1k``, ``prices_as_of`` when
    the plan carries them).

    Parameters
    ----------
    meta : the run's ``run.json`` (or None)

    Returns
    -------
    list of str, one per model, e.g. ``"openai-gpt4o:gpt-4o: 0.0025 / 0.01 USD per 1k prompt / completion
    tokens, prices as of 2026-05-01"``; empty when the plan records no prices.
    """
    plan = (meta or {}).get("plan") or {}
    out: dict[str, str] = {}
    for m in (plan.get("methods") or {}).values():
        for stage, label in (m.get("stages") or {}).items():
            pp = (m.get("profile_params") or {}).get(stage) or {}
            if "price_prompt_per_1k" not in pp and "prices_as_of" not in pp:
                continue
            when = pp.get("prices_as_of") or "an undated price"
            prompt, completion = pp.get("price_prompt_per_1k", 0), pp.get("price_completion_per_1k", 0)
            out.setdefault(
                label, f"{label}: {prompt} / {completion} USD per 1k prompt / completion tokens, prices as of {when}"
            )
    return list(out.values())


def analyses_report(
    df: pd.DataFrame,
    outcomes: Iterable[Any],
    run_dir: str | Path,
    meta: Mapping[str, Any] | None = None,
    *,
    costs: pd.DataFrame | None = None,
) -> AnalysesReport:
    """Every analysis section of a discovery run: the rounds sweep (plot and table), mean ranks,
    win/tie/loss counts, cost multiples. Sections with nothing to show are left out.

    Parameters
    ----------
    df : scored frame (:func:`agentcausal.discovery.evaluate.outcomes_frame`)
    outcomes : the run's ``DiscoveryOutcome`` records (their usage, for the cost table); not read when ``costs``
        is given
    run_dir : the run folder (``rounds.png`` is written into it)
    meta : the run's ``run.json`` (the prices and their dates, :func:`price_notes`), optional
    costs : :func:`~agentcausal.discovery.analyses.cost_frame` of the outcomes, when already built

    Returns
    -------
    AnalysesReport: markdown lines (a ``## The paper's analyses`` part), HTML fragments, and the
    ``rounds`` figure when a rounds sweep ran.
    """
    run = Path(run_dir)
    md: list[str] = ["## The paper's analyses (MAC §4.2-§4.4)", ""]
    parts: list[str] = ["<h2>The paper's analyses (MAC §4.2-§4.4)</h2>"]
    figs: list[Figure] = []
    e = html.escape
    curve = A.rounds_curve(df)
    if not curve.table.empty:
        title = f"SHD and F1 against debate rounds (n = {curve.n}; {curve.convention})"
        t = curve.table
        text = (
            text_bars(
                [f"{d} · {m} · r{r} SHD" for m, d, r in zip(t["method"], t["dataset"], t["rounds"])],
                list(t["shd"]),
                fmt="{:.2f}",
            )
            + "\n"
            + text_bars(
                [f"{d} · {m} · r{r} F1" for m, d, r in zip(t["method"], t["dataset"], t["rounds"])],
                list(t["f1"]),
                fmt="{:.2f}",
                vmax=1.0,
            )
        )
        try:
            figs.append(
                Figure("rounds", title, rounds_png(t, run / "rounds.png", n=curve.n, convention=curve.convention), text)
            )
        except (ValueError, KeyError, TypeError):  # nothing drawable (all NaN)
            figs.append(Figure("rounds", title, None, text))
        shown = t[["method", "dataset", "rounds", "shd", "nhd", "f1", "seeds"]]
        note = (
            f"{_n_line(curve)} Mean over seeds of each rounds variant (`discover --rounds`), one row per "
            "rounds value; the plot is `rounds.png`."
        )
        md += [
            "### Rounds sweep (paper §4.3, Fig. 4)",
            "",
            note,
            "",
            markdown_table(_headed(shown)),
            "",
            "![rounds](rounds.png)",
            "",
        ]
        parts += [
            f"<h2>Rounds sweep (paper §4.3, Fig. 4)</h2><p class='note'>{e(note)}</p>",
            html_table(_headed(shown)),
        ]
    ranked = rank_sections(df, heading="###")
    md += ranked.markdown
    parts += ranked.html
    multiples = A.cost_multiples(A.cost_frame(outcomes) if costs is None else costs)  # every dataset: what it spent
    if not multiples.table.empty:
        note = f"n = {multiples.n}; {multiples.convention}."
        if A.ZERO_SHOT not in set(multiples.table["method"]):
            note += f" {A.ZERO_SHOT} did not run: no multiples (run it beside the others to get them)."
        if (multiples.table["cached_runs"] > 0).any():
            note += (
                " Cached runs: runs with calls the LLM cache served (an identical earlier request), which "
                "count 0 tokens here; rerun with --refresh and an empty cache for a full count."
            )
        prices = price_notes(meta)
        note += (
            " Prices: " + "; ".join(prices) + "."
            if prices
            else " Prices: each profile's price_prompt_per_1k / price_completion_per_1k (and prices_as_of) in the "
            "profiles file; this run's plan does not record them."
        )
        if not (multiples.table["cost_usd"] > 0).any():
            note += " No profile of this run has prices: dollars are 0."
        t = multiples.table
        table = pd.DataFrame(
            {
                "method": t["method"],
                "runs": t["runs"],
                "tokens/run": [_fmt(v, "{:,.0f}") for v in t["tokens"]],
                "tokens ×": [_fmt(v, "{:.2f}") for v in t["tokens_x"]],
                "USD/run": [_fmt(v, "{:.4f}") for v in t["cost_usd"]],
                "USD ×": [_fmt(v, "{:.2f}") for v in t["cost_x"]],
                "tokens × reference baselines": t["tokens_x_range"],
                "cached runs": t["cached_runs"],
                "models": t["models"],
            }
        )
        md += ["### Cost as a multiple of zero-shot (paper §4.4, Fig. 5)", "", note, "", markdown_table(table), ""]
        parts += [
            f"<h2>Cost as a multiple of zero-shot (paper §4.4, Fig. 5)</h2><p class='note'>{e(note)}</p>",
            html_table(table),
        ]
    if len(md) == 2:
        return AnalysesReport([], [], [])
    return AnalysesReport(md, parts, figs)


def backbone_label(run_dir: str | Path) -> str:
    """A discovery run's backbone as the rank tables name it: its MAC debate model (else every model it
    routed), with the run folder's name, e.g. ``"openai-gpt4o:gpt-4o (discover-A)"``."""
    run = Path(run_dir)
    try:  # read here, not through agentcausal.runs.folder, which imports the report modules
        models = dict(json.loads((run / "run.json").read_text(encoding="utf-8")).get("models") or {})
    except (OSError, ValueError, AttributeError, TypeError):  # no readable run.json: named by its folder
        models = {}
    model = models.get("mac.debate") or "; ".join(sorted(set(models.values()))) or "no LLM"
    return f"{model} ({run.name})"


def backbone_rank_sections(frames: Mapping[str, pd.DataFrame], *, heading: str = "##") -> AnalysesReport:
    """Mean ranks and win/tie/loss over backbones × datasets: each scored frame is one run, on one backbone
    LLM (labelled by :func:`backbone_label`), as ``compare`` is given runs of several backbones.

    Parameters
    ----------
    frames : backbone label -> scored frame of that run (:func:`agentcausal.discovery.evaluate.outcomes_frame`)
    heading : markdown heading level

    Returns
    -------
    AnalysesReport (markdown and HTML, no figure).
    """
    return rank_sections(S.stack_backbones(frames), heading=heading, over="backbones and datasets")
