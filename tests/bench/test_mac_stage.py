"""The MAC stage benchmark's summary rows carry the run table's metric columns."""

from __future__ import annotations

from agentcausal.discovery.evaluate import outcomes_frame
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.graphs.metrics import METRIC_COLUMNS, METRICS_FOOTER, evaluate_graph
from agentcausal.discovery.outcome import DiscoveryOutcome
from agentcausal.report.discovery_tables import summary_text, table_records
from bench.mac_stage import _summary


def test_run_table_and_bench_show_the_same_metric_columns():
    t = CausalGraph.from_edges("XYZ", [("X", "Y"), ("Y", "Z")])
    p = CausalGraph.from_edges("XYZ", [("Y", "X"), ("X", "Z")], undirected=[("Y", "Z")])
    outs = [DiscoveryOutcome(dataset="toy", seed=s, n=50, method="pc", graph=p, true_graph=t) for s in (0, 1)]
    df = outcomes_frame(outs)
    text = summary_text(df)
    assert all(h in text.splitlines()[0] for h in METRIC_COLUMNS.values()) and METRICS_FOOTER in " ".join(text.split())
    assert " 50 " in text.splitlines()[1]  # n shown
    rec = table_records(df)[0]
    assert {h: rec[h] for h in METRIC_COLUMNS.values()} == {
        "SHD": "3.00",
        "SHD₂": "4.00",
        "NHD": "0.222",
        "F1": "0.00",
        "skel F1": "0.80",
    }
    row = {
        "dataset": "toy",
        "seed": 0,
        "n": 50,
        "algorithm": "pc",
        "seconds": 0.1,
        "error": None,
        **evaluate_graph(t, p).model_dump(include=set(METRIC_COLUMNS)),
    }
    bench = _summary([row], {("toy", "pc"): (0, 0)})[0]
    assert set(METRIC_COLUMNS) <= set(bench) and "f1_adj" not in bench and bench["n"] == 50
