"""MAC as the paper evaluates it: real repeats, budgets that fit the graph, degraded runs, debates with arguments."""

from __future__ import annotations

import inspect
import json

import pytest

from agentcausal.discovery.cache_key import discovery_key
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.datasets import load_dataset
from agentcausal.discovery.jobs import run_discovery
from agentcausal.discovery.mac import MACSettings, run_mac
from agentcausal.discovery.mac import prompts as P
from agentcausal.discovery.mac.calls import graph_reply_tokens, sample_index
from agentcausal.discovery.mac.settings import PRESETS
from agentcausal.discovery.variants import variant
from agentcausal.llm import LLMCall
from agentcausal.llm.gateway import Gateway
from agentcausal.llm.profiles import Profile
from agentcausal.registry import DISCOVERY_METHODS
from tests.discovery.conftest import mac_responder, reply_kind, with_required_reasons

gateway_has_sample = pytest.mark.skipif(
    "sample" not in inspect.signature(Gateway.structured).parameters,
    reason="Gateway.structured has no sample index yet (gateway branch)",
)


@pytest.fixture(scope="module")
def earthquake():
    return load_dataset("earthquake", n=300, seed=0)


@gateway_has_sample
def test_two_seeds_make_two_requests_for_zero_shot_and_a_repeat_one_more(fake_server, make_gateway, earthquake):
    fake_server.responder = mac_responder()
    gw = make_gateway(fake_server)
    a = run_discovery(variant(DISCOVERY_METHODS, "llm_zero_shot"), earthquake, gw, seed=0)
    b = run_discovery(
        variant(DISCOVERY_METHODS, "llm_zero_shot"), earthquake, gw, seed=1
    )  # same prompt: only the sample index differs
    assert fake_server.count == 2 and (a.details["sample"], b.details["sample"]) == (0, 1)
    run_discovery(variant(DISCOVERY_METHODS, "llm_zero_shot"), earthquake, gw, seed=1)
    assert fake_server.count == 2  # the same (seed, repeat) is a cache hit
    run_discovery(variant(DISCOVERY_METHODS, "llm_zero_shot"), earthquake, gw, DiscoveryConfig(repeat=1), seed=1)
    assert fake_server.count == 3
    seeds_sent = [r.get("seed") for r in fake_server.chat_requests]
    assert seeds_sent[1] == 1 and seeds_sent[2] == sample_index(1, 1)


@gateway_has_sample
def test_mdm_only_gets_an_independent_sample_per_seed(fake_server, make_gateway, earthquake):
    fake_server.responder = mac_responder()
    gw = make_gateway(fake_server)
    run_discovery(variant(DISCOVERY_METHODS, "mdm_only"), earthquake, gw, seed=0)
    n0 = fake_server.count
    run_discovery(variant(DISCOVERY_METHODS, "mdm_only"), earthquake, gw, seed=1)
    assert n0 > 0 and fake_server.count == 2 * n0


@gateway_has_sample
@pytest.mark.parametrize("method", ["llm_zero_shot", "mdm_only"])
def test_two_seeds_under_small_send_two_requests_at_a_sampling_temperature(
    fake_server, make_gateway, earthquake, method
):
    """A run asking for several samples calls at the preset's sampling temperature, each seed its own draw."""
    from agentcausal.settings import resolve

    fake_server.responder = mac_responder()
    gw = make_gateway(fake_server)
    mac = resolve(MACSettings, PRESETS, "small")
    config = DiscoveryConfig(mac=mac, samples=2)  # seeds 0 and 1, as the discover flow sets it
    outs = [run_discovery(variant(DISCOVERY_METHODS, method), earthquake, gw, config, seed=0)]
    n0 = fake_server.count
    outs.append(run_discovery(variant(DISCOVERY_METHODS, method), earthquake, gw, config, seed=1))
    bodies = fake_server.chat_requests
    assert n0 >= 1 and len(bodies) == 2 * n0  # the same prompts: only sample and seed differ
    assert {b["temperature"] for b in bodies} == {mac.sampling_temperature} and mac.sampling_temperature > 0
    assert [b.get("seed") for b in bodies] == [None] * n0 + [1] * n0
    assert [o.details["temperature"] for o in outs] == [mac.sampling_temperature] * 2
    # a single-sample run keeps the profile's temperature (0): the paper's setting, and the old cache keys
    run_discovery(variant(DISCOVERY_METHODS, method), earthquake, gw, DiscoveryConfig(mac=mac), seed=2)
    assert fake_server.chat_requests[-1]["temperature"] == 0


