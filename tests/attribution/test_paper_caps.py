"""Reply schemas under ``paper`` carry no character cap the papers do not have; ``small`` keeps its caps."""

import json

import pytest

from agentcausal.attribution import a2p, all_at_once, binary_search, echo, echo_context, step_by_step
from agentcausal.attribution.dcfa import DcfaSettings, ded, prompts
from agentcausal.attribution.method_settings import resolve_methods
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.settings import resolve

LONG = "x" * 5000


def _settings(method, preset):
    spec = ATTRIBUTION_METHODS[method]
    return resolve(spec.settings_model, spec.presets, preset)


def _reply_models(method, s):
    """The reply models a method sends for a 4-step trace with agents A, B."""
    forced = s.prompts == "paper"
    if method == "all_at_once":
        return [all_at_once.reply_model(("A", "B"), 4, forced, s.reason_chars)]
    if method == "step_by_step":
        return [step_by_step.verdict_model(s.reason_chars, forced)]
    if method == "binary_search":
        return [binary_search.choice_model(forced, s.reason_chars)]
    if method == "a2p":
        return [a2p.reply_model(("A", "B"), 4, forced, s.field_chars)]
    return [
        echo.scan_model(4, 4, forced, s.field_chars),
        echo.panel_model(("A", "B"), (1, 2), s.analysts, forced, s.field_chars),
    ]


@pytest.mark.parametrize("method", ["all_at_once", "step_by_step", "binary_search", "a2p", "echo"])
def test_baseline_reply_text_is_uncapped_under_paper_and_capped_under_small(method):
    paper = [json.dumps(m.model_json_schema()) for m in _reply_models(method, _settings(method, "paper"))]
    small = [json.dumps(m.model_json_schema()) for m in _reply_models(method, _settings(method, "small"))]
    assert not any("maxLength" in s for s in paper)
    assert all("maxLength" in s for s in small)


def test_baseline_paper_reason_is_kept_whole_and_small_is_cut():
    paper = step_by_step.verdict_model(None)(reason=LONG, decisive=True)
    small = step_by_step.verdict_model(_settings("step_by_step", "small").reason_chars)(reason=LONG, decisive=True)
    assert len(paper.reason) == 5000 and len(small.reason) == 200


def test_dcfa_paper_reasons_and_outcome_have_no_cap():
    s = DcfaSettings()
    assert s.max_reason_chars is None and s.gca_tokens is None
    schemas = [
        prompts.gca_joint_model(None, None, None, True),
        prompts.gca_joint_model(None, None, None, False, True),
        prompts.cgc_model(None, False, None, True),
        prompts.hypothesis_model(5, None, True),
        ded.decision_model((1, 2), None),
        ded.decision_model((1, 2), None, 5),
        prompts.simulation_model("paper", "code"),
        prompts.simulation_model("paper", "equations"),
    ]
    assert not any("maxLength" in json.dumps(m.model_json_schema()) for m in schemas)
    hyp = prompts.hypothesis_model(5, None)(step=1, reason=LONG)
    assert len(hyp.reason) == 5000
    small = resolve_methods(ATTRIBUTION_METHODS, ["dcfa"], preset="small")["dcfa"]
    assert small["max_reason_chars"] == 120
    assert "maxLength" in json.dumps(prompts.hypothesis_model(5, 120).model_json_schema())


def test_echo_layers_uncut_under_paper_and_cut_under_small():
    step = "Traceback: " + "KeyError " * 100 + "\nTherefore the answer is 4"
    paper, small = _settings("echo", "paper"), _settings("echo", "small")
    assert echo_context.key_lines(step, paper.l2_chars).endswith("Therefore the answer is 4")
    assert len(echo_context.key_lines(step, small.l2_chars)) <= small.l2_chars
    assert len(echo_context.milestone(step, paper.l4_chars)) > len(echo_context.milestone(step, small.l4_chars))


@pytest.mark.parametrize("method", ["all_at_once", "step_by_step", "binary_search", "a2p"])
def test_paper_system_message_is_the_source_codes_own(method, fake_server, make_gateway):
    from agentcausal.attribution.jobs import run_method
    from agentcausal.traces.model import Step, Trace

    mod = {"all_at_once": all_at_once, "step_by_step": step_by_step, "binary_search": binary_search, "a2p": a2p}[method]
    fake_server.responder = lambda body: "not json"  # the content does not matter here
    trace = Trace(
        id="t/1",
        question="q",
        ground_truth="a",
        steps=[Step(index=i, agent=f"A{i % 2}", content=f"step {i}") for i in range(4)],
    )
    gw = make_gateway(fake_server, cache=False)
    run_method(trace, ATTRIBUTION_METHODS[method], gw)
    run_method(trace, ATTRIBUTION_METHODS[method], gw, {"prompts": "small"})
    systems = [r["messages"][0]["content"] for r in fake_server.chat_requests]
    assert systems[0].startswith(mod.PAPER_ROLE + " ")
    assert systems[-1].startswith("You find the decisive error")
