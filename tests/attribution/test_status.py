"""Result status and cache keys of attributions (no Prefect): which failures are content failures (cacheable),
which are failures of the run (raised for a retry), degraded DCFA answers, reuse marking, and the trace id in
the key. The fake OpenAI server is a test double."""

import json
from pathlib import Path

import pytest

from agentcausal.attribution.cache_key import attribution_key
from agentcausal.attribution.jobs import failed_attribution, run_method
from agentcausal.discovery.variants import variant
from agentcausal.exceptions import (
    AlgorithmError,
    DatasetError,
    EndpointUnreachableError,
    LLMCallError,
    StructuredOutputError,
    TraceFormatError,
    is_content_failure,
)
from agentcausal.registry import ATTRIBUTION_METHODS, DISCOVERY_METHODS
from agentcausal.traces.io import load_traces

CASES = Path(__file__).resolve().parents[3] / "shared" / "cases"
ALL_AT_ONCE = json.dumps({"reason": "wrong product", "agent": "Math_Expert", "step": 0})


@pytest.fixture
def t3():
    if not (CASES / "t3.json").is_file():
        pytest.skip("../shared/cases not found")
    return load_traces([CASES / "t3.json"])[0]


@pytest.mark.parametrize(
    "exc, content",
    [
        (StructuredOutputError("s", "M", "raw", 3, "bad"), True),
        (TraceFormatError("bad step"), True),
        (DatasetError("constant column"), True),
        (AlgorithmError("pc", "failed: singular matrix"), True),
        (AlgorithmError("pc", "timed out after 0.02 s", transient=True), False),
        (AlgorithmError("pc", "worker died (exit code -9)", transient=True), False),
        (LLMCallError("p", "s", 401, "unauthorised"), False),
        (LLMCallError("p", "s", 400, "bad request"), False),
        (EndpointUnreachableError("p", "http://x", "429"), False),
        (RuntimeError("a bug"), False),
    ],
)
def test_only_failures_of_the_content_are_content_failures(exc, content):
    assert is_content_failure(exc) is content
    assert failed_attribution("t", "m", exc).status == ("content_failed" if content else "failed")


def test_a_401_is_raised_for_a_retry_not_recorded(fake_server, make_gateway, t3):
    fake_server.inject(401)
    gw = make_gateway(fake_server)
    with pytest.raises(LLMCallError):
        run_method(t3, ATTRIBUTION_METHODS["all_at_once"], gw, raise_transient=True)
    fake_server.inject(401)
    a = run_method(
        t3, ATTRIBUTION_METHODS["all_at_once"], gw
    )  # a plain call records it, marked failed (never to be cached)
    assert a.status == "failed" and a.status_detail == "LLMCallError" and a.step is None


def test_reply_invalid_after_repairs_is_a_marked_content_failure(fake_server, make_gateway, t3):
    fake_server.responder = lambda body: "no JSON here"
    a = run_method(t3, ATTRIBUTION_METHODS["all_at_once"], make_gateway(fake_server), raise_transient=True)
    assert a.status == "content_failed" and a.error.startswith("StructuredOutputError") and not a.reused


def test_all_calls_from_the_llm_cache_mark_the_row_reused(fake_server, make_gateway, t3):
    fake_server.responder = lambda body: ALL_AT_ONCE
    first = run_method(t3, ATTRIBUTION_METHODS["all_at_once"], make_gateway(fake_server))
    again = run_method(
        t3, ATTRIBUTION_METHODS["all_at_once"], make_gateway(fake_server)
    )  # a later run, same cache folder
    assert first.status == "complete" and not first.reused and first.usage["baseline"]["requests"] == 1
    assert again.reused and again.usage["baseline"]["requests"] == 0 and fake_server.count == 1


