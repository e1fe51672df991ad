"""bench.embedded_compare: counts per method on the pairs both runs finished, and the not-worse flag."""

from __future__ import annotations

from bench.embedded_compare import compare_markdown, compare_rows


def _row(trace, method, step_ok, agent_ok, error=None, requests=1):
    return {
        "trace": trace,
        "method": method,
        "true_step": 2,
        "pred_step": 2 if step_ok else 0,
        "step_correct": step_ok,
        "agent_correct": agent_ok,
        "error": error,
        "requests": requests,
        "prompt_tokens": 100,
        "completion_tokens": 10,
        "seconds": 1.0,
    }


def test_only_common_pairs_are_compared_and_a_lost_trace_is_worse():
    before = [_row("t1", "a", True, True), _row("t2", "a", False, True), _row("t3", "a", True, True)]
    after = [_row("t1", "a", False, True), _row("t2", "a", False, True)]  # t3 unfinished after
    res = compare_rows(before, after)
    assert res["traces"] == ["t1", "t2"]
    m = res["methods"]["a"]
    assert (m["n"], m["step_correct_before"], m["step_correct_after"]) == (2, 1, 0)
    assert m["not_worse"] is False


def test_a_new_error_is_worse_even_at_equal_accuracy():
    before = [_row("t1", "a", False, False)]
    after = [_row("t1", "a", False, False, error="reply cut off")]
    res = compare_rows(before, after)
    assert res["methods"]["a"]["errors_after"] == 1 and res["methods"]["a"]["not_worse"] is False
    assert "reply cut off" in compare_markdown(res, "b", "a")


def test_equal_runs_are_not_worse():
    rows = [_row("t1", "a", True, False), _row("t1", "b", False, True, requests=3)]
    res = compare_rows(rows, rows)
    assert all(m["not_worse"] for m in res["methods"].values())
    assert res["methods"]["b"]["requests_after"] == 3