def test_the_sampling_temperature_enters_the_key_and_the_plan(fake_server, make_gateway, earthquake):
    from agentcausal.discovery.llm import react
    from agentcausal.discovery.method_settings import method_settings

    gw = make_gateway(fake_server)
    small = DiscoveryConfig(mac=MACSettings(**PRESETS["small"]), react=react.ReActSettings(**react.PRESETS["small"]))
    for m in ("mac", "llm_zero_shot", "react"):
        one, two, three = (
            discovery_key(earthquake, variant(DISCOVERY_METHODS, m), small.model_copy(update={"samples": k}), gw)
            for k in (1, 2, 3)
        )
        assert one != two == three  # the temperature the samples select is keyed, not the count
        assert method_settings(variant(DISCOVERY_METHODS, m), small)["temperature_used"] is None
        assert (
            method_settings(variant(DISCOVERY_METHODS, m), small.model_copy(update={"samples": 2}))["temperature_used"]
            == 0.7
        )
    # paper: the profile's temperature (0) whatever the count, so keys do not change with it
    paper = DiscoveryConfig()
    assert discovery_key(earthquake, variant(DISCOVERY_METHODS, "mac"), paper, gw) == discovery_key(
        earthquake, variant(DISCOVERY_METHODS, "mac"), paper.model_copy(update={"samples": 5}), gw
    )


def test_repeat_enters_the_cache_key_and_sample_indices_are_distinct(fake_server, make_gateway, earthquake):
    gw = make_gateway(fake_server)
    assert discovery_key(earthquake, variant(DISCOVERY_METHODS, "mac"), DiscoveryConfig(), gw, seed=0) != discovery_key(
        earthquake, variant(DISCOVERY_METHODS, "mac"), DiscoveryConfig(repeat=1), gw, seed=0
    )
    idx = {sample_index(s, r) for s in range(5) for r in range(3)}
    assert len(idx) == 15 and sample_index(0) == 0


@pytest.fixture(scope="module")
def alarm():
    return load_dataset("alarm", n=200, seed=0)


def test_graph_budget_follows_d_names_and_reasons_and_fits_alarm(fake_server, make_gateway, alarm):
    """Alarm: 37 variables, 46 true edges. The old cap (24 + 30 d = 1134 tokens) could not hold the answer."""
    true_edges = [
        {"cause": a, "effect": b, "reason": "x" * PRESETS["small"]["edge_reason_chars"]}
        for a, b in sorted(alarm.true_graph.directed_edges())
    ]
    answer_chars = len(json.dumps({"edges": true_edges}))
    small = MACSettings(**PRESETS["small"])

    def respond(body):
        name, role = reply_kind(body)
        if name == "GraphProposal":
            return json.dumps({"edges": true_edges})
        return mac_responder()(body)

    fake_server.responder = respond
    res = run_mac(
        LLMCall(make_gateway(fake_server)), alarm, small.model_copy(update={"stages": "mdm_only", "single_agent": True})
    )
    sent = fake_server.chat_requests[0]["max_tokens"]
    assert sent == graph_reply_tokens(alarm.variables, max_edges=2 * alarm.d, reason_chars=60)
    assert sent > 1134 and sent * 3 >= answer_chars  # room for the true answer at 3 characters per token
    assert res.graph.directed_edges() == alarm.true_graph.directed_edges()
    # longer reasons (paper preset) need more; without reasons less
    assert (
        graph_reply_tokens(alarm.variables, max_edges=74, reason_chars=160)
        > sent
        > graph_reply_tokens(alarm.variables, max_edges=74, reason_chars=0)
    )


@pytest.mark.skipif("max_output_tokens" not in Profile.model_fields, reason="Profile has no max_output_tokens yet")
def test_graph_budget_is_bounded_by_the_profile_ceiling(fake_server, make_gateway, alarm):
    fake_server.responder = mac_responder(affirmative_edges=(("HR", "CO"),))
    run_mac(
        LLMCall(make_gateway(fake_server, max_output_tokens=900)),
        alarm,
        MACSettings(stages="mdm_only", single_agent=True),
    )
    assert fake_server.chat_requests[0]["max_tokens"] == 900


def test_a_failed_mdm_keeps_the_dcm_graph_marked_degraded(fake_server, make_gateway, earthquake):
    good = mac_responder()

    def respond(body):
        name, _ = reply_kind(body)
        return "not json" if name == "GraphProposal" else good(body)

    fake_server.responder = respond
    out = run_discovery(variant(DISCOVERY_METHODS, "mac"), earthquake, make_gateway(fake_server, cache=False), seed=0)
    assert out.error is None and out.graph is not None
    assert out.graph == CausalGraph_from(out.details["dcm"]["execution"]["graph"])
    assert "MDM failed" in out.details["degraded"]
    if "status" in type(out).model_fields:
        assert out.status == "degraded" and "MDM failed" in out.status_detail


