r"""Evaluation of failure attributions: exact step, agent and both-correct accuracy, and beyond exact match.

* **Step match** is exact integer equality of the 0-based steps.
* **Agent match** compares :func:`~agentcausal.traces.model.normalise_agent` names.
* An undetermined answer (step None) or a failed method (``error`` set) counts as wrong.
* Traces without a label are kept in the results but left out of accuracy.

Beside exact match, per method (and per subset, per length), each as a fraction
beside its raw count of hits over the labelled rows:

* **Hit@1, Hit@3, Hit@5** as DCFA's released ``Automated_FA/evaluate.py``
  defines them: the blamed step within ±1, ±3, ±5 steps of the labelled one
  (|pred − true| <= 1, 3, 5; the agent is not compared); an undetermined or
  failed answer is a miss (that script divides by every labelled file).
  ``hit1`` here is ±1, not "top-1".
* **top-3**: the labelled step among the first three ``candidates`` (exact
  match), only for methods that rank (:func:`agentcausal.attribution.candidates.ranks`);
  NaN for the others.
* **Who&When's substring rule** (``ww_step``, ``ww_agent``), the rule its released
  ``Automated_FA/evaluate.py`` used for the published numbers: a step is right when the
  labelled step's digits are a substring of the predicted step's (a labelled 1
  scores a predicted 10 or 21 as right), an agent when the labelled name is a
  substring of the first word (``[\w_]+``) of the predicted one. For comparing with
  published numbers only; exact match is ours.

:func:`evaluate_frame` computes every table from a results frame
(:mod:`agentcausal.attribution.results`: one scored row per trace and method), so a run folder
can be re-evaluated without the traces; its cost tables are :mod:`agentcausal.attribution.costs`.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated
Failure Attribution of LLM Multi-Agent Systems." ICML 2025. arXiv:2505.00212,
section 3 (metrics: agent-level and step-level accuracy).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import pandas as pd

from agentcausal.attribution.candidates import ranks, read_candidates, top_k_hit
from agentcausal.attribution.costs import cost_this_run, usage_by_stage
from agentcausal.traces.model import normalise_agent

__all__ = [
    "LENGTH_BUCKETS",
    "Evaluation",
    "step_match",
    "agent_match",
    "whowhen_step_match",
    "whowhen_agent_match",
    "HIT_WINDOWS",
    "TOP_K",
    "length_bucket",
    "accuracy",
    "step_error_histogram",
    "row_hits",
    "candidate_hits",
    "evaluate_frame",
]

#: trace-length buckets (number of steps), inclusive bounds; our own coarse buckets (from neither paper). The
#: grouping the DCFA paper reports (Who&When's five length levels) is
#: :data:`agentcausal.attribution.paper_tables.WHO_WHEN_LEVELS`
LENGTH_BUCKETS = ((1, 10, "1-10"), (11, 30, "11-30"), (31, 60, "31-60"), (61, 10**9, "61+"))


class Evaluation(NamedTuple):
    """Every table of one evaluation (pandas DataFrames).

    Attributes
    ----------
    overall : per method: n, labelled, step_acc, agent_acc, both_acc (each beside its count of correct
        rows, step_k, agent_k, both_k), undetermined, failed
    by_subset : the same per (method, subset)
    by_length : the same per (method, length_bucket)
    step_error_hist : per method, counts of |pred - true| (column ``none`` = undetermined or failed)
    cost_per_trace : per method: mean seconds, calls, requests, prompt and completion tokens per trace
    cost_by_stage : per (method, stage): totals and per-trace means of tokens and seconds
    failures : rows whose method failed: trace_id, method, status, error
    cost_this_run : per method, totals: rows, reused, degraded, then requests, prompt and completion
        tokens, request seconds and cost, each "this run" (what this run actually spent: 0 for a reused
        row) beside "original" (what the records cost when they were computed)
    """

    overall: pd.DataFrame
    by_subset: pd.DataFrame
    by_length: pd.DataFrame
    step_error_hist: pd.DataFrame
    cost_per_trace: pd.DataFrame
    cost_by_stage: pd.DataFrame
    failures: pd.DataFrame
    cost_this_run: pd.DataFrame | None = None


def step_match(pred: int | None, true: int | None) -> bool:
    """Exact 0-based step match; None never matches.

    >>> step_match(10, 1), step_match(1, 1), step_match(None, 0)
    (False, True, False)
    """
    return pred is not None and true is not None and int(pred) == int(true)


def agent_match(pred: str | None, true: str | None) -> bool:
    """Agent match after :func:`normalise_agent`; empty names never match.

    >>> agent_match("Orchestrator (thought)", "orchestrator"), agent_match("Verification_Expert", "VerificationExpert")
    (True, True)
    >>> agent_match(None, "WebSurfer")
    False
    """
    p, t = normalise_agent(pred), normalise_agent(true)
    return bool(p) and p == t


def whowhen_step_match(pred: int | None, true: int | None) -> bool:
    """Who&When's published step rule: the labelled step's digits are a substring of the predicted step's.

    >>> whowhen_step_match(10, 1), whowhen_step_match(1, 10), whowhen_step_match(None, 0)
    (True, False, False)
    """
    return pred is not None and true is not None and str(int(true)) in str(int(pred))


_WORD = re.compile(r"[\w_]+")


def whowhen_agent_match(pred: str | None, true: str | None) -> bool:
    r"""Who&When's published agent rule: the labelled name is a substring of the predicted name's first word.

    The released script reads the predicted agent as the first ``[\w_]+`` run after "Agent Name:" and
    tests ``true in pred``, case-sensitively.

    >>> whowhen_agent_match("Orchestrator (thought)", "Orchestrator"), whowhen_agent_match("WebSurfer", "websurfer")
    (True, False)
    """
    if not pred or not true:
        return False
    m = _WORD.search(str(pred))
    return m is not None and str(true) in m.group(0)


#: DCFA's Hit@k windows: k -> the largest |pred - true| that counts (its released evaluate.py: 1, 3, 5)
HIT_WINDOWS = {1: 1, 3: 3, 5: 5}
#: k of the top-k accuracy over ``candidates``
TOP_K = 3


def length_bucket(n_steps: int) -> str:
    """The :data:`LENGTH_BUCKETS` label of a trace length.

    >>> length_bucket(10), length_bucket(11), length_bucket(130)
    ('1-10', '11-30', '61+')
    """
    for lo, hi, name in LENGTH_BUCKETS:
        if lo <= n_steps <= hi:
            return name
    return LENGTH_BUCKETS[-1][2]


def accuracy(
    df: pd.DataFrame, by: Sequence[str] = (), *, method_ranks: Mapping[str, bool] | None = None
) -> pd.DataFrame:
    """Step, agent and both-correct accuracy per method (and per ``by`` columns).

    Parameters
    ----------
    df : results frame (:func:`results_frame`)
    by : extra grouping columns, e.g. ``["subset"]`` or ``["length_bucket"]``
    method_ranks : method -> whether its candidates in ``df`` come from a ranking
        (:func:`~agentcausal.attribution.candidates.ranks`); None: read from ``df`` here (a caller grouping one
        frame several ways reads it once)

    Returns
    -------
    DataFrame with columns method, *by, n, labelled, step_acc, step_k, agent_acc, agent_k,
    both_acc, both_k, hit1_acc, hit1_k, hit3_acc, hit3_k, hit5_acc, hit5_k (DCFA's Hit@k: within
    ±1, ±3, ±5 steps), top3_acc, top3_k (labelled step among the first 3 candidates; NaN for a
    method that does not rank), ww_step_acc, ww_step_k, ww_agent_acc, ww_agent_k (Who&When's
    substring rule) (each ``*_acc`` a fraction in [0, 1] over labelled rows, NaN when none,
    beside its raw count ``*_k`` of correct rows: ``step_acc = step_k / labelled``, so 53.17 %
    reads as 67/126), undetermined, failed (rows with an error: content failures and failures
    of the run), not_run (rows the run did not compute: held back by ``--max-cost`` or stopped by
    the circuit breaker; left out of ``labelled`` and of every accuracy, since nothing was
    attributed), degraded (a fallback answer, counted in the accuracy), reused (served from a
    cache in this run).

    Examples
    --------
    >>> df = pd.DataFrame({"method": ["m"] * 3, "true_step": [1, 2, 3], "step_correct": [True, False, True],
    ...                    "agent_correct": [True, True, False], "both_correct": [True, False, False],
    ...                    "undetermined": [False] * 3, "error": [None] * 3})
    >>> accuracy(df)[["labelled", "step_k", "agent_k", "both_k"]].values.tolist()
    [[3, 2, 2, 1]]
    """
    keys = ["method", *by]
    out = []
    if "ww_step_hit" not in df.columns:  # a caller grouping one frame several ways adds them once (evaluate_frame)
        df = row_hits(df)
    method_ranks = _method_ranks(df) if method_ranks is None else method_ranks
    for key, g in df.groupby(keys, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        held = g["status"].eq("not_run") if "status" in g else pd.Series(False, index=g.index)
        lab = g[g["true_step"].notna() & ~held]
        n_lab = len(lab)

        def count(col: str, lab: pd.DataFrame = lab) -> int:
            return int(lab[col].fillna(False).astype(bool).sum())

        def frac(col: str, n_lab: int = n_lab) -> float:
            return count(col) / n_lab if n_lab else float("nan")

        beyond = _beyond_exact(lab, ranked=method_ranks.get(str(key[0]), False))
        out.append(
            {
                **dict(zip(keys, key)),
                "n": len(g),
                "labelled": n_lab,
                "step_acc": frac("step_correct"),
                "step_k": count("step_correct"),
                "agent_acc": frac("agent_correct"),
                "agent_k": count("agent_correct"),
                "both_acc": frac("both_correct"),
                "both_k": count("both_correct"),
                **{
                    f"{m}_{x}": (k / n_lab if n_lab and k is not None else float("nan")) if x == "acc" else k
                    for m, k in beyond.items()
                    for x in ("acc", "k")
                },
                "undetermined": int(g["undetermined"].sum()),
                "failed": int((g["error"].notna() & ~held).sum()),
                "not_run": int(held.sum()),
                "degraded": int((g["status"] == "degraded").sum()) if "status" in g else 0,
                "reused": int(g["reused"].astype(bool).sum()) if "reused" in g else 0,
            }
        )
    cols = [
        *keys,
        "n",
        "labelled",
        "step_acc",
        "step_k",
        "agent_acc",
        "agent_k",
        "both_acc",
        "both_k",
        *[f"{m}_{x}" for m in BEYOND_EXACT for x in ("acc", "k")],
        "undetermined",
        "failed",
        "not_run",
        "degraded",
        "reused",
    ]
    res = pd.DataFrame(out, columns=cols)
    res["top3_k"] = res["top3_k"].astype("Int64")  # <NA> for a method that does not rank
    return res


#: the metrics beside exact match, in table order (see the module docstring)
BEYOND_EXACT = ("hit1", "hit3", "hit5", "top3", "ww_step", "ww_agent")


def _method_ranks(df: pd.DataFrame) -> dict[str, bool]:
    """Per method, whether its candidates come from a ranking (:func:`~agentcausal.attribution.candidates.ranks`;
    the ``ranks`` column of :func:`row_hits` when the frame has it)."""
    if "ranks" in df.columns:
        return {str(m): bool(v) for m, v in df.groupby("method", sort=False)["ranks"].any().items()}
    if "candidates" not in df.columns:
        return {}
    return {
        str(m): any(ranks(read_candidates(v)) for v in g["candidates"]) for m, g in df.groupby("method", sort=False)
    }


def _cell(v: Any) -> Any:
    """A frame cell: None for a missing value."""
    return None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v


def candidate_hits(candidates: Any, true_step: Any) -> tuple[bool, bool]:
    """(whether a row's candidates come from a ranking, whether its labelled step is among the first
    :data:`TOP_K`), read from one ``candidates`` cell (JSON text, list or missing) and its ``true_step``."""
    cands = read_candidates(candidates)
    t = _cell(true_step)
    return ranks(cands), t is not None and top_k_hit(cands, t, TOP_K)


def row_hits(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each row's hits beyond exact match, read once for every grouping of :func:`accuracy`:
    ``ww_step_hit`` and ``ww_agent_hit`` (Who&When's substring rule; a failed row never hits) and, when ``df``
    has ``candidates`` and lacks them, ``ranks`` and ``top3_hit`` (:func:`candidate_hits`).

    Parameters
    ----------
    df : results frame (missing columns read as missing values)

    Returns
    -------
    DataFrame, a new frame (``df`` is not changed).
    """

    def col(name: str) -> list[Any]:
        return [_cell(v) for v in df[name]] if name in df else [None] * len(df)

    ok = df["error"].isna().tolist() if "error" in df else [True] * len(df)
    step, agent = col("true_step"), col("true_agent")
    extra: dict[str, list[bool]] = {
        "ww_step_hit": [bool(o) and whowhen_step_match(p, t) for o, p, t in zip(ok, col("pred_step"), step)],
        "ww_agent_hit": [bool(o) and whowhen_agent_match(p, t) for o, p, t in zip(ok, col("pred_agent"), agent)],
    }
    if "candidates" in df and "ranks" not in df:
        hits = [candidate_hits(c, t) for c, t in zip(df["candidates"], step)]
        extra["ranks"] = [r for r, _ in hits]
        extra["top3_hit"] = [h for _, h in hits]
    return df.assign(**extra)


