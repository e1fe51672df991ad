"""Gateway behaviour against the fake OpenAI-compatible server (test double).

Caching, retries on 429/5xx/timeouts/dropped connections, structured-output
repair, the per-endpoint concurrency limit, token accounting, API-key secrecy
and the clear errors of the issue's "Bad input" list.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import diskcache
import numpy as np
import pytest
from pydantic import BaseModel

from agentcausal.exceptions import (
    ConfigError,
    EndpointUnreachableError,
    LLMCallError,
    MissingAPIKeyError,
    StructuredOutputError,
    UnknownStageError,
)
from agentcausal.llm import Gateway, Profile, ProfileSet
from agentcausal.llm.dialect import cache_key
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from tests.conftest import fake_profiles as _profiles

PICK_2 = '{"step": 2, "agent": "WebSurfer"}'
SECRET = "sk-test-DO-NOT-LEAK-7f3a9c"


class Pick(BaseModel):
    """The step and agent that caused the failure."""

    step: int
    agent: str


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def cache_entries(cache_dir: Path) -> int:
    with diskcache.Cache(str(cache_dir)) as c:
        return len(c)


# ------------------------------------------------------------------- caching
def test_second_identical_structured_call_makes_no_request(fake_server, make_gateway):
    fake_server.push(PICK_2)
    gw = make_gateway(fake_server)
    first = gw.structured("baseline", user("who failed?"), Pick, item="t1", max_tokens=32)
    second = gw.structured("baseline", user("who failed?"), Pick, item="t1", max_tokens=32)
    assert first == second == Pick(step=2, agent="WebSurfer")
    assert fake_server.count == 1
    u = gw.usage.by_stage("t1")["baseline"]
    assert (u.calls, u.requests, u.cache_hits) == (2, 1, 1)


def test_cache_survives_a_new_gateway_on_the_same_folder(fake_server, make_gateway, tmp_path):
    fake_server.push("hello")
    make_gateway(fake_server, cache_dir=tmp_path / "c").chat("baseline", user("hi"), max_tokens=8)
    again = make_gateway(fake_server, cache_dir=tmp_path / "c").chat("baseline", user("hi"), max_tokens=8)
    assert again == "hello"
    assert fake_server.count == 1


def test_different_sampling_params_are_different_cache_entries(fake_server, make_gateway):
    fake_server.push("a", "b")
    gw = make_gateway(fake_server)
    assert gw.chat("baseline", user("x"), max_tokens=8) == "a"
    assert gw.chat("baseline", user("x"), max_tokens=9) == "b"
    assert fake_server.count == 2


def test_refresh_bypasses_cache_reads_but_writes(fake_server, make_gateway, tmp_path):
    fake_server.push("old", "new")
    make_gateway(fake_server, cache_dir=tmp_path / "c").chat("baseline", user("q"))
    gw = make_gateway(fake_server, cache_dir=tmp_path / "c")
    gw.refresh = True
    assert gw.chat("baseline", user("q")) == "new"
    gw.refresh = False
    assert gw.chat("baseline", user("q")) == "new"
    assert fake_server.count == 2


def test_usage_counts_tokens_per_stage_and_item(fake_server, make_gateway):
    fake_server.push("one", "two")
    gw = make_gateway(fake_server)
    gw.chat("dcfa.gca", user("a" * 40), item="trace-1")
    gw.chat("dcfa.lce", user("b" * 40), item="trace-2")
    assert set(gw.usage.by_stage("trace-1")) == {"dcfa.gca"}
    assert gw.usage.by_stage()["dcfa.lce"].prompt_tokens == 11  # fake: chars // 4 + 1
    assert gw.usage.total().requests == 2


# ------------------------------------------------------------------- retries
def test_injected_429_and_500_are_retried_and_survived(fake_server, make_gateway):
    fake_server.inject(429, 500)
    fake_server.push("fine")
    gw = make_gateway(fake_server, max_retries=3)
    assert gw.chat("baseline", user("x")) == "fine"
    assert fake_server.count == 3


def test_injected_timeout_is_retried_and_survived():
    with FakeOpenAIServer(replies=["late but fine"], faults=["timeout"], timeout_sleep_s=1.0) as srv:
        gw = Gateway(_profiles(srv.base_url, timeout_s=0.3), cache_dir=None, max_retries=2)
        assert gw.chat("baseline", user("x")) == "late but fine"
        assert srv.count == 2
        gw.close()


def test_dropped_connection_is_retried_and_survived(fake_server, make_gateway):
    fake_server.inject("drop")
    fake_server.push("fine")
    gw = make_gateway(fake_server, max_retries=2)
    assert gw.chat("baseline", user("x")) == "fine"
    assert fake_server.count == 2


def test_persistent_500_raises_endpoint_error_naming_profile_and_leaves_cache_empty(
    fake_server, make_gateway, tmp_path
):
    fake_server.inject(500, 500, 500)
    gw = make_gateway(fake_server, max_retries=1, cache_dir=tmp_path / "c")
    with pytest.raises(EndpointUnreachableError, match="'fake'") as err:
        gw.structured("baseline", user("x"), Pick)
    assert err.value.profile == "fake" and err.value.base_url == fake_server.base_url
    assert "'baseline'" in str(err.value)
    assert fake_server.count == 2
    gw.close()
    assert cache_entries(tmp_path / "c") == 0


def test_persistent_timeout_raises_endpoint_error():
    with FakeOpenAIServer(faults=["timeout"] * 3, timeout_sleep_s=0.8) as srv:
        gw = Gateway(_profiles(srv.base_url, timeout_s=0.2), cache_dir=None, max_retries=1)
        with pytest.raises(EndpointUnreachableError, match="timed out"):
            gw.chat("baseline", user("x"))
        gw.close()


def test_unreachable_endpoint_raises_one_clear_error():
    with FakeOpenAIServer() as srv:
        url = srv.base_url  # the port is closed once the server stops
    gw = Gateway(_profiles(url), cache_dir=None, max_retries=0)
    with pytest.raises(EndpointUnreachableError) as err:
        gw.chat("baseline", user("x"))
    assert err.value.profile == "fake" and err.value.base_url == url
    assert "connection failed" in str(err.value)


def test_non_retryable_400_raises_llm_call_error_without_retrying(fake_server, make_gateway):
    fake_server.inject(400)
    gw = make_gateway(fake_server, max_retries=3)
    with pytest.raises(LLMCallError) as err:
        gw.chat("dcfa.gca", user("x"))
    assert (err.value.status, err.value.stage, err.value.profile) == (400, "dcfa.gca", "fake")
    assert fake_server.count == 1


# -------------------------------------------------------- structured replies
def test_malformed_json_is_repaired_with_the_error_fed_back(fake_server, make_gateway):
    fake_server.inject("malformed")
    fake_server.push(PICK_2)
    gw = make_gateway(fake_server)
    assert gw.structured("baseline", user("x"), Pick) == Pick(step=2, agent="WebSurfer")
    assert fake_server.count == 2
    repair = fake_server.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "this is not JSON {"}
    assert "did not validate" in repair[-1]["content"]
    assert gw.usage.by_stage()["baseline"].requests == 2


def test_truncated_reply_is_repaired_asking_for_a_shorter_object(fake_server, make_gateway):
    fake_server.inject("truncated")
    fake_server.push(PICK_2)
    gw = make_gateway(fake_server)
    assert gw.structured("baseline", user("x"), Pick, max_tokens=8) == Pick(step=2, agent="WebSurfer")
    assert "cut off" in fake_server.requests[1]["messages"][-1]["content"]


def test_code_fenced_json_is_accepted_without_repair(fake_server, make_gateway):
    fake_server.push(f"```json\n{PICK_2}\n```")
    gw = make_gateway(fake_server)
    assert gw.structured("baseline", user("x"), Pick).step == 2
    assert fake_server.count == 1


def test_still_invalid_after_repairs_raises_with_raw_text_and_caches_nothing(fake_server, make_gateway, tmp_path):
    fake_server.push('{"step": "two"}', '{"step": "still two"}', '{"agent": "nobody"}')
    gw = make_gateway(fake_server, cache_dir=tmp_path / "c")
    with pytest.raises(StructuredOutputError) as err:
        gw.structured("mac.debate", user("x"), Pick)
    assert err.value.raw == '{"agent": "nobody"}'
    assert (err.value.attempts, err.value.stage, err.value.reply_model) == (3, "mac.debate", "Pick")
    assert "step" in err.value.errors
    assert fake_server.count == 3 == gw.max_repairs + 1
    gw.close()
    assert cache_entries(tmp_path / "c") == 0


def test_json_schema_mode_sends_the_reply_models_schema(fake_server, make_gateway):
    fake_server.push(PICK_2)
    make_gateway(fake_server).structured("baseline", user("x"), Pick)
    rf = fake_server.requests[0]["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["schema"]["required"] == ["step", "agent"]


def test_json_object_mode_puts_the_schema_in_the_prompt(fake_server, make_gateway):
    fake_server.push(PICK_2)
    make_gateway(fake_server, json_mode="json_object").structured("baseline", user("x"), Pick)
    req = fake_server.requests[0]
    assert req["response_format"] == {"type": "json_object"}
    assert '"required": ["step", "agent"]' in req["messages"][-1]["content"]


# --------------------------------------------------------------- concurrency
def test_per_endpoint_concurrency_limit_holds_under_many_threads():
    with FakeOpenAIServer(responder=lambda body: "ok", latency_s=0.15) as srv:
        gw = Gateway(_profiles(srv.base_url, max_concurrency=2), cache_dir=None)
        threads = [threading.Thread(target=gw.chat, args=("baseline", user(f"q{i}"))) for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert srv.count == 10
        assert srv.max_in_flight == 2
        gw.close()


def test_concurrent_identical_calls_share_one_cache_entry(fake_server, make_gateway, tmp_path):
    fake_server.responder = lambda body: "same"
    fake_server.latency_s = 0.05
    gw = make_gateway(fake_server, cache_dir=tmp_path / "c")
    out: list[str] = []
    threads = [threading.Thread(target=lambda: out.append(gw.chat("baseline", user("q")))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == ["same"] * 4
    gw.close()
    assert cache_entries(tmp_path / "c") == 1


# ------------------------------------------------------------ API-key secrecy
def test_api_key_never_enters_cache_keys_files_or_logs(fake_server, monkeypatch, caplog, tmp_path):
    monkeypatch.setenv("FAKE_LLM_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    fake_server.inject(429, "malformed")
    fake_server.push(PICK_2, "plain")
    cache_dir = tmp_path / "c"
    gw = Gateway(_profiles(fake_server.base_url, api_key_env="FAKE_LLM_KEY"), cache_dir=cache_dir, max_retries=2)
    gw.structured("baseline", user("x"), Pick)
    gw.chat("baseline", user("y"))
    gw.embed("dcfa.embed", ["some text"])
    keys = list(gw.cache.store.iterkeys())
    gw.close()
    # the key was really used, so its absence below means something
    assert fake_server.requests[0]["_auth"] == f"Bearer {SECRET}"
    assert caplog.records, "expected DEBUG log lines from the gateway/openai/httpx"
    assert SECRET not in caplog.text
    assert keys and all(SECRET not in str(k) for k in keys)
    for f in cache_dir.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_cache_key_does_not_depend_on_the_api_key(fake_server, monkeypatch, tmp_path):
    fake_server.push("cached")
    monkeypatch.setenv("FAKE_LLM_KEY", "key-one")
    gw = Gateway(_profiles(fake_server.base_url, api_key_env="FAKE_LLM_KEY"), cache_dir=tmp_path / "c")
    gw.chat("baseline", user("x"))
    gw.close()
    monkeypatch.setenv("FAKE_LLM_KEY", "key-two")
    gw = Gateway(_profiles(fake_server.base_url, api_key_env="FAKE_LLM_KEY"), cache_dir=tmp_path / "c")
    assert gw.chat("baseline", user("x")) == "cached"
    assert fake_server.count == 1
    gw.close()


def test_cache_key_is_stable_and_order_independent():
    a = cache_key("http://h/v1", "m", {"messages": [{"role": "user", "content": "x"}], "params": {"t": 0, "n": 1}})
    b = cache_key("http://h/v1", "m", {"params": {"n": 1, "t": 0}, "messages": [{"role": "user", "content": "x"}]})
    assert a == b and len(a) == 64
    assert a != cache_key(
        "http://other/v1", "m", {"messages": [{"role": "user", "content": "x"}], "params": {"t": 0, "n": 1}}
    )


# ---------------------------------------------------------------- bad input
def test_missing_api_key_variable_names_profile_and_variable(fake_server, monkeypatch):
    monkeypatch.delenv("FAKE_LLM_KEY", raising=False)
    gw = Gateway(_profiles(fake_server.base_url, api_key_env="FAKE_LLM_KEY"), cache_dir=None)
    with pytest.raises(MissingAPIKeyError) as err:
        gw.chat("baseline", user("x"))
    assert (err.value.profile, err.value.env_var) == ("fake", "FAKE_LLM_KEY")
    assert "FAKE_LLM_KEY" in str(err.value) and fake_server.count == 0


def test_unknown_stage_names_the_stage_and_routing(fake_server):
    profiles = ProfileSet(
        profiles={"fake": Profile(name="fake", base_url=fake_server.base_url, model="m")},
        routings={"default": {"dcfa.gca": "fake"}},
    )
    gw = Gateway(profiles, cache_dir=None)
    with pytest.raises(UnknownStageError, match="'mac.debate'") as err:
        gw.chat("mac.debate", user("x"))
    assert err.value.routing == "default"


def test_chat_on_an_embedding_stage_is_a_config_error(fake_server, make_gateway):
    gw = make_gateway(fake_server)
    with pytest.raises(ConfigError, match="'fake-embed'"):
        gw.chat("dcfa.embed", user("x"))
    with pytest.raises(ConfigError, match="'fake'"):
        gw.embed("baseline", ["x"])


# ---------------------------------------------------------------- embeddings
def test_embeddings_are_normalised_and_cached_per_text(fake_server, make_gateway):
    gw = make_gateway(fake_server)
    a = gw.embed("dcfa.embed", ["alpha", "beta"], item="t1")
    assert a.shape == (2, 16) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)
    b = gw.embed("dcfa.embed", ["beta", "gamma"])
    np.testing.assert_allclose(b[0], a[1])
    assert fake_server.count == 2
    assert fake_server.requests[1]["input"] == ["gamma"]
    assert gw.usage.by_stage()["dcfa.embed"].cache_hits == 1


def test_no_texts_embed_to_an_empty_float32_array(fake_server, make_gateway):
    """No texts: an empty array of the promised dtype (float32), and no request."""
    out = make_gateway(fake_server).embed("dcfa.embed", [])
    assert out.shape[0] == 0 and out.dtype == np.float32
    assert fake_server.count == 0


def test_embedding_endpoint_outage_raises_endpoint_error(fake_server, make_gateway):
    fake_server.inject(503, 503)
    gw = make_gateway(fake_server, max_retries=1)
    with pytest.raises(EndpointUnreachableError, match="'fake-embed'"):
        gw.embed("dcfa.embed", ["x"])


def test_model_for_labels_profile_and_model_and_own_gguf(tmp_path):
    from agentcausal.llm import load_profiles

    gw = Gateway(load_profiles(), cache_dir=None)
    assert gw.model_for("dcfa.gca") == "embedded:qwen2.5-coder-0.5b-instruct-q4_k_m"
    own = ProfileSet(
        profiles={
            "embedded": Profile(name="embedded", base_url="embedded", model="m", model_path=str(tmp_path / "mine.gguf"))
        },
        routings={"default": {"default": "embedded"}},
    )
    assert Gateway(own, cache_dir=None).model_for("x") == "embedded:m@mine.gguf"
