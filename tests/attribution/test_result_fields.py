"""The richer result (#21 item 1) on the fake OpenAI server (test double): ranked candidates, confidence only where
a method defines one, verbatim evidence (asked for only with ``quote_evidence``), the corrected action."""

from __future__ import annotations

import json

import pytest

from agentcausal.attribution.candidates import SINGLE_ANSWER, ranks
from agentcausal.attribution.dcfa import DcfaSettings, run_dcfa
from agentcausal.attribution.evidence import check_evidence
from agentcausal.attribution.jobs import run_method
from agentcausal.attribution.results import results_frame
from agentcausal.llm import LLMCall
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal_fakes.evidence import EvidenceResponder, asks_evidence
from tests.attribution.dcfa.conftest import DcfaResponder, kind_of, make_trace, small

#: 0 -> 1 -> 2 -> 4, 1 -> 3; hypothesis 1; correcting through step 2 gives the right answer
CHAIN = dict(
    deviations=[(1, "wrong lookup"), (2, "copies it")],
    edges=[(0, 1), (1, 2), (1, 3), (2, 4)],
    hypothesis=1,
    corrected=["", "fixed 1", "fixed 2", "", "fixed 4", ""],
    outcomes={-1: "41", 1: "40", 2: "42", 4: "42"},
)


def test_dcfa_candidates_confidence_and_fix_come_from_what_lce_computed(fake_server, make_gateway):
    fake_server.responder = DcfaResponder(**CHAIN)
    a = run_dcfa(make_trace(), LLMCall(make_gateway(fake_server)), small())
    lce = a.details["lce"]
    scores = {x["step"]: x["s"] for x in lce["scores"]}
    # DED chose 2; then the GCA hypothesis; then the neighbours evaluated and not accepted, by ΔS (all 0: by step)
    assert a.step == 2 and [(c.step, c.role) for c in a.candidates] == [
        (2, "decision"),
        (1, "hypothesis"),
        (0, "neighbour"),
        (3, "neighbour"),
        (4, "neighbour"),
    ]
    decision = a.candidates[0]
    move = lce["path"][0]
    assert decision.delta_s == pytest.approx(move["delta_s"]) and decision.s == pytest.approx(move["s"])
    assert decision.score == decision.delta_s and decision.score_is.startswith("ΔS(i) = S(i) - S(i-1)")
    # the hypothesis was never the search's neighbour: its ΔS from S(T~(1)) and S(T~(0)), one S per trace
    hyp = a.candidates[1]
    assert hyp.delta_s == pytest.approx(scores[1] - scores[0]) and hyp.s == pytest.approx(scores[1])
    # confidence: S(i*) of the trace corrected through the blamed step, clipped to [0, 1]
    assert a.confidence == pytest.approx(min(1.0, scores[2]))
    fix = a.corrected_action
    assert (fix.step, fix.content, fix.changed, fix.outcome) == (2, "fixed 2", True, "42")
    assert fix.outcome_score == pytest.approx(scores[2])
    # nothing asked for evidence: none recorded, none noted, no request schema had the field
    assert a.evidence is None and a.evidence_note is None
    assert not any(asks_evidence(b) for b in fake_server.chat_requests)
    assert ranks(a.candidates)


def test_dcfa_paper_candidates_name_their_own_simulations(fake_server, make_gateway):
    fake_server.responder = DcfaResponder(**{**CHAIN, "decision": 2})
    a = run_dcfa(make_trace(), LLMCall(make_gateway(fake_server)), DcfaSettings())
    lce = a.details["lce"]
    assert a.step == 2 and a.candidates[0].role == "decision"
    named = {o["step"]: o["outcome"] for o in lce["outcomes"] if o["named"] == 2}
    assert a.corrected_action.outcome == named[2] and "named as the root cause" in a.corrected_action.source
    # under simulation="code" the hypothesis's S(i-1) is no simulation LCE made: no ΔS is made up for it
    hyp = next(c for c in a.candidates if c.role == "hypothesis")
    assert hyp.delta_s is None and hyp.score is None


