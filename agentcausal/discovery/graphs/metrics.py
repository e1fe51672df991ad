"""Graph metrics: SHD, NHD, and precision / recall / F1 on directed edges and on the skeleton.

Conventions (every table states them through :data:`SHD_CONVENTION` and
:data:`NHD_CONVENTION`):

* **SHD** (structural Hamming distance). Per unordered node pair, the true
  and predicted edge states (none, ``i --> j``, ``j --> i``, or another mark:
  undirected, bidirected, circle) are compared; each differing pair adds 1.
  So a reversed edge counts once. With ``reversal_cost=2`` the SHD is the
  literal sum over ordered pairs of ``|A_true[i, j] - A_pred[i, j]|`` (the
  paper's appendix B definition, where a reversal counts twice), with
  undirected edges setting both entries of A.
* **NHD** (normalised Hamming distance): the Hamming distance of the
  *symmetric skeleton* matrices (an edge of any kind sets both ``S[i, j]`` and
  ``S[j, i]``) divided by ``d ** 2``. Directions are ignored: an undirected
  edge counts as an adjacency, and a missing or extra adjacency adds
  ``2 / d ** 2``.
* **Directed P / R / F1**: over ``(cause, effect)`` pairs. Only directed
  predicted edges are claims; an undirected, bidirected or circle edge is no
  directed claim, so it lowers recall without lowering precision.
* **Skeleton P / R / F1**: over adjacent pairs, whatever the marks.

Empty sets: precision of no predicted edges is 0 (and F1 0) unless the true
set is empty too, when precision, recall and F1 are all 1.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, app. B.
Tsamardinos, Brown and Aliferis. 2006. "The max-min hill-climbing Bayesian network structure
learning algorithm." Machine Learning 65 (1). doi:10.1007/s10994-006-6889-7.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.exceptions import AlgorithmError

__all__ = [
    "GraphMetrics",
    "SHD_CONVENTION",
    "NHD_CONVENTION",
    "METRIC_COLUMNS",
    "METRICS_FOOTER",
    "shd",
    "nhd",
    "prf",
    "evaluate_graph",
]

SHD_CONVENTION = {1: "SHD: a reversed edge counts once", 2: "SHD: a reversed edge counts twice"}
NHD_CONVENTION = (
    "NHD = sum_ij |S_true[i,j] - S_pred[i,j]| / d^2, S the symmetric d x d skeleton matrix "
    "(directions ignored; an undirected edge is an adjacency)"
)

#: the metric columns every table shows (run tables, bench, README), field -> header, in this order
METRIC_COLUMNS: dict[str, str] = {"shd": "SHD", "shd2": "SHD₂", "nhd": "NHD", "f1": "F1", "skeleton_f1": "skel F1"}

#: the footer every metric table carries: how each column is computed
METRICS_FOOTER = (
    f"{SHD_CONVENTION[1]} (per node pair, a differing edge state counts 1). "
    "SHD₂: a reversed edge counts twice (sum_ij |A_true[i,j] - A_pred[i,j]|; the paper's app. B). "
    f"{NHD_CONVENTION}. F1: directed edges (an undirected, bidirected or circle edge is no directed claim). "
    "skel F1: adjacencies, whatever the marks."
)


class GraphMetrics(BaseModel):
    """Metrics of one predicted graph against the true graph.

    ``shd`` follows ``reversal_cost`` (1 by default); ``shd2`` always counts a
    reversal twice (the paper's literal definition), so every table can show both.
    """

    model_config = ConfigDict(frozen=True)

    shd: int
    reversal_cost: Literal[1, 2]
    shd2: int
    nhd: float
    precision: float
    recall: float
    f1: float
    skeleton_precision: float
    skeleton_recall: float
    skeleton_f1: float
    n_true_edges: int
    n_pred_edges: int


def _check(true: CausalGraph, pred: CausalGraph) -> None:
    if set(true.nodes) != set(pred.nodes):
        raise AlgorithmError("metrics", f"graphs have different nodes: {sorted(set(true.nodes) ^ set(pred.nodes))}")


def _aligned(true: CausalGraph, pred: CausalGraph) -> tuple[np.ndarray, np.ndarray]:
    _check(true, pred)
    order = list(true.nodes)
    reindexed = CausalGraph(nodes=tuple(order), edges=pred.edges)
    return true.to_adjacency(), reindexed.to_adjacency()


def _pair_states(g: CausalGraph) -> dict[frozenset[str], object]:
    out: dict[frozenset[str], object] = {}
    for e in g.edges:
        o = e.oriented()
        out[frozenset((e.u, e.v))] = o if o is not None else ("other", frozenset((e.u, e.v)))
    return out


def shd(true: CausalGraph, pred: CausalGraph, *, reversal_cost: Literal[1, 2] = 1) -> int:
    """Structural Hamming distance.

    Parameters
    ----------
    true, pred : CausalGraph over the same nodes
    reversal_cost : 1 (default: one difference per node pair) or 2 (the
        literal adjacency-matrix Hamming distance, a reversal counts twice)

    Returns
    -------
    int >= 0

    Raises
    ------
    AlgorithmError if the node sets differ or ``reversal_cost`` is not 1 or 2.

    Examples
    --------
    >>> t = CausalGraph.from_edges("ABC", [("A", "B"), ("B", "C")])
    >>> p = CausalGraph.from_edges("ABC", [("B", "A")])
    >>> shd(t, p), shd(t, p, reversal_cost=2)
    (2, 3)
    """
    if reversal_cost not in (1, 2):
        raise AlgorithmError("metrics", f"reversal_cost must be 1 or 2, got {reversal_cost}")
    if reversal_cost == 2:
        a, b = _aligned(true, pred)
        return int(np.abs(a - b).sum())
    _check(true, pred)
    st, sp = _pair_states(true), _pair_states(pred)
    return sum(1 for pair in set(st) | set(sp) if st.get(pair) != sp.get(pair))


def nhd(true: CausalGraph, pred: CausalGraph) -> float:
    """Normalised Hamming distance of the skeletons, divided by d**2 (see module docstring).

    Returns
    -------
    float in [0, 1)

    Raises
    ------
    AlgorithmError if the node sets differ.
    """
    _check(true, pred)
    d = len(true.nodes)
    diff = true.skeleton() ^ pred.skeleton()
    return 2 * len(diff) / d**2 if d else 0.0


def prf(true: Set, pred: Set) -> tuple[float, float, float]:
    """Precision, recall and F1 of a predicted set against a true set (see module docstring on empty sets)."""
    if not true and not pred:
        return 1.0, 1.0, 1.0
    tp = len(true & pred)
    p = tp / len(pred) if pred else 0.0
    r = tp / len(true) if true else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def evaluate_graph(true: CausalGraph, pred: CausalGraph, *, reversal_cost: Literal[1, 2] = 1) -> GraphMetrics:
    """All metrics of ``pred`` against ``true``.

    Parameters
    ----------
    true, pred : CausalGraph over the same nodes
    reversal_cost : 1 or 2, see :func:`shd`

    Returns
    -------
    GraphMetrics

    Raises
    ------
    AlgorithmError if the node sets differ.

    References
    ----------
    Le et al., arXiv:2407.15073, app. B (SHD, NHD, F1).
    """
    p, r, f = prf(true.directed_edges(), pred.directed_edges())
    sp, sr, sf = prf(true.skeleton(), pred.skeleton())
    return GraphMetrics(
        shd=shd(true, pred, reversal_cost=reversal_cost),
        reversal_cost=reversal_cost,
        shd2=shd(true, pred, reversal_cost=2),
        nhd=nhd(true, pred),
        precision=p,
        recall=r,
        f1=f,
        skeleton_precision=sp,
        skeleton_recall=sr,
        skeleton_f1=sf,
        n_true_edges=len(true.edges),
        n_pred_edges=len(pred.edges),
    )
