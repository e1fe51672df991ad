"""Metrics on hand-computed graphs."""

from __future__ import annotations

import pytest

from agentcausal.discovery.graph import CausalGraph
from agentcausal.discovery.metrics import evaluate_graph, nhd, prf, shd
from agentcausal.exceptions import AlgorithmError

NODES = list("ABCD")
# truth: A -> B -> C, A -> C, D isolated
TRUE = CausalGraph.from_edges(NODES, [("A", "B"), ("B", "C"), ("A", "C")])


def test_identical_graphs_score_perfectly():
    m = evaluate_graph(TRUE, TRUE)
    assert (m.shd, m.nhd, m.f1, m.skeleton_f1) == (0, 0.0, 1.0, 1.0)


def test_reversed_missing_and_extra_edges_hand_computed():
    # pred: B -> A (reversed), B -> C (right), A -> C missing, C -> D extra
    pred = CausalGraph.from_edges(NODES, [("B", "A"), ("B", "C"), ("C", "D")])
    assert shd(TRUE, pred) == 3                      # reversal 1 + missing 1 + extra 1
    assert shd(TRUE, pred, reversal_cost=2) == 4     # reversal 2 + missing 1 + extra 1
    assert nhd(TRUE, pred) == pytest.approx(4 / 16)  # skeleton: A-C missing, C-D extra, both entries each
    m = evaluate_graph(TRUE, pred)
    assert (m.precision, m.recall) == (pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert m.skeleton_precision == pytest.approx(2 / 3) and m.skeleton_recall == pytest.approx(2 / 3)
    assert m.f1 == pytest.approx(1 / 3)
    assert (m.n_true_edges, m.n_pred_edges) == (3, 3)


def test_undirected_edge_counts_as_adjacency_not_as_a_directed_claim():
    pred = CausalGraph.from_edges(NODES, [("B", "C"), ("A", "C")], undirected=[("A", "B")])
    m = evaluate_graph(TRUE, pred)
    assert m.shd == 1 and shd(TRUE, pred, reversal_cost=2) == 1
    assert m.nhd == 0.0 and m.skeleton_f1 == 1.0
    assert m.precision == 1.0 and m.recall == pytest.approx(2 / 3)


def test_empty_prediction():
    empty = CausalGraph(nodes=tuple(NODES))
    m = evaluate_graph(TRUE, empty)
    assert (m.shd, m.precision, m.recall, m.f1) == (3, 0.0, 0.0, 0.0)
    assert m.nhd == pytest.approx(6 / 16)
    assert prf(set(), set()) == (1.0, 1.0, 1.0)


def test_node_order_does_not_matter():
    pred = CausalGraph.from_edges(list("DCBA"), [("A", "B"), ("B", "C"), ("A", "C")])
    assert shd(TRUE, pred, reversal_cost=2) == 0 and shd(TRUE, pred) == 0


def test_metrics_raise_on_different_nodes_or_bad_reversal_cost():
    other = CausalGraph(nodes=("A", "B"))
    with pytest.raises(AlgorithmError, match="different nodes"):
        evaluate_graph(TRUE, other)
    with pytest.raises(AlgorithmError, match="different nodes"):
        nhd(TRUE, other)
    with pytest.raises(AlgorithmError, match="reversal_cost"):
        shd(TRUE, TRUE, reversal_cost=3)  # type: ignore[arg-type]