def test_dcfa_without_lce_is_a_single_answer_without_confidence(fake_server, make_gateway):
    fake_server.responder = DcfaResponder(**CHAIN)
    a = run_method(make_trace(), ATTRIBUTION_METHODS["dcfa_gca_only"], make_gateway(fake_server))
    assert [(c.step, c.role, c.score_is) for c in a.candidates] == [(1, "answer", SINGLE_ANSWER)]
    assert a.confidence is None and a.corrected_action is None and not ranks(a.candidates)


def test_dcfa_lce_failure_keeps_no_confidence(fake_server, make_gateway):
    def responder(body):
        if kind_of(body) == "ded":
            return "not json"
        return DcfaResponder(**CHAIN)(body)

    fake_server.responder = responder
    a = run_dcfa(make_trace(), LLMCall(make_gateway(fake_server, max_retries=0)), small())
    assert a.status == "degraded" and "error" in a.details["lce"] and a.step == 1
    assert a.confidence is None and a.corrected_action is None
    assert [(c.step, c.role) for c in a.candidates] == [(1, "answer")]


@pytest.mark.parametrize("settings", [small, DcfaSettings], ids=["small", "paper"])
def test_dcfa_quote_evidence_asks_hg_and_ded_and_keeps_a_verbatim_quote(fake_server, make_gateway, settings):
    fake_server.responder = r = EvidenceResponder(DcfaResponder(**CHAIN))
    a = run_method(
        make_trace(), ATTRIBUTION_METHODS["dcfa"], make_gateway(fake_server), settings(quote_evidence=True)
    )  # stamps settings
    asked = [kind_of(b) for b in fake_server.chat_requests if asks_evidence(b)]
    assert set(asked) == {"hg", "ded"} and r.asked == len(asked)
    assert a.evidence and a.evidence in make_trace().steps[a.step].content and a.evidence_note is None
    assert a.settings["quote_evidence"] is True


def test_dcfa_paraphrased_evidence_is_dropped_and_marked(fake_server, make_gateway):
    fake_server.responder = EvidenceResponder(DcfaResponder(**CHAIN), mode="paraphrase")
    a = run_dcfa(make_trace(), LLMCall(make_gateway(fake_server)), small(quote_evidence=True))
    assert a.evidence is None and a.evidence_note.startswith(f"dropped: the quote is not in step {a.step}")


def test_quote_evidence_is_off_in_every_preset():
    from agentcausal.registry import ATTRIBUTION_METHODS

    for m in ("all_at_once", "step_by_step", "a2p", "dcfa", "dcfa_gca_only"):
        spec = ATTRIBUTION_METHODS[m]
        assert spec.settings_model().quote_evidence is False
        assert all(not p.get("quote_evidence") for p in spec.presets.values())


def _all_at_once_reply(step=3, agent="Agent0"):
    return json.dumps({"agent": agent, "step": step, "reason": "wrong unit"})


@pytest.mark.parametrize("preset", ["paper", "small"])
def test_baseline_single_answer_no_confidence_and_evidence_only_when_asked(fake_server, make_gateway, preset):
    from agentcausal.attribution.method_settings import resolve_methods

    trace = make_trace()
    fake_server.responder = EvidenceResponder(lambda body: _all_at_once_reply())
    plain = resolve_methods(ATTRIBUTION_METHODS, ["all_at_once"], {}, preset=preset)["all_at_once"]
    a = run_method(trace, ATTRIBUTION_METHODS["all_at_once"], make_gateway(fake_server), plain)
    assert [(c.step, c.role) for c in a.candidates] == [(3, "answer")] and a.confidence is None
    assert a.evidence is None and not any(asks_evidence(b) for b in fake_server.chat_requests)
    asked = resolve_methods(
        ATTRIBUTION_METHODS, ["all_at_once"], {"all_at_once": {"quote_evidence": True}}, preset=preset
    )["all_at_once"]
    b = run_method(trace, ATTRIBUTION_METHODS["all_at_once"], make_gateway(fake_server), asked)
    assert asks_evidence(fake_server.chat_requests[-1])
    assert b.evidence == trace.steps[3].content[:24] and b.settings != a.settings  # the setting is in the key


