"""Metrics on hand-computed graphs."""

from __future__ import annotations

import pytest

from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.graphs.metrics import evaluate_graph, nhd, prf, shd
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
    assert shd(TRUE, pred) == 3  # reversal 1 + missing 1 + extra 1
    assert shd(TRUE, pred, reversal_cost=2) == 4  # reversal 2 + missing 1 + extra 1
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


def test_every_table_metric_on_a_hand_made_three_node_case():
    """Truth X -> Y -> Z. Prediction: Y -> X (reversed), Y - Z (undirected), X -> Z (extra).

    SHD: X-Y differs, Y-Z differs (undirected vs directed), X-Z differs -> 3.
    SHD₂: |A_true - A_pred| entries: X-Y reversal 2, Y-Z undirected sets Z->Y extra 1, X->Z extra 1 -> 4.
    NHD: skeletons {XY, YZ} vs {XY, YZ, XZ}: one pair differs, both entries -> 2 / 9.
    directed F1: true {XY, YZ}, predicted directed {YX, XZ}: no hit -> 0.
    skeleton F1: 2 true, 3 predicted, 2 hits -> P 2/3, R 1 -> F1 0.8.
    """
    from agentcausal.discovery.graphs.metrics import METRIC_COLUMNS, METRICS_FOOTER

    t = CausalGraph.from_edges("XYZ", [("X", "Y"), ("Y", "Z")])
    p = CausalGraph.from_edges("XYZ", [("Y", "X"), ("X", "Z")], undirected=[("Y", "Z")])
    m = evaluate_graph(t, p)
    got = {k: getattr(m, k) for k in METRIC_COLUMNS}
    assert got == {"shd": 3, "shd2": 4, "nhd": pytest.approx(2 / 9), "f1": 0.0, "skeleton_f1": pytest.approx(0.8)}
    assert list(METRIC_COLUMNS.values()) == ["SHD", "SHD₂", "NHD", "F1", "skel F1"]
    assert "d^2" in METRICS_FOOTER and "twice" in METRICS_FOOTER
