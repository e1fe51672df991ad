"""Endpoint dialects: the completion cap's parameter, temperature, reasoning effort, hidden reasoning.

The fake server (test double) in ``dialect="reasoning"`` refuses requests as
OpenAI's reasoning models do; the default dialect takes ``max_tokens`` and
any temperature.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agentcausal.exceptions import LLMCallError, StructuredOutputError
from agentcausal.llm import Gateway, load_profiles
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from tests.conftest import fake_profiles

PICK = '{"step": 2, "agent": "WebSurfer"}'
REASONING = {
    "token_cap_param": "max_completion_tokens",
    "temperature_allowed": False,
    "reasoning_effort": "low",
    "hidden_reasoning_counts": True,
    "seed_supported": False,
}


class Pick(BaseModel):
    step: int
    agent: str


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def reasoning_server():
    with FakeOpenAIServer(dialect="reasoning", reasoning_tokens=300) as srv:
        yield srv


def test_reasoning_endpoint_refuses_max_tokens_from_a_default_dialect_profile(reasoning_server):
    gw = Gateway(fake_profiles(reasoning_server.base_url, temperature_allowed=False), cache_dir=None)
    with pytest.raises(LLMCallError, match="max_completion_tokens") as err:
        gw.chat("baseline", user("x"), max_tokens=64)
    assert err.value.status == 400
    assert reasoning_server.count == 1  # a 400 is not retried


def test_reasoning_endpoint_refuses_a_temperature(reasoning_server):
    gw = Gateway(fake_profiles(reasoning_server.base_url, token_cap_param="max_completion_tokens"), cache_dir=None)
    with pytest.raises(LLMCallError, match="temperature"):
        gw.chat("baseline", user("x"), max_tokens=64)


def test_reasoning_dialect_profile_sends_what_the_endpoint_takes(reasoning_server, tmp_path):
    reasoning_server.push(PICK)
    gw = Gateway(fake_profiles(reasoning_server.base_url, max_output_tokens=4000, **REASONING), cache_dir=tmp_path)
    out = gw.structured("baseline", user("who?"), Pick, max_tokens=48, temperature=0.0, sample=2)
    assert out == Pick(step=2, agent="WebSurfer")
    body = reasoning_server.chat_requests[0]
    assert "max_tokens" not in body and "temperature" not in body and "seed" not in body
    # the method's 48-token answer cap would be eaten by hidden reasoning: the profile's ceiling is sent
    assert body["max_completion_tokens"] == 4000
    assert body["reasoning_effort"] == "low"
    assert gw.usage.total().completion_tokens > 300  # hidden reasoning is billed as completion


def test_hidden_reasoning_without_a_ceiling_sends_no_cap(reasoning_server):
    reasoning_server.push("hello")
    gw = Gateway(fake_profiles(reasoning_server.base_url, **REASONING), cache_dir=None)
    assert gw.chat("baseline", user("x"), max_tokens=16) == "hello"
    assert "max_completion_tokens" not in reasoning_server.chat_requests[0]


def test_a_visible_answer_cap_on_a_reasoning_model_is_cut_off(reasoning_server):
    # what hidden_reasoning_counts guards against: the cap is spent on reasoning, the reply is empty
    reasoning_server.push(PICK, PICK, PICK)
    gw = Gateway(
        fake_profiles(reasoning_server.base_url, **{**REASONING, "hidden_reasoning_counts": False}),
        cache_dir=None,
        max_repairs=1,
    )
    with pytest.raises(StructuredOutputError, match="finish_reason=length"):
        gw.structured("baseline", user("who?"), Pick, max_tokens=48)
    assert reasoning_server.chat_requests[0]["max_completion_tokens"] == 48


def test_default_dialect_sends_max_tokens_and_temperature_clamped_to_the_ceiling(fake_server):
    fake_server.push("a")
    gw = Gateway(fake_profiles(fake_server.base_url, max_output_tokens=100), cache_dir=None)
    gw.chat("baseline", user("x"), max_tokens=500, temperature=0.3)
    body = fake_server.chat_requests[0]
    assert (body["max_tokens"], body["temperature"]) == (100, 0.3)
    assert "max_completion_tokens" not in body and "reasoning_effort" not in body
    assert gw.max_output_tokens("baseline") == 100


def test_shipped_paper_routing_uses_the_papers_models_in_their_dialects():
    ps = load_profiles(routing="paper")
    for stage in ("dcfa.gca", "baseline"):
        p = ps.profile_for(stage)
        assert (p.base_url, p.model) == ("https://api.openai.com/v1", "gpt-5")
        assert p.token_cap_param == "max_completion_tokens" and not p.temperature_allowed
        assert p.hidden_reasoning_counts and p.max_output_tokens
    lce = ps.profile_for("dcfa.lce")
    assert lce.model == "Qwen/Qwen3-Coder-30B-A3B-Instruct" and lce.token_cap_param == "max_tokens"
    for stage in ("mac.debate", "mac.coder"):
        assert ps.profile_for(stage).model == "gpt-4o"
        assert ps.profile_for(stage).temperature_allowed and ps.profile_for(stage).temperature == 0
    assert ps.profile_for("dcfa.embed").model == "text-embedding-3-large"
    # routings name no preset here (that key belongs to the presets' owner)
    assert all(isinstance(v, str) for v in ps.routings["paper"].values())
