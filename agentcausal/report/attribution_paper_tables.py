"""The DCFA paper's tables as sections of an attribution ``report.md``.

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
)
from agentcausal.report.attribution_tables import markdown_table

__all__ = ["paper_tables_markdown"]


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
