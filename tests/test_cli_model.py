"""One flag to a model: ``--base-url URL --model NAME`` routes every chat stage to a generated ``cli`` profile;
the context window comes from the server's /models when it reports one; run.json records the model."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentcausal.cli import build_parser, main
from agentcausal.cli.settings_options import apply_model_arguments
from agentcausal.exceptions import ConfigError
from agentcausal.llm.profiles import cli_profiles_toml, load_profiles, server_context_window
from agentcausal.settings import RunSettings
from tests.ops.conftest import scripted_responder

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "examples" / "wrong_unit_at_step_2.json"


@pytest.fixture
def models_server():
    """A /v1/models endpoint reporting vLLM's ``max_model_len`` for one model (test double)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps({"data": [{"id": "big", "max_model_len": 32768}, {"id": "plain"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_context_window_from_server_else_flag_else_default(models_server, tmp_path):
    assert server_context_window(models_server, "big") == 32768
    assert server_context_window(models_server, "plain") is None
    assert server_context_window("http://127.0.0.1:9/v1", "x", timeout_s=0.5) is None
    for model, flag, want in (("big", 4096, (32768, "server")), ("plain", 4096, (4096, "flag")),
                              ("plain", None, (8192, "default"))):
        text, facts = cli_profiles_toml(models_server, model, context_window=flag)
        assert (facts["context_window"], facts["context_window_source"]) == want
        p = tmp_path / f"{model}{flag}.toml"
        p.write_text(text)
        ps = load_profiles(p, "cli")
        for stage in ("dcfa.gca", "dcfa.lce", "baseline", "mac.debate"):
            assert ps.profile_for(stage).name == "cli" and ps.profile_for(stage).model == model
        assert ps.profile_for("dcfa.embed").base_url == "local"  # the embedded embedder
        assert ps.profile_for("baseline").context_window == want[0]
        assert ps.preset == "paper"  # a model named on the command line gets the papers' settings
        assert load_profiles(p, "paper").profile_for("dcfa.lce").name == "vllm"  # other routings kept


def test_model_flags_need_each_other_and_exclude_routing(tmp_path):
    parser = build_parser()
    s = RunSettings(cache_dir=str(tmp_path))
    args = parser.parse_args(["attribute", "x", "--model", "m"])
    with pytest.raises(ConfigError, match="go together"):
        apply_model_arguments(args, s)
    args = parser.parse_args(["discover", "--base-url", "http://h/v1", "--model", "m", "--routing", "paper"])
    with pytest.raises(ConfigError, match="exclude"):
        apply_model_arguments(args, s)
    args = parser.parse_args(["demo", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--embed-model", "e"])
    new, facts = apply_model_arguments(args, s)
    assert new.routing == "cli" and Path(new.profiles_path).parent == tmp_path / "profiles"
    assert load_profiles(new.profiles_path, "cli").profile_for("dcfa.embed").model == "e"
    assert facts["embed_model"] == "e"
    assert apply_model_arguments(parser.parse_args(["attribute", "x"]), s) == (s, {})


def test_attribute_with_base_url_and_model_runs_on_that_endpoint(fake_server, tmp_path, capsys):
    fake_server.responder = scripted_responder
    out = tmp_path / "run"
    rc = main(["attribute", str(EXAMPLE), "--method", "all_at_once", "--base-url", fake_server.base_url,
               "--model", "fake-model", "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    assert fake_server.count >= 1 and all(r["model"] == "fake-model" for r in fake_server.chat_requests)
    meta = json.loads((out / "run.json").read_text())
    assert meta["routing"] == "cli" and meta["model"]["model"] == "fake-model"
    assert meta["model"]["base_url"] == fake_server.base_url and meta["model"]["context_window"] == 8192
    assert "fake-model" in json.dumps(meta["models"])
    # the report of this fake-server run: one per-trace row, the blamed step highlighted (html.parser)
    from tests.report.test_html_report import parse

    tree = parse((out / "report.html").read_text())
    # the one trace links to its section from the blamed steps and from the per-trace table
    assert len([1 for _, t in tree.find("a") if t.startswith("examples/")]) == 2
    assert [t for _, t in tree.find("tr", class_="blamed")][0].startswith("2")  # the scripted reply blames step 2
