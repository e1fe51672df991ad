"""Meta Fusion: the paper's Hot/Sales/Swim/Attack example, associations, the ordering cap."""

from __future__ import annotations

from agentcausal.discovery.graph import CausalGraph
from agentcausal.discovery.mac.fusion import meta_fusion


def test_paper_example_hot_sales_swim_attack():
    g = CausalGraph.from_adjacency(["Hot", "Sales", "Swim", "Attack"],
                                   [[0, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]])
    out = meta_fusion(g)
    assert out[:3] == ["Hot -> Sales", "Hot -> Swim", "Swim -> Attack"]
    assert out[3:] == ["Hot precedes Attack (indirectly)"]


def test_undirected_edges_become_associations():
    g = CausalGraph.from_edges(["A", "B", "C"], [("A", "B")], undirected=[("C", "B")])
    assert meta_fusion(g) == ["A -> B", "B and C are associated, direction unknown"]


def test_implied_orderings_are_capped_shortest_first():
    nodes = list("ABCDE")
    g = CausalGraph.from_edges(nodes, [("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")])
    out = meta_fusion(g, max_orderings=2)
    orderings = [s for s in out if "precedes" in s]
    assert orderings == ["A precedes C (indirectly)", "B precedes D (indirectly)"]
    assert len([s for s in meta_fusion(g, max_orderings=100) if "precedes" in s]) == 6
    assert not [s for s in meta_fusion(g, max_orderings=0) if "precedes" in s]