def test_step_by_step_quotes_the_step_it_judged(fake_server, make_gateway):
    trace = make_trace()

    def responder(body):
        import re

        m = re.search(
            r"(?:Is step|most recent step \(step) (\d+)[ ,]|most recent step \((\d+)\)",
            next(x["content"] for x in body["messages"] if x["role"] == "user"),
        )
        i = int(m.group(1) or m.group(2))
        props = body["response_format"]["json_schema"]["schema"]["properties"]
        verdict = {"error": i == 2} if "error" in props else {"decisive": i == 2}
        return json.dumps({**verdict, "reason": f"step {i}"})

    fake_server.responder = EvidenceResponder(responder)
    a = run_method(trace, ATTRIBUTION_METHODS["step_by_step"], make_gateway(fake_server), {"quote_evidence": True})
    assert a.step == 2 and a.evidence == trace.steps[2].content[:24]


def test_echo_confidence_is_the_consensus_support_and_candidates_its_votes(fake_server, make_gateway):
    from tests.attribution.test_echo import Responder, _trace

    fake_server.responder = Responder()
    a = run_method(_trace(), ATTRIBUTION_METHODS["echo"], make_gateway(fake_server))
    scores = {int(k): v for k, v in a.details["scores"].items()}
    assert a.confidence == pytest.approx(a.details["support"]) and 0 <= a.confidence <= 1
    assert a.candidates[0].step == a.step and a.candidates[0].role == "consensus"
    assert [c.score for c in a.candidates] == sorted(scores.values(), reverse=True)
    assert ranks(a.candidates)
    # the analysts' evidence here is "e": a substring of the step, but no evidence; dropped and said so
    assert a.evidence is None and a.evidence_note.startswith("dropped: the quote is too short")


def test_a2p_corrected_action_is_its_own_action_and_prediction(fake_server, make_gateway):
    from tests.attribution.test_a2p import _responder, _trace

    fake_server.responder = _responder
    a = run_method(_trace(), ATTRIBUTION_METHODS["a2p"], make_gateway(fake_server))
    fix = a.corrected_action
    assert fix.step == a.step and fix.content == "read metres, not feet" and "answer becomes 42" in fix.outcome
    assert "not simulated" in fix.source and a.confidence is None


def test_results_columns_carry_the_richer_result(fake_server, make_gateway):
    fake_server.responder = DcfaResponder(**CHAIN)
    trace = make_trace()
    a = run_dcfa(trace, LLMCall(make_gateway(fake_server)), small())
    df = results_frame([a], [trace])
    row = df.iloc[0]
    assert row["confidence"] == pytest.approx(a.confidence)
    cands = json.loads(row["candidates"])
    assert cands[0] == {**a.candidates[0].model_dump()} and [c["step"] for c in cands] == [2, 1, 0, 3, 4]
    assert json.loads(row["corrected_action"])["content"] == "fixed 2"


def test_evidence_check_keeps_only_substrings():
    content = "At 34 kPa water\n boils at about 71 C."
    assert check_evidence("“34 kPa water boils”", content, 3).evidence == "34 kPa water\n boils"
    assert check_evidence("water boils at 100 C", content, 3).evidence is None
    assert check_evidence("", content, 3).note == "no quote given"


def test_previews_show_the_evidence_request_where_it_is_sent():
    from agentcausal.attribution.evidence import EVIDENCE_REQUEST
    from agentcausal.attribution.previews import attribution_previews

    ask = EVIDENCE_REQUEST.split(":")[0]
    trace = make_trace()
    for method, asked in (("all_at_once", {"All-at-Once"}), ("dcfa", {"HG", "DED"})):
        on = attribution_previews(trace, ATTRIBUTION_METHODS[method], {"quote_evidence": True})
        assert {p.call for p in on if ask in p.messages[-1]["content"]} == asked
        assert not any(
            ask in m["content"] for p in attribution_previews(trace, ATTRIBUTION_METHODS[method]) for m in p.messages
        )
