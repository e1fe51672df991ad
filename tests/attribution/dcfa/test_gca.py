"""GCA: graph and deviation validation, and the MDI/CGC/HG calls against the fake server (test double)."""

import json

import networkx as nx
import pytest

from agentcausal.attribution.dcfa.gca import run_gca
from agentcausal.attribution.dcfa.gca_validation import DroppedEdges, graph_edges, validate_deviations, validate_edges
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import LLMCall
from tests.attribution.dcfa.conftest import DcfaResponder, kind_of, small, user_text


# ------------------------------------------------------------------ validation
def test_validate_edges_drops_and_counts_each_kind():
    raw = [(0, 2), (2, 2), (3, 1), (0, 2), (1, 9), (-1, 2), (2, 5), (1, 3)]
    g, dropped = validate_edges(raw, n_steps=6)
    assert isinstance(g, nx.DiGraph)
    assert graph_edges(g) == [(0, 2), (1, 3), (2, 5)]
    assert dropped == DroppedEdges(out_of_range=2, self_loops=1, backward=1, duplicates=1)
    assert dropped.total == 5
    assert sorted(g.nodes()) == list(range(6))  # every step is a node, edges or not
    assert nx.is_directed_acyclic_graph(g)


def test_validate_edges_caps_count():
    g, dropped = validate_edges([(0, 1), (1, 2), (2, 3)], n_steps=4, max_edges=2)
    assert graph_edges(g) == [(0, 1), (1, 2)] and dropped.capped == 1 and dropped.duplicates == 0  # reported as such


def test_validate_edges_needs_a_step():
    with pytest.raises(ValueError, match="n_steps"):
        validate_edges([], n_steps=0)


def test_validate_deviations_keeps_first_in_range():
    v = validate_deviations(
        [(2, " late "), (2, "again"), (8, "x"), (0, "early"), (1, "third")],
        n_steps=4,
        max_deviations=2,
        max_reason_chars=3,
    )
    assert v.deviations == ((2, "lat"), (0, "ear"))
    assert v.dropped._asdict() == {"out_of_range": 1, "duplicates": 1, "over_limit": 1}


# ------------------------------------------------------------------ calls
def test_gca_joint_is_two_calls_and_validates_the_graph(fake_server, make_gateway, wrong_lookup_at_step_1):
    fake_server.responder = r = DcfaResponder(
        deviations=[(1, "wrong lookup"), (9, "bogus")], edges=[(1, 2), (2, 1), (3, 3), (1, 2), (2, 7)], hypothesis=1
    )
    gw = make_gateway(fake_server)
    out = run_gca(wrong_lookup_at_step_1, LLMCall(gw), small())
    assert r.calls == ["gca", "hg"]
    assert out.deviations == ((1, "wrong lookup"),)
    assert graph_edges(out.graph) == [(1, 2)]
    assert out.dropped_edges == DroppedEdges(out_of_range=1, self_loops=1, backward=1, duplicates=1)
    assert (out.hypothesis_step, out.hypothesis_reason) == (1, "origin of the wrong value")
    # HG sees the truth, the validated deviations and edges; MDI+CGC does not see the truth
    gca_prompt, hg_prompt = (user_text(b) for b in fake_server.chat_requests)
    assert "<answer>42</answer>" in hg_prompt and "<answer>" not in gca_prompt
    assert "- step 1: wrong lookup" in hg_prompt and "1 -> 2" in hg_prompt and "bogus" not in hg_prompt
    # both share the prompt prefix up to the end of the trace (prompt caching)
    cut = gca_prompt.index("</trace>") + len("</trace>")
    assert hg_prompt[:cut] == gca_prompt[:cut]
    for b in fake_server.chat_requests:
        assert b["max_tokens"] in (small().gca_tokens, small().hg_max_tokens)
        assert b["response_format"]["type"] == "json_schema"


def test_gca_split_makes_three_calls(fake_server, make_gateway, wrong_lookup_at_step_1):
    fake_server.responder = r = DcfaResponder(edges=[(1, 3)], hypothesis=3)
    out = run_gca(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), small(mdi_cgc="split"))
    assert r.calls == ["mdi", "cgc", "hg"]
    assert "- step 1: wrong lookup" in user_text(fake_server.chat_requests[1])
    assert graph_edges(out.graph) == [(1, 3)] and out.hypothesis_step == 3


def test_gca_hypothesis_out_of_range_is_repaired(fake_server, make_gateway, wrong_lookup_at_step_1):
    replies = iter([json.dumps({"step": 6, "reason": "x"}), json.dumps({"step": 5, "reason": "y"})])
    fake_server.responder = DcfaResponder(hypothesis=lambda body: next(replies))
    out = run_gca(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), small())
    assert out.hypothesis_step == 5
    assert [kind_of(b) for b in fake_server.chat_requests] == ["gca", "hg", "hg"]


def test_gca_raises_when_hypothesis_stays_invalid(fake_server, make_gateway, wrong_lookup_at_step_1):
    fake_server.responder = DcfaResponder(hypothesis=lambda body: json.dumps({"step": 99, "reason": "x"}))
    with pytest.raises(StructuredOutputError, match="HypothesisReply"):
        run_gca(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), small())
