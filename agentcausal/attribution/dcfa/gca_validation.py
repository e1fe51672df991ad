"""GCA's checks of what the model returned (:mod:`agentcausal.attribution.dcfa.gca`): CGC's edges and links
and MDI's deviations validated against the trace, and the ``max_edges`` cap that keeps the edges closest to
the hypothesis.

CGC's rules, each counted in :class:`DroppedEdges` when it drops a link (setting ``link_checks``):

* out of range (an end outside 0..N-1): always dropped. The released code's search takes such a
  link as a candidate, finds no corrected content for it and skips it without a call, so the search
  is the same; HG and Correct here see only steps of the trace.
* duplicate (a link already kept): always dropped (the released code gathers candidates in a set).
* self-link and link against time (a cause at or after its step, an effect at or before it, eq. 3):
  kept under ``link_checks="code"`` (``paper``), as the released code follows whatever the lists
  name (a self-link makes the hypothesis, not yet visited, its own candidate); dropped under
  ``"strict"`` (``small``: temporality is one of the prompt's own criteria).

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), section 4.1 (eq. 3, temporality).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import networkx as nx

from agentcausal.attribution.dcfa.prompts import StepLinks

__all__ = [
    "DroppedEdges",
    "DroppedDeviations",
    "GraphValidation",
    "DeviationValidation",
    "LinksValidation",
    "validate_edges",
    "cap_edges",
    "validate_links",
    "capped_links",
    "validate_deviations",
    "graph_edges",
]


def graph_edges(graph: nx.DiGraph) -> list[tuple[int, int]]:
    """Edges of a dependency graph as sorted ``(p, q)`` pairs."""
    return sorted((int(p), int(q)) for p, q in graph.edges())


class DroppedEdges(NamedTuple):
    """Counts of model-proposed edges that failed validation (each edge counted once, first rule wins)."""

    out_of_range: int = 0
    self_loops: int = 0
    backward: int = 0  # p > q: violates temporality (eq. 3)
    duplicates: int = 0
    capped: int = 0  # valid edges left out of the searched graph by ``max_edges``
    not_causal: int = 0  # judged edges where temporal, necessary or sufficient was false

    @property
    def total(self) -> int:
        return self.out_of_range + self.self_loops + self.backward + self.duplicates + self.capped + self.not_causal


class DroppedDeviations(NamedTuple):
    """Counts of model-proposed deviations that failed validation."""

    out_of_range: int = 0
    duplicates: int = 0
    over_limit: int = 0


class GraphValidation(NamedTuple):
    """A validated dependency graph and what was dropped.

    Attributes
    ----------
    graph : networkx.DiGraph over nodes 0..n_steps-1, edges p -> q (p < q when ``strict``)
    dropped : DroppedEdges
    """

    graph: nx.DiGraph
    dropped: DroppedEdges


class DeviationValidation(NamedTuple):
    """Validated deviations ``(step, reason)`` in first-mention order and what was dropped."""

    deviations: tuple[tuple[int, str], ...]
    dropped: DroppedDeviations


class LinksValidation(NamedTuple):
    """Validated per-step cause/effect lists (``cgc="code"``), their union graph, and what was dropped.

    Attributes
    ----------
    links : tuple of StepLinks, one per step the reply named, in step order (causes < step < effects
        when validated ``strict``)
    graph : networkx.DiGraph over nodes 0..n_steps-1, the union of every kept link
    dropped : DroppedEdges, counted per listed link (``duplicates``: repeated within one list or
        one step named twice; a link given in both lists is one edge, not a duplicate)
    """

    links: tuple[StepLinks, ...]
    graph: nx.DiGraph
    dropped: DroppedEdges


def validate_edges(
    edges: Iterable[tuple[int, int]], n_steps: int, *, max_edges: int | None = None, strict: bool = True
) -> GraphValidation:
    """Keep the edges that lie in range (and, when ``strict``, satisfy temporality); count the rest.

    Rules, in order (an edge is counted under the first rule it breaks):
    out of range (either end not in 0..n_steps-1), self-loop (p == q) and
    backward (p > q, eq. 3) when ``strict``, duplicate (already kept), capped
    (``max_edges`` edges already kept).

    Parameters
    ----------
    edges : iterable of (p, q) int pairs, 0-based steps, as the model returned them
    n_steps : int, number of steps N of the trace (nodes are 0..N-1)
    max_edges : int or None, keep at most this many valid edges (first ones win);
        later valid edges are counted under ``capped`` (DCFA itself caps by closeness
        to the hypothesis instead, :func:`cap_edges`)
    strict : bool, drop self-loops and backward edges (False = keep them, ``link_checks="code"``)

    Returns
    -------
    GraphValidation(graph, dropped); the graph has every step as a node.

    Raises
    ------
    ValueError
        If ``n_steps < 1``.

    References
    ----------
    DCFA section 4.1.2, eq. 3 (temporality).

    Examples
    --------
    >>> g, d = validate_edges([(0, 2), (2, 2), (3, 1), (0, 2), (1, 9)], n_steps=4)
    >>> sorted(g.edges()), d
    ([(0, 2)], DroppedEdges(out_of_range=1, self_loops=1, backward=1, duplicates=1, capped=0, not_causal=0))
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    g: nx.DiGraph[int] = nx.DiGraph()
    g.add_nodes_from(range(n_steps))
    oor = loops = back = dup = cap = 0
    for p, q in edges:
        if not (0 <= p < n_steps and 0 <= q < n_steps):
            oor += 1
        elif strict and p == q:
            loops += 1
        elif strict and p > q:
            back += 1
        elif g.has_edge(p, q):
            dup += 1
        elif max_edges is not None and g.number_of_edges() >= max_edges:
            cap += 1
        else:
            g.add_edge(p, q)
    return GraphValidation(g, DroppedEdges(oor, loops, back, dup, cap))


