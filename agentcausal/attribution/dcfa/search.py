"""LCE's bidirectional greedy search over the dependency graph (DCFA eqs. 11 to 13, Algorithm 2).

Forward: the pivot's successors, its effects (edges p -> j); backward: its
predecessors, its causes (edges k -> p), as the paper names them (the
released code swaps the two names). The scores come from any ``evaluate``
callable and the neighbours from a graph or any ``neighbours`` callable, so
the search runs on hand-built graphs without an LLM.

Decision rules, each a setting (:mod:`agentcausal.attribution.dcfa.settings`);
the defaults are the released code's ``search_on_direction``:

* order: causes first (``search_order``; Algorithm 2 lists successors first);
* ΔS is rounded to ``decimals`` (3) before it is compared with 0 and with the
  best ΔS of the iteration (``delta_s_decimals``; None = raw floats);
* a tie goes to the lower step when moving to causes and to the higher step
  when moving to effects (``search_ties="outward"``; ``"lower"`` = the lower
  step both ways);
* a step evaluated once is never evaluated again in the search: one visited
  set across iterations and both directions (``revisit=False``);
* at most ``max_iterations`` iterations, so at most that many moves, per
  direction (5);
* a candidate that could not be scored (its Simulation reply stayed invalid)
  is never accepted and the search goes on, as the released code skips a
  candidate whose evaluation raised.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), section 4.2.1, eqs. 11 to 13; appendix K, Algorithm 2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import networkx as nx

__all__ = [
    "CandidateScore",
    "Evaluate",
    "Neighbours",
    "SearchStep",
    "SearchResult",
    "delta_s",
    "decision_value",
    "graph_neighbours",
    "bidirectional_search",
]


class CandidateScore(NamedTuple):
    """The counterfactual evaluation of one candidate step i.

    Attributes
    ----------
    s : float or None, S(i) (cosine in [-1, 1], or a probability without truth)
    s_prev : float or None, S(i-1)
    delta_s : float or None, ΔS(i) = S(i) - S(i-1), unrounded
    reason : str or None, the reason the Simulation of T~(i) gave (DED shows it)
    error : str or None, why the candidate could not be scored (then never accepted)
    """

    s: float | None
    s_prev: float | None
    delta_s: float | None
    reason: str | None = None
    error: str | None = None


#: evaluate(candidate steps) -> {step: CandidateScore}
Evaluate = Callable[[Sequence[int]], Mapping[int, CandidateScore]]
#: neighbours(pivot, "forward" | "backward") -> the pivot's effects or causes
Neighbours = Callable[[int, str], Sequence[int]]


class SearchStep(NamedTuple):
    """One neighbour evaluated during the search.

    Attributes
    ----------
    direction : "forward" (effects) or "backward" (causes)
    iteration : int, 1-based iteration of that direction
    pivot : int, the pivot whose neighbour this is
    step : int, the neighbour (0-based)
    s : float or None, S(step)
    delta_s : float or None, ΔS(step) = S(step) - S(step - 1), unrounded
    accepted : bool, whether it became the next pivot
    s_prev : float or None, S(step - 1)
    error : str or None, why it could not be scored
    """

    direction: str
    iteration: int
    pivot: int
    step: int
    s: float | None
    delta_s: float | None
    accepted: bool
    s_prev: float | None = None
    error: str | None = None


class SearchResult(NamedTuple):
    """Outcome of the bidirectional greedy search.

    Attributes
    ----------
    evaluated : tuple of SearchStep, every neighbour evaluated, in order
    path : tuple of SearchStep, the accepted moves, in order
    visited : tuple of int, the hypothesis and every accepted pivot, in visiting order
    stopped : dict direction -> "no_neighbours" | "all_evaluated" | "no_positive" | "max_iterations"
    """

    evaluated: tuple[SearchStep, ...]
    path: tuple[SearchStep, ...]
    visited: tuple[int, ...]
    stopped: dict[str, str]


def delta_s(scores: Mapping[int, float], i: int) -> float:
    """Marginal attributional impact of correcting step i (DCFA eq. 11) from one S per step.

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


def decision_value(ds: float, decimals: int | None) -> float:
    """ΔS as the search compares it: rounded to ``decimals`` (None = as it is).

    >>> decision_value(0.0004, 3), decision_value(0.0004, None), decision_value(0.1236, 3)
    (0.0, 0.0004, 0.124)
    """
    return ds if decimals is None else round(ds, decimals)


def graph_neighbours(graph: nx.DiGraph) -> Neighbours:
    """Neighbours from a graph: successors forward, predecessors backward (sorted; none off the graph)."""

    def neighbours(pivot: int, direction: str) -> list[int]:
        if pivot not in graph:
            return []
        nbrs = graph.successors(pivot) if direction == "forward" else graph.predecessors(pivot)
        return sorted(int(x) for x in nbrs)

    return neighbours


