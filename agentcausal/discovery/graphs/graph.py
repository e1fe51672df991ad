"""One graph type for every causal-discovery output: :class:`CausalGraph` with explicit edge marks.

A graph is a tuple of node names and a tuple of :class:`Edge` values. Each edge
carries one *mark* per endpoint, as in the PAG notation of FCI (Spirtes,
Glymour and Scheines 2000): ``TAIL`` (-), ``ARROW`` (>) or ``CIRCLE`` (o).

=============  ======  ======  ================================
kind           mark_u  mark_v  written
=============  ======  ======  ================================
directed       TAIL    ARROW   ``u --> v``
undirected     TAIL    TAIL    ``u --- v``
bidirected     ARROW   ARROW   ``u <-> v``
partially dir. CIRCLE  ARROW   ``u o-> v``
nondirected    CIRCLE  CIRCLE  ``u o-o v``
=============  ======  ======  ================================

The conversions at the edges of the system pin causal-learn's encodings
(each has a test on a hand-built case in ``tests/discovery/test_graph.py``):

* ``GeneralGraph.graph`` (PC, FCI, GES): ``graph[a, b]`` is the mark at node
  ``a`` of the edge between ``a`` and ``b``: -1 tail, 1 arrow, 2 circle. So
  ``graph[j, i] = 1`` and ``graph[i, j] = -1`` means ``i --> j``.
* ``bic_exact_search`` returns ``dag`` with ``dag[i, j] = 1`` for ``i --> j``.
* ``DirectLiNGAM.adjacency_matrix_`` has ``B[i, j] != 0`` for ``j --> i``.

:meth:`CausalGraph.to_adjacency` returns the usual 0/1 matrix with
``A[i, j] = 1`` for ``i --> j``; an undirected edge sets both entries (a
bidirected or circle edge too, unless ``directed_only=True``).

References
----------
Spirtes, Glymour and Scheines. 2000. *Causation, Prediction, and Search*. MIT Press.
Zheng et al. 2024. "Causal-learn: Causal Discovery in Python." JMLR 25 (60).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from agentcausal.exceptions import AlgorithmError

__all__ = [
    "Mark",
    "Edge",
    "CausalGraph",
    "CausalLearnSource",
    "RepairedGraph",
    "repair_to_dag",
]


class Mark(enum.IntEnum):
    """Endpoint mark; the values are causal-learn's ``Endpoint`` codes."""

    TAIL = -1
    ARROW = 1
    CIRCLE = 2


_SYMBOL = {
    (Mark.TAIL, Mark.ARROW): "-->",
    (Mark.TAIL, Mark.TAIL): "---",
    (Mark.ARROW, Mark.ARROW): "<->",
    (Mark.CIRCLE, Mark.ARROW): "o->",
    (Mark.CIRCLE, Mark.CIRCLE): "o-o",
    (Mark.ARROW, Mark.TAIL): "<--",
    (Mark.ARROW, Mark.CIRCLE): "<-o",
    (Mark.TAIL, Mark.CIRCLE): "--o",
    (Mark.CIRCLE, Mark.TAIL): "o--",
}


class Edge(NamedTuple):
    """An edge between ``u`` and ``v`` with the mark at each end (``u --> v`` is TAIL, ARROW)."""

    u: str
    v: str
    mark_u: Mark = Mark.TAIL
    mark_v: Mark = Mark.ARROW

    @property
    def is_directed(self) -> bool:
        """``u --> v`` or ``u <-- v``."""
        return {self.mark_u, self.mark_v} == {Mark.TAIL, Mark.ARROW}

    @property
    def is_undirected(self) -> bool:
        return self.mark_u == Mark.TAIL and self.mark_v == Mark.TAIL

    def oriented(self) -> tuple[str, str] | None:
        """``(cause, effect)`` for a directed edge, else None."""
        if self.mark_u == Mark.TAIL and self.mark_v == Mark.ARROW:
            return (self.u, self.v)
        if self.mark_u == Mark.ARROW and self.mark_v == Mark.TAIL:
            return (self.v, self.u)
        return None

    def __str__(self) -> str:
        return f"{self.u} {_SYMBOL[(Mark(self.mark_u), Mark(self.mark_v))]} {self.v}"


CausalLearnSource = Literal["general_graph", "exact_search", "lingam"]


