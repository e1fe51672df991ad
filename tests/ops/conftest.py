"""Fixtures of the operations tests: scripted replies by reply schema, settings on the fake server (test double)."""

import json
from collections import Counter
from pathlib import Path

import pytest

from agentcausal.settings import RunSettings

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"

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
