"""The papers' backbones as shipped profiles: what each dialect sends, and a reasoning model's visible reasoning.

Offline, these tests can check only the request each profile's dialect makes: every shipped chat
profile is pointed at the fake OpenAI-compatible server (a test double) and its request body is
asserted (cap parameter and value, temperature, reasoning switches, reply format). Whether the real
endpoint accepts that body, and what the model answers, needs the real endpoint.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from agentcausal.llm import Gateway, ProfileSet, load_profiles
from agentcausal.llm.replies import strip_reasoning
from agentcausal_fakes.fake_openai import FakeOpenAIServer

PICK = '{"step": 2, "agent": "WebSurfer"}'
METHOD_CAP = 48  # a method's completion cap for a short structured answer


class Pick(BaseModel):
    step: int
    agent: str


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    import os

    for key in list(os.environ):
        if key.startswith("AGENTCAUSAL_PROFILE") or key in ("AGENTCAUSAL_ROUTING", "AGENTCAUSAL_PROFILES"):
            monkeypatch.delenv(key)


def on_fake(name: str, base_url: str) -> Gateway:
    """A gateway whose every stage goes to the shipped profile ``name``, moved to the fake server."""
    shipped = load_profiles().profiles[name]
    prof = shipped.model_copy(update={"base_url": base_url, "api_key_env": None})
    return Gateway(ProfileSet(profiles={name: prof}, routings={"default": {"default": name}}), cache_dir=None)


#: shipped profile -> (fields the request must carry, fields it must not carry, reply format)
DIALECTS = {
    # OpenAI reasoning model: the fake server refuses max_tokens and any temperature here, as OpenAI does
    "openai-gpt5": (
        {"max_completion_tokens": 32768, "reasoning_effort": "medium"},
        ("max_tokens", "temperature", "seed"),
        "json_schema",
    ),
    "openai-gpt4o": ({"max_tokens": METHOD_CAP, "temperature": 0.0, "seed": 1}, ("reasoning_effort",), "json_schema"),
    "openai": ({"max_tokens": METHOD_CAP, "temperature": 0.0}, ("reasoning_effort",), "json_schema"),
    # thinking counts against max_tokens: the profile's ceiling, not the method's 48
    "gemini-2.5-pro": ({"max_tokens": 65536, "temperature": 0.0, "seed": 1}, ("reasoning_effort",), "json_object"),
    "gemini-2.0-flash": ({"max_tokens": METHOD_CAP, "temperature": 0.0}, ("reasoning_effort",), "json_object"),
    # DeepSeek's API ignores temperature for its reasoner (not sent); max_tokens includes the reasoning
    "deepseek-reasoner": ({"max_tokens": 32768}, ("temperature", "seed", "reasoning_effort"), "json_object"),
    "dashscope-qwen3-235b": ({"max_tokens": METHOD_CAP, "enable_thinking": False}, (), "json_object"),
    "vllm": ({"max_tokens": METHOD_CAP, "temperature": 0.0}, ("chat_template_kwargs",), "json_schema"),
    "vllm-deepseek-r1-32b": ({"max_tokens": 16384, "temperature": 0.0}, (), "json_schema"),
    "vllm-deepseek-r1": ({"max_tokens": 32768, "temperature": 0.0}, (), "json_schema"),
    "vllm-qwen3-235b": ({"max_tokens": 16384, "chat_template_kwargs": {"enable_thinking": True}}, (), "json_schema"),
    "vllm-qwen3-235b-nothink": (
        {"max_tokens": METHOD_CAP, "chat_template_kwargs": {"enable_thinking": False}},
        (),
        "json_schema",
    ),
}


def test_every_shipped_remote_chat_profile_has_its_dialect_checked():
    ps = load_profiles()
    remote = {n for n, p in ps.profiles.items() if p.kind == "chat" and not p.is_embedded}
    assert remote == set(DIALECTS)


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_shipped_profile_sends_its_dialect(name):
    want, absent, fmt = DIALECTS[name]
    dialect = "reasoning" if name == "openai-gpt5" else "chat"
    with FakeOpenAIServer(replies=[PICK], dialect=dialect, reasoning_tokens=200) as srv:
        gw = on_fake(name, srv.base_url)
        out = gw.structured("dcfa.gca", user("who?"), Pick, max_tokens=METHOD_CAP, sample=1)
        assert out == Pick(step=2, agent="WebSurfer")
        body = srv.chat_requests[0]
    assert body["model"] == load_profiles().profiles[name].model
    for field, value in want.items():
        assert body.get(field) == value, (name, field, body.get(field))
    for field in absent:
        assert field not in body, (name, field)
    assert body["response_format"]["type"] == fmt
    if fmt == "json_object":  # the schema travels in the prompt instead
        assert "JSON schema" in body["messages"][-1]["content"]
    assert "extra_body" not in body  # merged into the body, never sent as a field of its own


def test_reasoning_profiles_leave_room_for_reasoning_and_priced_profiles_date_their_prices():
    for name, p in load_profiles().profiles.items():
        if p.reasoning in ("always", "on"):
            assert p.hidden_reasoning_counts and p.max_output_tokens, name
        if p.price_prompt_per_1k or p.price_completion_per_1k:
            assert p.prices_as_of, name
        else:
            assert p.prices_as_of is None, name


def test_every_backbone_of_both_papers_has_a_routing():
    ps = load_profiles()
    dcfa = {
        "dcfa-gpt5": "gpt-5",
        "dcfa-gemini-2.5-pro": "gemini-2.5-pro",
        "dcfa-deepseek-r1": "deepseek-ai/DeepSeek-R1",
        "dcfa-deepseek-r1-32b": "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
        "dcfa-qwen3-235b": "Qwen/Qwen3-235B-A22B",
        "dcfa-qwen3-coder-30b": "Qwen/Qwen3-Coder-30B-A3B-Instruct",
    }
    for routing, model in dcfa.items():
        r = ps.with_routing(routing)
        assert r.preset == "paper"
        assert r.profile_for("dcfa.gca").model == model and r.profile_for("baseline").model == model
        assert r.profile_for("dcfa.lce").model == "Qwen/Qwen3-Coder-30B-A3B-Instruct"  # LCE on every row
        assert r.profile_for("dcfa.embed").model == "text-embedding-3-large"
    mac = {
        "mac-gpt4o": "gpt-4o",
        "mac-gemini-2.0-flash": "gemini-2.0-flash",
        "mac-deepseek-r1": "deepseek-ai/DeepSeek-R1",
    }
    for routing, model in mac.items():
        r = ps.with_routing(routing)
        for stage in ("mac.debate", "mac.coder", "mac.baseline"):
            assert r.profile_for(stage).model == model
    assert ps.profiles["gemini-2.0-flash"].base_url.startswith("https://generativelanguage.googleapis.com/")


def test_extra_body_from_the_environment_is_json(monkeypatch):
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_VLLM_EXTRA_BODY", '{"chat_template_kwargs": {"enable_thinking": false}}')
    assert load_profiles().profiles["vllm"].extra_body == {"chat_template_kwargs": {"enable_thinking": False}}
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_VLLM_EXTRA_BODY", "enable_thinking=false")
    from agentcausal.exceptions import ConfigError

    with pytest.raises(ConfigError, match="extra_body must be a JSON object"):
        load_profiles()


def test_extra_body_changes_the_cache_key(tmp_path):
    with FakeOpenAIServer(replies=["a", "b"]) as srv:
        ps = load_profiles()
        keys = []
        for name in ("vllm-qwen3-235b", "vllm-qwen3-235b-nothink"):
            prof = ps.profiles[name].model_copy(
                update={
                    "base_url": srv.base_url,
                    "api_key_env": None,
                    "max_output_tokens": 100,
                    "hidden_reasoning_counts": False,
                }
            )
            gw = Gateway(ProfileSet(profiles={"p": prof}, routings={"default": {"default": "p"}}), cache_dir=tmp_path)
            keys.append(gw.chat("baseline", user("x"), max_tokens=10))
            gw.close()
        assert keys == ["a", "b"] and srv.count == 2  # thinking on and off are two requests, not one cache hit


# ------------------------------------------------------------------------------------ <think> blocks


R1_REPLY = (
    '<think>\nThe orchestrator asked for the page; step 2 {"step": 9} looks wrong because the unit is off.\n'
    "</think>\n\n" + PICK
)


@pytest.mark.parametrize(
    "reply",
    [
        R1_REPLY,  # vLLM without a reasoning parser: the whole block in the content
        R1_REPLY.replace("<think>\n", "", 1),  # R1's chat template opened the block in the prompt
        "<think>first</think><think>second</think>" + PICK,
    ],
)
def test_a_visible_think_block_is_removed_before_the_reply_is_parsed(reply):
    with FakeOpenAIServer(replies=[reply]) as srv:
        gw = on_fake("vllm-deepseek-r1", srv.base_url)
        assert gw.structured("dcfa.gca", user("who?"), Pick) == Pick(step=2, agent="WebSurfer")
        assert srv.count == 1  # no repair round trip: the reasoning never reached the validator


def test_chat_replies_and_the_cache_hold_the_answer_without_the_reasoning(tmp_path):
    with FakeOpenAIServer(replies=["<think>weighing it</think>\nstep 2 is the decisive error"]) as srv:
        prof = (
            load_profiles()
            .profiles["vllm-deepseek-r1-32b"]
            .model_copy(update={"base_url": srv.base_url, "api_key_env": None})
        )
        gw = Gateway(ProfileSet(profiles={"r1": prof}, routings={"default": {"default": "r1"}}), cache_dir=tmp_path)
        assert gw.chat("baseline", user("x")) == "step 2 is the decisive error"
        gw.close()
        gw = Gateway(ProfileSet(profiles={"r1": prof}, routings={"default": {"default": "r1"}}), cache_dir=tmp_path)
        assert gw.chat("baseline", user("x")) == "step 2 is the decisive error" and srv.count == 1
        gw.close()


def test_reasoning_cut_off_before_the_answer_is_repaired_without_echoing_the_reasoning():
    with FakeOpenAIServer(replies=["<think>still weighing steps 1 and 2", PICK]) as srv:
        gw = on_fake("vllm-deepseek-r1", srv.base_url)
        assert gw.structured("dcfa.gca", user("who?"), Pick) == Pick(step=2, agent="WebSurfer")
        repair = srv.chat_requests[1]["messages"]
        assert repair[-2] == {"role": "assistant", "content": ""}  # the unfinished reasoning is not sent back


def test_strip_reasoning_leaves_answers_alone():
    for text in (
        PICK,
        '{"reason": "it printed </think> literally"}',
        "```json\n{}\n```</think>",
        "plain answer",
        "[1, 2] </think> tail",
    ):
        assert strip_reasoning(text) == text
    assert strip_reasoning("  <THINK>x</THINK>  answer") == "answer"
    assert strip_reasoning("</think>answer") == "answer"
    assert json.loads(strip_reasoning(R1_REPLY)) == {"step": 2, "agent": "WebSurfer"}
