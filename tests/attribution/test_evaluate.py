"""Exact evaluation on hand-computed cases, and the markdown report."""

import pandas as pd
import pytest

from agentcausal.attribution.evaluate import agent_match, evaluate_frame, step_match
from agentcausal.attribution.results import load_results, results_frame, save_results
from agentcausal.exceptions import TraceFormatError
from agentcausal.report.attribution import markdown_report, write_report
from agentcausal.report.attribution_tables import accuracy_text
from agentcausal.traces.model import Attribution, Label, Step, Trace


def _trace(tid, n, step, agent, source="Algorithm-Generated"):
    return Trace(
        id=tid,
        source=source,
        question="q",
        ground_truth="a",
        label=Label(agent=agent, step=step),
        steps=[Step(index=i, agent=agent if i == step else "Other", content="") for i in range(n)],
    )


@pytest.fixture
def four_labelled_traces():
    """Two short AG traces, one 12-step and one 70-step Hand-Crafted trace."""
    return [
        _trace("AG/1", 8, 1, "Excel_Expert"),
        _trace("AG/2", 6, 0, "Verification_Expert"),
        _trace("HC/1", 12, 5, "WebSurfer", "Hand-Crafted"),
        _trace("HC/2", 70, 40, "Orchestrator", "Hand-Crafted"),
    ]


@pytest.fixture
def predictions():
    A = Attribution
    return [
        A(trace_id="AG/1", method="m", step=10 % 8, agent="excel_expert"),  # step 2 vs 1: wrong step, agent ok
        A(trace_id="AG/2", method="m", step=0, agent="VerificationExpert"),  # both correct
        A(trace_id="HC/1", method="m", step=5, agent="Orchestrator (thought)"),  # step ok, agent wrong
        A(trace_id="HC/2", method="m", step=None, error="StructuredOutputError: bad"),  # failed
        A(trace_id="AG/1", method="n", step=1, agent="Excel_Expert"),
        A(trace_id="AG/2", method="n", step=None, agent=None),  # undetermined
    ]


def test_exact_step_match_not_substring():
    assert not step_match(10, 1) and not step_match(1, 10) and step_match(3, 3)
    assert not step_match(None, None)


def test_agent_match_normalises():
    assert agent_match("Orchestrator (-> WebSurfer)", "Orchestrator")
    assert agent_match("verification_expert", "VerificationExpert")
    assert not agent_match("", "")
    assert not agent_match("WebSurfer", "FileSurfer")


def test_hand_computed_accuracy(four_labelled_traces, predictions):
    df = results_frame(predictions, four_labelled_traces)
    ev = evaluate_frame(df)
    m = ev.overall.set_index("method")
    assert m.loc["m", "n"] == 4 and m.loc["m", "labelled"] == 4
    assert m.loc["m", "step_acc"] == pytest.approx(2 / 4)  # AG/2, HC/1
    assert m.loc["m", "agent_acc"] == pytest.approx(2 / 4)  # AG/1, AG/2
    assert m.loc["m", "both_acc"] == pytest.approx(1 / 4)  # AG/2
    assert m.loc["m", "failed"] == 1 and m.loc["m", "undetermined"] == 0
    assert m.loc["n", "step_acc"] == pytest.approx(1 / 2) and m.loc["n", "undetermined"] == 1

    sub = ev.by_subset.set_index(["method", "subset"])
    assert sub.loc[("m", "Algorithm-Generated"), "step_acc"] == pytest.approx(1 / 2)
    assert sub.loc[("m", "Hand-Crafted"), "both_acc"] == 0.0

    ln = ev.by_length.set_index(["method", "length_bucket"])
    assert ln.loc[("m", "1-10"), "n"] == 2 and ln.loc[("m", "11-30"), "step_acc"] == 1.0
    assert ln.loc[("m", "61+"), "failed"] == 1

    h = ev.step_error_hist
    assert h.loc["m"].to_dict() == {"0": 2, "1": 1, "2": 0, "3": 0, "4": 0, ">=5": 0, "none": 1}
    assert h.loc["n", "none"] == 1 and h.loc["n", "0"] == 1

    assert ev.failures.to_dict("records") == [
        {"trace_id": "HC/2", "method": "m", "status": "content_failed", "error": "StructuredOutputError: bad"}
    ]


