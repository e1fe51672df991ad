"""The embedded llama.cpp server's exposure: loopback only, a per-process key, no cross-origin access.

``xllamacpp.Server`` is replaced by a stand-in that records the parameters it
is given and answers through the fake OpenAI-compatible server (test double);
the real server's refusals are pinned by the slow test in ``test_embedded.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import xllamacpp

from agentcausal.llm import Gateway, Profile, ProfileSet, local
from agentcausal_fakes.fake_openai import FakeOpenAIServer


class StandInServer:
    """Poses as ``xllamacpp.Server``: keeps the params, serves through a FakeOpenAIServer."""

    started: list["StandInServer"] = []

    def __init__(self, params: xllamacpp.CommonParams) -> None:
        self.params = params
        self.fake = FakeOpenAIServer(responder=lambda body: "ok").start()
        self.listening_address = self.fake.base_url.removesuffix("/v1")
        StandInServer.started.append(self)


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    monkeypatch.setattr(xllamacpp, "Server", StandInServer)
    monkeypatch.setattr(local, "_SERVERS", {})
    monkeypatch.setattr(local, "_BY_PROFILE", {})
    monkeypatch.delenv(local.SHARED_SERVER_ENV, raising=False)
    monkeypatch.delenv(local.SHARED_SERVER_KEY_ENV, raising=False)
    StandInServer.started = []
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    yield gguf
    for s in StandInServer.started:
        s.fake.stop()


def test_server_binds_loopback_with_a_fresh_random_key_and_no_cross_origin_access(stand_in):
    a = local.start_server(stand_in, n_parallel=1, ctx_per_slot=512)
    b = local.start_server(stand_in, n_parallel=1, ctx_per_slot=512)
    pa, pb = (s.params for s in StandInServer.started)
    assert pa.hostnames == ["127.0.0.1"]
    assert pa.api_keys == [a.api_key] and pb.api_keys == [b.api_key]
    assert a.api_key != b.api_key and len(a.api_key) >= 32
    assert pa.cors_origins == "" and pa.cors_credentials is False
    assert a.api_key not in repr(a)


def test_gateway_sends_the_servers_key_which_never_reaches_the_cache(stand_in, tmp_path):
    profile = Profile(name="embedded", base_url="embedded", model="tiny", model_path=str(stand_in))
    gw = Gateway(
        ProfileSet(profiles={"embedded": profile}, routings={"default": {"default": "embedded"}}),
        cache_dir=tmp_path / "cache",
    )
    assert gw.chat("dcfa.gca", [{"role": "user", "content": "hi"}], max_tokens=8) == "ok"
    (srv,) = StandInServer.started
    key = srv.params.api_keys[0]
    assert srv.fake.chat_requests[0]["_auth"] == f"Bearer {key}"
    gw.close()
    for f in Path(tmp_path / "cache").rglob("*"):
        if f.is_file():
            assert key.encode() not in f.read_bytes(), f


def test_shared_server_key_comes_from_the_environment(monkeypatch, tmp_path):
    with FakeOpenAIServer(models=["qwen2.5-coder-0.5b-instruct-q4_k_m"], replies=["shared"]) as srv:
        monkeypatch.setattr(local, "_BY_PROFILE", {})
        monkeypatch.setenv(local.SHARED_SERVER_ENV, srv.base_url)
        monkeypatch.setenv(local.SHARED_SERVER_KEY_ENV, "printed-by-serve-local")
        from agentcausal.llm import load_profiles

        gw = Gateway(load_profiles(), cache_dir=None)
        assert gw.chat("dcfa.gca", [{"role": "user", "content": "hi"}], max_tokens=8) == "shared"
        assert srv.chat_requests[0]["_auth"] == "Bearer printed-by-serve-local"
        gw.close()


def test_shared_server_refusing_our_key_names_the_variable(monkeypatch):
    from agentcausal.exceptions import ConfigError
    from agentcausal.llm import load_profiles

    with FakeOpenAIServer(models=["qwen2.5-coder-0.5b-instruct-q4_k_m"], api_key="right") as srv:
        monkeypatch.setattr(local, "_BY_PROFILE", {})
        monkeypatch.setenv(local.SHARED_SERVER_ENV, srv.base_url)
        monkeypatch.setenv(local.SHARED_SERVER_KEY_ENV, "wrong")
        with pytest.raises(ConfigError, match=local.SHARED_SERVER_KEY_ENV):
            local.ensure_embedded_server(load_profiles().profile_for("dcfa.gca"))
        monkeypatch.setenv(local.SHARED_SERVER_KEY_ENV, "right")
        assert local.ensure_embedded_server(load_profiles().profile_for("dcfa.gca")) == srv.base_url


def test_reproducible_mode_serves_one_slot_with_batch_independent_kernels_and_no_ram_cache(stand_in):
    """What docs/embedded.md measured: each of these made an identical request answer differently."""
    local.start_server(stand_in, n_parallel=2, ctx_per_slot=512, deterministic=True)
    local.start_server(stand_in, n_parallel=2, ctx_per_slot=512)
    det, fast = (s.params for s in StandInServer.started)
    assert det.n_parallel == 1 and det.n_ctx == 512
    assert det.flash_attn_type == xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
    assert det.no_extra_bufts is True and det.cache_ram_mib == 0 and det.cache_prompt is True
    assert fast.n_parallel == 2 and fast.cache_ram_mib == 1024 and fast.no_extra_bufts is False
    assert fast.flash_attn_type == xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_AUTO
    assert det.sampling.seed == fast.sampling.seed == local.SAMPLING_SEED  # no random seed per request


def test_the_shipped_embedded_profiles_are_reproducible_and_say_so_in_the_plan(stand_in, monkeypatch):
    from agentcausal.llm import load_profiles

    monkeypatch.delenv("AGENTCAUSAL_PROFILE_EMBEDDED_REPRODUCIBLE", raising=False)
    ps = load_profiles()
    assert ps.profiles["embedded"].reproducible and ps.profiles["embedded-1_5b"].reproducible
    assert ps.profiles["embedded"].dialect()["reproducible"] is True
    assert "reproducible" not in ps.profiles["vllm"].dialect()
    fast = ps.profiles["embedded"].model_copy(update={"model_path": str(stand_in), "reproducible": False})
    slow = fast.model_copy(update={"reproducible": True})
    assert local.ensure_embedded_server(fast) != local.ensure_embedded_server(slow)  # two servers, two modes
    assert [s.params.n_parallel for s in StandInServer.started] == [2, 1]


def test_unknown_llama_cpp_option_is_one_line(stand_in):
    from agentcausal.exceptions import ConfigError

    with pytest.raises(ConfigError, match="unknown llama.cpp server option 'no_such_thing'"):
        local.start_server(stand_in, n_parallel=1, ctx_per_slot=512, server_options={"no_such_thing": 1})
