"""The three Who&When baselines as DCFA's released code runs them (preset ``dcfa_paper``), on the fake server (test double).

DCFA's copy of ``Automated_FA/Lib/utils.py`` (github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution):
Step-by-Step asks for an error probability per step and predicts the highest-scoring step when none is
flagged; every call sends temperature 0 and an empty answer is sent again.
"""

import json

import pytest

from agentcausal.attribution.jobs import run_method
from agentcausal.attribution.method_settings import resolve_methods
from agentcausal.exceptions import ConfigError
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.traces.model import Label, Step, Trace


def _trace(n: int = 5) -> Trace:
    return Trace(
        id="t/1",
        source="examples",
        question="What is 6 x 7?",
        ground_truth="42",
        steps=[Step(index=i, agent=f"Agent{i % 3}", content=f"content of step {i}") for i in range(n)],
        label=Label(agent="Agent0", step=min(3, n - 1)),
    )


def _dcfa(method: str) -> dict:
    return resolve_methods(ATTRIBUTION_METHODS, [method], preset="dcfa_paper")[method]


def _user(req) -> str:
    return [m for m in req["messages"] if m["role"] == "user"][0]["content"]


def test_step_by_step_dcfa_falls_back_to_the_highest_error_probability(fake_server, make_gateway):
    scores = [0.1, 0.4, 0.7, 0.7, 0.2]  # a tie at the top: the first, as score_list.index(max(score_list))
    fake_server.push(*(json.dumps({"error": False, "score": s, "reason": "looks fine"}) for s in scores))
    a = run_method(_trace(), ATTRIBUTION_METHODS["step_by_step"], make_gateway(fake_server), _dcfa("step_by_step"))
    assert (a.step, a.agent, a.error) == (2, None, None)  # no agent: DCFA's code prints only the step
    assert a.details["fallback"] is True and a.details["scores"] == scores
    assert fake_server.count == 5 and a.prompt_version == "step_by_step/dcfa-1"
    req = fake_server.chat_requests[0]
    assert "even a little bit is possible" in _user(req) and "probability" in _user(req)
    assert list(req["response_format"]["json_schema"]["schema"]["properties"]) == ["error", "score", "reason"]
    assert req["temperature"] == 0.0


def test_step_by_step_dcfa_stops_at_the_first_yes(fake_server, make_gateway):
    fake_server.push(
        json.dumps({"error": False, "score": 0.9, "reason": "r"}),
        json.dumps({"error": True, "score": 0.3, "reason": "wrong handoff"}),
    )
    a = run_method(_trace(), ATTRIBUTION_METHODS["step_by_step"], make_gateway(fake_server), _dcfa("step_by_step"))
    assert (a.step, a.agent) == (1, "Agent1") and a.details["fallback"] is False and fake_server.count == 2


def test_step_by_step_whowhen_keeps_its_prompt_and_no_score(fake_server, make_gateway):
    fake_server.responder = lambda body: json.dumps({"error": False, "reason": "fine"})
    a = run_method(_trace(3), ATTRIBUTION_METHODS["step_by_step"], make_gateway(fake_server))  # paper = Who&When's code
    assert a.step is None and "scores" not in a.details
    assert "even a little bit" not in _user(fake_server.chat_requests[0])
    assert "score" not in json.dumps(fake_server.chat_requests[0]["response_format"])


def test_empty_answers_are_sent_again_under_dcfa_paper(fake_server, make_gateway):
    # the gateway repairs an invalid reply twice (3 requests per call); an empty answer then re-sends the call
    gw = make_gateway(fake_server, cache=False)
    fake_server.push(*[""] * 3, json.dumps({"agent": "Agent0", "step": 3, "reason": "r"}))
    a = run_method(_trace(), ATTRIBUTION_METHODS["all_at_once"], gw, _dcfa("all_at_once"))
    assert (a.step, a.agent, a.error) == (3, "Agent0", None) and fake_server.count == 4
    fake_server.push(*[""] * 3)
    b = run_method(_trace(), ATTRIBUTION_METHODS["all_at_once"], gw)  # paper (Who&When's code): no re-send
    assert b.error is not None and fake_server.count == 7


def test_binary_search_dcfa_sends_temperature_zero_and_retries(fake_server, make_gateway):
    s = _dcfa("binary_search")
    assert (s["temperature"], s["empty_attempts"]) == (0.0, 9)
    fake_server.responder = lambda body: json.dumps({"half": "upper half", "reason": "r"})
    a = run_method(_trace(4), ATTRIBUTION_METHODS["binary_search"], make_gateway(fake_server), s)
    assert a.step == 0 and all(r["temperature"] == 0.0 for r in fake_server.chat_requests)


def test_dcfa_variant_is_refused_where_it_cannot_apply():
    with pytest.raises(ConfigError, match="variant"):
        resolve_methods(
            ATTRIBUTION_METHODS, ["step_by_step"], settings={"step_by_step": {"variant": "dcfa"}}, preset="small"
        )
    with pytest.raises(ConfigError, match="max_score"):
        resolve_methods(
            ATTRIBUTION_METHODS, ["step_by_step"], settings={"step_by_step": {"on_no_yes": "max_score"}}, preset="paper"
        )


def test_dcfa_paper_leaves_every_other_method_at_paper():
    dcfa, paper = (resolve_methods(ATTRIBUTION_METHODS, ["dcfa", "a2p"], preset=p) for p in ("dcfa_paper", "paper"))
    assert dcfa == paper


def test_show_prompts_under_dcfa_paper_shows_the_probability_request(capsys, monkeypatch):
    from pathlib import Path

    from agentcausal_cli import main

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    args = ["attribute", "data/examples", "-m", "step_by_step", "--limit", "1", "--dry-run", "--show-prompts"]
    assert main([*args, "--preset", "dcfa_paper"]) == 0
    out = capsys.readouterr().out
    assert "To make rigorous speculations, even a little bit is possible." in out
    assert "give a score (a float) of the probability that this step contains an error" in out
    assert main([*args, "--preset", "paper"]) == 0
    assert "even a little bit" not in capsys.readouterr().out
