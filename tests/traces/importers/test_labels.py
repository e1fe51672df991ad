"""Labels side file: ground truth, 0-based steps, span ids, refusals."""

from __future__ import annotations

import json

import pytest

from agentcausal.exceptions import ConfigError, TraceFormatError
from agentcausal.traces.importers.labels import apply_labels, read_labels, require_ground_truth
from agentcausal.traces.model import Step, Trace


def _trace(tid="t1"):
    steps = [
        Step(index=i, agent=a, content=c, metadata={"span_id": f"{i:016x}"})
        for i, (a, c) in enumerate([("planner", "p"), ("coder", "c"), ("checker", "k")])
    ]
    return Trace(id=tid, question="q", ground_truth="", steps=steps)


def _labels(tmp_path, *rows):
    f = tmp_path / "labels.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return read_labels(f)


def test_step_and_agent(tmp_path):
    (t,) = apply_labels(
        [_trace()],
        _labels(
            tmp_path,
            {"id": "t1", "ground_truth": "42", "mistake_step": "1", "mistake_agent": "Coder", "mistake_reason": "typo"},
        ),
    )
    assert (t.ground_truth, t.label.step, t.label.agent, t.label.reason) == ("42", 1, "Coder", "typo")


def test_span_id_gives_step_and_agent(tmp_path):
    (t,) = apply_labels([_trace()], _labels(tmp_path, {"trace_id": "t1", "mistake_span_id": "0x" + "2".zfill(16)}))
    assert (t.label.step, t.label.agent, t.ground_truth) == (2, "checker", "")


@pytest.mark.parametrize(
    "row, msg",
    [
        ({"trace_id": "t1", "mistake_step": 5}, "out of range"),
        ({"trace_id": "t1", "mistake_span_id": "ffffffffffffffff"}, "no step's span"),
        ({"trace_id": "t1", "mistake_step": 0, "mistake_span_id": "0000000000000001"}, "is not the step"),
    ],
)
def test_bad_labels(tmp_path, row, msg):
    with pytest.raises(TraceFormatError, match=msg):
        apply_labels([_trace()], _labels(tmp_path, row))


def test_duplicate_and_malformed_lines(tmp_path):
    with pytest.raises(TraceFormatError, match="twice"):
        _labels(tmp_path, {"trace_id": "a"}, {"trace_id": "a"})
    with pytest.raises(TraceFormatError, match="line 1"):
        _labels(tmp_path, {"ground_truth": "x"})


def test_require_ground_truth_lists_all():
    with pytest.raises(ConfigError) as e:
        require_ground_truth([_trace("a"), _trace("b").model_copy(update={"ground_truth": "x"}), _trace("c")])
    assert "2 trace(s)" in str(e.value) and "a, c" in str(e.value)