class CausalGraph(BaseModel):
    """A mixed graph over named nodes, at most one edge per node pair.

    Attributes
    ----------
    nodes : tuple of str, the variables in data-column order
    edges : tuple of Edge

    Examples
    --------
    >>> g = CausalGraph.from_edges(["A", "B", "C"], [("A", "B"), ("C", "B")])
    >>> g.to_adjacency().tolist()
    [[0, 1, 0], [0, 0, 0], [0, 1, 0]]
    >>> sorted(g.directed_edges())
    [('A', 'B'), ('C', 'B')]
    """

    model_config = ConfigDict(frozen=True)

    nodes: tuple[str, ...]
    edges: tuple[Edge, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> "CausalGraph":
        names = set(self.nodes)
        if len(names) != len(self.nodes):
            raise ValueError("duplicate node names")
        seen: set[frozenset[str]] = set()
        for e in self.edges:
            if e.u not in names or e.v not in names:
                raise ValueError(f"edge {e} uses an unknown node")
            if e.u == e.v:
                raise ValueError(f"self-loop on {e.u}")
            pair = frozenset((e.u, e.v))
            if pair in seen:
                raise ValueError(f"more than one edge between {e.u} and {e.v}")
            seen.add(pair)
        return self

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_edges(
        cls, nodes: Sequence[str], directed: Iterable[tuple[str, str]] = (), undirected: Iterable[tuple[str, str]] = ()
    ) -> "CausalGraph":
        """Build from directed ``(cause, effect)`` pairs and undirected pairs."""
        edges = [Edge(a, b, Mark.TAIL, Mark.ARROW) for a, b in directed]
        edges += [Edge(a, b, Mark.TAIL, Mark.TAIL) for a, b in undirected]
        return cls(nodes=tuple(nodes), edges=tuple(edges))

    @classmethod
    def from_adjacency(cls, nodes: Sequence[str], adjacency: np.ndarray) -> "CausalGraph":
        """Build from a 0/1 matrix with ``A[i, j] != 0`` for ``i --> j``; both entries set is undirected.

        Parameters
        ----------
        nodes : sequence of str, length d
        adjacency : ndarray of shape (d, d)

        Raises
        ------
        AlgorithmError if the shape does not match the nodes or the diagonal is non-zero.
        """
        a = np.asarray(adjacency)
        d = len(nodes)
        if a.shape != (d, d):
            raise AlgorithmError("adjacency", f"shape {a.shape} does not match {d} nodes")
        if np.any(np.diag(a) != 0):
            raise AlgorithmError("adjacency", "non-zero diagonal (self-loop)")
        edges = []
        for i in range(d):
            for j in range(i + 1, d):
                ij, ji = a[i, j] != 0, a[j, i] != 0
                if ij and ji:
                    edges.append(Edge(nodes[i], nodes[j], Mark.TAIL, Mark.TAIL))
                elif ij:
                    edges.append(Edge(nodes[i], nodes[j]))
                elif ji:
                    edges.append(Edge(nodes[j], nodes[i]))
        return cls(nodes=tuple(nodes), edges=tuple(edges))

    @classmethod
    def from_causallearn(
        cls, result: object, nodes: Sequence[str], source: CausalLearnSource = "general_graph"
    ) -> "CausalGraph":
        """Convert a causal-learn output, pinning its encoding.

        Parameters
        ----------
        result : a ``GeneralGraph`` (or its ``.graph`` matrix) for ``"general_graph"``,
            the ``dag`` matrix of ``bic_exact_search`` for ``"exact_search"``,
            ``DirectLiNGAM.adjacency_matrix_`` for ``"lingam"``; shape (d, d).
        nodes : sequence of str, length d, in data-column order
        source : which encoding ``result`` uses

        Returns
        -------
        CausalGraph

        Raises
        ------
        AlgorithmError on an unknown source, a shape mismatch or an unknown mark code.
        """
        m = np.asarray(getattr(result, "graph", result))
        d = len(nodes)
        if m.shape != (d, d):
            raise AlgorithmError(source, f"result shape {m.shape} does not match {d} nodes")
        if source == "exact_search":
            return cls.from_adjacency(nodes, (m != 0).astype(int))
        if source == "lingam":
            return cls.from_adjacency(nodes, (m.T != 0).astype(int))
        if source != "general_graph":
            raise AlgorithmError(str(source), "unknown causal-learn source; use general_graph, exact_search or lingam")
        edges = []
        for i in range(d):
            for j in range(i + 1, d):
                if m[i, j] == 0 and m[j, i] == 0:
                    continue
                try:
                    edges.append(Edge(nodes[i], nodes[j], Mark(int(m[i, j])), Mark(int(m[j, i]))))
                except ValueError as exc:
                    raise AlgorithmError(source, f"unknown mark code at ({i}, {j}): {exc}") from exc
        return cls(nodes=tuple(nodes), edges=tuple(edges))

    # ------------------------------------------------------------------ views
    def index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.nodes)}

    def directed_edges(self) -> set[tuple[str, str]]:
        """``(cause, effect)`` pairs of the directed edges."""
        return {o for e in self.edges if (o := e.oriented()) is not None}

    def skeleton(self) -> set[frozenset[str]]:
        """Adjacent node pairs, whatever the marks."""
        return {frozenset((e.u, e.v)) for e in self.edges}

    def to_adjacency(self, *, directed_only: bool = False) -> np.ndarray:
        """0/1 matrix of shape (d, d), ``A[i, j] = 1`` for ``i --> j``.

        An undirected, bidirected or circle edge sets both entries unless
        ``directed_only`` is True, when it is left out.
        """
        idx = self.index()
        a = np.zeros((len(self.nodes), len(self.nodes)), dtype=int)
        for e in self.edges:
            o = e.oriented()
            if o is not None:
                a[idx[o[0]], idx[o[1]]] = 1
            elif not directed_only:
                a[idx[e.u], idx[e.v]] = a[idx[e.v], idx[e.u]] = 1
        return a

    def to_networkx(self) -> nx.DiGraph:
        """A DiGraph of the directed edges (other edges as attribute ``kind`` on both directions)."""
        g: nx.DiGraph[str] = nx.DiGraph()
        g.add_nodes_from(self.nodes)
        for e in self.edges:
            o = e.oriented()
            if o is not None:
                g.add_edge(*o, kind="directed")
            else:
                g.add_edge(e.u, e.v, kind=str(e))
                g.add_edge(e.v, e.u, kind=str(e))
        return g

    def is_dag(self) -> bool:
        """All edges directed and no directed cycle."""
        if any(e.oriented() is None for e in self.edges):
            return False
        return nx.is_directed_acyclic_graph(self.to_networkx())

    def edge_strings(self) -> list[str]:
        return [str(e) for e in self.edges]


