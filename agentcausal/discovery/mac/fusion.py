"""Meta Fusion: the data graph G_C as plain sentences, the causal metadata I_c (MAC §3.5).

Three kinds of sentence, in this order:

1. directed edges: ``"Hot -> Sales"``;
2. other edges, read as the field reads CPDAG and PAG marks (Zhang 2008):

   * ``X --- Y`` (CPDAG): ``"X --- Y: adjacent; the data leave the direction undetermined"``;
   * ``X <-> Y`` (PAG): ``"X <-> Y: a hidden common cause of X and Y; neither causes the other directly"``;
   * ``X o-> Y`` (PAG): ``"X o-> Y: Y does not cause X; the mark at X is undetermined (X causes Y, or a
     hidden common cause, or both)"``;
   * ``X o-o Y`` (PAG): ``"X o-o Y: adjacent; both marks undetermined"``;
   * ``X --o Y`` (PAG): ``"X --o Y: X is a cause of Y or of selection; the mark at Y is undetermined"``;
3. implied orderings: for each directed path of length >= 2 (the transitive
   closure of the directed part, minus its direct edges),
   ``"Hot precedes Attack (indirectly)"``, shortest paths first, then in column
   order; all of them, or at most ``max_orderings`` (the ``small`` preset's 10).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.5.
Zhang. 2008. "On the completeness of orientation rules for causal discovery in the presence of latent
confounders and selection bias." Artificial Intelligence 172 (16-17). doi:10.1016/j.artint.2008.08.001.
"""

from __future__ import annotations

import networkx as nx

from agentcausal.discovery.graphs.graph import CausalGraph, Edge, Mark

__all__ = ["meta_fusion", "edge_sentence", "FUSION_HEADER"]

#: the ``small`` prompt set's header of these sentences (the ``paper`` set has its own,
#: :data:`agentcausal.discovery.mac.paper_prompts.FUSION_HEADER`)
FUSION_HEADER = "A statistical algorithm found on the data:"


def edge_sentence(e: Edge, order: dict[str, int] | None = None) -> str:
    """One undirected, bidirected or circle-marked edge as the field reads it (see the module docstring).

    Parameters
    ----------
    e : Edge that is not directed
    order : node -> column index, to put symmetric edges in column order

    Examples
    --------
    >>> edge_sentence(Edge("A", "B", Mark.ARROW, Mark.ARROW))
    'A <-> B: a hidden common cause of A and B; neither causes the other directly'
    >>> edge_sentence(Edge("B", "A", Mark.ARROW, Mark.CIRCLE))
    'A o-> B: B does not cause A; the mark at A is undetermined (A causes B, or a hidden common cause, or both)'
    """
    mu, mv = Mark(e.mark_u), Mark(e.mark_v)
    u, v = e.u, e.v
    # put the circle (or tail) first: "X o-> Y", "X --o Y"
    if (mu, mv) in ((Mark.ARROW, Mark.CIRCLE), (Mark.CIRCLE, Mark.TAIL)):
        u, v, mu, mv = v, u, mv, mu
    if mu == mv and order is not None and order.get(u, 0) > order.get(v, 0):
        u, v = v, u
    if (mu, mv) == (Mark.TAIL, Mark.TAIL):
        return f"{u} --- {v}: adjacent; the data leave the direction undetermined"
    if (mu, mv) == (Mark.ARROW, Mark.ARROW):
        return f"{u} <-> {v}: a hidden common cause of {u} and {v}; neither causes the other directly"
    if (mu, mv) == (Mark.CIRCLE, Mark.ARROW):
        return (
            f"{u} o-> {v}: {v} does not cause {u}; the mark at {u} is undetermined "
            f"({u} causes {v}, or a hidden common cause, or both)"
        )
    if (mu, mv) == (Mark.CIRCLE, Mark.CIRCLE):
        return f"{u} o-o {v}: adjacent; both marks undetermined"
    if (mu, mv) == (Mark.TAIL, Mark.CIRCLE):
        return f"{u} --o {v}: {u} is a cause of {v} or of selection; the mark at {v} is undetermined"
    return f"{e}: adjacent"


def meta_fusion(graph: CausalGraph, *, max_orderings: int | None = None) -> list[str]:
    """Turn a data graph into sentences (the paper's I_c).

    Parameters
    ----------
    graph : CausalGraph, the data graph G_C (DAG, CPDAG or PAG)
    max_orderings : int >= 0 or None, cap on implied-ordering sentences; None = all of them

    Returns
    -------
    list of str, directed edges, then associations, then implied orderings.

    Examples
    --------
    The paper's example (§3.5):

    >>> g = CausalGraph.from_edges(["Hot", "Sales", "Swim", "Attack"],
    ...                            [("Hot", "Sales"), ("Hot", "Swim"), ("Swim", "Attack")])
    >>> meta_fusion(g)
    ['Hot -> Sales', 'Hot -> Swim', 'Swim -> Attack', 'Hot precedes Attack (indirectly)']
    """
    idx = graph.index()
    directed = sorted(graph.directed_edges(), key=lambda e: (idx[e[0]], idx[e[1]]))
    out = [f"{a} -> {b}" for a, b in directed]
    for e in graph.edges:
        if e.oriented() is None:
            out.append(edge_sentence(e, idx))
    dg: nx.DiGraph[str] = nx.DiGraph()
    dg.add_nodes_from(graph.nodes)
    dg.add_edges_from(directed)
    implied = []
    lengths = dict(nx.all_pairs_shortest_path_length(dg))
    for a in graph.nodes:
        for b, dist in lengths[a].items():
            if dist >= 2:
                implied.append((dist, idx[a], idx[b], f"{a} precedes {b} (indirectly)"))
    implied.sort()
    out += [s for *_, s in (implied if max_orderings is None else implied[: max(0, max_orderings)])]
    return out
