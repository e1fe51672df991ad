"""deploy/vllm: the launch script's health-check loop (with a stand-in ``vllm`` executable) and the endpoint
check through the gateway (against the fake server, a test double). No vllm, no GPU."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy" / "vllm" / "serve_qwen3_coder.sh"
MODEL = "Qwen/Qwen3-Coder-30B-A3B-Instruct"

#: a stand-in for `vllm serve`: records its arguments, then serves /health and /v1/models after a delay
STAND_IN = r"""#!PYTHON
import json, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
argv = sys.argv[1:]
open(sys.argv[0] + ".args", "w").write(json.dumps(argv))
if "--fail" in argv:
    sys.exit(3)
port, name = int(argv[argv.index("--port") + 1]), argv[argv.index("--served-model-name") + 1]
time.sleep(0.5)
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = {"/health": {}, "/v1/models": {"data": [{"id": name}]}}.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write(json.dumps(body or {}).encode())
HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def stand_in_vllm(tmp_path):
    exe = tmp_path / "vllm"
    exe.write_text(STAND_IN.replace("PYTHON", sys.executable))
    exe.chmod(0o755)
    return exe


def _launch(exe, *extra, timeout_s="30", script=SCRIPT):
    env = dict(
        os.environ,
        VLLM_BIN=str(exe),
        VLLM_PORT=str(_free_port()),
        VLLM_HEALTH_POLL_S="0.2",
        VLLM_HEALTH_TIMEOUT_S=timeout_s,
    )
    return subprocess.Popen(
        ["bash", str(script), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_launch_script_waits_for_health_then_prints_the_profile_override(stand_in_vllm):
    proc = _launch(stand_in_vllm, "--max-num-seqs", "64")
    try:
        lines = []
        deadline = time.monotonic() + 60
        while not any(ln.startswith("ready:") for ln in lines):
            assert time.monotonic() < deadline and proc.poll() is None, (lines, proc.stderr.read())
            lines.append(proc.stdout.readline())
        out = "".join(lines) + proc.stdout.readline() + proc.stdout.readline()
        assert MODEL in out and "AGENTCAUSAL_PROFILE_VLLM_BASE_URL=http://" in out
        args = json.loads(Path(str(stand_in_vllm) + ".args").read_text())
        assert args[:2] == ["serve", MODEL]
        assert args[args.index("--tensor-parallel-size") + 1] == "2"
        assert "--enable-prefix-caching" in args and args[-2:] == ["--max-num-seqs", "64"]
        assert "--reasoning-parser" not in args  # the Instruct model has no thinking mode
        assert proc.poll() is None, "the script should keep waiting on vllm"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_reasoning_model_preset_is_served_with_its_reasoning_parser_for_its_profile(stand_in_vllm):
    proc = _launch(stand_in_vllm, "deepseek-r1-32b", script=SCRIPT.with_name("serve_model.sh"))
    try:
        lines = []
        deadline = time.monotonic() + 60
        while not any(ln.startswith("  agentcausal attribute") for ln in lines):
            assert time.monotonic() < deadline and proc.poll() is None, (lines, proc.stderr.read())
            lines.append(proc.stdout.readline())
        out = "".join(lines)
        args = json.loads(Path(str(stand_in_vllm) + ".args").read_text())
        assert args[:2] == ["serve", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"]
        assert args[args.index("--reasoning-parser") + 1] == "deepseek_r1"
        assert args[args.index("--max-model-len") + 1] == "32768"  # the profile's context window
        assert "AGENTCAUSAL_PROFILE_VLLM_DEEPSEEK_R1_32B_BASE_URL=http://" in out
        assert "--routing dcfa-deepseek-r1-32b" in out
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def test_serve_model_without_a_known_preset_says_which_exist():
    proc = subprocess.run(
        ["bash", str(SCRIPT.with_name("serve_model.sh")), "llama"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2 and "qwen3-coder-30b|deepseek-r1-32b|qwen3-235b|deepseek-r1" in proc.stderr


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_launch_script_fails_when_vllm_exits(stand_in_vllm):
    proc = _launch(stand_in_vllm, "--fail")
    assert proc.wait(timeout=40) == 1
    assert "exited before it became healthy" in proc.stderr.read()


def _ping_responder(body):
    text = body["messages"][-1]["content"]
    return json.dumps({"number": int(text.split("number ")[1].split()[0]), "word": "ok"})


def test_check_endpoint_makes_structured_calls_with_json_schema(capsys):
    sys.path.insert(0, str(ROOT / "deploy" / "vllm"))
    try:
        import check_endpoint
    finally:
        sys.path.pop(0)
    from agentcausal_fakes.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(responder=_ping_responder, models=[MODEL]) as srv:
        assert check_endpoint.main(["--url", srv.base_url]) == 0
        chats = srv.chat_requests
        assert len(chats) == 2 and all(r["response_format"]["type"] == "json_schema" for r in chats)
        assert chats[0]["model"] == MODEL
        # the two prompts share everything but the last line (the prefix LCE's simulations share)
        a, b = (r["messages"][-1]["content"] for r in chats)
        assert a.rsplit("\n", 1)[0] == b.rsplit("\n", 1)[0] and a != b
    assert "OK" in capsys.readouterr().out

    with FakeOpenAIServer(responder=_ping_responder, models=["other-model"]) as srv:
        assert check_endpoint.main(["--url", srv.base_url]) == 1
        assert srv.chat_requests == []
