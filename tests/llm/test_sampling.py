"""Repeats (``sample``) and temperature on chat/structured: cache keys and requests (fake server, test double)."""

from __future__ import annotations

import diskcache
from pydantic import BaseModel

from agentcausal.llm.dialect import cache_key

PICK = '{"step": 1, "agent": "A"}'


class Pick(BaseModel):
    step: int
    agent: str


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def keys(cache_dir) -> set[str]:
    with diskcache.Cache(str(cache_dir)) as c:
        return set(c.iterkeys())


def test_cache_key_formula_is_pinned():
    # written by the gateway before `sample`/`temperature=None` existed; must never change
    key = cache_key(
        "http://127.0.0.1:9/v1", "fake-model", {"messages": user("hi"), "params": {"temperature": 0.0, "max_tokens": 8}}
    )
    assert key == "aa3bca03edae145a11f18543c33efe300edb55164071698e89fea05dd8263b90"


def test_sample_0_and_default_temperature_keep_the_old_chat_key(fake_server, make_gateway, tmp_path):
    fake_server.push("a")
    gw = make_gateway(fake_server, cache_dir=tmp_path / "c")
    gw.chat("baseline", user("hi"), max_tokens=8)
    old = cache_key(
        fake_server.base_url, "fake-model", {"messages": user("hi"), "params": {"temperature": 0.0, "max_tokens": 8}}
    )
    assert keys(tmp_path / "c") == {old}
    body = fake_server.chat_requests[0]
    assert body["temperature"] == 0 and body["max_tokens"] == 8 and "seed" not in body


def test_sample_0_keeps_the_old_structured_key(fake_server, make_gateway, tmp_path):
    fake_server.push(PICK)
    gw = make_gateway(fake_server, cache_dir=tmp_path / "c")
    gw.structured("baseline", user("who?"), Pick, max_tokens=16, sample=0)
    schema = Pick.model_json_schema()
    params = {
        "temperature": 0.0,
        "max_tokens": 16,
        "response_format": {"type": "json_schema", "json_schema": {"name": "Pick", "schema": schema, "strict": False}},
    }
    old = cache_key(fake_server.base_url, "fake-model", {"messages": user("who?"), "params": params, "schema": schema})
    assert keys(tmp_path / "c") == {old}


def test_each_sample_is_its_own_request_with_seed_and_cached_apart(fake_server, make_gateway):
    fake_server.push("s0", "s1", "s2")
    gw = make_gateway(fake_server)
    got = [gw.chat("baseline", user("x"), sample=r, temperature=0.7) for r in (0, 1, 2)]
    assert got == ["s0", "s1", "s2"]
    assert [r.get("seed") for r in fake_server.chat_requests] == [None, 1, 2]
    assert fake_server.chat_requests and all(r["temperature"] == 0.7 for r in fake_server.chat_requests)
    # each repeat is served from the cache the second time
    assert [gw.chat("baseline", user("x"), sample=r, temperature=0.7) for r in (0, 1, 2)] == got
    assert fake_server.count == 3


def test_sample_is_cached_apart_even_where_no_seed_is_sent(fake_server, make_gateway):
    fake_server.push("s1", "s2")
    gw = make_gateway(fake_server, seed_supported=False)
    assert gw.chat("baseline", user("x"), sample=1) == "s1"
    assert gw.chat("baseline", user("x"), sample=2) == "s2"
    assert fake_server.chat_requests and all("seed" not in r for r in fake_server.chat_requests)


def test_temperature_none_uses_the_profiles_temperature(fake_server, make_gateway):
    fake_server.push("a", "b")
    gw = make_gateway(fake_server, temperature=0.4)
    gw.chat("baseline", user("x"))
    gw.chat("baseline", user("x"), temperature=0.0)  # an explicit value wins, and is another key
    assert [r["temperature"] for r in fake_server.chat_requests] == [0.4, 0.0]
