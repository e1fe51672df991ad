"""The DCFA paper's tables as sections of an attribution ``report.md``.

:func:`dcfa_tables_text` is Table 1 and Figure 3 over several runs (``agentcausal tables dcfa RUN...``).

Step accuracy as the paper reports it (Table 1), step-only accuracy by trace-length level (Figure 3),
DCFA without LCE (Table 2) and what LCE did, LCE diagnostics, edges per dependency graph (Table 5), the
signed step error, accuracy over repeats, and labels whose agent is not the labelled step's speaker.
:mod:`agentcausal.attribution.paper_tables` computes them; this module renders them.

References
----------
Wang, Zehao et al. "DCFA: Dual-view Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent
Systems" (code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), Tables 1, 2, 5, Figure 3.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

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
    with_parsed_details,
)
from agentcausal.attribution.table1 import TABLE1_METHODS, fig3_cells, table1_averages, table1_cells
from agentcausal.report.attribution_tables import markdown_table

__all__ = ["paper_tables_markdown", "dcfa_tables_text"]


def paper_tables_markdown(df: pd.DataFrame, meta: dict[str, Any] | None = None) -> str:
    """The DCFA paper's tables (:mod:`agentcausal.attribution.paper_tables`) as markdown sections, for ``report.md``.

    Parameters
    ----------
    df : results frame (``results.parquet``)
    meta : the run's ``run.json``; its ``speaker_mismatch`` records add a section

    Returns
    -------
    str, the sections (empty ones left out), opening with a newline.
    """
    parts: list[str] = []
    df = with_parsed_details(df)  # four of the tables read DCFA's record: each parsed once
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


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.2f}% ({k}/{n})" if n else "- (0/0)"


def _t1_cell(r: Any) -> str:
    pub = f"pub. {r['published']:.2f}" if pd.notna(r["published"]) else "pub. none"
    return (
        f"**{_pct(int(r['agent_and_step_k']), int(r['n']))}** · step-only {_pct(int(r['step_k']), int(r['n']))} · {pub}"
    )


def _avg_cell(r: Any) -> str:
    if r is None:
        return "-"
    pub = f"pub. {r['published']:.2f}" if pd.notna(r["published"]) else "pub. none"
    return (
        f"**{100 * r['agent_and_step_mean']:.2f} ± {100 * r['agent_and_step_std']:.2f}%** · step-only "
        f"{100 * r['step_mean']:.2f} ± {100 * r['step_std']:.2f}% · {pub} (n = {r['backbones']} backbones)"
    )


def dcfa_tables_text(runs: dict[str, pd.DataFrame]) -> str:
    """DCFA's Table 1 and Figure 3 over several runs, as markdown: every cell with its n and published number.

    Parameters
    ----------
    runs : run label (its folder) -> results frame (``results.parquet``); one backbone per run

    Returns
    -------
    str: per (subset, truth) a Table 1 block (rows: backbones and their Average; columns: methods in
    Table 1's order; each cell agent-and-step, the headline as DCFA's ``evaluate.py`` computes it, then
    step-only, then the published number), the list of which published cell each number is, and
    Figure 3's levels per backbone.
    """
    cells = table1_cells(runs)
    out = [
        "# DCFA's Table 1 (step-level accuracy) from " + f"{len(runs)} run(s)",
        "",
        "Each cell: **agent-and-step** (the headline: the labelled step and agent both right, the agent as the "
        "first word of the prediction, as DCFA's released `evaluate.py` computes what Table 1 reports) · step-only "
        "(the step alone) · pub. (the number at this backbone, subset and method in DCFA's Table 1, in %; "
        "none: why below). k/n: right / labelled traces of the run (undetermined and failed rows count wrong); "
        "Table 1's n is the whole subset (126 Algorithm-generated, 58 Hand-crafted), so a number is comparable "
        "only when n is. Average: mean ± sample std over the backbones shown.",
        "",
    ]
    if cells.empty:
        return "\n".join(
            [
                *out,
                "No labelled rows in these runs: Table 1 scores runs over labelled traces (Who&When, or --labels FILE; docs/inputs.md#labels).",
                "",
            ]
        )
    avg = table1_averages(cells)
    present = {str(m) for m in cells["method"]}
    methods = [m for m in TABLE1_METHODS if m in present] + sorted(present - set(TABLE1_METHODS))
    for (sub, truth), g in cells.groupby(["subset", "truth"], sort=False):
        out += [f"## {sub}, {truth}", ""]
        header = ["backbone (run)", *[TABLE1_METHODS.get(m, m) for m in methods]]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for (b, run), h in g.groupby(["backbone", "run"], sort=False):
            by = {r["method"]: r for r in h.to_dict("records")}
            lines.append(
                "| " + " | ".join([f"{b} ({run})", *[_t1_cell(by[m]) if m in by else "-" for m in methods]]) + " |"
            )
        a = avg[(avg["subset"] == sub) & (avg["truth"] == truth)]
        by_a = {r["method"]: r for r in a.to_dict("records")}

        lines.append("| " + " | ".join(["Average", *[_avg_cell(by_a.get(m)) for m in methods]]) + " |")
        out += [*lines, ""]
        follows = sorted({(r["method"], r["follows"]) for r in g.to_dict("records") if r["follows"] != "-"})
        if follows:
            out += [
                "Baselines followed: "
                + "; ".join(f"{TABLE1_METHODS.get(m, m)} {f}" for m, f in follows)
                + " (DCFA's Table 1 ran its own copy of the baselines: preset `dcfa_paper`).",
                "",
            ]
    out += ["### Which published number each cell is", ""]
    for r in cells.to_dict("records"):
        out.append(f"- {r['backbone']} ({r['run']}), {r['subset']}, {r['truth']}, {r['method']}: {r['published_cell']}")
    for r in avg.to_dict("records"):
        out.append(f"- Average, {r['subset']}, {r['truth']}, {r['method']}: {r['published_cell']}")
    out.append("")
    fig = fig3_cells(runs)
    out += [
        "# DCFA's Figure 3: step-only accuracy by trace-length level (Hand-Crafted)",
        "",
        "Levels of the released `evaluate_in_different_length.py`: "
        + ", ".join(f"{n} {lo}-{hi} steps" for lo, hi, n in WHO_WHEN_LEVELS)
        + ". Figure 3 plots DeepSeek-R1-671B and DeepSeek-R1-32B; its values are not printed in the paper, so no "
        "cell has a published number. Undetermined rows count wrong and are in n (the released script leaves "
        "them out of n: the column says how many).",
        "",
    ]
    if fig.empty:
        return "\n".join([*out, "No Hand-Crafted rows with a levelled length in these runs.", ""])
    for (b, run, truth), g in fig.groupby(["backbone", "run", "truth"], sort=False):
        levels = [n for _, _, n in WHO_WHEN_LEVELS]
        out += [f"## {b} ({run}), {truth}; traces in no level: {int(g['outside'].iloc[0])}", ""]
        out += ["| method | " + " | ".join(levels) + " |", "|---|" + "---|" * len(levels)]
        for m, h in g.groupby("method", sort=False):
            by = {r["level"]: r for r in h.to_dict("records")}
            cells_ = [
                f"{_pct(int(by[lv]['step_k']), int(by[lv]['n']))}, undetermined {int(by[lv]['undetermined'])}"
                if lv in by
                else "- (0/0)"
                for lv in levels
            ]
            out.append(f"| {TABLE1_METHODS.get(str(m), str(m))} | " + " | ".join(cells_) + " |")
        out.append("")
    return "\n".join(out)