def test_same_content_different_ids_have_different_keys(fake_server, make_gateway):
    if not (CASES / "dup_content_traces").is_dir():
        pytest.skip("../shared/cases not found")
    a, b = load_traces([CASES / "dup_content_traces"])
    assert a.content_hash() == b.content_hash() and a.id != b.id
    gw = make_gateway(fake_server)
    assert attribution_key(a, ATTRIBUTION_METHODS["all_at_once"], None, gw) != attribution_key(
        b, ATTRIBUTION_METHODS["all_at_once"], None, gw
    )
    # the label is not in the key (no method sees it): relabelling keeps the cached record
    relabelled = a.model_copy(update={"label": b.label})
    assert attribution_key(a, ATTRIBUTION_METHODS["all_at_once"], None, gw) == attribution_key(
        relabelled, ATTRIBUTION_METHODS["all_at_once"], None, gw
    )


def test_identical_requests_within_one_run_are_not_reused(fake_server, make_gateway):
    """Two traces of the same history on a fresh cache: the second call is served by the entry the
    first wrote in this run (sequentially or merged in flight) -- not reuse of an earlier run."""
    if not (CASES / "dup_content_traces").is_dir():
        pytest.skip("../shared/cases not found")
    from concurrent.futures import ThreadPoolExecutor

    a, b = load_traces([CASES / "dup_content_traces"])
    fake_server.responder = lambda body: ALL_AT_ONCE
    gw = make_gateway(fake_server)
    with ThreadPoolExecutor(2) as pool:
        rows = list(pool.map(lambda t: run_method(t, ATTRIBUTION_METHODS["all_at_once"], gw), [a, b]))
    rows.append(run_method(a, ATTRIBUTION_METHODS["all_at_once"], gw))  # once more, after both finished
    assert fake_server.count == 1  # one request served all three
    assert [r.reused for r in rows] == [False, False, False]
    assert sum(r.usage["baseline"]["run_hits"] for r in rows) == 2
    later = [
        run_method(t, ATTRIBUTION_METHODS["all_at_once"], make_gateway(fake_server)) for t in (a, b)
    ]  # an earlier run's cache
    assert [r.reused for r in later] == [True, True] and fake_server.count == 1


def test_two_dialects_of_one_model_never_share_a_result(fake_server, make_gateway, tmp_path):
    """Qwen3's thinking and non-thinking profiles serve one model id; their results differ, so do their keys
    (attribution and discovery), while an unchanged profile keeps its key."""
    from agentcausal.discovery.cache_key import discovery_key
    from agentcausal.discovery.config import DiscoveryConfig
    from agentcausal.discovery.data.datasets import load_dataset
    from agentcausal.traces.model import Step, Trace

    trace = Trace(id="t", question="q?", ground_truth="a", steps=[Step(index=0, agent="A", content="x")])
    ds = load_dataset("asia", n=50, seed=0)
    think = make_gateway(
        fake_server, cache_dir=tmp_path / "a", extra_body={"chat_template_kwargs": {"enable_thinking": True}}
    )
    nothink = make_gateway(
        fake_server, cache_dir=tmp_path / "b", extra_body={"chat_template_kwargs": {"enable_thinking": False}}
    )
    same = make_gateway(
        fake_server, cache_dir=tmp_path / "c", extra_body={"chat_template_kwargs": {"enable_thinking": False}}
    )
    effort = make_gateway(fake_server, cache_dir=tmp_path / "d", reasoning_effort="high")
    capped = make_gateway(
        fake_server,
        cache_dir=tmp_path / "e",
        max_output_tokens=64,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    keys = [
        attribution_key(trace, ATTRIBUTION_METHODS["all_at_once"], None, g)
        for g in (think, nothink, same, effort, capped)
    ]
    assert keys[0] != keys[1] and keys[1] == keys[2] and keys[3] not in keys[:3] and keys[4] not in keys[:4]
    dkeys = [discovery_key(ds, variant(DISCOVERY_METHODS, "mac"), DiscoveryConfig(), g) for g in (think, nothink, same)]
    assert dkeys[0] != dkeys[1] and dkeys[1] == dkeys[2]
    # statistical methods send nothing to a model: one key whatever the routing
    assert discovery_key(ds, variant(DISCOVERY_METHODS, "pc"), DiscoveryConfig(), think) == discovery_key(
        ds, variant(DISCOVERY_METHODS, "pc"), DiscoveryConfig(), nothink
    )
