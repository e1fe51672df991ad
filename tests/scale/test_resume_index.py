"""The finished-results index without Prefect: what is stored, what a rerun reuses, and chunks that resume."""

import time

import pytest

from agentcausal.exceptions import EndpointUnreachableError
from agentcausal.runs.scheduling import chunked, run_chunk
from agentcausal.runs.store import ResultIndex, plan_resume
from agentcausal.traces.model import Attribution


def _att(tid: str, status: str = "complete") -> Attribution:
    return Attribution(trace_id=tid, method="m", step=1, agent="A", status=status,
                       error=None if status in ("complete", "degraded") else "E: x")


@pytest.fixture
def index(tmp_path):
    with ResultIndex(tmp_path, "attribute", Attribution) as idx:
        yield idx


def test_failed_records_are_never_stored_and_reused_marks_dropped(index):
    assert index.put("a", _att("a", "failed")) is False and index.get("a") is None
    assert index.put("b", _att("b").model_copy(update={"reused": True}))
    assert index.get("b") == _att("b")


def test_plan_reuses_stored_runs_missing_and_retries_failed_statuses(index):
    for k, st in (("k0", "complete"), ("k1", "content_failed"), ("k2", "degraded")):
        index.put(k, _att(k, st))
    keys = ["k0", "k1", "k2", "k3"]
    plain = plan_resume(keys, index)
    assert sorted(plain.reused) == [0, 1, 2] and plain.run == [3] and plain.rerun == []
    assert all(r.reused for r in plain.reused.values())
    retry = plan_resume(keys, index, retry_failed=True)
    assert sorted(retry.reused) == [0] and retry.run == [3] and retry.rerun == [1, 2]
    fresh = plan_resume(keys, index, refresh=True, retry_failed=True)
    assert fresh.reused == {} and fresh.run == [0, 1, 2, 3]


def test_a_record_that_no_longer_loads_counts_as_absent(index):
    index._cache.set("x", (time.time(), {"not": "an attribution"}))
    assert index.get("x") is None


def test_chunk_stores_each_item_and_a_retry_repeats_only_the_failed_one(index):
    calls = []
    flaky = {"t1": 1}

    def job(tid):
        def run():
            calls.append(tid)
            if flaky.get(tid):
                flaky[tid] -= 1
                raise EndpointUnreachableError("p", "http://x", "connection refused")
            return _att(tid)
        return run

    jobs = [(f"key-{t}", job(t)) for t in ("t0", "t1", "t2")]
    start = time.time()
    with pytest.raises(EndpointUnreachableError):
        run_chunk(jobs, index, not_before=start)
    assert sorted(calls) == ["t0", "t1", "t2"] and index.get("key-t1") is None and index.get("key-t0")
    out = run_chunk(jobs, index, not_before=start)  # the orchestrator's retry
    assert [a.trace_id for a in out] == ["t0", "t1", "t2"] and sorted(calls) == ["t0", "t1", "t1", "t2"]
    # a record stored before not_before is recomputed (refresh / retry-failed)
    run_chunk(jobs[:1], index, not_before=time.time() + 1)
    assert calls.count("t0") == 2


def test_chunked_keeps_order_and_sizes():
    assert chunked(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert chunked([4, 9], 0) == [[4], [9]]