def _wins_tie(j: int, best: int, direction: str, ties: str) -> bool:
    if ties == "outward" and direction == "forward":
        return j > best
    return j < best


def bidirectional_search(
    graph: nx.DiGraph | Neighbours,
    hypothesis: int,
    evaluate: Evaluate,
    *,
    max_iterations: int,
    order: Sequence[str] = ("backward", "forward"),
    decimals: int | None = 3,
    ties: str = "outward",
    revisit: bool = False,
) -> SearchResult:
    """Greedy bidirectional search from the hypothesis on the dependency graph (Algorithm 2).

    Each direction starts at the hypothesis. In each iteration the pivot's
    neighbours (not yet evaluated, unless ``revisit``) are scored in one
    ``evaluate`` call (so their simulations run concurrently); the one with the
    largest rounded ΔS becomes the pivot if that ΔS is > 0, ties broken by
    ``ties``; otherwise, with no (new) neighbours, or after ``max_iterations``
    iterations, the direction stops. Without ``revisit`` a step is scored at
    most once, so a direction ends within N moves even on a graph with links
    against time (kept under ``link_checks="code"``).

    Parameters
    ----------
    graph : networkx.DiGraph over 0-based steps, or a callable neighbours(pivot, direction)
    hypothesis : int, the GCA hypothesis (initial pivot p(0))
    evaluate : callable taking the candidate steps and returning {step: CandidateScore}
    max_iterations : int >= 0, most iterations (and so moves) per direction
    order : the two directions in the order searched; default causes ("backward") first
    decimals : int or None, ΔS rounding before the comparisons (None = raw)
    ties : "outward" (lower step backward, higher step forward) or "lower"
    revisit : bool, evaluate again a step evaluated before (False = one visited set)

    Returns
    -------
    SearchResult

    Raises
    ------
    ValueError
        If ``max_iterations`` is negative, or ``order`` is not the two directions.

    References
    ----------
    DCFA section 4.2.1, eqs. 11 to 13; appendix K, Algorithm 2; released code ``search_on_direction``.

    Examples
    --------
    >>> g = nx.DiGraph([(0, 1), (1, 2)])
    >>> s = {0: 0.1, 1: 0.5, 2: 0.6}
    >>> ev = lambda idx: {i: CandidateScore(s[i], s.get(i - 1, 0.0), s[i] - s.get(i - 1, 0.0)) for i in idx}
    >>> r = bidirectional_search(g, 1, ev, max_iterations=5)
    >>> r.visited, r.stopped
    ((1, 0, 2), {'backward': 'no_neighbours', 'forward': 'no_neighbours'})
    """
    if max_iterations < 0:
        raise ValueError(f"max_iterations must be >= 0, got {max_iterations}")
    if sorted(order) != ["backward", "forward"]:
        raise ValueError(f"order must hold 'backward' and 'forward' once each, got {list(order)}")
    neighbours = graph_neighbours(graph) if isinstance(graph, nx.DiGraph) else graph
    evaluated: list[SearchStep] = []
    path: list[SearchStep] = []
    visited = [hypothesis]
    seen: set[int] = set()
    stopped: dict[str, str] = {}
    for direction in order:
        pivot = hypothesis
        iteration = 0
        while True:
            if iteration >= max_iterations:
                stopped[direction] = "max_iterations"
                break
            nbrs = list(neighbours(pivot, direction))
            if not nbrs:
                stopped[direction] = "no_neighbours"
                break
            todo = nbrs if revisit else [j for j in nbrs if j not in seen]
            if not todo:
                stopped[direction] = "all_evaluated"
                break
            iteration += 1
            seen.update(todo)
            scores = evaluate(todo)
            best, best_v = None, 0.0
            for j in todo:
                sc = scores[j]
                if sc.error is not None or sc.delta_s is None:
                    continue
                v = decision_value(sc.delta_s, decimals)
                if v <= 0:
                    continue
                if best is None or v > best_v or (v == best_v and _wins_tie(j, best, direction, ties)):
                    best, best_v = j, v
            for j in todo:
                sc = scores[j]
                st = SearchStep(direction, iteration, pivot, j, sc.s, sc.delta_s, j == best, sc.s_prev, sc.error)
                evaluated.append(st)
                if st.accepted:
                    path.append(st)
            if best is None:
                stopped[direction] = "no_positive"
                break
            pivot = best
            if best not in visited:
                visited.append(best)
    return SearchResult(tuple(evaluated), tuple(path), tuple(visited), stopped)
