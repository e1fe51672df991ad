"""One flag to a model: ``--base-url URL --model NAME`` routes every chat stage to a generated ``cli`` profile;
the context window comes from the server's /models when it reports one; run.json records the model."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentcausal.exceptions import ConfigError
from agentcausal.llm.cli_profile import cli_profiles_toml, server_context_window
from agentcausal.llm.profiles import load_profiles
from agentcausal.settings import RunSettings
from agentcausal_cli import build_parser, main
from agentcausal_cli.settings_options import apply_model_arguments
from tests.conftest import scripted_responder

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "examples" / "wrong_unit_at_step_2.json"


@pytest.fixture
def models_server():
    """A /v1/models endpoint reporting vLLM's ``max_model_len`` for one model (test double)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
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
    for model, flag, want in (
        ("big", 4096, (32768, "server")),
        ("plain", 4096, (4096, "flag")),
        ("plain", None, (8192, "default")),
    ):
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
    rc = main(
        [
            "attribute",
            str(EXAMPLE),
            "--method",
            "all_at_once",
            "--base-url",
            fake_server.base_url,
            "--model",
            "fake-model",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--out",
            str(out),
            "--no-progress",
        ]
    )
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


# ------------------------------------------------------------------------ one stage elsewhere (``--route``)


def _dry(argv, capsys):
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_route_over_a_routing_shows_each_stages_route_in_the_dry_run(models_server, tmp_path, capsys):
    plan = _dry(
        [
            "attribute",
            str(EXAMPLE),
            "-m",
            "dcfa",
            "--routing",
            "paper",
            "--cache-dir",
            str(tmp_path),
            "--route",
            f"dcfa.lce=big@{models_server}",
            "--route",
            "dcfa.gca=gemini-2.5-pro",
            "--dry-run",
        ],
        capsys,
    )
    assert plan["routing"] == "paper+cli" and plan["preset"] == "paper"  # the routing's preset is kept
    m = plan["methods"]["dcfa"]
    host = models_server.split("//")[1].split("/")[0]
    assert m["stages"] == {
        "dcfa.gca": "gemini-2.5-pro:gemini-2.5-pro",
        "dcfa.lce": f"cli@{host}:big",
        "dcfa.embed": "openai-embed:text-embedding-3-large",
    }
    lce, gca = m["profile_params"]["dcfa.lce"], m["profile_params"]["dcfa.gca"]
    assert lce["endpoint"] == models_server and lce["context_window"] == 32768  # from the server's /models
    assert lce["reasoning"] == "none" and lce["temperature"] == 0.0
    assert gca["endpoint"].startswith("https://generativelanguage.googleapis.com/") and gca["reasoning"] == "always"
    assert gca["hidden_reasoning_counts"] and gca["json_mode"] == "json_object"
    assert "GEMINI_API_KEY" in plan["missing_keys"]


def test_a_model_id_on_an_endpoint_takes_the_dialect_of_its_profile_and_not_its_key(tmp_path):
    from agentcausal_cli.settings_options import settings_from_args

    args = build_parser().parse_args(
        [
            "discover",
            "--routing",
            "paper",
            "--cache-dir",
            str(tmp_path),
            "--route",
            "mac.debate=deepseek-reasoner@http://127.0.0.1:9/v1",
            "--route",
            "mac.coder=gpt-4o@http://127.0.0.1:9/v1,key=AGG_KEY,ctx=4096",
            "--route",
            "mac.baseline=deepseek-ai/DeepSeek-R1-Distill-Qwen-32B@http://h:1/v1",
            "--route",
            "default=vllm",
        ]
    )
    new, facts = apply_model_arguments(args, settings_from_args(args))
    ps = load_profiles(new.profiles_path, new.routing)
    debate = ps.profile_for("mac.debate")
    assert debate.name == "deepseek-reasoner@127.0.0.1:9" and not debate.temperature_allowed
    assert debate.hidden_reasoning_counts and debate.api_key_env is None  # DEEPSEEK_API_KEY stays with DeepSeek
    assert debate.price_prompt_per_1k == 0 and debate.prices_as_of is None  # another server's price is unknown
    coder = ps.profile_for("mac.coder")
    assert (coder.model, coder.api_key_env, coder.context_window) == ("gpt-4o", "AGG_KEY", 4096)
    # default: every chat stage without its own --route, even those the routing names
    for stage in ("dcfa.gca", "dcfa.lce", "baseline"):
        assert ps.profile_for(stage).name == "vllm"
    assert ps.profile_for("dcfa.embed").name == "openai-embed"
    r1 = ps.profile_for("mac.baseline")  # a model id: the dialect of the profile serving it, on that server
    assert r1.name == "vllm-deepseek-r1-32b@h:1" and r1.hidden_reasoning_counts and r1.base_url == "http://h:1/v1"
    assert r1.api_key_env == "VLLM_API_KEY"  # a server the user runs keeps its (optional) key variable
    assert facts["routing_base"] == "paper"
    assert facts["routes"]["mac.debate"]["from"] == "profile deepseek-reasoner"  # a profile name wins
    assert facts["routes"]["mac.baseline"]["from"] == "the dialect of profile vllm-deepseek-r1-32b (same model id)"
    assert facts["routes"]["default"] == {"profile": "vllm", "from": "profile vllm"}


