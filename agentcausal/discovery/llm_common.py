"""Pieces the LLM discovery baselines share: prompts' system message, data summaries, edge texts.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1 (the LLM baselines).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from agentcausal.discovery.datasets import Dataset

__all__ = ["SYSTEM", "system_message", "data_summary", "edges_text"]

SYSTEM = "You are a causal discovery expert. Reply only with JSON."


def system_message() -> dict[str, str]:
    return {"role": "system", "content": SYSTEM}


def edges_text(edges: Iterable[str]) -> str:
    """Edges one per line (``(none)`` when empty)."""
    lines = list(edges)
    return "\n".join(lines) if lines else "(none)"


def data_summary(ds: Dataset, *, top_pairs: int | None = None) -> str:
    """Summary statistics of the data: per variable its state frequencies (discrete) or mean and std,
    then the most associated pairs (absolute Spearman correlation), strongest first.

    Parameters
    ----------
    ds : Dataset
    top_pairs : int, pairs listed (default ``2 d``)

    Returns
    -------
    str
    """
    x = ds.data
    lines = [f"{ds.n} rows, {ds.d} variables, {ds.data_type}."]
    for j, v in enumerate(ds.variables):
        col = x[:, j]
        if ds.data_type == "discrete":
            vals, counts = np.unique(col.astype(int), return_counts=True)
            lines.append(f"{v}: " + ", ".join(f"{int(a)}: {c / ds.n:.2f}" for a, c in zip(vals, counts)))
        else:
            lines.append(f"{v}: mean {col.mean():.4g}, std {col.std():.4g}")
    ranks = np.argsort(np.argsort(x, axis=0), axis=0).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.nan_to_num(np.corrcoef(ranks, rowvar=False))
    pairs = sorted(((abs(c[i, j]), i, j) for i in range(ds.d) for j in range(i + 1, ds.d)), reverse=True)
    k = top_pairs if top_pairs is not None else 2 * ds.d
    lines.append("Strongest associations (|Spearman r|): " + "; ".join(
        f"{ds.variables[i]}-{ds.variables[j]} {r:.2f}" for r, i, j in pairs[:k]))
    return "\n".join(lines)
