"""LCE's bidirectional greedy search over the dependency graph (DCFA eqs. 11 to 13, Algorithm 2).

Forward: the pivot's successors (edges p -> j); backward: its predecessors
(edges k -> p), as the paper defines them (the authors' released code swaps
the two names). The scores S(i) come from any ``evaluate`` callable, so the
search runs on hand-built graphs without an LLM.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/DCFA), section 4.2.1, eqs. 11 to 13; appendix K, Algorithm 2.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import NamedTuple

import networkx as nx

__all__ = ["Evaluate", "SearchStep", "SearchResult", "delta_s", "bidirectional_search"]

#: evaluate(indices) -> {i: S(i)}; indices in -1..N-1
Evaluate = Callable[[Collection[int]], Mapping[int, float]]


class SearchStep(NamedTuple):
    """One neighbour evaluated during the search.

    Attributes
    ----------
    direction : "forward" or "backward"
    iteration : int, 1-based iteration of that direction
    pivot : int, the pivot whose neighbour this is
    step : int, the neighbour (0-based)
    s : float, S(step)
    delta_s : float, ΔS(step) = S(step) - S(step - 1)
    accepted : bool, whether it became the next pivot
    """

    direction: str
    iteration: int
    pivot: int
    step: int
    s: float
    delta_s: float
    accepted: bool


class SearchResult(NamedTuple):
    """Outcome of the bidirectional greedy search.

    Attributes
    ----------
    evaluated : tuple of SearchStep, every neighbour evaluated, in order
    path : tuple of SearchStep, the accepted moves (forward first, then backward)
    visited : tuple of int, the hypothesis and every accepted pivot, in visiting order
    stopped : dict direction -> "no_neighbours" | "no_positive" | "max_iterations"
    """

    evaluated: tuple[SearchStep, ...]
    path: tuple[SearchStep, ...]
    visited: tuple[int, ...]
    stopped: dict[str, str]


def delta_s(scores: Mapping[int, float], i: int) -> float:
    """Marginal attributional impact of correcting step i (DCFA eq. 11).

    Parameters
    ----------
    scores : mapping step -> S(step), cosine in [-1, 1]; key -1 is the uncorrected trace
    i : int, 0-based step index

    Returns
    -------
    float, S(i) - S(i - 1).

    Raises
    ------
    KeyError
        If S(i) or S(i - 1) has not been computed.

    Examples
    --------
    >>> delta_s({-1: 0.25, 0: 0.75}, 0)
    0.5
    """
    return scores[i] - scores[i - 1]


def _neighbours(graph: nx.DiGraph, pivot: int, direction: str) -> list[int]:
    if pivot not in graph:
        return []
    nbrs = graph.successors(pivot) if direction == "forward" else graph.predecessors(pivot)
    return sorted(int(x) for x in nbrs)


def bidirectional_search(graph: nx.DiGraph, hypothesis: int, evaluate: Evaluate, *,
                         max_iterations: int) -> SearchResult:
    """Greedy bidirectional search from the hypothesis on the dependency graph (Algorithm 2).

    Forward search: the candidates of pivot p are its **successors**
    {j | (p, j) ∈ E} (eq. 12); backward search: its **predecessors**
    {k | (k, p) ∈ E} (eq. 13). Both start at the hypothesis. In each
    iteration all candidates are scored (one ``evaluate`` call, so their
    simulations run concurrently), the one with the largest ΔS is taken
    (ties: the lower step), and it becomes the pivot if ΔS > 0; otherwise,
    with no candidates, or after ``max_iterations`` moves, that direction stops.
    Note: the authors' released code swaps the names "forward" and
    "backward"; this function follows the paper (forward = successors).
    Edges always point from an earlier to a later step (validated), so each
    direction moves monotonically and terminates even without the cap.

    Parameters
    ----------
    graph : networkx.DiGraph over 0-based steps
    hypothesis : int, the GCA hypothesis (initial pivot p(0))
    evaluate : callable taking a collection of step indices (-1..N-1) and
        returning a mapping index -> S(index); called with each candidate j and j - 1
    max_iterations : int >= 0, most pivot moves per direction

    Returns
    -------
    SearchResult

    Raises
    ------
    ValueError
        If ``max_iterations`` is negative.

    References
    ----------
    DCFA section 4.2.1, eqs. 11 to 13; appendix K, Algorithm 2.

    Examples
    --------
    >>> g = nx.DiGraph([(0, 1), (1, 2)])
    >>> s = {-1: 0.0, 0: 0.1, 1: 0.5, 2: 0.6}
    >>> r = bidirectional_search(g, 1, lambda idx: {i: s[i] for i in idx}, max_iterations=5)
    >>> r.visited, r.stopped
    ((1, 2, 0), {'forward': 'no_neighbours', 'backward': 'no_neighbours'})
    """
    if max_iterations < 0:
        raise ValueError(f"max_iterations must be >= 0, got {max_iterations}")
    evaluated: list[SearchStep] = []
    path: list[SearchStep] = []
    visited = [hypothesis]
    stopped: dict[str, str] = {}
    for direction in ("forward", "backward"):
        pivot = hypothesis
        iteration = 0
        while True:
            nbrs = _neighbours(graph, pivot, direction)
            if not nbrs:
                stopped[direction] = "no_neighbours"
                break
            if iteration >= max_iterations:
                stopped[direction] = "max_iterations"
                break
            iteration += 1
            scores = evaluate(sorted({x for j in nbrs for x in (j, j - 1)}))
            ranked = sorted(((delta_s(scores, j), -j) for j in nbrs), reverse=True)
            best_ds, best = ranked[0][0], -ranked[0][1]
            accept = best_ds > 0
            for j in nbrs:
                st = SearchStep(direction, iteration, pivot, j, scores[j], delta_s(scores, j), accept and j == best)
                evaluated.append(st)
                if st.accepted:
                    path.append(st)
            if not accept:
                stopped[direction] = "no_positive"
                break
            pivot = best
            if best not in visited:
                visited.append(best)
    return SearchResult(tuple(evaluated), tuple(path), tuple(visited), stopped)
