"""Meta Fusion: the data graph G_C as plain sentences, the causal metadata I_c (MAC §3.5).

Three kinds of sentence, in this order:

1. directed edges: ``"Hot -> Sales"``;
2. other edges (undirected, bidirected, circle marks):
   ``"Hot and Swim are associated, direction unknown"``;
3. implied orderings: for each directed path of length >= 2 (the transitive
   closure of the directed part, minus its direct edges),
   ``"Hot precedes Attack (indirectly)"``; at most ``max_orderings`` of them,
   shortest paths first, then in column order.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.5.
"""

from __future__ import annotations

import networkx as nx

from agentcausal.discovery.graph import CausalGraph

__all__ = ["meta_fusion", "FUSION_HEADER"]

FUSION_HEADER = "A statistical algorithm found on the data:"


def meta_fusion(graph: CausalGraph, *, max_orderings: int = 10) -> list[str]:
    """Turn a data graph into sentences (the paper's I_c).

    Parameters
    ----------
    graph : CausalGraph, the data graph G_C (DAG, CPDAG or PAG)
    max_orderings : int >= 0, cap on implied-ordering sentences

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
            a, b = sorted((e.u, e.v), key=idx.__getitem__)
            out.append(f"{a} and {b} are associated, direction unknown")
    dg = nx.DiGraph()
    dg.add_nodes_from(graph.nodes)
    dg.add_edges_from(directed)
    implied = []
    lengths = dict(nx.all_pairs_shortest_path_length(dg))
    for a in graph.nodes:
        for b, dist in lengths[a].items():
            if dist >= 2:
                implied.append((dist, idx[a], idx[b], f"{a} precedes {b} (indirectly)"))
    implied.sort()
    out += [s for *_, s in implied[:max(0, max_orderings)]]
    return out
