"""Run files are written atomically, and a torn, empty or missing one gives one line naming it (exit 2)."""

import json
import os

import pandas as pd
import pytest

from agentcausal.attribution.results import load_results, results_frame, save_run
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.outcome import DiscoveryOutcome, load_outcomes
from agentcausal.discovery.outcome import save_outcomes as save_discovery_run
from agentcausal.exceptions import RunFileError
from agentcausal.runs.folder import atomic_path, load_run_meta
from agentcausal.traces.model import Attribution, Label, Step, Trace
from agentcausal_cli import main

TRACE = Trace(
    id="x/1",
    question="q",
    ground_truth="a",
    label=Label(agent="B", step=1),
    steps=[Step(index=0, agent="A", content="a"), Step(index=1, agent="B", content="b")],
)


def _run(tmp_path):
    save_run([Attribution(trace_id="x/1", method="m", step=1, agent="B")], [TRACE], tmp_path, {"wall_seconds": 1.5})
    return tmp_path


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    run = _run(tmp_path)
    before = (run / "results.parquet").read_bytes()
    with pytest.raises(RuntimeError):
        with atomic_path(run / "results.parquet") as tmp:
            tmp.write_bytes(b"PAR1 half")  # a writer dying midway
            raise RuntimeError("killed")
    assert (run / "results.parquet").read_bytes() == before
    assert sorted(p.name for p in run.iterdir()) == ["results.parquet", "run.json"]


@pytest.mark.parametrize("damage", ["empty", "torn", "missing"])
def test_evaluate_names_a_damaged_results_file_in_one_line(tmp_path, capsys, damage):
    run = _run(tmp_path)
    p = run / "results.parquet"
    if damage == "empty":
        p.write_bytes(b"")
    elif damage == "torn":
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    else:
        p.unlink()
    with pytest.raises(RunFileError, match="results.parquet"):
        load_results(run)
    assert main(["evaluate", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(p) in err and "Traceback" not in err


def test_evaluate_names_a_torn_run_json(tmp_path, capsys):
    run = _run(tmp_path)
    (run / "run.json").write_text('{"wall_seconds": 1.')
    with pytest.raises(RunFileError, match="run.json"):
        load_run_meta(run)
    assert main(["evaluate", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "run.json" in err


def test_torn_outcomes_line_is_named(tmp_path):
    g = CausalGraph.from_edges("XY", [("X", "Y")])
    save_discovery_run([DiscoveryOutcome(dataset="d", seed=0, n=3, method="pc", graph=g, true_graph=g)], tmp_path, {})
    assert len(load_outcomes(tmp_path)) == 1
    text = (tmp_path / "outcomes.jsonl").read_text()
    (tmp_path / "outcomes.jsonl").write_text(text[: len(text) // 2])
    with pytest.raises(RunFileError, match="outcomes.jsonl.*line 1"):
        load_outcomes(tmp_path)
    os.remove(tmp_path / "outcomes.jsonl")
    with pytest.raises(RunFileError, match="no outcomes.jsonl"):
        load_outcomes(tmp_path)


def test_old_results_files_without_status_columns_still_load(tmp_path):
    df = results_frame([Attribution(trace_id="x/1", method="m", step=1, agent="B", error=None)], [TRACE])
    old = df.drop(
        columns=[
            "status",
            "status_detail",
            "reused",
            "request_seconds",
            "wait_seconds",
            "run_requests",
            "run_prompt_tokens",
            "run_completion_tokens",
            "run_request_seconds",
            "run_cost_usd",
        ]
    )
    old.to_parquet(tmp_path / "results.parquet", index=False)
    back = load_results(tmp_path)
    assert back.loc[0, "status"] == "complete" and not back.loc[0, "reused"]
    assert json.loads(back.loc[0, "usage_json"]) == {}
    pd.testing.assert_series_equal(back["run_requests"], back["requests"], check_names=False)


def test_reused_rows_cost_this_run_nothing_and_the_report_says_so(tmp_path):
    from agentcausal.attribution.evaluate import evaluate_frame
    from agentcausal.report.attribution import report_run

    usage = {
        "baseline": {
            "calls": 2,
            "requests": 3,
            "cache_hits": 0,
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "seconds": 4.0,
            "request_seconds": 2.5,
            "wait_seconds": 1.5,
            "cost_usd": 0.0,
        }
    }
    t2 = TRACE.model_copy(update={"id": "x/2"})
    atts = [
        Attribution(trace_id="x/1", method="m", step=1, agent="B", usage=usage),
        Attribution(trace_id="x/2", method="m", step=1, agent="B", usage=usage, reused=True),
        Attribution(trace_id="x/2", method="d", step=0, agent="A", status="degraded", status_detail="LCE failed"),
    ]
    df = results_frame(atts, [TRACE, t2])
    assert df["run_requests"].tolist() == [3, 0, 0] and df["requests"].tolist() == [3, 3, 0]
    assert df["request_seconds"].tolist() == [2.5, 2.5, 0.0] and df["wait_seconds"].tolist() == [1.5, 1.5, 0.0]
    cost = evaluate_frame(df).cost_this_run.set_index("method")
    assert cost.loc["m", "requests_this_run"] == 3 and cost.loc["m", "requests_original"] == 6
    assert cost.loc["m", "prompt_tokens_this_run"] == 100 and cost.loc["m", "reused"] == 1
    assert cost.loc["d", "degraded"] == 1
    overall = evaluate_frame(df).overall.set_index("method")
    assert overall.loc["d", "degraded"] == 1 and overall.loc["m", "reused"] == 1

    save_run(atts, [TRACE, t2], tmp_path, {"wall_seconds": 7.0})
    md = report_run(tmp_path).markdown
    assert "## Cost: this run vs original" in md and "Wall time of this run: 7.0 s" in md


def test_evaluate_says_which_failures_a_rerun_retries(tmp_path, capsys):
    t2 = TRACE.model_copy(update={"id": "x/2"})
    save_run(
        [
            Attribution(trace_id="x/1", method="m", error="LLMCallError: 401", status="failed"),
            Attribution(trace_id="x/2", method="m", error="StructuredOutputError: bad", status="content_failed"),
        ],
        [TRACE, t2],
        tmp_path,
        {},
    )
    assert main(["evaluate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 (trace, method) pairs failed in this run (not cached; the next run retries them)" in out
    assert "1 (trace, method) pairs have no valid answer: content failures, cached (--retry-failed" in out
    assert "2 failed" not in out  # a content failure is an answer the method could not give, not a failed row
    assert f"report:     {tmp_path / 'report.md'}\n            {tmp_path / 'report.html'} (one file" in out
