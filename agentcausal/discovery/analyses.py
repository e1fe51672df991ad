"""The MAC paper's rounds sweep and cost multiples of a discovery run, and all its analyses in one call.

Each reads the scored frame (:mod:`agentcausal.discovery.scope`; costs: :func:`cost_frame`) and returns
an :class:`~agentcausal.discovery.scope.Analysis`; the rankings are :mod:`agentcausal.discovery.ranks`.

* :func:`rounds_curve` (§4.3, Fig. 4): per rounds variant and dataset, SHD, NHD and F1 against the
  number of rounds.
* :func:`cost_multiples` (§4.4, Fig. 5): each LLM method's mean tokens and dollars per run as a
  multiple of the paper's reference baselines' (:data:`COST_REFERENCES`: the four LLM baselines, the
  paper's "16× to 25× more tokens than standard baselines"; zero-shot first). Each method's calls read
  only its own cached replies (:func:`agentcausal.discovery.method_settings.method_handler`), so an
  ablation's cost is that of a run of it alone.
* :func:`paper_analyses`: all of them (rankings included) on the paper's scope, in one dict.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.3-§4.4, Figs. 4, 5.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from agentcausal.discovery.graphs.metrics import SHD_CONVENTION
from agentcausal.discovery.ranks import first_places, mean_ranks, variant_ranks, win_tie_loss
from agentcausal.discovery.scope import Analysis, paper_scope, sample_size
from agentcausal.discovery.variants import MethodVariant

__all__ = [
    "ROUNDS_METRICS",
    "ZERO_SHOT",
    "COST_REFERENCES",
    "rounds_curve",
    "cost_frame",
    "cost_row",
    "COST_COLUMNS",
    "cost_multiples",
    "paper_analyses",
]

#: the rounds sweep's metrics (not a rank: SHD under the run's ``--shd-reversal``)
ROUNDS_METRICS = ("shd", "nhd", "f1")
#: the method cost multiples are relative to first
ZERO_SHOT = "llm_zero_shot"
#: the paper's "standard baselines" of its cost comparison (§4.4): the LLM baselines, zero-shot first
COST_REFERENCES = ("llm_zero_shot", "react", "llm_scd", "ils_csl")


def _convention(df: pd.DataFrame) -> str:
    costs = sorted(set(df["shd_reversal_cost"].dropna().astype(int))) if "shd_reversal_cost" in df else [1]
    return "; ".join(SHD_CONVENTION.get(c, f"SHD reversal cost {c}") for c in costs or [1])


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
    split = [MethodVariant.parse(str(m)) for m in df["method"]] if not df.empty else []
    d = (
        df.assign(
            base=pd.Series([v.with_rounds(None).name for v in split], index=df.index),
            rounds=pd.Series([v.rounds for v in split], index=df.index),
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


#: the columns of :func:`cost_frame`, one :func:`cost_row` each
COST_COLUMNS = (
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
)


def cost_row(o: Any) -> dict[str, Any]:
    """One outcome's row of :func:`cost_frame` (reads ``dataset``, ``seed``, ``method``, ``usage``, ``models``)."""
    u = list((o.usage or {}).values())
    pt = sum(float(s.get("prompt_tokens", 0) or 0) for s in u)
    ct = sum(float(s.get("completion_tokens", 0) or 0) for s in u)
    return {
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


def cost_frame(outcomes: Iterable[Any]) -> pd.DataFrame:
    """Tokens and dollars of each outcome: what it cost when it was computed (a reused run included).

    Parameters
    ----------
    outcomes : ``DiscoveryOutcome`` records (``usage``: stage -> token and cost totals; ``models``), read once

    Returns
    -------
    DataFrame with columns dataset, seed, method, prompt_tokens, completion_tokens, tokens, cost_usd,
    calls (logical LLM calls), requests (sent), cache_hits (calls the LLM cache served: 0 tokens, 0 dollars),
    models (``"profile:model"`` of each stage, ``; ``-joined) (:data:`COST_COLUMNS`, a :func:`cost_row` each).
    """
    return pd.DataFrame([cost_row(o) for o in outcomes], columns=list(COST_COLUMNS))


def cost_multiples(
    costs: pd.DataFrame, *, reference: str = ZERO_SHOT, references: Sequence[str] = COST_REFERENCES
) -> Analysis:
    """Each LLM method's mean tokens and dollars per run, as a multiple of ``reference``'s and of each of the
    paper's reference baselines' (§4.4: "16× to 25× more tokens than standard baselines").

    Each method's calls read only the replies it cached itself
    (:func:`agentcausal.discovery.method_settings.method_handler`), so in one run with ``mac`` and its
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
    df : scored frame (optionally stacked over backbones, :func:`~agentcausal.discovery.scope.stack_backbones`)
    costs : :func:`cost_frame` of the same outcomes, optional

    Returns
    -------
    dict with ``scope`` (:func:`~agentcausal.discovery.scope.paper_scope`'s note: the points and the datasets
    left out), and the :class:`~agentcausal.discovery.scope.Analysis` of each: ``mean_ranks`` (MAC and its
    baselines), ``variant_ranks`` (ablations and variants, each in MAC's place), ``first_places``,
    ``win_tie_loss`` (:mod:`agentcausal.discovery.ranks`), ``rounds_curve`` and, with ``costs``,
    ``cost_multiples`` (over the same datasets).
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
