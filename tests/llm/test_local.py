"""Packaged-model join and verification, model-path resolution, the shared server and the serve-local verb.

No model is loaded here (see test_embedded.py for the slow real-model tests).
"""

from __future__ import annotations

import hashlib
import os
import sys
import textwrap

import pytest

from agentcausal.exceptions import ModelFileError
from agentcausal.llm import Profile, local, packaged
from agentcausal_cli import build_parser

PART_BYTES = [b"GGUF" + b"a" * 3000, b"b" * 5000, b"c" * 17]


@pytest.fixture
def three_part_model(tmp_path, monkeypatch):
    """A tiny 'model' shipped as three importable part packages, registered as ``tiny``."""
    site = tmp_path / "site"
    for i, data in enumerate(PART_BYTES, start=1):
        pkg = site / f"tinypart_{os.getpid()}_{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i}.bin").write_bytes(data)
        (pkg / "__init__.py").write_text(
            textwrap.dedent("""
            from pathlib import Path
            def get_part_path():
                return str(next((Path(__file__).parent / "data").glob("*.bin")))
        """)
        )
    monkeypatch.syspath_prepend(str(site))
    joined = b"".join(PART_BYTES)
    spec = packaged.PackagedModel(
        filename="tiny.gguf",
        packages=tuple(f"tinypart_{os.getpid()}_{i}" for i in range(1, 4)),
        size=len(joined),
        sha256=hashlib.sha256(joined).hexdigest(),
        requirement="pip install tiny-parts",
        aliases=("tiny-model",),
    )
    monkeypatch.setitem(packaged.PACKAGED_MODELS, "tiny", spec)
    monkeypatch.setenv("AGENTCAUSAL_CACHE_DIR", str(tmp_path / "cache"))
    yield spec
    for name in spec.packages:
        sys.modules.pop(name, None)


def test_parts_are_joined_in_order_and_verified(three_part_model, tmp_path):
    path = packaged.packaged_model_path("tiny")
    assert path == tmp_path / "cache" / "models" / "tiny.gguf"
    assert path.read_bytes() == b"".join(PART_BYTES)
    assert packaged.packaged_model_path("tiny-model") == path  # alias
    assert [p.name for p in path.parent.iterdir()] and not list(path.parent.glob("*.part"))


def test_verified_file_is_not_rehashed_on_the_next_start(three_part_model, monkeypatch):
    path = packaged.packaged_model_path("tiny")

    def no_hashing(_):
        raise AssertionError("re-hashed a verified file")

    monkeypatch.setattr(packaged, "_sha256_file", no_hashing)
    assert packaged.packaged_model_path("tiny") == path


def test_touched_file_is_rehashed_once(three_part_model, monkeypatch):
    path = packaged.packaged_model_path("tiny")
    os.utime(path, ns=(1, 1))
    calls = []
    real = packaged._sha256_file
    monkeypatch.setattr(packaged, "_sha256_file", lambda p: calls.append(p) or real(p))
    packaged.packaged_model_path("tiny")
    packaged.packaged_model_path("tiny")
    assert calls == [path]


def test_bad_hash_of_parts_is_refused_and_nothing_is_left(three_part_model, monkeypatch, tmp_path):
    monkeypatch.setitem(packaged.PACKAGED_MODELS, "tiny", three_part_model._replace(sha256="0" * 64))
    with pytest.raises(ModelFileError, match="fails verification") as err:
        packaged.packaged_model_path("tiny")
    assert err.value.path.endswith("tiny.gguf")
    assert "pip install tiny-parts" in str(err.value)
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_corrupted_joined_file_is_deleted_and_joined_again(three_part_model):
    path = packaged.packaged_model_path("tiny")
    packaged._marker(path).unlink()
    path.write_bytes(b"corrupt")
    assert packaged.packaged_model_path("tiny").read_bytes() == b"".join(PART_BYTES)


def test_missing_part_package_names_the_requirement_to_install(three_part_model, monkeypatch):
    spec = three_part_model._replace(packages=three_part_model.packages + ("tinypart_absent_4",))
    monkeypatch.setitem(packaged.PACKAGED_MODELS, "tiny", spec)
    with pytest.raises(ModelFileError, match="'tinypart_absent_4' is not installed.*pip install tiny-parts"):
        packaged.packaged_model_path("tiny")


