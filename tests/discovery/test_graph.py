"""CausalGraph: causal-learn encodings pinned on hand-built cases, adjacency round trips, cycle repair."""

from __future__ import annotations

import numpy as np
import pytest

from agentcausal.discovery.graphs.graph import CausalGraph, Edge, Mark, repair_to_dag
from agentcausal.exceptions import AlgorithmError

NODES = ["A", "B", "C"]


def test_general_graph_encoding_hand_built():
    # graph[j, i] = 1 and graph[i, j] = -1 means i -> j; both -1 undirected; both 1 bidirected; 2 circle
    m = np.zeros((3, 3), dtype=int)
    m[1, 0], m[0, 1] = 1, -1  # A -> B
    m[1, 2], m[2, 1] = -1, -1  # B --- C
    g = CausalGraph.from_causallearn(m, NODES, "general_graph")
    assert g.directed_edges() == {("A", "B")}
    assert Edge("B", "C", Mark.TAIL, Mark.TAIL) in g.edges
    m2 = np.zeros((3, 3), dtype=int)
    m2[0, 2], m2[2, 0] = 2, 1  # A o-> C : mark at A is circle, at C arrow
    m2[0, 1], m2[1, 0] = 1, 1  # A <-> B
    g2 = CausalGraph.from_causallearn(m2, NODES, "general_graph")
    assert {str(e) for e in g2.edges} == {"A o-> C", "A <-> B"}
    assert g2.directed_edges() == set()


def test_general_graph_encoding_from_pc_on_a_collider(collider_dataset):
    from causallearn.search.ConstraintBased.PC import pc

    cg = pc(collider_dataset.data, 0.01, "fisherz", show_progress=False)
    assert cg.G.graph[2, 0] == 1 and cg.G.graph[0, 2] == -1  # X -> Z in causal-learn's encoding
    g = CausalGraph.from_causallearn(cg.G, ["X", "Y", "Z"])
    assert g.directed_edges() == {("X", "Z"), ("Y", "Z")}


def test_exact_search_encoding_hand_built_and_real():
    dag = np.array([[0, 0, 1], [0, 0, 0], [0, 1, 0]])  # dag[i, j] = 1 means i -> j
    g = CausalGraph.from_causallearn(dag, NODES, "exact_search")
    assert g.directed_edges() == {("A", "C"), ("C", "B")}
    from causallearn.search.ScoreBased.ExactSearch import bic_exact_search

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=2000), rng.normal(size=2000)
    real, _ = bic_exact_search(np.c_[x, y, x + y + 0.5 * rng.normal(size=2000)], max_parents=2)
    assert CausalGraph.from_causallearn(real, ["X", "Y", "Z"], "exact_search").directed_edges() == {
        ("X", "Z"),
        ("Y", "Z"),
    }


def test_lingam_encoding_hand_built_and_real():
    b = np.array([[0, 0, 0], [2.0, 0, 0], [0, -1.5, 0]])  # B[i, j] != 0 means j -> i
    g = CausalGraph.from_causallearn(b, NODES, "lingam")
    assert g.directed_edges() == {("A", "B"), ("B", "C")}
    from causallearn.search.FCMBased import lingam

    rng = np.random.default_rng(1)
    x = rng.uniform(size=1000)
    y = 2 * x + rng.uniform(size=1000)
    model = lingam.DirectLiNGAM(random_state=0)
    model.fit(np.c_[x, y])
    assert CausalGraph.from_causallearn(model.adjacency_matrix_, ["x", "y"], "lingam").directed_edges() == {("x", "y")}


def test_from_causallearn_rejects_bad_input():
    with pytest.raises(AlgorithmError, match="shape"):
        CausalGraph.from_causallearn(np.zeros((2, 2)), NODES)
    with pytest.raises(AlgorithmError, match="unknown causal-learn source"):
        CausalGraph.from_causallearn(np.zeros((3, 3)), NODES, "tetrad")  # type: ignore[arg-type]
    bad = np.zeros((3, 3), dtype=int)
    bad[0, 1], bad[1, 0] = 7, 1
    with pytest.raises(AlgorithmError, match="mark code"):
        CausalGraph.from_causallearn(bad, NODES)


def test_adjacency_round_trip_and_undirected_both_entries():
    g = CausalGraph.from_edges(NODES, [("A", "B")], undirected=[("B", "C")])
    a = g.to_adjacency()
    assert a.tolist() == [[0, 1, 0], [0, 0, 1], [0, 1, 0]]
    assert g.to_adjacency(directed_only=True).tolist() == [[0, 1, 0], [0, 0, 0], [0, 0, 0]]
    back = CausalGraph.from_adjacency(NODES, a)
    assert back.directed_edges() == {("A", "B")} and back.skeleton() == g.skeleton()
    with pytest.raises(AlgorithmError, match="diagonal"):
        CausalGraph.from_adjacency(NODES, np.eye(3))
    with pytest.raises(AlgorithmError, match="shape"):
        CausalGraph.from_adjacency(NODES, np.zeros((2, 3)))


def test_graph_validation_rejects_unknown_nodes_self_loops_and_double_edges():
    with pytest.raises(ValueError, match="unknown node"):
        CausalGraph.from_edges(NODES, [("A", "Z")])
    with pytest.raises(ValueError, match="self-loop"):
        CausalGraph.from_edges(NODES, [("A", "A")])
    with pytest.raises(ValueError, match="more than one edge"):
        CausalGraph.from_edges(NODES, [("A", "B"), ("B", "A")])


def test_repair_breaks_a_three_cycle_at_its_last_listed_edge():
    r = repair_to_dag(NODES, [("A", "B"), ("B", "C"), ("C", "A")])
    assert r.graph.is_dag()
    assert r.graph.directed_edges() == {("A", "B"), ("B", "C")}
    assert r.dropped == ("C -> A: closes a cycle",)


def test_repair_drops_unknown_self_loop_and_reverse_duplicates():
    r = repair_to_dag(NODES, [("A", "B"), ("B", "A"), ("A", "A"), ("Q", "A"), ("A", "B"), ("C", "B")])
    assert r.graph.directed_edges() == {("A", "B"), ("C", "B")}
    assert [d.split(": ")[1] for d in r.dropped] == [
        "duplicate or reverse of an earlier edge",
        "self-loop",
        "unknown variable",
        "duplicate or reverse of an earlier edge",
    ]


def test_repair_breaks_two_interleaved_cycles():
    nodes = list("ABCD")
    r = repair_to_dag(nodes, [("A", "B"), ("B", "C"), ("C", "D"), ("D", "B"), ("C", "A")])
    assert r.graph.is_dag()
    assert len(r.dropped) == 2 and all("cycle" in d for d in r.dropped)
