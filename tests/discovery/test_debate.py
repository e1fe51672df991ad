"""The MDM debate's control flow against the fake server (scripted replies, counted calls)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agentcausal.discovery.mac.mdm import debate_algorithm, debate_graph, graph_disagreements, to_choice
from agentcausal.discovery.mac.prompts import AlgorithmContext, AlgorithmProposalReply, GraphContext, graph_reply_model
from agentcausal.discovery.mac.settings import PRESETS, MACSettings
from agentcausal.discovery.statistical.algorithms import GESParams, PCParams
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import LLMCall
from agentcausal.settings import resolve
from tests.discovery.conftest import mac_responder, reply_kind

VARS = ("Burglary", "Earthquake", "Alarm")
GCTX = GraphContext(
    variables=VARS, metadata="- Burglary: a burglary\n- Alarm: the alarm rings", evidence=("Burglary -> Alarm",)
)
ACTX = AlgorithmContext(
    variables=VARS, metadata="- Burglary: a burglary", rows="0,1,0\n1,1,1", n=1000, data_type="discrete"
)


#: the short prompt set and its caps (the embedded model's preset); the defaults are ``paper``
SMALL = resolve(MACSettings, PRESETS, "small")


def roles(server) -> list[tuple[str, str]]:
    return [reply_kind(r) for r in server.chat_requests]


def test_algorithm_debate_affirmative_negative_judge(fake_server, make_gateway):
    fake_server.responder = mac_responder(affirmative_algo="pc", negative_algo="ges", algo_winner="B")
    d = debate_algorithm(LLMCall(make_gateway(fake_server)), ACTX, SMALL)
    assert [r for _, r in roles(fake_server)] == ["Affirmative", "Negative", "Judge"]
    assert d.affirmative.choice == PCParams(indep_test="chisq")
    assert d.negative.choice == GESParams(score_func="local_score_BDeu")
    assert d.verdict.winner == "negative" and d.winning.choice.algorithm == "ges"
    negative_prompt = fake_server.chat_requests[1]["messages"][1]["content"]
    assert "The Affirmative chose pc" in negative_prompt and "<rows>\n0,1,0" in negative_prompt


def test_single_agent_makes_one_call(fake_server, make_gateway):
    fake_server.responder = mac_responder()
    d = debate_algorithm(LLMCall(make_gateway(fake_server)), ACTX, MACSettings(single_agent=True))
    assert fake_server.count == 1 and d.negative is None and d.verdict.winner == "affirmative"
    g = debate_graph(LLMCall(make_gateway(fake_server)), GCTX, MACSettings(single_agent=True))
    assert fake_server.count == 2 and g.winning.edges == (("Burglary", "Alarm"),)


def test_graph_debate_judge_votes_decide_the_winner(fake_server, make_gateway):
    fake_server.responder = mac_responder(votes=("B", "B", "A"))
    d = debate_graph(LLMCall(make_gateway(fake_server)), GCTX, SMALL)
    assert [r for _, r in roles(fake_server)] == ["Affirmative", "Negative", "Judge"]
    assert d.verdict.winner == "negative" and d.verdict.votes == {"skeleton": "B", "colliders": "B", "directions": "A"}
    assert d.winning.edges == (("Alarm", "Burglary"),)
    judge_prompt = fake_server.chat_requests[2]["messages"][1]["content"]
    assert "reversed: A has Burglary -> Alarm, B has Alarm -> Burglary" in judge_prompt
    assert "<data_graph>\nBurglary -> Alarm\n</data_graph>" in judge_prompt


def test_graph_debate_tie_goes_to_the_affirmative(fake_server, make_gateway):
    fake_server.responder = mac_responder(votes=("A", "B", "tie"))
    assert debate_graph(LLMCall(make_gateway(fake_server)), GCTX).verdict.winner == "affirmative"


def test_equal_proposals_skip_the_judge(fake_server, make_gateway):
    edges = (("Burglary", "Alarm"),)
    fake_server.responder = mac_responder(affirmative_edges=edges, negative_edges=edges)
    d = debate_graph(LLMCall(make_gateway(fake_server)), GCTX)
    assert fake_server.count == 2 and d.verdict.reason == "no disagreement"


def test_rounds_add_revisions_before_one_judge(fake_server, make_gateway):
    fake_server.responder = mac_responder()
    d = debate_graph(LLMCall(make_gateway(fake_server, cache=False)), GCTX, SMALL.model_copy(update={"rounds": 3}))
    assert [r for _, r in roles(fake_server)] == ["Affirmative", "Negative"] * 3 + ["Judge"]
    assert len(d.rounds) == 3
    revise_prompt = fake_server.chat_requests[2]["messages"][1]["content"]
    assert "The Negative proposed instead:\nAlarm -> Burglary" in revise_prompt


def test_invalid_negative_is_recorded_and_the_affirmative_wins(fake_server, make_gateway):
    ok = json.dumps({"edges": [{"cause": "Burglary", "effect": "Alarm"}]})
    fake_server.push(ok, "not json", "still not json", "nope")
    d = debate_graph(LLMCall(make_gateway(fake_server)), GCTX, SMALL)
    assert d.verdict.winner == "affirmative" and d.negative is None
    assert "Negative reply invalid" in d.notes[0]


def test_invalid_affirmative_raises(fake_server, make_gateway):
    fake_server.push("x", "y", "z")
    with pytest.raises(StructuredOutputError):
        debate_graph(LLMCall(make_gateway(fake_server)), GCTX)


def test_graph_schema_names_only_known_variables():
    model = graph_reply_model(VARS)
    schema = json.dumps(model.model_json_schema())
    assert all(v in schema for v in VARS) and '"maxItems": 6' in schema
    with pytest.raises(ValidationError):
        model.model_validate({"edges": [{"cause": "Burglary", "effect": "Tornado"}]})


def test_to_choice_keeps_only_parameters_that_fit_the_data_type():
    r = AlgorithmProposalReply(algorithm="pc", indep_test="fisherz", alpha=0.9, reason="x")
    p = to_choice(r, "discrete", 5)
    assert p.choice == PCParams(indep_test="chisq", alpha=0.05) and len(p.notes) == 2
    p2 = to_choice(AlgorithmProposalReply(algorithm="fci", indep_test="gsq", alpha=0.01, reason=""), "discrete", 5)
    assert (p2.choice.indep_test, p2.choice.alpha, p2.notes) == ("gsq", 0.01, ())


def test_graph_disagreements_lists_skeleton_collider_and_direction_differences():
    lines = graph_disagreements([("A", "C"), ("B", "C")], [("C", "A"), ("B", "D")])
    assert lines == [
        "linked only in A: B -> C",
        "linked only in B: B -> D",
        "colliders only in A: A -> C <- B",
        "reversed: A has A -> C, B has C -> A",
    ]
    assert graph_disagreements([("A", "B")], [("A", "B")]) == []


def test_paper_prompts_give_each_agent_role_goal_principles_procedure_and_output_format(fake_server, make_gateway):
    fake_server.responder = mac_responder(affirmative_algo="pc", negative_algo="ges", algo_winner="B")
    gw = make_gateway(fake_server, cache=False)
    debate_algorithm(LLMCall(gw), ACTX)  # MACSettings() is the paper preset
    debate_graph(LLMCall(gw), GCTX, MACSettings(rounds=2))
    assert [r for _, r in roles(fake_server)] == ["Affirmative", "Negative", "Judge"] + [
        "Affirmative",
        "Negative",
        "Affirmative",
        "Negative",
        "Judge",
    ]
    for body in fake_server.chat_requests:
        user = body["messages"][1]["content"]
        parts = ("Role", "Goal", "Causal principles", "Procedure", "Output format")
        assert all(f"# {part}\n" in user for part in parts)
        assert user.index("# Task") < user.index("# Role") < user.index("# Output format")
    graph_user = fake_server.chat_requests[3]["messages"][1]["content"]
    assert "Colliders (v-structures)" in graph_user and "No cycles" in graph_user and "mechanism" in graph_user
    assert "The data's limits" in graph_user and "causal sufficiency" in graph_user
    algo_user = fake_server.chat_requests[0]["messages"][1]["content"]
    assert "The sample's limits" in algo_user and "A random subset S of 2 rows" in algo_user
    # the Negative sees the Affirmative's proposal with its argument; the Judge sees both and the disagreements
    assert "pc(indep_test=chisq" in fake_server.chat_requests[1]["messages"][1]["content"]
    assert "Argument: Affirmative likes pc" in fake_server.chat_requests[1]["messages"][1]["content"]
    judge = fake_server.chat_requests[-1]["messages"][1]["content"]
    assert "# Disagreements\nreversed: A has Burglary -> Alarm, B has Alarm -> Burglary" in judge
    assert "<data_graph>\nBurglary -> Alarm\n</data_graph>" in judge


def _props(body) -> list[str]:
    return list(body["response_format"]["json_schema"]["schema"]["properties"])


def test_paper_reply_schemas_put_reasons_before_decisions_and_bound_nothing_the_paper_lacks(fake_server, make_gateway):
    fake_server.responder = mac_responder()
    gw = make_gateway(fake_server, max_output_tokens=7000)
    debate_algorithm(LLMCall(gw), ACTX)
    debate_graph(LLMCall(gw), GCTX)
    b = fake_server.chat_requests
    assert _props(b[0])[0] == "reason" and _props(b[2]) == ["reason", "winner"]
    assert _props(b[3]) == ["reasoning", "edges"] and _props(b[5]) == ["reason", "skeleton", "colliders", "directions"]
    schema = b[3]["response_format"]["json_schema"]["schema"]
    assert list(schema["$defs"]["Edge"]["properties"]) == ["reason", "cause", "effect"]
    assert schema["properties"]["edges"]["maxItems"] == 3  # d(d-1)/2 for 3 variables: what a DAG allows
    text = json.dumps([r["response_format"] for r in b])
    assert "maxLength" not in text  # no reason is capped
    assert {r["max_tokens"] for r in b} == {7000}  # every call: the profile's budget
    # the small set keeps its caps: 120 / 100 tokens, 240-character reasons, 2 d edges, answer first
    fake_server.requests.clear()
    debate_algorithm(LLMCall(gw), ACTX, SMALL)
    debate_graph(LLMCall(gw), GCTX, SMALL)
    b = fake_server.chat_requests
    assert [r["max_tokens"] for r in b[:3]] == [120, 120, 100] and b[-1]["max_tokens"] == 100
    assert _props(b[0])[0] == "algorithm" and _props(b[3]) == ["edges"]
    assert b[3]["response_format"]["json_schema"]["schema"]["properties"]["edges"]["maxItems"] == 6
    assert '"maxLength": 240' in json.dumps(b[0]["response_format"])


def test_judge_overall_rule_under_both_sets(fake_server, make_gateway):
    fake_server.responder = mac_responder(votes=("B", "A", "A"))
    for settings in (MACSettings(judge_rule="overall"), SMALL.model_copy(update={"judge_rule": "overall"})):
        d = debate_graph(LLMCall(make_gateway(fake_server, cache=False)), GCTX, settings)
        assert d.verdict.votes == {"overall": "B"} and d.verdict.winner == "negative"
    judge_paper = fake_server.chat_requests[2]["messages"][1]["content"]
    assert '"winner": "A", "B" or "tie"' in judge_paper
