"""Trace JSONL round trip, mixed-path loading and selection."""

from pathlib import Path

import pytest

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.io import load_traces, read_jsonl, select_traces, write_jsonl

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"


def test_examples_load_with_labels():
    traces = load_traces([EXAMPLES])
    assert len(traces) == 4
    for t in traces:
        assert t.id.startswith("examples/") and t.label is not None
        # every example is named after its decisive step
        assert t.id.endswith(f"_at_step_{t.label.step}")


def test_jsonl_round_trip(tmp_path):
    traces = load_traces([EXAMPLES])
    p = write_jsonl(traces, tmp_path / "sub" / "t.jsonl")
    back = read_jsonl(p)
    assert back == traces
    assert [t.content_hash() for t in back] == [t.content_hash() for t in traces]
    assert load_traces([p]) == traces


def test_mixed_paths_and_duplicate_ids(tmp_path):
    one = EXAMPLES / "bad_plan_at_step_0.json"
    assert [t.id for t in load_traces([one])] == ["examples/bad_plan_at_step_0"]
    with pytest.raises(TraceFormatError, match="duplicate trace ids"):
        load_traces([EXAMPLES, one])


def test_bad_paths_raise(tmp_path):
    with pytest.raises(TraceFormatError, match="no such file"):
        load_traces([tmp_path / "nope"])
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(TraceFormatError, match="expected a folder"):
        load_traces([tmp_path / "x.txt"])
    with pytest.raises(TraceFormatError, match="holds no"):
        load_traces([tmp_path])


def test_bad_jsonl_line_names_the_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"id": "a"}\n')
    with pytest.raises(TraceFormatError, match="line 1"):
        read_jsonl(p)


def test_select_by_ids_steps_and_limit():
    traces = load_traces([EXAMPLES])
    assert [t.id for t in select_traces(traces, max_steps=5)] == [
        "examples/bad_plan_at_step_0", "examples/wrong_unit_at_step_2"]
    assert len(select_traces(traces, limit=1)) == 1
    assert [t.id for t in select_traces(traces, ids=["examples/wrong_unit_at_step_2"])] == [
        "examples/wrong_unit_at_step_2"]
    with pytest.raises(TraceFormatError, match="unknown trace ids"):
        select_traces(traces, ids=["nope"])
