"""The MAC paper's rankings of a discovery run (§4.2, Fig. 2), by its definitions, and our pairwise view.

Each reads the scored frame (:mod:`agentcausal.discovery.scope`) and returns an
:class:`~agentcausal.discovery.scope.Analysis`. :func:`mean_ranks` and :func:`first_places` rank ``mac``
and its baselines only (:func:`~agentcausal.discovery.scope.paper_methods`); the ablations, rounds and
anonymised variants are ranked separately, each in MAC's place against the same baselines
(:func:`variant_ranks`), so adding one never moves MAC's rank.

**SHD.** The paper defines SHD over ordered pairs of the adjacency matrix (App. B), so a reversed edge
counts twice: the ``shd2`` column, by which every rank here is taken
(:data:`~agentcausal.discovery.scope.RANKED_METRICS`); the reversal-once SHD (``shd`` under
``--shd-reversal 1``) is ranked beside it, labelled (:data:`BESIDE_METRICS`, :data:`SHD_LABELS`).

* :func:`mean_ranks` (§4.2, Fig. 2): each method's rank on each point (a dataset, or a (backbone,
  dataset) pair), by the mean over seeds, lower SHD / NHD and higher F1 first; ties share the average
  of the ranks they span; then the mean over points.
* :func:`variant_ranks`: the same for each ablation and variant, each in MAC's place.
* :func:`first_places` (§4.2): "first on k of N": per backbone, on how many of the (dataset, metric)
  points MAC is first (and second) among MAC and its baselines; a tie for first counts as first for
  every tied method (the paper does not say; ``ties`` counts them).
* :func:`win_tie_loss`: per MAC row and baseline and metric, points where MAC is better, equal, worse
  (our pairwise view, not the paper's).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.2, Fig. 2, App. B.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from agentcausal.discovery.scope import (
    HIGHER_IS_BETTER,
    MAC_METHODS,
    RANKED_METRICS,
    Analysis,
    evaluation_points,
    paper_methods,
    sample_size,
)
from agentcausal.discovery.variants import MethodVariant

__all__ = [
    "BESIDE_METRICS",
    "SHD_LABELS",
    "TIE_TOLERANCE",
    "mean_ranks",
    "variant_ranks",
    "first_places",
    "win_tie_loss",
]

#: ranked beside the paper's, labelled: the reversal-once SHD (``--shd-reversal 1``)
BESIDE_METRICS = ("shd",)
#: how the rank tables name the two SHDs
SHD_LABELS = {"shd2": "SHD (paper: reversal counts twice)", "shd": "SHD (reversal counts once)"}
#: two seed means closer than this are a tie
TIE_TOLERANCE = 1e-9


def _seed_means(df: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    keys = [*evaluation_points(df), "method"]
    scored = df.dropna(subset=list(metrics), how="all")
    return scored.groupby(keys, sort=False)[list(metrics)].mean().reset_index()


def _baselines(df: pd.DataFrame) -> list[str]:
    return [m for m in paper_methods(df) if m != "mac"]


def _variants(df: pd.DataFrame) -> list[str]:
    """Every method ranked apart: ablations, rounds and anonymised variants of MAC and of its ablations."""
    methods = list(dict.fromkeys(df["method"])) if "method" in df and not df.empty else []
    return [m for m in methods if MethodVariant.parse(m).base in MAC_METHODS and m != "mac"]


def _with_paper_shd(df: pd.DataFrame) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """``df`` with the paper's SHD (``shd2``) and the metrics ranked beside it that it holds.

    ``shd2`` is taken from ``shd`` where a frame scored at ``--shd-reversal 2`` lacks it; the
    reversal-once SHD is ranked beside only where ``shd`` counts a reversal once.
    """
    cost = set(df["shd_reversal_cost"].dropna().astype(int)) if "shd_reversal_cost" in df else {1}
    if "shd2" not in df:
        df = df.assign(shd2=df["shd"] if cost == {2} and "shd" in df else np.nan)
    beside = tuple(m for m in BESIDE_METRICS if m in df and cost <= {1})
    return df, beside


def _shd_convention(beside: Sequence[str] = ()) -> str:
    once = "; beside it, SHD with a reversed edge counted once" if "shd" in beside else ""
    return "SHD as the paper defines it (App. B, over ordered pairs): a reversed edge counts twice" + once


def _rank_convention(beside: Sequence[str]) -> str:
    return _shd_convention(beside) + "; rank 1 = best, ties share the average rank"


def _ranked(
    means: pd.DataFrame, metrics: Sequence[str], points: list[str], how: Literal["average", "min"] = "average"
) -> pd.DataFrame:
    """Each metric replaced by its rank among the methods of each point (1 = best)."""
    ranked = means.copy()
    for m in metrics:
        ranked[m] = means.groupby(points, sort=False)[m].rank(method=how, ascending=m not in HIGHER_IS_BETTER)
    return ranked


def _mean_rank_table(ranked: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    table = (
        ranked.groupby("method", sort=False)
        .agg(**{m: (m, "mean") for m in metrics}, points=(metrics[0], "count"))
        .reset_index()
    )
    return table.sort_values([metrics[0], "method"], kind="stable").reset_index(drop=True)


def mean_ranks(df: pd.DataFrame, metrics: Sequence[str] = RANKED_METRICS) -> Analysis:
    """MAC's and its baselines' mean rank over the evaluation points (datasets, or backbones × datasets).

    Only ``mac`` and the baselines are ranked (:func:`~agentcausal.discovery.scope.paper_methods`; ablations
    and variants: :func:`variant_ranks`). On each point they are ranked on their mean over seeds (rank 1 = lowest
    SHD / NHD, highest F1); tied methods share the average of the ranks they span
    (``rank(method="average")``); a method's mean rank is the mean over the points where it was scored.
    SHD is the paper's (``shd2``, a reversal counts twice); the reversal-once ``shd`` is ranked beside.

    Parameters
    ----------
    df : scored frame (optionally with ``backbone``)
    metrics : metric columns ranked (the first sorts the table)

    Returns
    -------
    Analysis whose table has columns method, ``<metric>`` (mean rank), ``shd`` (the reversal-once rank,
    where the frame has it), points (where it was ranked), sorted by the first metric; ``n`` = the
    points' datasets × seeds (× backbones).

    Examples
    --------
    >>> df = pd.DataFrame({"dataset": ["a", "a", "a", "a", "b", "b", "b"], "seed": [0] * 7,
    ...                    "method": ["mac", "pc", "ges", "dcm_only", "mac", "pc", "ges"],
    ...                    "shd2": [1, 1, 3, 0, 0, 2, 1.0], "nhd": [.1] * 7, "f1": [.9, .9, .1, 1, 1, .2, .5]})
    >>> mean_ranks(df).table[["method", "shd2", "f1"]].values.tolist()
    [['mac', 1.25, 1.25], ['pc', 2.25, 2.25], ['ges', 2.5, 2.5]]
    """
    d, beside = _with_paper_shd(df)
    cols = ["method", *metrics, *beside, "points"]
    keep = paper_methods(d)
    ranked_cols = [*metrics, *beside]
    means = _seed_means(d[d["method"].isin(keep)], ranked_cols) if keep else pd.DataFrame()
    if means.empty:
        return Analysis(pd.DataFrame(columns=cols), "0 runs", _rank_convention(beside))
    table = _mean_rank_table(_ranked(means, ranked_cols, evaluation_points(d)), ranked_cols)
    table["points"] = _mean_rank_table(_ranked(means, metrics, evaluation_points(d)), metrics)["points"]
    scored = d[d["method"].isin(keep)]
    return Analysis(table[cols], sample_size(scored), _rank_convention(beside))


def variant_ranks(df: pd.DataFrame, metrics: Sequence[str] = RANKED_METRICS) -> Analysis:
    """The mean rank of each ablation and variant (``dcm_only``, ``mac (rounds 2)``, ``mac@names`` ...), each
    ranked in MAC's place against the same baselines (MAC itself left out), as :func:`mean_ranks` ranks MAC.

    Returns
    -------
    Analysis whose table has the columns of :func:`mean_ranks`, one row per variant; empty when none ran.

    Examples
    --------
    >>> df = pd.DataFrame({"dataset": ["a"] * 4, "seed": [0] * 4, "method": ["mac", "pc", "ges", "dcm_only"],
    ...                    "shd2": [1, 1, 3, 0.0], "nhd": [.1] * 4, "f1": [.9, .9, .1, 1]})
    >>> variant_ranks(df).table[["method", "shd2", "points"]].values.tolist()
    [['dcm_only', 1.0, 1]]
    """
    d, beside = _with_paper_shd(df)
    cols = ["method", *metrics, *beside, "points"]
    baselines, rows = _baselines(d), []
    ranked_cols = [*metrics, *beside]
    for v in _variants(d):
        means = _seed_means(d[d["method"].isin([v, *baselines])], ranked_cols)
        if means.empty:
            continue
        t = _mean_rank_table(_ranked(means, ranked_cols, evaluation_points(d)), ranked_cols)
        rows.append(t[t["method"] == v])
    if not rows:
        return Analysis(pd.DataFrame(columns=cols), "0 runs", _rank_convention(beside))
    table = pd.concat(rows, ignore_index=True)
    scored = d[d["method"].isin([*_variants(d), *baselines])]
    return Analysis(table[cols], sample_size(scored), _rank_convention(beside) + "; each against the baselines alone")


def first_places(df: pd.DataFrame, metrics: Sequence[str] = RANKED_METRICS) -> Analysis:
    """ "First on k of N" (§4.2): per backbone, on how many (dataset, metric) points MAC is first, and second,
    among MAC and its baselines; each ablation and variant likewise in MAC's place.

    On each (dataset, metric) point the methods' seed means are ranked with ``rank(method="min")``: a tie
    for first makes every tied method first (the paper does not define ties; ``ties`` counts the first
    places shared). N is the points where the MAC row was scored.

    Returns
    -------
    Analysis whose table has columns backbone (when stacked), method, first, second, ties, points, and
    ``text`` (e.g. ``"first on 10 of 15, second on 4"``).

    Examples
    --------
    >>> df = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "seed": [0] * 4, "method": ["mac", "pc"] * 2,
    ...                    "shd2": [1, 2, 3, 3.0], "nhd": [.1, .2, .3, .3], "f1": [.9, .8, .4, .5]})
    >>> first_places(df).table[["method", "first", "second", "ties", "text"]].values.tolist()
    [['mac', 5, 1, 2, 'first on 5 of 6, second on 1']]
    """
    d, _ = _with_paper_shd(df)
    stacked = "backbone" in d and d["backbone"].nunique() > 1
    cols = [*(["backbone"] if stacked else []), "method", "first", "second", "ties", "points", "text"]
    baselines = _baselines(d)
    macs = [m for m in ["mac", *_variants(d)] if m in set(d["method"])] if not d.empty else []
    rows: list[dict[str, Any]] = []
    groups = list(d.groupby("backbone", sort=False)) if stacked else [(None, d)]
    for backbone, g in groups:
        for m in macs:
            means = _seed_means(g[g["method"].isin([m, *baselines])], metrics)
            if means.empty:
                continue
            ranked = _ranked(means, metrics, ["dataset"], how="min")
            raw = means.set_index(["dataset", "method"])
            mine = ranked[ranked["method"] == m]
            first = second = ties = points = 0
            for _, row in mine.iterrows():
                for metric in metrics:
                    r = row[metric]
                    if pd.isna(r):
                        continue
                    points += 1
                    first += int(r == 1)
                    second += int(r == 2)
                    if r == 1:
                        at = raw.xs(row["dataset"], level="dataset")[metric]
                        ties += int((at.sub(at[m]).abs() <= TIE_TOLERANCE).sum() > 1)
            rows.append(
                {
                    **({"backbone": backbone} if stacked else {}),
                    "method": m,
                    "first": first,
                    "second": second,
                    "ties": ties,
                    "points": points,
                    "text": f"first on {first} of {points}, second on {second}",
                }
            )
    how = (
        _shd_convention()
        + f"; per backbone, each (dataset, metric) point ranks the MAC row and the {len(baselines)} baselines "
        "on their seed means; a tie for first counts as first for each tied method (ties)"
    )
    scored = d[d["method"].isin([*macs, *baselines])]
    return Analysis(pd.DataFrame(rows, columns=cols), sample_size(scored), how)


def _is_mac(method: str) -> bool:
    return MethodVariant.parse(method).base == "mac"


def win_tie_loss(df: pd.DataFrame, metrics: Sequence[str] = RANKED_METRICS) -> Analysis:
    """Win / tie / loss counts of each MAC row (``mac``, its rounds and anonymised variants) against each
    baseline (under its plain name: not MAC, an ablation or a variant), per metric. Our pairwise view; the
    paper's count is :func:`first_places`.

    Parameters
    ----------
    df : scored frame (optionally with ``backbone``)
    metrics : metric columns (SHD: the paper's, ``shd2``)

    Returns
    -------
    Analysis whose table has columns mac, baseline, then per metric ``<metric>`` as ``"W/T/L"`` and
    ``<metric>_points`` (points where both were scored); one row per (MAC row, baseline); empty when
    there is no MAC row or no baseline.

    Examples
    --------
    >>> df = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "seed": [0] * 4, "method": ["mac", "pc"] * 2,
    ...                    "shd2": [1, 2, 3, 3.0], "nhd": [.1, .2, .3, .3], "f1": [.9, .8, .4, .5]})
    >>> win_tie_loss(df).table[["mac", "baseline", "shd2", "f1"]].values.tolist()
    [['mac', 'pc', '1/1/0', '1/0/1']]
    """
    df, _ = _with_paper_shd(df)
    means = _seed_means(df, metrics)
    points = evaluation_points(df)
    cols = ["mac", "baseline", *[c for m in metrics for c in (m, f"{m}_points")]]
    methods = list(dict.fromkeys(means["method"])) if not means.empty else []
    macs = [m for m in methods if _is_mac(m)]
    baselines = _baselines(means) if not means.empty else []
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
        _shd_convention() + "; per point the seed means are compared, equal within 1e-9 is a tie",
    )