def test_two_stages_on_one_server_share_one_profile_and_its_limit(tmp_path):
    args = build_parser().parse_args(
        ["attribute", "x", "--route", "dcfa.gca=m@http://127.0.0.1:9/v1", "--route", "baseline=m@http://127.0.0.1:9/v1"]
    )
    new, _ = apply_model_arguments(args, RunSettings(cache_dir=str(tmp_path)))
    ps = load_profiles(new.profiles_path, new.routing)
    assert ps.profile_for("dcfa.gca") is ps.profile_for("baseline")
    assert ps.preset == "small" and new.routing == "default+cli"  # over the default routing: its preset


def test_several_profiles_serving_one_model_id_must_be_named(tmp_path):
    args = build_parser().parse_args(
        ["attribute", "x", "--route", "dcfa.gca=Qwen/Qwen3-235B-A22B@http://127.0.0.1:9/v1"]
    )
    with pytest.raises(ConfigError, match="vllm-qwen3-235b, vllm-qwen3-235b-nothink all serve"):
        apply_model_arguments(args, RunSettings(cache_dir=str(tmp_path)))


def test_route_with_base_url_sends_one_stage_to_a_second_endpoint(fake_server, tmp_path, capsys):
    fake_server.responder = scripted_responder
    from agentcausal_fakes.fake_openai import FakeOpenAIServer

    out = tmp_path / "run"
    with FakeOpenAIServer(responder=scripted_responder, models=("routed-model",)) as other:
        other_url = other.base_url
        rc = main(
            [
                "attribute",
                str(EXAMPLE),
                "--method",
                "all_at_once",
                "--base-url",
                fake_server.base_url,
                "--model",
                "fake-model",
                "--route",
                f"baseline=routed-model@{other.base_url}",
                "--cache-dir",
                str(tmp_path / "cache"),
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        assert rc == 0, capsys.readouterr().err
        assert other.chat_requests and all(r["model"] == "routed-model" for r in other.chat_requests)
    assert fake_server.chat_requests == []  # --base-url's endpoint served no stage of this method
    meta = json.loads((out / "run.json").read_text())
    assert meta["routing"] == "cli" and meta["model"]["model"] == "fake-model"
    assert meta["model"]["routes"]["baseline"]["base_url"] == other_url
    assert meta["plan"]["methods"]["all_at_once"]["profile_params"]["baseline"]["endpoint"] == other_url


def test_route_help_names_every_stage_the_methods_call():
    from agentcausal_cli.settings_options import ROUTE_STAGES, route_stages

    assert sorted(ROUTE_STAGES) == route_stages()
    text = build_parser().parse_args(["attribute", "x"])  # noqa: F841 (the parser builds without the registries)
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf), pytest.raises(SystemExit):
        main(["attribute", "--help"])
    assert "--route STAGE=TARGET" in buf.getvalue() and "PROFILE@URL" in buf.getvalue()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--route", "dcfa.lce"], "expected STAGE=TARGET"),
        (["--route", "dcfa.lcx=vllm"], "unknown stage 'dcfa.lcx'"),
        (["--route", "dcfa.lce=nope"], "no profile 'nope'"),
        (["--route", "dcfa.lce=m@ftp://h"], "must be an http:// or https:// URL"),
        (["--route", "dcfa.embed=vllm"], "needs an embedding profile"),
        (["--route", "dcfa.lce=vllm,ctx=12"], "ctx must be a whole number"),
        (["--route", "dcfa.lce=vllm,temp=1"], "unknown option 'temp=1'"),
        (["--route", "dcfa.lce=vllm,key=A B"], "key= names an environment variable"),
        (["--route", "dcfa.gca=vllm", "--route", "dcfa.gca=openai"], "given twice"),
        (["--routing", "nope", "--route", "dcfa.gca=vllm"], "unknown routing 'nope'"),
        (["--context-window", "9000"], "applies to --base-url"),
        (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--context-window", "100"], "at least 256"),
    ],
)
def test_every_bad_route_value_is_one_line(argv, message, tmp_path, capsys):
    rc = main(["attribute", str(EXAMPLE), "--cache-dir", str(tmp_path), "--dry-run", *argv])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and len(err.splitlines()) == 1, err
