"""The MAC paper's analyses of a discovery run: the rounds sweep, mean ranks, first places, win/tie/loss
counts, cost multiples, by the paper's definitions.

All read the scored frame (:func:`agentcausal.discovery.evaluate.outcomes_frame`: one row per
(dataset, seed, method), metric cells NaN where a run failed or has no true graph; degraded runs are
scored as they returned), optionally with a ``backbone`` column when several runs (one per backbone
LLM) are stacked (:func:`stack_backbones`). Each result carries its ``n`` and the SHD convention it
ranks by, so every table can say how it was computed.

**Who is ranked.** The paper ranks MAC against its nine baselines (§4.1: PC, FCI, Exact Search, GES,
DirectLiNGAM; zero-shot, ReAct, LLM-SCD, ILS-CSL). :func:`mean_ranks` and :func:`first_places` rank
``mac`` and the baselines only (:func:`paper_methods`); the ablations (``mac_single``, ``dcm_only``,
``mdm_only``), rounds variants (``mac (rounds 2)``) and anonymised variants (``mac@names``) are ranked
separately, each in MAC's place against the same baselines (:func:`variant_ranks`), so adding one never
moves MAC's rank.

**Points.** The paper's 15 evaluation points are its five datasets (Earthquake, Cancer, Survey, Auto
MPG, Child: :data:`PAPER_DATASETS`) × three metrics, per backbone. :func:`paper_scope` keeps the
paper's datasets of a run and names the ones left out and why (``discover -d main`` adds Asia, which
the paper's Table 2 lacks).

**SHD.** The paper defines SHD over ordered pairs of the adjacency matrix (App. B), so a reversed edge
counts twice: the ``shd2`` column, by which every rank here is taken (:data:`RANKED_METRICS`); the
reversal-once SHD (``shd`` under ``--shd-reversal 1``) is ranked beside it, labelled
(:data:`BESIDE_METRICS`).

* :func:`rounds_curve` (§4.3, Fig. 4): per rounds variant and dataset, SHD, NHD and F1 against the
  number of rounds.
* :func:`mean_ranks` (§4.2, Fig. 2): each method's rank on each point (a dataset, or a (backbone,
  dataset) pair), by the mean over seeds, lower SHD / NHD and higher F1 first; ties share the average
  of the ranks they span; then the mean over points.
* :func:`first_places` (§4.2): "first on k of N": per backbone, on how many of the (dataset, metric)
  points MAC is first (and second) among MAC and its baselines; a tie for first counts as first for
  every tied method (the paper does not say; ``ties`` counts them).
* :func:`win_tie_loss`: per MAC row and baseline and metric, points where MAC is better, equal, worse
  (our pairwise view, not the paper's).
* :func:`cost_multiples` (§4.4, Fig. 5): each LLM method's mean tokens and dollars per run as a
  multiple of the paper's reference baselines' (:data:`COST_REFERENCES`: the four LLM baselines, the
  paper's "16× to 25× more tokens than standard baselines"; zero-shot first). Each method's calls read
  only its own cached replies (:func:`agentcausal.discovery.registry.cache_namespace`), so an
  ablation's cost is that of a run of it alone.
* :func:`paper_analyses`: all of them on the paper's scope, in one dict.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1-§4.4, Figs. 2, 4, 5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd

from agentcausal.discovery.graphs.metrics import SHD_CONVENTION
from agentcausal.discovery.rounds import base_method, split_rounds

__all__ = [
    "RANKED_METRICS",
    "BESIDE_METRICS",
    "ROUNDS_METRICS",
    "HIGHER_IS_BETTER",
    "MAC_METHODS",
    "ABLATIONS",
    "PAPER_BASELINES",
    "PAPER_DATASETS",
    "ZERO_SHOT",
    "COST_REFERENCES",
    "Analysis",
    "stack_backbones",
    "evaluation_points",
    "sample_size",
    "paper_methods",
    "paper_scope",
    "rounds_curve",
    "mean_ranks",
    "variant_ranks",
    "first_places",
    "win_tie_loss",
    "cost_frame",
    "cost_multiples",
    "paper_analyses",
]

#: the paper's three metrics (§4.1), in its order; SHD as the paper defines it (App. B: a reversal counts twice)
RANKED_METRICS = ("shd2", "nhd", "f1")
#: the rounds sweep's metrics (not a rank: SHD under the run's ``--shd-reversal``)
ROUNDS_METRICS = ("shd", "nhd", "f1")
#: ranked beside the paper's, labelled: the reversal-once SHD (``--shd-reversal 1``)
BESIDE_METRICS = ("shd",)
#: how the rank tables name the two SHDs
SHD_LABELS = {"shd2": "SHD (paper: reversal counts twice)", "shd": "SHD (reversal counts once)"}
#: metrics where a larger value is better (the others: smaller is better)
HIGHER_IS_BETTER = frozenset({"f1", "skeleton_f1", "precision", "recall"})
#: methods that are MAC or one of its ablations (never a baseline of MAC)
MAC_METHODS = ("mac", "mac_single", "dcm_only", "mdm_only")
#: MAC's ablations (§4.3, §4.4): ranked apart from MAC and its baselines
ABLATIONS = ("mac_single", "dcm_only", "mdm_only")
#: the paper's nine baselines (§4.1): five statistical, four LLM-based
PAPER_BASELINES = ("pc", "fci", "exact_search", "ges", "direct_lingam", "llm_zero_shot", "react", "llm_scd", "ils_csl")
#: the paper's five datasets (§4.1, Table 2); with three metrics, its 15 evaluation points per backbone
PAPER_DATASETS = ("earthquake", "cancer", "survey", "auto_mpg", "child")
#: the method cost multiples are relative to first
ZERO_SHOT = "llm_zero_shot"
#: the paper's "standard baselines" of its cost comparison (§4.4): the LLM baselines, zero-shot first
COST_REFERENCES = ("llm_zero_shot", "react", "llm_scd", "ils_csl")
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


def rounds_curve(df: pd.DataFrame, metrics: Sequence[str] = ROUNDS_METRICS) -> Analysis:
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


def paper_methods(df: pd.DataFrame) -> list[str]:
    """The methods the paper ranks, in frame order: ``mac`` and every baseline under its plain name (no
    ablation, no rounds or anonymised variant).

    >>> paper_methods(pd.DataFrame({"method": ["mac", "dcm_only", "pc", "mac (rounds 2)", "react@names"]}))
    ['mac', 'pc']
    """
    methods = list(dict.fromkeys(df["method"])) if "method" in df and not df.empty else []
    return [m for m in methods if m == "mac" or (m == base_method(m) and m not in MAC_METHODS and "@" not in m)]


def _baselines(df: pd.DataFrame) -> list[str]:
    return [m for m in paper_methods(df) if m != "mac"]


def _variants(df: pd.DataFrame) -> list[str]:
    """Every method ranked apart: ablations, rounds and anonymised variants of MAC and of its ablations."""
    methods = list(dict.fromkeys(df["method"])) if "method" in df and not df.empty else []
    return [m for m in methods if base_method(m) in MAC_METHODS and m != "mac"]


def paper_scope(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The rows on the paper's datasets (:data:`PAPER_DATASETS`) and a sentence naming the points.

    A run with none of the paper's datasets (user data) keeps all its rows, and says so.

    Returns
    -------
    (rows kept, note), e.g. note ``"points: 5 of the paper's 5 datasets (earthquake, cancer, survey,
    auto_mpg, child) × 3 metrics = 15 per backbone; left out: asia (not among the paper's datasets,
    Table 2)"``.

    >>> kept, note = paper_scope(pd.DataFrame({"dataset": ["asia", "cancer"], "method": ["pc", "pc"]}))
    >>> list(kept["dataset"]), note.split(";")[1].strip()
    (['cancer'], "left out: asia (not among the paper's datasets, Table 2)")
    """
    present = list(dict.fromkeys(df["dataset"])) if "dataset" in df and not df.empty else []
    ours = [d for d in PAPER_DATASETS if d in present]
    metrics = len(RANKED_METRICS)
    if not ours:
        return df, (
            f"points: this run's {len(present)} datasets × {metrics} metrics (none of the paper's five: "
            f"{', '.join(PAPER_DATASETS)})"
        )
    note = (
        f"points: {len(ours)} of the paper's {len(PAPER_DATASETS)} datasets ({', '.join(ours)}) × {metrics} "
        f"metrics = {len(ours) * metrics} per backbone"
    )
    extra = [d for d in present if d not in ours]
    if extra:
        note += f"; left out: {', '.join(extra)} (not among the paper's datasets, Table 2)"
    missing = [d for d in PAPER_DATASETS if d not in ours]
    if missing:
        note += f"; not run: {', '.join(missing)}"
    return df[df["dataset"].isin(ours)], note


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

    Only ``mac`` and the baselines are ranked (:func:`paper_methods`; ablations and variants:
    :func:`variant_ranks`). On each point they are ranked on their mean over seeds (rank 1 = lowest
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
    return base_method(method) == "mac"


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


def cost_multiples(
    costs: pd.DataFrame, *, reference: str = ZERO_SHOT, references: Sequence[str] = COST_REFERENCES
) -> Analysis:
    """Each LLM method's mean tokens and dollars per run, as a multiple of ``reference``'s and of each of the
    paper's reference baselines' (§4.4: "16× to 25× more tokens than standard baselines").

    Each method's calls read only the replies it cached itself
    (:func:`agentcausal.discovery.registry.cache_namespace`), so in one run with ``mac`` and its
    ablations each one's tokens are those of a run of it alone.

    Parameters
    ----------
    costs : :func:`cost_frame` (rows without LLM calls, the statistical methods', are left out)
    reference : the method ``tokens_x`` and ``cost_x`` are relative to (the zero-shot baseline)
    references : the reference baselines of ``tokens_x_range`` (those that ran)

    Returns
    -------
    Analysis whose table has columns method, runs, tokens (mean per run), tokens_x (multiple of the
    reference's mean), cost_usd (mean per run), cost_x (NaN where the reference cost nothing: unpriced
    profiles), tokens_x_range (``"min–max"`` of the token multiples over the reference baselines that
    ran, e.g. ``"16.0–25.0"``; ``-`` when none did), cached_runs (runs with calls the LLM cache served,
    which cost nothing here), models; empty when no LLM method ran. Multiples are NaN when
    ``reference`` did not run.

    Examples
    --------
    >>> c = pd.DataFrame({"dataset": ["a"] * 4, "seed": [0] * 4, "method": ["llm_zero_shot", "react", "mac", "pc"],
    ...                   "tokens": [100.0, 64.0, 1600.0, 0.0], "cost_usd": [0.001, 0.001, 0.02, 0.0],
    ...                   "calls": [1, 3, 7, 0], "models": ["m", "m", "m", ""]})
    >>> cost_multiples(c).table[["method", "tokens_x", "cost_x", "tokens_x_range"]].values.tolist()[2]
    ['mac', 16.0, 20.0, '16.0–25.0']
    """
    cols = ["method", "runs", "tokens", "tokens_x", "cost_usd", "cost_x", "tokens_x_range", "cached_runs", "models"]
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
    by = table.set_index("method")["tokens"]
    ran = [r for r in references if r in by.index and by[r] > 0]

    def span(tokens: float) -> str:
        xs = [tokens / by[r] for r in ran]
        return f"{min(xs):.1f}–{max(xs):.1f}" if xs else "-"

    table["tokens_x_range"] = [span(float(t)) for t in table["tokens"]]
    how = (
        f"mean per run; multiple = a method's mean / {reference}'s mean; range: over the paper's reference "
        f"baselines that ran ({', '.join(ran) or 'none'}; the paper's 'standard baselines', §4.4); tokens: "
        "prompt + completion (hidden reasoning included) as the endpoint counted; each method reads only "
        "its own cached replies, so an ablation costs what it costs alone; dollars: as the gateway priced "
        "each call from its profile's prices at run time; a call the LLM cache served costs 0 (cached_runs)"
    )
    return Analysis(table[cols], sample_size(llm), how)


def paper_analyses(df: pd.DataFrame, costs: pd.DataFrame | None = None) -> dict[str, Any]:
    """Every analysis of the MAC paper on a scored frame, by its definitions, on the paper's datasets.

    Parameters
    ----------
    df : scored frame (optionally stacked over backbones, :func:`stack_backbones`)
    costs : :func:`cost_frame` of the same outcomes, optional

    Returns
    -------
    dict with ``scope`` (:func:`paper_scope`'s note: the points and the datasets left out), and the
    :class:`Analysis` of each: ``mean_ranks`` (MAC and its baselines), ``variant_ranks`` (ablations and
    variants, each in MAC's place), ``first_places``, ``win_tie_loss``, ``rounds_curve`` and, with
    ``costs``, ``cost_multiples`` (over the same datasets).
    """
    scoped, note = paper_scope(df)
    out: dict[str, Any] = {
        "scope": note,
        "mean_ranks": mean_ranks(scoped),
        "variant_ranks": variant_ranks(scoped),
        "first_places": first_places(scoped),
        "win_tie_loss": win_tie_loss(scoped),
        "rounds_curve": rounds_curve(scoped),
    }
    if costs is not None:
        kept = set(scoped["dataset"]) if "dataset" in scoped else set()
        out["cost_multiples"] = cost_multiples(costs[costs["dataset"].isin(kept)] if kept else costs)
    return out
