"""LLMCall: a method run's call context sends exactly the gateway's requests with its item, sample and temperature
(fake server, test double)."""

from __future__ import annotations

import diskcache
import numpy as np
import pytest
from pydantic import BaseModel

from agentcausal.llm import LLMCall

PICK = '{"step": 1, "agent": "A"}'


class Pick(BaseModel):
    step: int
    agent: str


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def keys(cache_dir) -> set[str]:
    with diskcache.Cache(str(cache_dir)) as c:
        return set(c.iterkeys())


def test_a_plain_call_sends_and_keys_what_the_bare_gateway_does(fake_server, make_gateway, tmp_path):
    fake_server.push(PICK, "a", PICK, "a")
    bare = make_gateway(fake_server, cache_dir=tmp_path / "bare")
    bare.structured("baseline", user("who?"), Pick, max_tokens=16)
    bare.chat("baseline", user("hi"), max_tokens=8)
    call = LLMCall(make_gateway(fake_server, cache_dir=tmp_path / "call"), item="t::m")
    assert call.structured("baseline", user("who?"), Pick, max_tokens=16) == Pick(step=1, agent="A")
    assert call.chat("baseline", user("hi"), max_tokens=8) == "a"
    first, second = fake_server.chat_requests[:2], fake_server.chat_requests[2:]
    assert first == second and all("seed" not in body for body in first)
    assert keys(tmp_path / "bare") == keys(tmp_path / "call") and len(keys(tmp_path / "call")) == 2


def test_the_call_books_its_item_and_sends_its_sample_and_temperature(fake_server, make_gateway):
    fake_server.push(PICK)
    gw = make_gateway(fake_server, cache=False)
    LLMCall(gw, item="ds:0:mac", sample=3, temperature=0.7).structured("baseline", user("who?"), Pick, max_tokens=16)
    (body,) = fake_server.chat_requests
    assert body["seed"] == 3 and body["temperature"] == 0.7
    assert gw.usage.by_stage("ds:0:mac")["baseline"].calls == 1


def test_read_only_queries_are_the_gateways(fake_server, make_gateway):
    gw = make_gateway(fake_server, max_output_tokens=900)
    call = LLMCall(gw)
    assert call.profile_for("baseline") == gw.profile_for("baseline")
    assert call.max_output_tokens("baseline") == 900 == gw.max_output_tokens("baseline")


def test_embed_books_the_item(fake_server, make_gateway):
    gw = make_gateway(fake_server)
    vecs = LLMCall(gw, item="t::dcfa").embed("dcfa.embed", ["a", "b"])
    assert vecs.shape[0] == 2 and np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    assert "dcfa.embed" in gw.usage.by_stage("t::dcfa")


def test_a_negative_sample_is_refused(fake_server, make_gateway):
    with pytest.raises(ValueError, match="sample must be >= 0"):
        LLMCall(make_gateway(fake_server), sample=-1)
