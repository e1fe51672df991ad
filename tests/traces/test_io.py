"""Trace JSONL round trip, mixed-path loading and selection."""

from pathlib import Path

import pytest

from agentcausal.exceptions import InvalidTracesError, TraceFormatError
from agentcausal.traces.io import load_traces, scan_traces, select_traces
from agentcausal.traces.jsonl import read_jsonl, write_jsonl

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
    with pytest.raises(TraceFormatError, match="duplicate trace id 'examples/bad_plan_at_step_0'") as info:
        load_traces([EXAMPLES, one])
    assert info.value.path == str(one) and str(one) in str(info.value)
    # --skip-invalid keeps the first and skips the later duplicate, listing it
    scan = scan_traces([EXAMPLES, one])
    assert len(scan.traces) == 4 and [s["path"] for s in scan.skipped()] == [str(one)]
    assert len(load_traces([EXAMPLES, one], skip_invalid=True)) == 4


def test_loose_files_in_different_folders_get_distinct_stable_ids(tmp_path):
    src = (EXAMPLES / "bad_plan_at_step_0.json").read_text()
    paths = []
    for folder in ("r1", "r2", "a/x", "b/x"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "trace.json").write_text(src)
        paths.append(tmp_path / folder / "trace.json")
    ids = [t.id for t in load_traces(paths)]
    assert ids == ["r1/trace", "r2/trace", "a/x/trace", "b/x/trace"]
    assert [t.id for t in load_traces(paths)] == ids  # stable
    assert [t.id for t in load_traces(paths[:1])] == ["r1/trace"]  # widened only when needed


def test_duplicates_are_listed_with_the_other_invalid_inputs(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    good = tmp_path / "t.jsonl"
    write_jsonl(load_traces([EXAMPLES / "bad_plan_at_step_0.json"]), good)
    with pytest.raises(InvalidTracesError) as info:
        load_traces([tmp_path / "bad.json", good, good])
    assert sorted(Path(e.path).name for e in info.value.errors) == ["bad.json", "t.jsonl"]
    assert "duplicate trace id" in str(info.value)


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
        "examples/bad_plan_at_step_0",
        "examples/wrong_unit_at_step_2",
    ]
    assert len(select_traces(traces, limit=1)) == 1
    assert [t.id for t in select_traces(traces, ids=["examples/wrong_unit_at_step_2"])] == [
        "examples/wrong_unit_at_step_2"
    ]
    with pytest.raises(TraceFormatError, match="unknown trace ids") as err:
        select_traces(traces, ids=["nope"])
    assert "examples/bad_plan_at_step_0" in str(err.value)  # the message shows what ids look like
