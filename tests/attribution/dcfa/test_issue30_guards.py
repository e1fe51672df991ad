"""Guards of issue 30's smaller DCFA points: the tie rule reaches the search from ``run_lce``, and MDI's
reply schema asks for the reason its prompt asks for (fake server, a test double)."""

from __future__ import annotations

import json

import pytest

from agentcausal.attribution.dcfa import DcfaSettings, run_dcfa
from agentcausal.attribution.dcfa.paper_prompts import MDI_TASK
from agentcausal.attribution.dcfa.prompts import gca_joint_model, mdi_model
from agentcausal.llm import LLMCall
from tests.attribution.dcfa.conftest import DcfaResponder, kind_of, make_trace, shown_steps, user_text
from tests.attribution.dcfa.test_paper_procedure import cosine_embedder


@pytest.mark.parametrize("ties, pivot", [("outward", 3), ("lower", 2)])
def test_the_tie_rule_setting_reaches_the_search_through_run_lce(
    fake_server, make_gateway, wrong_lookup_at_step_1, ties, pivot
):
    # hypothesis 1 with effects 2 and 3: ΔS(2) = S(2) - S(1) = 0.3 and ΔS(3) = S(3) - S(2) = 0.3 after rounding,
    # a tie; "outward" moves to the higher step going forward, "lower" to the lower one. Dropping the
    # ``ties=`` wiring in run_lce leaves the search on its default and fails the "lower" case.
    fake_server.embedder = cosine_embedder
    fake_server.responder = DcfaResponder(
        edges=[(1, 2), (1, 3)],
        hypothesis=1,
        corrected=["", "fix 1", "fix 2", "fix 3", "", ""],
        outcomes={-1: "c0", 0: "c0.1", 1: "c0.2", 2: "c0.5", 3: "c0.8"},
    )
    a = run_dcfa(
        wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server, cache=False)), DcfaSettings(search_ties=ties)
    )
    lce = a.details["lce"]
    scored = {e["step"]: e["delta_s"] for e in lce["evaluated"] if e["direction"] == "forward"}
    assert scored[2] == pytest.approx(scored[3], abs=5e-4)  # the tie the rule decides
    assert [m["step"] for m in lce["path"]][:1] == [pivot]


@pytest.mark.parametrize("joint", [False, True])
def test_mdi_reply_schema_asks_the_detailed_reason_the_prompt_asks(joint):
    assert "a detailed reason" in MDI_TASK
    model = gca_joint_model(None, None, None, False, True) if joint else mdi_model(None, None)
    schema = json.dumps(model.model_json_schema())
    assert "one sentence" not in schema and "short reason" not in schema
    assert "a detailed reason" in schema


def test_small_mdi_reply_schema_keeps_its_one_sentence():
    for model in (mdi_model(5, 120, "small"), gca_joint_model(5, 10, 120, style="small")):
        assert "one sentence" in json.dumps(model.model_json_schema())


def test_hand_crafted_correct_rewrites_every_step_and_the_prefix_is_the_compressed_one(fake_server, make_gateway):
    # the released Hand-Crafted prompt returns every event with its redundant content removed, and
    # T~(i) = modified[:i+1] + original[i+1:]: step 0, with nothing to correct, is the compressed text
    trace = make_trace().model_copy(update={"source": "Hand-Crafted"})
    compressed = ["short 0", "fixed 1", "short 2", "short 3", "short 4", "short 5"]
    fake_server.responder = DcfaResponder(edges=[(0, 1), (1, 2)], hypothesis=1, corrected=compressed)
    a = run_dcfa(trace, LLMCall(make_gateway(fake_server)), DcfaSettings())
    (body,) = [b for b in fake_server.chat_requests if kind_of(b) == "correct"]
    text, schema = user_text(body), json.dumps(body.get("response_format", {}))
    assert "never leave a content empty" in text and 'content "" when' not in text
    assert '\\"\\" = unchanged' not in schema and "every step rewritten" in schema
    assert a.details["lce"]["correct_variant"] == "hand_crafted"
    sims = [shown_steps(b) for b in fake_server.chat_requests if kind_of(b) == "simulation"]
    assert sims and all(s[0] == "short 0" for s in sims if s.get(1) == "fixed 1")


def test_algorithm_generated_correct_keeps_the_empty_content_for_unchanged(fake_server, make_gateway):
    fake_server.responder = DcfaResponder(edges=[(0, 1)], hypothesis=1, corrected=["", "fixed 1", "", "", "", ""])
    run_dcfa(make_trace(), LLMCall(make_gateway(fake_server)), DcfaSettings())
    (body,) = [b for b in fake_server.chat_requests if kind_of(b) == "correct"]
    assert 'content "" when the step needs no change' in user_text(body)
    assert '\\"\\" = unchanged' in json.dumps(body.get("response_format", {}))


@pytest.mark.parametrize("checks", ["code", "strict"])
def test_paper_cgc_keeps_and_follows_backward_and_self_links_as_the_released_code(
    fake_server, make_gateway, wrong_lookup_at_step_1, checks
):
    # (3, 1) is written as step 1's cause 3 and step 3's effect 1 (against time), (1, 1) as a self-link,
    # (2, 9) out of range: the released search takes 1 and 3 as candidates of the hypothesis 1 (not yet
    # visited), and skips 9 (no corrected content) without a call
    fake_server.responder = DcfaResponder(
        edges=[(3, 1), (1, 1), (2, 9)], hypothesis=1, corrected=["", "fix 1", "", "fix 3", "", ""]
    )
    a = run_dcfa(
        wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server, cache=False)), DcfaSettings(link_checks=checks)
    )
    dropped = a.details["dropped_edges"]
    scored = sorted({e["step"] for e in a.details["lce"]["evaluated"]})
    links = {e["step"]: e for e in a.details["links"]}
    assert dropped["out_of_range"] == 2  # step 2's effect 9 and step 9's entry
    if checks == "code":
        assert (dropped["backward"], dropped["self_loops"]) == (0, 0)
        assert links[1]["causes"] == [1, 3] and links[3]["effects"] == [1]
        assert scored == [1, 3]
    else:
        assert (dropped["backward"], dropped["self_loops"]) == (2, 2)
        assert scored == []


def test_small_keeps_the_strict_link_checks():
    from tests.attribution.dcfa.conftest import small

    assert small().link_checks == "strict" and DcfaSettings().link_checks == "code"
