"""``results.parquet`` of a discovery run written a batch at a time (:class:`ScoredWriter`) reads back as the
frame of the same outcomes scored at once (:func:`outcomes_frame`, written with pandas): same columns in the
same order, same dtypes (an integer metric with a NaN cell is float64), same values."""

from __future__ import annotations

import pandas as pd
import pytest

from agentcausal.discovery.evaluate import ScoredWriter, outcomes_frame, score_run
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.outcome import DiscoveryOutcome, save_outcomes
from agentcausal.exceptions import RunFileError

V = ("A", "B", "C")
TRUE = CausalGraph.from_edges(V, [("A", "B"), ("B", "C")])


def _scored(seed: int, *, reused: bool = False) -> DiscoveryOutcome:
    return DiscoveryOutcome(
        dataset="toy",
        seed=seed,
        n=100,
        method="pc",
        graph=CausalGraph.from_edges(V, [("A", "B")], [("B", "C")]),
        true_graph=TRUE,
        usage={"mac.debate": {"requests": 2, "prompt_tokens": 30, "completion_tokens": 5, "request_seconds": 0.5}},
        details={"temperature": 0.7},
        reused=reused,
    )


def _failed(seed: int) -> DiscoveryOutcome:
    return DiscoveryOutcome(dataset="toy", seed=seed, n=100, method="ges", error="AlgorithmError: x", status="failed")


def _untrue(seed: int) -> DiscoveryOutcome:
    return DiscoveryOutcome(dataset="user", seed=seed, n=50, method="pc", graph=TRUE)


def _by_pandas(outcomes, tmp_path, reversal_cost=1) -> pd.DataFrame:
    p = tmp_path / "by_pandas.parquet"
    outcomes_frame(outcomes, reversal_cost=reversal_cost).to_parquet(p, index=False)
    return pd.read_parquet(p)


@pytest.mark.parametrize(
    "outcomes",
    [
        [_scored(0), _failed(1), _scored(2, reused=True), _untrue(3), _scored(4)],  # a scored row first
        [_failed(0), _scored(1), _untrue(2), _scored(3), _failed(4)],  # a failed row first: another column order
        [_scored(s) for s in range(5)],  # no NaN: integer metrics stay int64
        [_failed(s) for s in range(3)],  # every metric NaN
        [],
    ],
    ids=["scored-first", "failed-first", "all-scored", "all-failed", "empty"],
)
def test_written_a_batch_at_a_time_it_reads_back_as_the_frame_scored_at_once(outcomes, tmp_path):
    w = ScoredWriter(tmp_path / "results.parquet", reversal_cost=2, batch=2)  # rows in several row groups
    for o in outcomes:
        w.add(o)
    got = pd.read_parquet(w.close())
    pd.testing.assert_frame_equal(got, _by_pandas(outcomes, tmp_path, reversal_cost=2))
    assert w.rows == len(outcomes) and sorted(p.name for p in tmp_path.iterdir()) == [
        "by_pandas.parquet",
        "results.parquet",
    ]
    if outcomes and not any(o.graph is None for o in outcomes) and all(o.true_graph for o in outcomes):
        assert got["shd"].dtype == "int64"


def test_score_run_streams_the_outcomes_file_and_a_torn_one_leaves_the_old_results(tmp_path):
    outs = [_scored(0), _failed(1), _untrue(2)]
    save_outcomes(outs, tmp_path)
    path = score_run(tmp_path, reversal_cost=2)
    pd.testing.assert_frame_equal(pd.read_parquet(path), _by_pandas(outs, tmp_path, reversal_cost=2))
    before = path.read_bytes()
    text = (tmp_path / "outcomes.jsonl").read_text()
    (tmp_path / "outcomes.jsonl").write_text(text[: len(text) - 40])  # the last line torn
    with pytest.raises(RunFileError, match="line 3"):
        score_run(tmp_path)
    assert path.read_bytes() == before and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