def _beyond_exact(lab: pd.DataFrame, *, ranked: bool) -> dict[str, int | None]:
    """Hit counts beyond exact match over labelled rows (top3 None unless the method ranks), from the row hits of
    :func:`row_hits`."""
    err = lab["abs_step_error"] if "abs_step_error" in lab else pd.Series(dtype="float")
    out: dict[str, int | None] = {
        f"hit{k}": int((err.notna() & (err.astype("Float64") <= w).fillna(False)).sum()) for k, w in HIT_WINDOWS.items()
    }
    out["top3"] = int(lab["top3_hit"].sum()) if ranked and "top3_hit" in lab else None
    out["ww_step"] = int(lab["ww_step_hit"].sum())
    out["ww_agent"] = int(lab["ww_agent_hit"].sum())
    return out


def step_error_histogram(df: pd.DataFrame, max_bin: int = 5) -> pd.DataFrame:
    """Counts of |predicted step - true step| per method, over labelled rows.

    Parameters
    ----------
    df : results frame
    max_bin : int, errors of ``max_bin`` or more share the last column ``">=max_bin"``

    Returns
    -------
    DataFrame indexed by method with columns ``"0"``, ``"1"``, ..., ``">=max_bin"``
    and ``"none"`` (undetermined or failed).
    """
    cols = [str(i) for i in range(max_bin)] + [f">={max_bin}", "none"]
    rows = {}
    for method, g in df[df["true_step"].notna()].groupby("method", sort=True):
        counts = dict.fromkeys(cols, 0)
        for e in g["abs_step_error"]:
            if pd.isna(e):
                counts["none"] += 1
            else:
                counts[str(int(e)) if int(e) < max_bin else f">={max_bin}"] += 1
        rows[method] = counts
    return pd.DataFrame.from_dict(rows, orient="index", columns=cols).rename_axis("method")