def test_a_failed_algorithm_debate_runs_the_fallback_algorithm(fake_server, make_gateway, earthquake):
    good = mac_responder()

    def respond(body):
        name, _ = reply_kind(body)
        return "not json" if name == "AlgorithmProposalReply" else good(body)

    fake_server.responder = respond
    res = run_mac(LLMCall(make_gateway(fake_server, cache=False)), earthquake, MACSettings(fallback_algorithm="ges"))
    assert res.dcm.execution.choice.algorithm == "ges" and "ran ges" in res.dcm.debate.notes[0]
    assert res.mdm is not None


def CausalGraph_from(data):  # a helper named for what it returns
    from agentcausal.discovery.graphs.graph import CausalGraph

    return CausalGraph.model_validate(data)


def _reasoned(aff_edges, neg_edges, verdict):
    def respond(body):
        name, role = reply_kind(body)
        if name == "GraphProposal":
            edges = neg_edges if role == "Negative" else aff_edges
            reply = {"edges": [{"cause": a, "effect": b, "reason": f"{role} argues {a}-{b}"} for a, b in edges]}
            return json.dumps(with_required_reasons(reply, body["response_format"]["json_schema"]["schema"], role))
        if name in ("GraphVerdictReply", "GraphOverallVerdictReply"):
            return json.dumps(verdict)
        return mac_responder()(body)

    return respond


def test_graph_replies_carry_reasons_that_the_negative_and_the_judge_read(fake_server, make_gateway, earthquake):
    fake_server.responder = _reasoned(
        [("Burglary", "Alarm")],
        [("Alarm", "Burglary")],
        {"skeleton": "A", "colliders": "tie", "directions": "B", "reason": "even"},
    )
    res = run_mac(LLMCall(make_gateway(fake_server)), earthquake, MACSettings(stages="mdm_only"))
    reqs = fake_server.chat_requests
    schema = reqs[0]["response_format"]["json_schema"]["schema"]
    assert "reason" in json.dumps(schema)
    neg_prompt = reqs[1]["messages"][1]["content"]
    assert "Burglary -> Alarm: Affirmative argues Burglary-Alarm" in neg_prompt
    judge_prompt = reqs[2]["messages"][1]["content"]
    assert "Affirmative argues Burglary-Alarm" in judge_prompt and "Negative argues Alarm-Burglary" in judge_prompt
    assert res.mdm.debate.rounds[0].affirmative.reasons == ("Affirmative argues Burglary-Alarm",)
    # points 1-1: the tie goes to the Affirmative by default
    assert res.mdm.debate.verdict.winner == "affirmative" and "tie to affirmative" in res.mdm.debate.verdict.reason


@pytest.mark.parametrize(
    "tie_break, aff, neg, winner",
    [
        ("negative", [("Burglary", "Alarm")], [("Alarm", "Burglary")], "negative"),
        ("fewer_edges", [("Burglary", "Alarm"), ("Earthquake", "Alarm")], [("Alarm", "Burglary")], "negative"),
        ("fewer_edges", [("Burglary", "Alarm")], [("Alarm", "Burglary"), ("Earthquake", "Alarm")], "affirmative"),
    ],
)
def test_tie_break_setting(fake_server, make_gateway, earthquake, tie_break, aff, neg, winner):
    fake_server.responder = _reasoned(
        aff, neg, {"skeleton": "tie", "colliders": "tie", "directions": "tie", "reason": "even"}
    )
    res = run_mac(LLMCall(make_gateway(fake_server)), earthquake, MACSettings(stages="mdm_only", tie_break=tie_break))
    assert res.mdm.debate.verdict.winner == winner


def test_overall_judge_rule_and_edges_without_reasons(fake_server, make_gateway, earthquake):
    fake_server.responder = _reasoned(
        [("Burglary", "Alarm")], [("Alarm", "Burglary")], {"winner": "B", "reason": "B is right"}
    )
    res = run_mac(
        LLMCall(make_gateway(fake_server)),
        earthquake,
        MACSettings(stages="mdm_only", judge_rule="overall", edge_reason_chars=0),
    )
    names = [reply_kind(r)[0] for r in fake_server.chat_requests]
    assert names[-1] == "GraphOverallVerdictReply" and res.mdm.debate.verdict.winner == "negative"
    edge = fake_server.chat_requests[0]["response_format"]["json_schema"]["schema"]["$defs"]["Edge"]
    assert list(edge["properties"]) == ["cause", "effect"]  # edge_reason_chars=0: edges without reasons
    assert res.graph.directed_edges() == {("Alarm", "Burglary")}


def test_presets_are_valid_settings():
    for _name, values in PRESETS.items():
        MACSettings(**values)
    assert set(PRESETS) >= {"paper", "small"} and PRESETS["paper"] == {}
    assert P.max_graph_edges(37) == 74