class RepairedGraph(NamedTuple):
    """A DAG and what was dropped to get it (human-readable reasons)."""

    graph: CausalGraph
    dropped: tuple[str, ...]


def repair_to_dag(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> RepairedGraph:
    """Turn a proposed list of ``(cause, effect)`` pairs into a DAG over ``nodes``.

    Rules, applied in order:

    1. an edge naming a variable not in ``nodes`` is dropped;
    2. a self-loop is dropped;
    3. a duplicate of an earlier edge is dropped; if both ``A -> B`` and
       ``B -> A`` are proposed, the first one listed is kept;
    4. edges are added in the order listed (the proposer's order, taken as
       its order of confidence); an edge that would close a directed cycle
       (the target already reaches the source, via ``networkx.has_path``)
       is dropped. This removes, on each cycle, the last-listed edge.

    Parameters
    ----------
    nodes : sequence of str, the variables
    edges : sequence of (cause, effect) pairs of str, in proposal order

    Returns
    -------
    RepairedGraph(graph, dropped): ``graph`` is a DAG; ``dropped`` lists each
    dropped edge with the rule that dropped it.

    Examples
    --------
    >>> r = repair_to_dag(["A", "B", "C"], [("A", "B"), ("B", "C"), ("C", "A"), ("A", "A"), ("A", "Z")])
    >>> sorted(r.graph.directed_edges())
    [('A', 'B'), ('B', 'C')]
    >>> r.dropped
    ('C -> A: closes a cycle', 'A -> A: self-loop', 'A -> Z: unknown variable')
    """
    names = set(nodes)
    g: nx.DiGraph[str] = nx.DiGraph()
    g.add_nodes_from(nodes)
    kept: list[tuple[str, str]] = []
    dropped: list[str] = []
    for a, b in edges:
        label = f"{a} -> {b}"
        if a not in names or b not in names:
            dropped.append(f"{label}: unknown variable")
        elif a == b:
            dropped.append(f"{label}: self-loop")
        elif g.has_edge(a, b) or g.has_edge(b, a):
            dropped.append(f"{label}: duplicate or reverse of an earlier edge")
        elif nx.has_path(g, b, a):
            dropped.append(f"{label}: closes a cycle")
        else:
            g.add_edge(a, b)
            kept.append((a, b))
    return RepairedGraph(CausalGraph.from_edges(nodes, kept), tuple(dropped))