def cap_edges(graph: nx.DiGraph, hypothesis: int, max_edges: int | None) -> tuple[nx.DiGraph, int]:
    """Keep the ``max_edges`` edges closest to the hypothesis (the graph LCE searches).

    Closeness of an edge (p, q) to the hypothesis h: 0 when p <= h <= q, else the
    distance from h to the nearer end; ties go to the shorter edge, then the
    earlier source. Every step stays a node.

    Parameters
    ----------
    graph : networkx.DiGraph over 0-based steps
    hypothesis : int, GCA's hypothesised step
    max_edges : int or None; None = no cap (the graph itself is returned)

    Returns
    -------
    (graph, dropped): the capped graph and the number of edges it left out.

    Examples
    --------
    >>> g = nx.DiGraph([(0, 1), (1, 2), (4, 5), (2, 3)])
    >>> h, d = cap_edges(g, 2, 2)
    >>> sorted(h.edges()), d
    ([(1, 2), (2, 3)], 2)
    """
    edges = graph_edges(graph)
    if max_edges is None or len(edges) <= max_edges:
        return graph, 0

    def closeness(e: tuple[int, int]) -> tuple[int, int, int]:
        p, q = e
        d = 0 if p <= hypothesis <= q else min(abs(p - hypothesis), abs(q - hypothesis))
        return d, q - p, p

    keep = sorted(edges, key=closeness)[:max_edges]
    out: nx.DiGraph[int] = nx.DiGraph()
    out.add_nodes_from(graph.nodes())
    out.add_edges_from(keep)
    return out, len(edges) - len(keep)


