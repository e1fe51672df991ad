"""The MAC paper's analyses of a discovery run: the rounds sweep, mean ranks, win/tie/loss counts, cost multiples.

All four read the scored frame (:func:`agentcausal.discovery.evaluate.outcomes_frame`: one row per
(dataset, seed, method), metric cells NaN where a run failed or has no true graph; degraded runs are
scored as they returned), optionally with a ``backbone`` column when several runs (one per backbone
LLM) are stacked (:func:`stack_backbones`). Each result carries its ``n`` and the SHD convention it
ranks by, so every table can say how it was computed.

* :func:`rounds_curve` (§4.3, Fig. 4): per rounds variant (``"mac (rounds 2)"``,
  :mod:`agentcausal.discovery.rounds`) and dataset, SHD, NHD and F1 against the number of rounds.
* :func:`mean_ranks` (§4.2, Fig. 2): each method's rank on each evaluation point (a dataset, or a
  (backbone, dataset) pair), by the mean over seeds, lower SHD / NHD and higher F1 first; ties
  share the average of the ranks they span; then the mean over points.
* :func:`win_tie_loss` (§4.2): per MAC row and baseline and metric, on how many points MAC is
  better, equal, worse (seed means; equal = within ``1e-9``). The paper counts first places over
  its 15 points and does not define ties; these are pairwise counts.
* :func:`cost_multiples` (§4.4, Fig. 5): each LLM method's mean tokens and dollars per run as a
  multiple of the zero-shot baseline's (dollars as the gateway priced each call from its
  profile's prices at run time).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.2-§4.4, Figs. 2, 4, 5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from agentcausal.discovery.graphs.metrics import SHD_CONVENTION
from agentcausal.discovery.rounds import base_method, split_rounds

__all__ = [
    "RANKED_METRICS",
    "HIGHER_IS_BETTER",
    "MAC_METHODS",
    "ZERO_SHOT",
    "Analysis",
    "stack_backbones",
    "evaluation_points",
    "sample_size",
    "rounds_curve",
    "mean_ranks",
    "win_tie_loss",
    "cost_frame",
    "cost_multiples",
]

#: the paper's three metrics (§4.1), in its order
RANKED_METRICS = ("shd", "nhd", "f1")
#: metrics where a larger value is better (the others: smaller is better)
HIGHER_IS_BETTER = frozenset({"f1", "skeleton_f1", "precision", "recall"})
#: methods that are MAC or one of its ablations (never a baseline of MAC)
MAC_METHODS = ("mac", "mac_single", "dcm_only", "mdm_only")
#: the method cost multiples are relative to
ZERO_SHOT = "llm_zero_shot"
#: two seed means closer than this are a tie
TIE_TOLERANCE = 1e-9


class Analysis(NamedTuple):
    """One analysis table and how it was computed.

    Attributes
    ----------
    table : DataFrame (columns per analysis)
    n : str, the sample it rests on, e.g. ``"2 datasets × 3 seeds"``
    convention : str, the SHD convention (and ranking rule) it uses
    """

    table: pd.DataFrame
    n: str
    convention: str


def stack_backbones(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Scored frames of several runs (one per backbone LLM) as one frame with a ``backbone`` column.

    Parameters
    ----------
    frames : backbone label (e.g. ``"gpt-4o"``) -> scored frame of that run

    Returns
    -------
    DataFrame, the rows of every frame, ``backbone`` first.
    """
    if not frames:
        return pd.DataFrame()
    stacked = pd.concat([f.assign(backbone=name) for name, f in frames.items()], ignore_index=True)
    return stacked[["backbone", *[c for c in stacked.columns if c != "backbone"]]]


def evaluation_points(df: pd.DataFrame) -> list[str]:
    """The columns that make one evaluation point: ``["backbone", "dataset"]`` or ``["dataset"]``."""
    return ["backbone", "dataset"] if "backbone" in df and df["backbone"].nunique() > 1 else ["dataset"]


def sample_size(df: pd.DataFrame) -> str:
    """``"D datasets × S seeds"`` (``× B backbones`` when stacked) of the scored rows.

    >>> sample_size(pd.DataFrame({"dataset": ["a", "a", "b"], "seed": [0, 1, 0]}))
    '2 datasets × 2 seeds'
    """
    if df.empty:
        return "0 runs"
    parts = [f"{df['dataset'].nunique()} datasets", f"{df['seed'].nunique()} seeds"]
    if "backbone" in df and df["backbone"].nunique() > 1:
        parts.append(f"{df['backbone'].nunique()} backbones")
    return " × ".join(parts)


