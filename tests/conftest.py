"""Shared fixtures: the fake OpenAI-compatible server (test double), gateways pointed at it, scripted replies by
reply schema and run settings on it."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import tempfile
from collections import Counter
from pathlib import Path

# Prefect settings must be in place before prefect is first imported (FACTS.md:
# the ephemeral API took 9-19 s to start here and timed out at the default 20 s).
if "PREFECT_HOME" not in os.environ:  # a folder of our own, removed when the session ends
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="agentcausal-prefect-")
    atexit.register(shutil.rmtree, os.environ["PREFECT_HOME"], ignore_errors=True)
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# The signal tests send SIGINT to the commands they start. A background job of a non-interactive shell
# (`pytest … &` in a script) starts with SIGINT ignored, an ignored signal stays ignored across exec, and the CLI
# keeps it ignored on purpose (nohup): give the session Python's own handler, so its children start with SIGINT's
# default whatever shell started the tests.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import pytest

from agentcausal.llm import Gateway, Profile, ProfileSet
from agentcausal.settings import RunSettings
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from flows import shared_api  # no Prefect import

# One Prefect API server for the session (flows.shared_api): the first flow run, in this process or in a CLI
# subprocess, starts it under PREFECT_HOME and every later one reuses it; stopped at exit if this session started
# it (registered after the rmtree above, so it runs before). Tests of the temporary server set
# AGENTCAUSAL_SHARED_API=0 for their runs.
_API_LEASED_BEFORE = shared_api.read_lease(Path(os.environ["PREFECT_HOME"]))


def _stop_session_api(home: Path = Path(os.environ["PREFECT_HOME"])) -> None:
    lease = shared_api.read_lease(home)
    if lease is not None and (_API_LEASED_BEFORE is None or lease.pid != _API_LEASED_BEFORE.pid):
        shared_api.stop(home)


atexit.register(_stop_session_api)

SHARED = Path(__file__).resolve().parents[2] / "shared"
WHO_AND_WHEN = Path(os.environ.get("AGENTCAUSAL_WHO_AND_WHEN_DIR", SHARED / "data" / "who_and_when"))


def fake_profiles(base_url: str, **overrides: object) -> ProfileSet:
    """A ProfileSet routing every chat stage to ``fake`` and embeddings to ``fake-embed``."""
    chat = {
        "name": "fake",
        "base_url": base_url,
        "model": "fake-model",
        "max_concurrency": 4,
        "timeout_s": 2.0,
        "context_window": 8192,
    }
    chat.update(overrides)
    return ProfileSet(
        profiles={
            "fake": Profile(**chat),
            "fake-embed": Profile(name="fake-embed", kind="embedding", base_url=base_url, model="fake-embed"),
        },
        routings={"default": {"default": "fake", "embed": "fake-embed"}},
    )


@pytest.fixture(autouse=True)
def _environment_restored():
    """Each test ends with the environment it began with: the CLI run in-process sets variables for the
    processes it starts (``AGENTCAUSAL_PROFILE_EMBEDDED_THREADS``, the heartbeat's), which a later test's
    subprocess would otherwise inherit. Fixtures of a wider scope set theirs before this snapshot."""
    saved = dict(os.environ)
    yield
    if dict(os.environ) != saved:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def fake_server():
    """A started FakeOpenAIServer (test double); push replies with ``fake_server.push(...)``."""
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def make_gateway(tmp_path):
    """Factory: ``make_gateway(server, cache=True, **profile_overrides) -> Gateway`` on the fake server."""
    made: list[Gateway] = []

    def _make(
        server: FakeOpenAIServer,
        *,
        cache: bool = True,
        cache_dir: Path | None = None,
        max_retries: int = 3,
        **overrides: object,
    ) -> Gateway:
        gw = Gateway(
            fake_profiles(server.base_url, **overrides),
            cache_dir=(cache_dir or tmp_path / "llm-cache") if cache else None,
            max_retries=max_retries,
        )
        made.append(gw)
        return gw

    yield _make
    for gw in made:
        gw.close()


@pytest.fixture
def who_and_when_dir() -> Path:
    """The Who&When development split from ../shared; skips the test when absent."""
    if not (WHO_AND_WHEN / "Algorithm-Generated").is_dir():
        pytest.skip(f"Who&When development split not found at {WHO_AND_WHEN}")
    return WHO_AND_WHEN


EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"

#: one deterministic reply per reply schema: all_at_once says step 2, step_by_step stops at step 0,
#: binary_search always keeps the first half (so it ends at step 0)
REPLIES = {
    "AllAtOnceReply": {"reason": "wrong conversion", "agent": "Conversion_Expert", "step": 2},
    "StepVerdict": {"reason": "yes", "decisive": True},
    "StepErrorVerdict": {"error": True, "reason": "yes"},
    "HalfChoice": {"reason": "r", "part": "first"},
    "PaperHalfChoice": {"half": "upper half", "reason": "r"},
}
METHODS = ["all_at_once", "step_by_step", "binary_search"]


def scripted_responder(body):
    fmt = body["response_format"]["json_schema"]
    reply = dict(REPLIES[fmt["name"]])
    agent = fmt["schema"]["properties"].get("agent", {})
    choices = next((a["enum"] for a in agent.get("anyOf", [agent]) if "enum" in a), None)
    if choices and reply["agent"] not in choices:  # the agent enum lists the trace's own agents
        reply["agent"] = choices[0]
    return json.dumps(reply)


def prompt_key(request: dict) -> str:
    """What identifies an LLM call: its messages and reply schema."""
    return json.dumps(
        [request.get("messages"), request.get("response_format", {}).get("json_schema", {}).get("name")], sort_keys=True
    )


def requests_by_prompt(server) -> Counter:
    """How many times the fake server was asked each prompt."""
    return Counter(prompt_key(r) for r in server.chat_requests)


def write_profiles(path: Path, base_url: str, *, max_concurrency: int = 4) -> str:
    path.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{base_url}"\nmodel = "fake-model"\n'
        f"max_concurrency = {max_concurrency}\ntimeout_s = 10\ncontext_window = 8192\n\n"
        '[routings.default]\ndefault = "fake"\n'
    )
    return str(path)


@pytest.fixture
def scripted_server(fake_server):
    """The fake server answering every baseline prompt from :data:`REPLIES`."""
    fake_server.responder = scripted_responder
    return fake_server


@pytest.fixture
def profiles_file(scripted_server, tmp_path):
    """A profiles TOML routing every stage to the scripted fake server."""
    return write_profiles(tmp_path / "profiles.toml", scripted_server.base_url)


def settings_at(profiles: str, cache_dir: Path) -> RunSettings:
    return RunSettings(profiles_path=profiles, cache_dir=str(cache_dir.resolve()))