def test_optional_1_5b_model_names_its_requirements_file_when_absent(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTCAUSAL_CACHE_DIR", str(tmp_path))
    if all(_importable(m) for m in packaged.PACKAGED_MODELS["1.5b"].packages):
        pytest.skip("1.5B parts are installed here")
    with pytest.raises(ModelFileError, match="requirements/models-1_5b.txt"):
        packaged.packaged_model_path("1.5b")


def test_unknown_packaged_model_lists_known_names():
    with pytest.raises(ModelFileError, match="unknown packaged model '7b'.*0.5b"):
        packaged.packaged_model_path("7b")


def test_profile_model_path_overrides_packaged_model(tmp_path):
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    p = Profile(name="embedded", base_url="embedded", model="anything", model_path=str(gguf))
    assert packaged.resolve_model_path(p) == gguf


def test_missing_model_path_names_profile_and_file(tmp_path):
    p = Profile(name="mine", base_url="embedded", model="m", model_path=str(tmp_path / "absent.gguf"))
    with pytest.raises(ModelFileError, match="'mine'") as err:
        packaged.resolve_model_path(p)
    assert err.value.path.endswith("absent.gguf")


def test_start_server_refuses_a_missing_file(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        local.start_server(tmp_path / "absent.gguf")


def test_unknown_local_embedder_is_refused():
    with pytest.raises(ModelFileError, match="unknown local embedder"):
        local.local_embedder("no-such-embedder")


def test_shipped_requirements_pin_every_part_by_hash():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "requirements"
    for spec, fname in (
        (packaged.PACKAGED_MODELS["0.5b"], "models.txt"),
        (packaged.PACKAGED_MODELS["1.5b"], "models-1_5b.txt"),
    ):
        text = (root / fname).read_text()
        for mod in spec.packages:
            dist = mod.replace("_", "-")
            assert any(line.startswith(dist + "==") and "--hash=sha256:" in line for line in text.splitlines()), mod


def test_serve_local_verb_parses_model_and_port():
    args = build_parser().parse_args(["serve-local", "--gguf", "1.5b", "--port", "8089"])
    assert (args.gguf, args.port, args.slots, args.ctx, args.host) == ("1.5b", 8089, 2, 8192, "127.0.0.1")
    assert args.func.__name__ == "serve_local"


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


# ------------------------------------------------ a shared serve-local server
EMBEDDED_05B = "qwen2.5-coder-0.5b-instruct-q4_k_m"


@pytest.fixture
def shared_server_env(monkeypatch):
    """A fake server posing as `agentcausal serve-local` of the 0.5B model, named in $AGENTCAUSAL_EMBEDDED_URL."""
    from agentcausal_fakes.fake_openai import FakeOpenAIServer

    monkeypatch.setattr(local, "_BY_PROFILE", {})
    with FakeOpenAIServer(models=[EMBEDDED_05B]) as srv:
        monkeypatch.setenv(local.SHARED_SERVER_ENV, srv.base_url)
        yield srv


def test_embedded_profile_uses_shared_server_and_keeps_embedded_cache_identity(shared_server_env, tmp_path):
    from agentcausal.llm import Gateway, load_profiles

    shared_server_env.push("from the shared server")
    gw = Gateway(load_profiles(), cache_dir=tmp_path / "c")
    assert gw.chat("dcfa.gca", [{"role": "user", "content": "hi"}], max_tokens=8) == "from the shared server"
    assert shared_server_env.chat_requests[0]["model"] == EMBEDDED_05B
    gw.close()
    # a later run on another port still hits the cache: the key says "embedded", not the URL
    from agentcausal_fakes.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(models=[EMBEDDED_05B]) as other:
        os.environ[local.SHARED_SERVER_ENV] = other.base_url
        local._BY_PROFILE.clear()
        gw = Gateway(load_profiles(), cache_dir=tmp_path / "c")
        assert gw.chat("dcfa.gca", [{"role": "user", "content": "hi"}], max_tokens=8) == "from the shared server"
        assert other.count == 0
        gw.close()


def test_shared_server_serving_another_model_is_refused(shared_server_env):
    from agentcausal.exceptions import ConfigError
    from agentcausal.llm import load_profiles

    profile = load_profiles(routing="embedded-1_5b").profile_for("dcfa.gca")
    with pytest.raises(ConfigError, match="qwen2.5-coder-1.5b-instruct-q4_k_m"):
        local.ensure_embedded_server(profile)


def test_unreachable_shared_server_names_the_variable(monkeypatch):
    from agentcausal.exceptions import EndpointUnreachableError
    from agentcausal.llm import load_profiles

    monkeypatch.setattr(local, "_BY_PROFILE", {})
    monkeypatch.setenv(local.SHARED_SERVER_ENV, "http://127.0.0.1:9/v1")
    with pytest.raises(EndpointUnreachableError, match="AGENTCAUSAL_EMBEDDED_URL"):
        local.ensure_embedded_server(load_profiles().profile_for("baseline"))


def test_default_threads_leaves_one_core_free(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert local.default_threads() == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert local.default_threads() == 15
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert local.default_threads() == 1


def test_reproducible_and_fast_embedded_modes_never_share_cached_replies():
    # the two serving modes compute different numbers: a reply one drew must not be served to the other
    from agentcausal.llm import dialect, load_profiles

    profile = load_profiles().profile_for("dcfa.gca")
    assert profile.is_embedded and profile.reproducible  # the shipped default
    fast = profile.model_copy(update={"reproducible": False})
    assert dialect.cache_identity(profile) != dialect.cache_identity(fast)
    assert dialect.cache_identity(fast) == "embedded"  # fast mode's keys as before