def _convention(df: pd.DataFrame) -> str:
    costs = sorted(set(df["shd_reversal_cost"].dropna().astype(int))) if "shd_reversal_cost" in df else [1]
    return "; ".join(SHD_CONVENTION.get(c, f"SHD reversal cost {c}") for c in costs or [1])


def _seed_means(df: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    keys = [*evaluation_points(df), "method"]
    scored = df.dropna(subset=list(metrics), how="all")
    return scored.groupby(keys, sort=False)[list(metrics)].mean().reset_index()


def rounds_curve(df: pd.DataFrame, metrics: Sequence[str] = RANKED_METRICS) -> Analysis:
    """SHD / NHD / F1 against the number of debate rounds (the sweep of ``discover --rounds 1 2 3``).

    Parameters
    ----------
    df : scored frame; rows whose method is a rounds variant (``"mac (rounds 2)"``) are used
    metrics : metric columns

    Returns
    -------
    Analysis whose table has columns method (the variant's base, e.g. ``mac`` or ``mac@names``),
    dataset, rounds, ``<metric>`` (mean over seeds), ``<metric>_std``, seeds (scored runs); empty when
    no rounds variant ran. ``n`` counts the variants' rows.

    Examples
    --------
    >>> df = pd.DataFrame({"dataset": ["a"] * 3, "seed": [0] * 3, "shd": [2.0, 1.0, 3.0], "nhd": [.1] * 3,
    ...                    "f1": [.5] * 3, "method": ["mac (rounds 1)", "mac (rounds 2)", "pc"]})
    >>> rounds_curve(df).table[["method", "rounds", "shd"]].values.tolist()
    [['mac', 1, 2.0], ['mac', 2, 1.0]]
    """
    split = [split_rounds(str(m)) for m in df["method"]] if not df.empty else []
    d = (
        df.assign(
            base=pd.Series([b for b, _ in split], index=df.index),
            rounds=pd.Series([r for _, r in split], index=df.index),
        )
        if len(split)
        else df
    )
    d = d[d["rounds"].notna()] if "rounds" in d else d.iloc[0:0]
    cols = ["method", "dataset", "rounds", *metrics, *[f"{m}_std" for m in metrics], "seeds"]
    if d.empty:
        return Analysis(pd.DataFrame(columns=cols), "0 runs", _convention(df))
    rows = []
    r: Any  # the rounds of a group (a groupby key value)
    for (base, ds, r), g in d.groupby(["base", "dataset", "rounds"], sort=False):
        rows.append(
            {
                "method": base,
                "dataset": ds,
                "rounds": int(r),
                **{m: g[m].mean() for m in metrics},
                **{f"{m}_std": g[m].std(ddof=1) if g[m].notna().sum() > 1 else np.nan for m in metrics},
                "seeds": int(g[list(metrics)].notna().any(axis=1).sum()),
            }
        )
    table = pd.DataFrame(rows, columns=cols).sort_values(["method", "dataset", "rounds"], kind="stable")
    return Analysis(table.reset_index(drop=True), sample_size(d), _convention(df))


def mean_ranks(df: pd.DataFrame, metrics: Sequence[str] = RANKED_METRICS) -> Analysis:
    """Each method's mean rank over the evaluation points (datasets, or backbones × datasets).

    On each point the methods scored there are ranked on their mean over seeds (rank 1 = lowest SHD
    / NHD, highest F1); tied methods share the average of the ranks they span (``rank(method="average")``);
    a method's mean rank is the mean over the points where it was scored.

    Parameters
    ----------
    df : scored frame (optionally with ``backbone``)
    metrics : metric columns

    Returns
    -------
    Analysis whose table has columns method, ``<metric>`` (mean rank), points (where it was ranked),
    sorted by the first metric; ``n`` = the points' datasets × seeds (× backbones).

    Examples
    --------
    >>> df = pd.DataFrame({"dataset": ["a", "a", "a", "b", "b", "b"], "seed": [0] * 6,
    ...                    "method": ["x", "y", "z"] * 2, "shd": [1, 1, 3, 0, 2, 1.0],
    ...                    "nhd": [.1] * 6, "f1": [.9, .9, .1, 1, .2, .5]})
    >>> mean_ranks(df).table[["method", "shd", "f1"]].values.tolist()
    [['x', 1.25, 1.25], ['y', 2.25, 2.25], ['z', 2.5, 2.5]]
    """
    means = _seed_means(df, metrics)
    points = evaluation_points(df)
    cols = ["method", *metrics, "points"]
    if means.empty:
        return Analysis(pd.DataFrame(columns=cols), "0 runs", _convention(df))
    ranked = means.copy()
    for m in metrics:
        ranked[m] = means.groupby(points, sort=False)[m].rank(method="average", ascending=m not in HIGHER_IS_BETTER)
    table = (
        ranked.groupby("method", sort=False)
        .agg(**{m: (m, "mean") for m in metrics}, points=(metrics[0], "count"))
        .reset_index()
    )
    table = table.sort_values([metrics[0], "method"], kind="stable").reset_index(drop=True)
    return Analysis(table[cols], sample_size(df), _convention(df) + "; rank 1 = best, ties share the average rank")


def _is_mac(method: str) -> bool:
    return base_method(method) == "mac"


def win_tie_loss(df: pd.DataFrame, metrics: Sequence[str] = RANKED_METRICS) -> Analysis:
    """Win / tie / loss counts of each MAC row (``mac``, its rounds and anonymised variants) against each
    baseline (every method that is not MAC or one of its ablations), per metric.

    Parameters
    ----------
    df : scored frame (optionally with ``backbone``)
    metrics : metric columns

    Returns
    -------
    Analysis whose table has columns mac, baseline, then per metric ``<metric>`` as ``"W/T/L"`` and
    ``<metric>_points`` (points where both were scored); one row per (MAC row, baseline); empty when
    there is no MAC row or no baseline.

    Examples
    --------
    >>> df = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "seed": [0] * 4, "method": ["mac", "pc"] * 2,
    ...                    "shd": [1, 2, 3, 3.0], "nhd": [.1, .2, .3, .3], "f1": [.9, .8, .4, .5]})
    >>> win_tie_loss(df).table[["mac", "baseline", "shd", "f1"]].values.tolist()
    [['mac', 'pc', '1/1/0', '1/0/1']]
    """
    means = _seed_means(df, metrics)
    points = evaluation_points(df)
    cols = ["mac", "baseline", *[c for m in metrics for c in (m, f"{m}_points")]]
    methods = list(dict.fromkeys(means["method"])) if not means.empty else []
    macs = [m for m in methods if _is_mac(m)]
    baselines = [m for m in methods if base_method(m) not in MAC_METHODS]
    rows = []
    for a in macs:
        for b in baselines:
            row: dict[str, Any] = {"mac": a, "baseline": b}
            pa = means[means["method"] == a].set_index(points)
            pb = means[means["method"] == b].set_index(points)
            for m in metrics:
                both = pd.concat([pa[m], pb[m]], axis=1, keys=["a", "b"], join="inner").dropna()
                diff = both["a"] - both["b"]
                if m not in HIGHER_IS_BETTER:
                    diff = -diff
                w, t = int((diff > TIE_TOLERANCE).sum()), int((diff.abs() <= TIE_TOLERANCE).sum())
                row[m], row[f"{m}_points"] = f"{w}/{t}/{len(diff) - w - t}", len(diff)
            rows.append(row)
    return Analysis(
        pd.DataFrame(rows, columns=cols),
        sample_size(df),
        _convention(df) + "; per point the seed means are compared, equal within 1e-9 is a tie",
    )


def cost_frame(outcomes: Iterable[Any]) -> pd.DataFrame:
    """Tokens and dollars of each outcome: what it cost when it was computed (a reused run included).

    Parameters
    ----------
    outcomes : ``DiscoveryOutcome`` records (``usage``: stage -> token and cost totals; ``models``)

    Returns
    -------
    DataFrame with columns dataset, seed, method, prompt_tokens, completion_tokens, tokens, cost_usd,
    calls (logical LLM calls), requests (sent), cache_hits (calls the LLM cache served: 0 tokens, 0 dollars),
    models (``"profile:model"`` of each stage, ``; ``-joined).
    """
    rows = []
    for o in outcomes:
        u = list((o.usage or {}).values())
        pt = sum(float(s.get("prompt_tokens", 0) or 0) for s in u)
        ct = sum(float(s.get("completion_tokens", 0) or 0) for s in u)
        rows.append(
            {
                "dataset": o.dataset,
                "seed": o.seed,
                "method": o.method,
                "prompt_tokens": pt,
                "completion_tokens": ct,
                "tokens": pt + ct,
                "cost_usd": sum(float(s.get("cost_usd", 0) or 0) for s in u),
                "calls": sum(float(s.get("calls", 0) or 0) for s in u),
                "requests": sum(float(s.get("requests", 0) or 0) for s in u),
                "cache_hits": sum(float(s.get("cache_hits", 0) or 0) for s in u),
                "models": "; ".join(sorted(set((o.models or {}).values()))),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "dataset",
            "seed",
            "method",
            "prompt_tokens",
            "completion_tokens",
            "tokens",
            "cost_usd",
            "calls",
            "requests",
            "cache_hits",
            "models",
        ],
    )


def cost_multiples(costs: pd.DataFrame, *, reference: str = ZERO_SHOT) -> Analysis:
    """Each LLM method's mean tokens and dollars per run, and both as a multiple of ``reference``'s.

    Parameters
    ----------
    costs : :func:`cost_frame` (rows without LLM calls, the statistical methods', are left out)
    reference : the method the multiples are relative to (the zero-shot baseline)

    Returns
    -------
    Analysis whose table has columns method, runs, tokens (mean per run), tokens_x (multiple of the
    reference's mean), cost_usd (mean per run), cost_x (NaN where the reference cost nothing: unpriced
    profiles), cached_runs (runs with calls the LLM cache served, which cost nothing here), models; empty
    when no LLM method ran. Multiples are NaN when ``reference`` did not run.

    Examples
    --------
    >>> c = pd.DataFrame({"dataset": ["a"] * 3, "seed": [0] * 3, "method": ["llm_zero_shot", "mac", "pc"],
    ...                   "tokens": [100.0, 1600.0, 0.0], "cost_usd": [0.001, 0.02, 0.0], "calls": [1, 7, 0],
    ...                   "models": ["m", "m", ""]})
    >>> cost_multiples(c).table[["method", "tokens_x", "cost_x"]].values.tolist()
    [['llm_zero_shot', 1.0, 1.0], ['mac', 16.0, 20.0]]
    """
    cols = ["method", "runs", "tokens", "tokens_x", "cost_usd", "cost_x", "cached_runs", "models"]
    calls = costs["calls"] if "calls" in costs else costs.get("requests", pd.Series(dtype=float))
    llm = costs[calls > 0] if not costs.empty else costs
    if "cache_hits" not in llm:
        llm = llm.assign(cache_hits=0.0)
    if llm.empty:
        return Analysis(pd.DataFrame(columns=cols), "0 runs", "tokens: prompt + completion, as the endpoint counted")
    g = llm.groupby("method", sort=False)
    table = g.agg(
        runs=("tokens", "size"),
        tokens=("tokens", "mean"),
        cost_usd=("cost_usd", "mean"),
        cached_runs=("cache_hits", lambda s: int((s > 0).sum())),
        models=("models", lambda s: "; ".join(sorted(set("; ".join(s).split("; ")) - {""}))),
    ).reset_index()
    ref = table[table["method"] == reference]
    ref_tokens = float(ref["tokens"].iloc[0]) if len(ref) else np.nan
    ref_cost = float(ref["cost_usd"].iloc[0]) if len(ref) else np.nan
    table["tokens_x"] = table["tokens"] / ref_tokens if ref_tokens else np.nan
    table["cost_x"] = table["cost_usd"] / ref_cost if ref_cost else np.nan
    how = (
        f"mean per run; multiple = a method's mean / {reference}'s mean; tokens: prompt + completion (hidden "
        "reasoning included) as the endpoint counted; dollars: as the gateway priced each call from its "
        "profile's prices at run time; a call the LLM cache served costs 0 (cached_runs)"
    )
    return Analysis(table[cols], sample_size(llm), how)