def test_rows_not_run_are_left_out_of_the_accuracy_and_counted_apart(four_labelled_traces):
    A = Attribution
    atts = [
        A(trace_id="AG/1", method="m", step=1, agent="Excel_Expert"),  # right
        A(trace_id="AG/2", method="m", step=3, agent="x"),  # wrong
        A(trace_id="HC/1", method="m", step=None, error="EndpointDownError: down", status="not_run"),
        A(trace_id="HC/2", method="m", step=None, error="BudgetExceeded: --max-cost", status="not_run"),
    ]
    ev = evaluate_frame(results_frame(atts, four_labelled_traces))
    row = ev.overall.set_index("method").loc["m"]
    assert (row["n"], row["labelled"], row["step_k"], row["failed"], row["not_run"]) == (4, 2, 1, 0, 2)
    assert row["step_acc"] == pytest.approx(1 / 2)  # over the two rows computed, not 1/4
    text = accuracy_text(ev)
    assert "1/2 (50.0%)" in text and "not_run" in text


def test_unlabelled_traces_are_kept_but_not_scored(four_labelled_traces):
    t = Trace(id="U/1", question="q", ground_truth="a", steps=[Step(index=0, agent="A", content="")])
    df = results_frame([Attribution(trace_id="U/1", method="m", step=0, agent="A")], [t])
    ev = evaluate_frame(df)
    assert ev.overall.loc[0, "labelled"] == 0 and pd.isna(ev.overall.loc[0, "step_acc"])


def test_usage_tables(four_labelled_traces):
    u = {
        "baseline": {
            "calls": 2,
            "requests": 2,
            "cache_hits": 0,
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "seconds": 1.5,
            "cost_usd": 0.0,
        }
    }
    preds = [
        Attribution(trace_id="AG/1", method="m", step=1, agent="x", usage=u, seconds=2.0),
        Attribution(trace_id="AG/2", method="m", step=1, agent="x", usage=u, seconds=4.0),
    ]
    ev = evaluate_frame(results_frame(preds, four_labelled_traces))
    c = ev.cost_per_trace.iloc[0]
    assert c["seconds"] == 3.0 and c["prompt_tokens"] == 100 and c["calls"] == 2
    s = ev.cost_by_stage.iloc[0]
    assert (s["stage"], s["prompt_tokens"], s["prompt_tokens_per_trace"], s["seconds_per_trace"]) == (
        "baseline",
        200,
        100,
        1.5,
    )


def test_unknown_trace_raises(four_labelled_traces):
    with pytest.raises(TraceFormatError, match="unknown trace"):
        results_frame([Attribution(trace_id="zz", method="m")], four_labelled_traces)


def test_parquet_round_trip_and_report(tmp_path, four_labelled_traces, predictions):
    df = results_frame(predictions, four_labelled_traces)
    save_results(df, tmp_path / "run" / "results.parquet")
    back = load_results(tmp_path / "run")
    assert evaluate_frame(back).overall.equals(evaluate_frame(df).overall)
    ev = evaluate_frame(back)
    md = markdown_report(ev, meta={"corpus": "x"})
    # each accuracy as its raw count over the labelled rows beside the percentage
    assert "| m | 4 | 4 | 2/4 (50.0%) | 2/4 (50.0%) | 1/4 (25.0%) |" in md
    assert "StructuredOutputError: bad" in md
    assert "2/4 (50.0%)" in accuracy_text(ev)
    p = write_report(ev, tmp_path / "run")
    assert p.name == "report.md" and "## Per trace length (steps)" in p.read_text()
    assert (tmp_path / "run" / "accuracy.csv").exists()


def test_load_results_errors(tmp_path):
    with pytest.raises(TraceFormatError, match="no results.parquet"):
        load_results(tmp_path)
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "results.parquet")
    with pytest.raises(TraceFormatError, match="lacks columns"):
        load_results(tmp_path)
