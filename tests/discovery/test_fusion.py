"""Meta Fusion: the paper's Hot/Sales/Swim/Attack example, associations, the ordering cap."""

from __future__ import annotations

from agentcausal.discovery.graphs.graph import CausalGraph, Edge, Mark
from agentcausal.discovery.mac.fusion import meta_fusion


def test_paper_example_hot_sales_swim_attack():
    g = CausalGraph.from_adjacency(
        ["Hot", "Sales", "Swim", "Attack"], [[0, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]]
    )
    out = meta_fusion(g)
    assert out[:3] == ["Hot -> Sales", "Hot -> Swim", "Swim -> Attack"]
    assert out[3:] == ["Hot precedes Attack (indirectly)"]


def test_undirected_edges_leave_the_direction_undetermined():
    g = CausalGraph.from_edges(["A", "B", "C"], [("A", "B")], undirected=[("C", "B")])
    assert meta_fusion(g) == ["A -> B", "B --- C: adjacent; the data leave the direction undetermined"]


def test_pag_marks_are_stated_as_the_field_reads_them():
    """``<->``: a hidden common cause, no direct effect; ``o->``: the tail is undetermined, no reversed effect."""
    g = CausalGraph(
        nodes=("A", "B", "C", "D"),
        edges=(
            Edge("A", "B", Mark.ARROW, Mark.ARROW),
            Edge("D", "C", Mark.ARROW, Mark.CIRCLE),
            Edge("A", "D", Mark.CIRCLE, Mark.CIRCLE),
        ),
    )
    out = meta_fusion(g)
    assert "A <-> B: a hidden common cause of A and B; neither causes the other directly" in out
    oc = next(s for s in out if "o->" in s)
    assert oc.startswith("C o-> D: D does not cause C; the mark at C is undetermined")
    assert "A o-o D: adjacent; both marks undetermined" in out
    assert not any("direction unknown" in s or "precedes" in s for s in out)


def test_implied_orderings_are_capped_shortest_first():
    nodes = list("ABCDE")
    g = CausalGraph.from_edges(nodes, [("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")])
    out = meta_fusion(g, max_orderings=2)
    orderings = [s for s in out if "precedes" in s]
    assert orderings == ["A precedes C (indirectly)", "B precedes D (indirectly)"]
    assert len([s for s in meta_fusion(g, max_orderings=100) if "precedes" in s]) == 6
    assert not [s for s in meta_fusion(g, max_orderings=0) if "precedes" in s]