def validate_links(
    entries: Iterable[tuple[int, Iterable[int], Iterable[int]]], n_steps: int, *, strict: bool = True
) -> LinksValidation:
    """Validate a ``cgc="code"`` reply: per step, the steps that cause it and the steps it causes.

    Each listed link is checked on its own: out of range (either end not in 0..n_steps-1, or the
    entry's own step out of range: all its links), self-loop and against time (a cause at or after
    the step, an effect at or before it: eq. 3) when ``strict``, or repeated in one list (and an
    entry for a step already given: all its links). The union of the kept links is the graph E
    (a cause k of step s is the edge k -> s, an effect j the edge s -> j, whatever their order).

    Parameters
    ----------
    entries : iterable of (step, causes, effects), as the model returned them
    n_steps : int
    strict : bool, drop self-links and links against time (False = keep them, as the released code
        follows them: ``link_checks="code"``)

    Returns
    -------
    LinksValidation(links, graph, dropped)

    Raises
    ------
    ValueError
        If ``n_steps < 1``.

    Examples
    --------
    >>> v = validate_links([(1, [0, 1], [3, 0]), (3, [1], []), (9, [0], [])], n_steps=4)
    >>> v.links, sorted(v.graph.edges()), v.dropped.backward, v.dropped.self_loops, v.dropped.out_of_range
    ((StepLinks(step=1, causes=(0,), effects=(3,)), StepLinks(step=3, causes=(1,), effects=())), [(0, 1), (1, 3)], 1, 1, 1)
    >>> validate_links([(1, [0, 1], [3, 0])], n_steps=4, strict=False).links
    (StepLinks(step=1, causes=(0, 1), effects=(0, 3)),)
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    g: nx.DiGraph[int] = nx.DiGraph()
    g.add_nodes_from(range(n_steps))
    oor = loops = back = dup = 0
    kept: dict[int, StepLinks] = {}
    for step, causes, effects in entries:
        causes, effects = list(causes), list(effects)
        if not 0 <= step < n_steps:
            oor += len(causes) + len(effects)
            continue
        if step in kept:
            dup += len(causes) + len(effects)
            continue
        lists: dict[str, list[int]] = {"causes": [], "effects": []}
        for name, xs in (("causes", causes), ("effects", effects)):
            for x in xs:
                if not 0 <= x < n_steps:
                    oor += 1
                elif strict and x == step:
                    loops += 1
                elif strict and ((x > step) if name == "causes" else (x < step)):
                    back += 1
                elif x in lists[name]:
                    dup += 1
                else:
                    lists[name].append(x)
                    g.add_edge(x, step) if name == "causes" else g.add_edge(step, x)
        kept[step] = StepLinks(step, tuple(sorted(lists["causes"])), tuple(sorted(lists["effects"])))
    links = tuple(kept[s] for s in sorted(kept))
    return LinksValidation(links, g, DroppedEdges(oor, loops, back, dup))


def capped_links(links: Sequence[StepLinks], graph: nx.DiGraph) -> tuple[StepLinks, ...]:
    """The lists kept to the edges of a (capped) graph."""
    return tuple(
        StepLinks(
            e.step,
            tuple(c for c in e.causes if graph.has_edge(c, e.step)),
            tuple(x for x in e.effects if graph.has_edge(e.step, x)),
        )
        for e in links
    )


def validate_deviations(
    deviations: Iterable[tuple[int, str]],
    n_steps: int,
    *,
    max_deviations: int | None = None,
    max_reason_chars: int | None = None,
) -> DeviationValidation:
    """Keep in-range, first-mentioned deviations; cut long reasons; count the rest.

    Parameters
    ----------
    deviations : iterable of (step, reason)
    n_steps : int
    max_deviations : int or None, keep at most this many (later ones counted as ``over_limit``)
    max_reason_chars : int or None, cut reasons to this length

    Returns
    -------
    DeviationValidation(deviations, dropped)

    Examples
    --------
    >>> validate_deviations([(1, "a"), (1, "b"), (7, "c")], n_steps=3).deviations
    ((1, 'a'),)
    """
    kept: dict[int, str] = {}
    oor = dup = over = 0
    for step, reason in deviations:
        if not 0 <= step < n_steps:
            oor += 1
        elif step in kept:
            dup += 1
        elif max_deviations is not None and len(kept) >= max_deviations:
            over += 1
        else:
            r = reason.strip()
            kept[step] = r[:max_reason_chars] if max_reason_chars else r
    return DeviationValidation(tuple(kept.items()), DroppedDeviations(oor, dup, over))
