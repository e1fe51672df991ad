"""The tables of a failure-attribution run: markdown, terminal text, JSON rows and the report's table list.

* :func:`markdown_table`: a frame as a GitHub markdown table (accuracies as percentages).
* :func:`accuracy_text`: the overall accuracy table the CLI prints (counts ``k/n`` beside percentages,
  :mod:`agentcausal.report.accuracy`), agent-and-step first (:func:`headline_first`), as the report's first table.
* :func:`table_records`: rows as JSON-friendly dicts, for a Prefect table artifact.
* :func:`evaluation_tables`: an :class:`~agentcausal.attribution.evaluate.Evaluation`'s accuracy, cost
  and failure tables with their headings, in report order.
* :func:`candidates_text` and :func:`ranked_candidates`: the ranked candidates of the methods that rank
  (DCFA, ECHO), the blamed step first, for ``report.md`` and ``report.html``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from agentcausal.report.accuracy import AccuracyDisplays, accuracy_display

if TYPE_CHECKING:
    from agentcausal.attribution.evaluate import Evaluation
    from agentcausal.attribution.results import AttributionSummary

__all__ = [
    "markdown_table",
    "headline_first",
    "accuracy_text",
    "table_records",
    "evaluation_tables",
    "candidates_text",
    "ranked_candidates",
    "ranked_row",
    "RANKED_NOTE",
    "SHOWN_CANDIDATES",
]

#: candidates shown per row (the rest counted)
SHOWN_CANDIDATES = 5

#: what the ranked-candidates table shows (above it in both reports)
RANKED_NOTE = (
    "Per trace, the steps a ranking method weighed, best first (the blamed step first), each with why it is a "
    "candidate and its score: DCFA's decision, the GCA hypothesis, the search's accepted pivots and the "
    "neighbours it evaluated, scored by ΔS(i) = S(i) − S(i−1) (– where LCE did not compute it); ECHO's "
    f"consensus step and the other voted steps, scored by consensus weight. The first {SHOWN_CANDIDATES} "
    "are shown; every candidate is in results.parquet (`candidates`). Single-answer methods have none to rank."
)

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


def headline_first(shown: pd.DataFrame) -> pd.DataFrame:
    """An :func:`~agentcausal.report.accuracy.accuracy_display` frame with "step and agent" first among the
    metrics: the number DCFA's released ``evaluate.py`` reports as step accuracy (its Table 1), then step-only."""
    cols = list(shown.columns)
    if "step and agent" not in cols or "step (exact)" not in cols:
        return shown
    cols.remove("step and agent")
    cols.insert(cols.index("step (exact)"), "step and agent")
    return shown[cols]


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
    shown = headline_first(accuracy_display(ev.overall))
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


def evaluation_tables(ev: Evaluation, shown: AccuracyDisplays | None = None) -> list[tuple[str, pd.DataFrame]]:
    """The tables of an attribution :class:`~agentcausal.attribution.evaluate.Evaluation`, in report order.

    Parameters
    ----------
    ev : Evaluation
    shown : its accuracy tables as text when already made (:class:`~agentcausal.report.accuracy.AccuracyDisplays`)

    Returns
    -------
    list of (heading, DataFrame): 7 tables, the first 4 accuracy (meaningful only when some trace is
    labelled), then cost per trace, cost per stage, failed traces.
    """
    shown = AccuracyDisplays.of(ev) if shown is None else shown
    return [
        ("Accuracy", headline_first(shown.overall)),
        ("Per subset", shown.by_subset),
        ("Per trace length (steps)", shown.by_length),
        ("|predicted step − true step|", ev.step_error_hist.reset_index()),
        ("Cost per trace (means)", ev.cost_per_trace),
        ("Cost per stage", ev.cost_by_stage),
        (f"Failed traces ({len(ev.failures)})", ev.failures),
    ]


def candidates_text(cands: Any, k: int = SHOWN_CANDIDATES) -> str:
    """Ranked candidates (a list of dicts) on one line: ``2 (decision, ΔS +0.921) · 1 (hypothesis) …``.

    >>> candidates_text([{"step": 2, "role": "decision", "score": 0.92, "score_is": "ΔS(i) = …"},
    ...                  {"step": 1, "role": "hypothesis"}, {"step": 4, "role": "vote", "score": 1.5}], k=2)
    '2 (decision, ΔS +0.920) · 1 (hypothesis) · … (+1)'
    """
    if not isinstance(cands, list) or not cands:
        return ""
    out = []
    for c in cands[:k]:
        bits = [str(c.get("role") or "")]
        score = c.get("score")
        if score is not None and not (isinstance(score, float) and pd.isna(score)):
            what = str(c.get("score_is") or "")
            bits.append(f"ΔS {float(score):+.3f}" if what.startswith("ΔS") else f"score {float(score):.3g}")
        out.append(f"{c.get('step')} ({', '.join(b for b in bits if b)})")
    return " · ".join(out) + (f" · … (+{len(cands) - k})" if len(cands) > k else "")


def ranked_row(
    trace_id: Any, method: Any, step: Any, cands: list[dict[str, Any]], k: int = SHOWN_CANDIDATES
) -> dict[str, str]:
    """One row of :func:`ranked_candidates`: a ranking method's candidates (read, as dicts) on one trace."""
    return {
        "trace": str(trace_id),
        "method": str(method),
        "step": "–" if pd.isna(step) else str(int(step)),
        "candidates": candidates_text(cands, k),
    }


def ranked_candidates(results: pd.DataFrame, k: int = SHOWN_CANDIDATES) -> pd.DataFrame:
    """One row per (trace, method) whose method ranks its candidates: trace, method, blamed step, candidates.

    Parameters
    ----------
    results : results frame (``results.parquet``; the ``candidates`` column as JSON text or lists)
    k : candidates shown per row

    Returns
    -------
    DataFrame with columns trace, method, step, candidates (text, :func:`candidates_text`), sorted by trace and
    method; empty when no method ranks (single-answer methods, or a run without the column).
    """
    from agentcausal.attribution.candidates import ranks, read_candidates

    cols = ["trace", "method", "step", "candidates"]
    if "candidates" not in results.columns or results.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for tid, method, step, raw in zip(
        results["trace_id"], results["method"], results["pred_step"], results["candidates"]
    ):
        cands = read_candidates(raw)
        if ranks(cands):
            rows.append(ranked_row(tid, method, step, cands or [], k))
    df = pd.DataFrame(rows, columns=cols)
    return df.sort_values(["trace", "method"], kind="stable").reset_index(drop=True) if len(df) else df