def evaluate_frame(df: pd.DataFrame, *, cost_by_stage: pd.DataFrame | None = None) -> Evaluation:
    """Every evaluation table from a results frame.

    Parameters
    ----------
    df : results frame (:func:`agentcausal.attribution.results.results_frame` or ``load_results``); the hits of
        :func:`row_hits` are read from it when it has them (a report that read ``candidates`` a batch at a time)
    cost_by_stage : :func:`~agentcausal.attribution.costs.usage_by_stage` of the rows, when already summed
        (:class:`~agentcausal.attribution.costs.StageTotals`); None: from ``df``'s ``usage_json``

    Returns
    -------
    Evaluation

    Examples
    --------
    >>> from agentcausal.attribution.results import results_frame
    >>> from agentcausal.traces.model import Attribution, Label, Step, Trace
    >>> t = Trace(id="x/1", question="q", ground_truth="a", label=Label(agent="B", step=1),
    ...           steps=[Step(index=0, agent="A", content=""), Step(index=1, agent="B", content="")])
    >>> ev = evaluate_frame(results_frame([Attribution(trace_id="x/1", method="m", step=1, agent="b")], [t]))
    >>> ev.overall[["step_acc", "agent_acc", "both_acc"]].values.tolist()
    [[1.0, 1.0, 1.0]]
    """
    cost = (
        df.groupby("method", sort=True)
        .agg(
            traces=("trace_id", "nunique"),
            seconds=("seconds", "mean"),
            calls=("calls", "mean"),
            requests=("requests", "mean"),
            prompt_tokens=("prompt_tokens", "mean"),
            completion_tokens=("completion_tokens", "mean"),
            cost_usd=("cost_usd", "sum"),
        )
        .reset_index()
    )
    failures = df[df["error"].notna()][["trace_id", "method", "status", "error"]].reset_index(drop=True)
    hits = row_hits(df)  # read once for the three groupings
    ranked = _method_ranks(hits)
    return Evaluation(
        overall=accuracy(hits, method_ranks=ranked),
        by_subset=accuracy(hits, ["subset"], method_ranks=ranked),
        by_length=accuracy(hits, ["length_bucket"], method_ranks=ranked),
        step_error_hist=step_error_histogram(df),
        cost_per_trace=cost,
        cost_by_stage=usage_by_stage(df) if cost_by_stage is None else cost_by_stage,
        failures=failures,
        cost_this_run=cost_this_run(df),
    )
