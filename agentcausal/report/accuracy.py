"""Accuracy tables for people: each accuracy as raw count over n beside its percentage, each column named for
how it was computed.

:func:`accuracy_display` turns an accuracy frame
(:func:`agentcausal.attribution.evaluate.accuracy`) into text cells ``k/n (x%)``:
exact step, agent and both, DCFA's Hit@1/3/5 (within ±1/±3/±5 steps), top-3
over the candidates (only when some method ranks; ``not ranked`` for the
others), and Who&When's published substring rule, labelled as such.
:data:`ACCURACY_NOTE` says how each was computed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pandas as pd

__all__ = ["ACCURACY_COLUMNS", "ACCURACY_NOTE", "accuracy_display", "AccuracyDisplays", "has_labels"]

#: (frame prefix, display name) of the accuracy columns, in table order
ACCURACY_COLUMNS = (
    ("step", "step (exact)"),
    ("agent", "agent"),
    ("both", "step and agent"),
    ("hit1", "Hit@1 (±1 step)"),
    ("hit3", "Hit@3 (±3)"),
    ("hit5", "Hit@5 (±5)"),
    ("top3", "top-3 (candidates)"),
    ("ww_step", "step (Who&When substring rule)"),
    ("ww_agent", "agent (Who&When substring rule)"),
)

#: how every column is computed (printed above the tables)
ACCURACY_NOTE = (
    "Counts over the labelled traces, k/n (percent). step (exact): the blamed 0-based step equals the annotated "
    "one; agent: names equal after normalisation; undetermined answers and failed methods count as wrong; rows "
    "not run (--max-cost, circuit breaker) are left out and counted under not_run. "
    "Hit@1/3/5: the blamed step within ±1/±3/±5 steps of the annotated one (DCFA's released evaluate.py; agent "
    "not compared). top-3: the annotated step among a ranking method's first three candidates (DCFA, ECHO); "
    "single-answer methods are not ranked. Who&When substring rule: the rule of Who&When's released evaluate.py "
    "(a step is right when the annotated number is a substring of the blamed one, so 1 matches 10; an agent when "
    "the annotated name is a substring of the blamed name's first word), only for comparing with published numbers."
)


def has_labels(df: pd.DataFrame) -> bool:
    """Whether an accuracy frame has any labelled row (``labelled`` > 0)."""
    return "labelled" in df and bool((df["labelled"].fillna(0) > 0).any())


def _cell(k: Any, n: int) -> str:  # k: a frame cell (a count, or missing)
    if k is None or k is pd.NA or (isinstance(k, float) and k != k) or not n:
        return "–"
    return f"{int(k)}/{n} ({100 * int(k) / n:.1f}%)"


def accuracy_display(df: pd.DataFrame, by: tuple[str, ...] = ()) -> pd.DataFrame:
    """An accuracy frame as text cells: ``k/n (x%)`` per metric.

    Parameters
    ----------
    df : accuracy frame (:func:`agentcausal.attribution.evaluate.accuracy`; an older ``accuracy.csv``
        without the columns beyond exact match gives only the exact ones)
    by : the grouping columns besides ``method`` (``("subset",)``, ``("length_bucket",)``)

    Returns
    -------
    DataFrame with method, *by, n, labelled, one column per metric of :data:`ACCURACY_COLUMNS` present
    (top-3 only when some method ranks; ``not ranked`` for the others), undetermined, failed, not_run (only
    when some row was not run), degraded, reused.

    Examples
    --------
    >>> df = pd.DataFrame({"method": ["m"], "n": [4], "labelled": [4], "step_k": [2], "agent_k": [3], "both_k": [1]})
    >>> accuracy_display(df)["step (exact)"].tolist()
    ['2/4 (50.0%)']
    """
    out = pd.DataFrame({"method": df["method"]})
    for c in by:
        out[c] = df[c]
    out["n"] = df["n"]
    out["labelled"] = df["labelled"]
    ranked = "top3_k" in df and bool(df["top3_k"].notna().any())
    for key, name in ACCURACY_COLUMNS:
        col = f"{key}_k"
        if col not in df or (key == "top3" and not ranked):
            continue
        out[name] = [
            ("not ranked" if key == "top3" and pd.isna(k) and n else _cell(k, int(n or 0)))
            for k, n in zip(df[col], df["labelled"])
        ]
    for c in ("undetermined", "failed", "not_run", "degraded", "reused"):
        if c in df and (c != "not_run" or bool(df[c].fillna(0).gt(0).any())):  # not_run: only when some row was
            out[c] = df[c]
    return out.reset_index(drop=True)


class AccuracyDisplays(NamedTuple):
    """The three accuracy tables of an evaluation as text cells (:func:`accuracy_display`), made once for both
    reports.

    Attributes
    ----------
    overall, by_subset, by_length : DataFrame, of ``Evaluation.overall``, ``by_subset`` (by ``subset``) and
        ``by_length`` (by ``length_bucket``)
    """

    overall: pd.DataFrame
    by_subset: pd.DataFrame
    by_length: pd.DataFrame

    @classmethod
    def of(cls, ev: Any) -> AccuracyDisplays:
        """The displays of an :class:`~agentcausal.attribution.evaluate.Evaluation`."""
        return cls(
            accuracy_display(ev.overall),
            accuracy_display(ev.by_subset, ("subset",)),
            accuracy_display(ev.by_length, ("length_bucket",)),
        )
