"""A set completion cap is sent as it is in every dialect (or refused); a derived cap may be raised for hidden reasoning.

The baselines' ``max_tokens=1024`` (the released code's cap) used to be replaced by the profile's
ceiling on GPT-5; the fake server (test double) shows what each request carried.
"""

from __future__ import annotations

import json

import pytest

from agentcausal.attribution.jobs import run_method
from agentcausal.exceptions import ConfigError
from agentcausal.llm import Gateway
from agentcausal.llm.dialect import FixedCap, chat_params, sent_cap
from agentcausal.llm.profiles import Profile
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.traces.model import Label, Step, Trace
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from tests.conftest import fake_profiles

GPT5 = {
    "token_cap_param": "max_completion_tokens",
    "temperature_allowed": False,
    "hidden_reasoning_counts": True,
    "seed_supported": False,
    "max_output_tokens": 32768,
}
DIALECTS = {
    "default": ({}, "max_tokens"),
    "vllm-with-ceiling": ({"max_output_tokens": 4096}, "max_tokens"),
    "reasoning-max-tokens": ({"hidden_reasoning_counts": True, "max_output_tokens": 8192}, "max_tokens"),
    "gpt-5": (GPT5, "max_completion_tokens"),
}
TRACE = Trace(
    id="t/1",
    question="What is 6 x 7?",
    ground_truth="42",
    steps=[Step(index=i, agent=f"A{i}", content=f"step {i}") for i in range(2)],
    label=Label(agent="A1", step=1),
)


def _profile(**fields: object) -> Profile:
    return Profile(name="p", base_url="http://127.0.0.1:1/v1", model="m", **fields)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_set_cap_is_sent_as_it_is_under_the_dialects_own_field(dialect):
    fields, param = DIALECTS[dialect]
    params, _ = chat_params(_profile(**fields), FixedCap(1024), None, 0)
    assert params[param] == 1024 and ({"max_tokens", "max_completion_tokens"} - {param}).isdisjoint(params)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_derived_cap_is_raised_only_for_hidden_reasoning(dialect):
    fields, param = DIALECTS[dialect]
    p = _profile(**fields)
    want = p.max_output_tokens if p.hidden_reasoning_counts else min(1024, p.max_output_tokens or 1024)
    assert chat_params(p, 1024, None, 0)[0][param] == want


def test_a_set_cap_above_the_profile_ceiling_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"max_tokens=5000 exceeds profile p's max_output_tokens=4096") as err:
        sent_cap(_profile(max_output_tokens=4096), FixedCap(5000))
    assert "\n" not in str(err.value)
    assert sent_cap(_profile(max_output_tokens=4096), 5000)[1] == 4096  # a derived cap is lowered, as before


def test_step_by_step_max_tokens_reaches_gpt5_as_max_completion_tokens():
    with FakeOpenAIServer(dialect="reasoning", reasoning_tokens=10) as srv:
        srv.responder = lambda body: json.dumps({"error": False, "reason": "fine"})
        gw = Gateway(fake_profiles(srv.base_url, **GPT5), cache_dir=None)
        try:
            run_method(TRACE, ATTRIBUTION_METHODS["step_by_step"], gw, {"max_tokens": 1024})
            run_method(
                TRACE, ATTRIBUTION_METHODS["step_by_step"], gw, {"with_ground_truth": False}
            )  # unset: the profile's budget
        finally:
            gw.close()
        sent = [r.get("max_completion_tokens") for r in srv.chat_requests]
        assert sent == [1024, 1024, 32768, 32768]
        assert srv.chat_requests and all("max_tokens" not in r and "temperature" not in r for r in srv.chat_requests)


def test_dry_run_shows_every_baseline_cap_and_a_run_refuses_one_it_cannot_honour(tmp_path, capsys, monkeypatch):
    from agentcausal_cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # refused before any request
    traces = tmp_path / "t.jsonl"
    traces.write_text(TRACE.model_dump_json() + "\n")
    common = [str(traces), "-m", "step_by_step", "-m", "all_at_once", "--routing", "dcfa-gpt5"]
    assert main(["attribute", *common, "--dry-run", "--set", "step_by_step.max_tokens=1024"]) == 0
    err = capsys.readouterr().err
    assert "step_by_step: baseline -> openai-gpt5 max_completion_tokens=1024 (set, sent as it is" in err
    assert "all_at_once: baseline -> openai-gpt5 max_completion_tokens=32768 (profile ceiling" in err
    assert "max_tokens unset: derived" in err
    code = main(["attribute", *common, "--out", str(tmp_path / "run"), "--set", "all_at_once.max_tokens=99999"])
    assert code == 2 and "exceeds profile openai-gpt5's max_output_tokens=32768" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
