"""Who and where the MAC paper's analyses rank, and the record each analysis returns.

The analyses (:mod:`agentcausal.discovery.ranks`, :mod:`agentcausal.discovery.analyses`) all read the
scored frame (:func:`agentcausal.discovery.evaluate.outcomes_frame`: one row per (dataset, seed, method),
metric cells NaN where a run failed or has no true graph; degraded runs are scored as they returned),
optionally with a ``backbone`` column when several runs (one per backbone LLM) are stacked
(:func:`stack_backbones`). Each returns an :class:`Analysis`: its table, its ``n`` and the SHD convention
it ranks by, so every table can say how it was computed.

**Who is ranked.** The paper ranks MAC against its nine baselines (§4.1: PC, FCI, Exact Search, GES,
DirectLiNGAM; zero-shot, ReAct, LLM-SCD, ILS-CSL: :data:`PAPER_BASELINES`); :func:`paper_methods` names
``mac`` and the baselines of a frame. The ablations (:data:`ABLATIONS`), rounds variants
(``mac (rounds 2)``) and anonymised variants (``mac@names``) are ranked apart.

**Points.** The paper's 15 evaluation points are its five datasets (Earthquake, Cancer, Survey, Auto
MPG, Child: :data:`PAPER_DATASETS`) × three metrics (:data:`RANKED_METRICS`), per backbone
(:func:`evaluation_points`). :func:`paper_scope` keeps the paper's datasets of a run and names the ones
left out and why (``discover -d main`` adds Asia, which the paper's Table 2 lacks).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import pandas as pd

from agentcausal.discovery.variants import MethodVariant

__all__ = [
    "RANKED_METRICS",
    "HIGHER_IS_BETTER",
    "MAC_METHODS",
    "ABLATIONS",
    "PAPER_BASELINES",
    "PAPER_DATASETS",
    "Analysis",
    "stack_backbones",
    "evaluation_points",
    "sample_size",
    "paper_methods",
    "paper_scope",
]

#: the paper's three metrics (§4.1), in its order; SHD as the paper defines it (App. B: a reversal counts twice)
RANKED_METRICS = ("shd2", "nhd", "f1")
#: metrics where a larger value is better (the others: smaller is better)
HIGHER_IS_BETTER = frozenset({"f1", "skeleton_f1", "precision", "recall"})
#: MAC and its ablations (§4.3, §4.4; the ``mac`` family of the discovery specs): never a baseline of MAC
MAC_METHODS = ("mac", "mac_single", "dcm_only", "mdm_only")
#: MAC's ablations (§4.3, §4.4): ranked apart from MAC and its baselines
ABLATIONS = MAC_METHODS[1:]
#: the paper's nine baselines (§4.1): five statistical, four LLM-based
PAPER_BASELINES = ("pc", "fci", "exact_search", "ges", "direct_lingam", "llm_zero_shot", "react", "llm_scd", "ils_csl")
#: the paper's five datasets (§4.1, Table 2); with three metrics, its 15 evaluation points per backbone
PAPER_DATASETS = ("earthquake", "cancer", "survey", "auto_mpg", "child")


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


def paper_methods(df: pd.DataFrame) -> list[str]:
    """The methods the paper ranks, in frame order: ``mac`` and every baseline under its plain name (no
    ablation, no rounds or anonymised variant).

    >>> paper_methods(pd.DataFrame({"method": ["mac", "dcm_only", "pc", "mac (rounds 2)", "react@names"]}))
    ['mac', 'pc']
    """
    methods = list(dict.fromkeys(df["method"])) if "method" in df and not df.empty else []
    return [m for m in methods if m == "mac" or (MethodVariant.parse(m) == MethodVariant(m) and m not in MAC_METHODS)]


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
