"""Profiles and routing: the shipped file, environment overrides, and clear errors."""

from __future__ import annotations

import logging

import pytest

from agentcausal.exceptions import ConfigError, UnknownProfileError, UnknownStageError
from agentcausal.llm import Gateway, load_profiles
from agentcausal.llm.profiles import Profile

TWO_PROFILES = """
[profiles.local]
base_url = "http://127.0.0.1:9/v1"
model = "m"

[profiles.local-big]
base_url = "http://127.0.0.1:9/v1"
model = "big"

[routings.default]
default = "local"
"dcfa.lce" = "local-big"
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    """No AGENTCAUSAL_* variables from the developer's shell leak into these tests."""
    import os

    for key in list(os.environ):
        if key.startswith("AGENTCAUSAL_PROFILE") or key == "AGENTCAUSAL_ROUTING":
            monkeypatch.delenv(key)


@pytest.fixture
def two_profiles_toml(tmp_path):
    path = tmp_path / "profiles.toml"
    path.write_text(TWO_PROFILES)
    return path


def test_shipped_default_routes_every_chat_stage_to_embedded_and_embeddings_locally():
    ps = load_profiles()
    for stage in ("dcfa.gca", "dcfa.lce", "mac.debate", "mac.coder", "baseline"):
        assert ps.profile_for(stage).name == "embedded"
    assert ps.profile_for("dcfa.embed").name == "embedder-local"
    emb = ps.profiles["embedded"]
    assert emb.is_embedded and emb.context_window == 8192 and emb.max_concurrency == 2


def test_shipped_paper_routing_mirrors_dcfa_hardware_split():
    ps = load_profiles(routing="paper")
    assert ps.profile_for("dcfa.gca").base_url == "https://api.openai.com/v1"
    lce = ps.profile_for("dcfa.lce")
    assert (lce.base_url, lce.model) == ("http://localhost:8000/v1", "Qwen/Qwen3-Coder-30B-A3B-Instruct")
    assert ps.profile_for("dcfa.embed").model == "text-embedding-3-large"
    # the key is named, never stored
    assert ps.profiles["openai"].api_key_env == "OPENAI_API_KEY"


def test_shipped_paper_routing_sends_every_mac_stage_and_the_llm_discovery_baselines_to_gpt4o():
    from agentcausal.discovery.mac.settings import BASELINE_STAGE, CODER_STAGE, DEBATE_STAGE

    ps = load_profiles(routing="paper")
    assert {ps.profile_for(s).model for s in (DEBATE_STAGE, CODER_STAGE, BASELINE_STAGE)} == {"gpt-4o"}


def test_gateway_from_settings_reads_routing_from_environment(monkeypatch):
    monkeypatch.setenv("AGENTCAUSAL_ROUTING", "paper")
    gw = Gateway.from_settings(cache_dir=None)
    assert gw.model_for("dcfa.lce") == "vllm:Qwen/Qwen3-Coder-30B-A3B-Instruct"


def test_env_override_sets_fields_with_types(monkeypatch, two_profiles_toml):
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_LOCAL_BASE_URL", "http://gpu-host:8000/v1")
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_LOCAL_MAX_CONCURRENCY", "16")
    ps = load_profiles(two_profiles_toml)
    p = ps.profiles["local"]
    assert (p.base_url, p.max_concurrency) == ("http://gpu-host:8000/v1", 16)
    assert ps.profiles["local-big"].base_url == "http://127.0.0.1:9/v1"


def test_env_override_goes_to_the_longest_matching_profile_name(monkeypatch, two_profiles_toml):
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_LOCAL_BIG_MODEL", "bigger")
    ps = load_profiles(two_profiles_toml)
    assert ps.profiles["local-big"].model == "bigger"
    assert ps.profiles["local"].model == "m"


def test_shipped_openai_embed_override_does_not_break_openai_profile(monkeypatch):
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_OPENAI_EMBED_MODEL", "text-embedding-3-small")
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_EMBEDDED_MODEL_PATH", "/models/x.gguf")
    ps = load_profiles()
    assert ps.profiles["openai-embed"].model == "text-embedding-3-small"
    assert ps.profiles["openai"].model == "gpt-4o-mini"
    assert ps.profiles["embedded"].model_path == "/models/x.gguf"
    assert ps.profiles["embedded-1_5b"].model_path is None


def test_env_override_with_bad_value_names_profile_and_variable(monkeypatch, two_profiles_toml):
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_LOCAL_MAX_CONCURRENCY", "lots")
    with pytest.raises(ConfigError, match="AGENTCAUSAL_PROFILE_LOCAL_MAX_CONCURRENCY") as err:
        load_profiles(two_profiles_toml)
    assert "'local'" in str(err.value) and err.value.path == str(two_profiles_toml)


def test_env_override_for_unknown_field_is_warned_not_applied(monkeypatch, two_profiles_toml, caplog):
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_LOCAL_MODLE", "typo")
    with caplog.at_level(logging.WARNING):
        ps = load_profiles(two_profiles_toml)
    assert ps.profiles["local"].model == "m"
    assert "AGENTCAUSAL_PROFILE_LOCAL_MODLE" in caplog.text


def test_routing_to_a_missing_profile_names_it(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(TWO_PROFILES + '\n[routings.paper]\n"dcfa.gca" = "openai"\n')
    with pytest.raises(UnknownProfileError, match="'openai'") as err:
        load_profiles(path)
    assert err.value.profile == "openai" and sorted(err.value.known) == ["local", "local-big"]


def test_unknown_routing_lists_defined_ones(two_profiles_toml):
    with pytest.raises(ConfigError, match="'nope'.*default"):
        load_profiles(two_profiles_toml, routing="nope")


def test_unknown_stage_without_default_route(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[profiles.a]\nbase_url = "http://x/v1"\nmodel = "m"\n[routings.default]\n"dcfa.gca" = "a"\n')
    ps = load_profiles(path)
    assert ps.profile_for("dcfa.gca").name == "a"
    with pytest.raises(UnknownStageError, match="'dcfa.lce'"):
        ps.profile_for("dcfa.lce")
    with pytest.raises(UnknownStageError, match="'dcfa.embed'"):
        ps.profile_for("dcfa.embed")  # embed stages never fall back to a chat default


def test_missing_profiles_file_names_it(tmp_path):
    with pytest.raises(ConfigError, match="not found") as err:
        load_profiles(tmp_path / "absent.toml")
    assert err.value.path.endswith("absent.toml")


def test_invalid_toml_and_invalid_field_are_config_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[profiles.a\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_profiles(bad)
    bad.write_text('[profiles.a]\nbase_url = "x"\nmodel = "m"\nmax_concurency = 3\n')
    with pytest.raises(ConfigError, match="'a' is invalid"):
        load_profiles(bad)


def test_api_key_is_read_from_named_variable_only(monkeypatch):
    p = Profile(name="p", base_url="http://x/v1", model="m", api_key_env="MY_KEY")
    monkeypatch.setenv("MY_KEY", "sk-secret-xyz")
    assert p.api_key() == "sk-secret-xyz"
    assert "sk-secret-xyz" not in p.model_dump_json() + repr(p)
    optional = Profile(name="v", base_url="http://x/v1", model="m", api_key_env="ABSENT_KEY", api_key_optional=True)
    monkeypatch.delenv("ABSENT_KEY", raising=False)
    assert optional.api_key() == "not-needed"
