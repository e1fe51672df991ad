"""The soak benchmark's judging code (``bench/soak.py``): the fault schedule, the row comparison and the count of
requests paid twice. The soak itself (minutes of CLI runs and kills) is a benchmark, not run here."""

import pandas as pd

from bench.soak import ANSWER, FAULT_KINDS, compare_rows, fault_schedule, paid_twice


def _rows(*rows):
    return pd.DataFrame([dict(zip(ANSWER, r), reused=i % 2 == 0, wall_s=float(i)) for i, r in enumerate(rows)])


def test_the_fault_schedule_draws_its_rate_of_transport_faults_only():
    s = fault_schedule(20_000, 0.1, seed=1)
    share = sum(f is not None for f in s) / len(s)
    assert 0.09 < share < 0.11
    assert {f for f in s if f is not None} == set(FAULT_KINDS)
    assert "malformed" not in FAULT_KINDS and "truncated" not in FAULT_KINDS  # content faults are cached by design
    assert s == fault_schedule(20_000, 0.1, seed=1) and s != fault_schedule(20_000, 0.1, seed=2)


def test_rows_compare_on_the_answer_in_any_order_ignoring_timing_and_reuse():
    clean = _rows(("t/0", "dcfa", 3, "Coder", "complete"), ("t/1", "dcfa", 1, "WebSurfer", "complete"))
    soak = _rows(("t/1", "dcfa", 1, "WebSurfer", "complete"), ("t/0", "dcfa", 3, "Coder", "complete"))
    assert compare_rows(soak, clean)["equal"]


def test_a_different_answer_status_or_missing_row_is_reported():
    clean = _rows(("t/0", "dcfa", 3, "Coder", "complete"), ("t/1", "dcfa", 1, "WebSurfer", "complete"))
    step = compare_rows(
        _rows(("t/0", "dcfa", 4, "Coder", "complete"), ("t/1", "dcfa", 1, "WebSurfer", "complete")), clean
    )
    assert not step["equal"] and step["different_rows"] == 1 and step["differences"][0]["pred_step_soak"] == "4"
    status = compare_rows(
        _rows(("t/0", "dcfa", 3, "Coder", "failed"), ("t/1", "dcfa", 1, "WebSurfer", "complete")), clean
    )
    assert not status["equal"] and status["differences"][0]["status_soak"] == "failed"
    missing = compare_rows(_rows(("t/0", "dcfa", 3, "Coder", "complete")), clean)
    assert not missing["equal"] and missing["differences"][0]["pred_step_soak"] == "(missing)"


def test_paid_twice_counts_answered_repeats_not_faulted_retries():
    a = {"_path": "/v1/chat/completions", "messages": ["a"], "_auth": "Bearer x"}
    b = {"_path": "/v1/embeddings", "input": ["b"], "_auth": "Bearer y"}
    got = paid_twice([a, a, b, a], [True, False, False, False])  # a faulted, retried (answered), b, a again
    assert got["requests"] == 4 and got["faulted"] == 1 and got["answered"] == 3
    assert got["distinct_answered"] == 2 and got["paid_twice"] == 1
    assert got["answered_chat"] == 2 and got["answered_embeddings"] == 1
