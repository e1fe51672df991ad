"""A2P (Abduct-Act-Predict) against the fake OpenAI server (test double) with scripted replies."""

import json
from pathlib import Path

import pytest

from agentcausal.attribution.a2p import PRESETS, A2PSettings
from agentcausal.attribution.jobs import run_method
from agentcausal.attribution.method_settings import resolve_methods
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.settings import resolve
from agentcausal.traces.io import load_traces
from agentcausal.traces.model import Label, Step, Trace

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"


def _trace(n: int = 6, step: int = 3) -> Trace:
    return Trace(
        id="t/1",
        source="examples",
        question="What is 6 x 7?",
        ground_truth="42",
        steps=[Step(index=i, agent=f"Agent{i % 3}", content=f"content of step {i}") for i in range(n)],
        label=Label(agent=f"Agent{step % 3}", step=step),
    )


def _user(req) -> str:
    return [m for m in req["messages"] if m["role"] == "user"][0]["content"]


def _schema(req) -> dict:
    return req["response_format"]["json_schema"]["schema"]


def _reply(agent, step, **kw) -> str:
    return json.dumps(
        {
            "abduction": "the unit was misread",
            "action": "read metres, not feet",
            "prediction": "the next agent converts correctly; the answer becomes 42",
            "reverses_failure": True,
            "agent": agent,
            "step": step,
            "reason": "wrong unit",
            **kw,
        }
    )


def _responder(body) -> str:
    """Names the last step of the trace shown and its speaker (read from the prompt)."""
    import re

    steps = re.findall(r"Step (\d+) \| ([^:\n]+):", _user(body))
    step, agent = steps[-1]
    return _reply(agent.strip(), int(step))


SMALL = resolve(A2PSettings, PRESETS, "small").model_dump()


@pytest.mark.parametrize("preset", ["paper", "small"])
@pytest.mark.parametrize("truth", [True, False], ids=["with_truth", "no_truth"])
def test_a2p_runs_on_examples(fake_server, make_gateway, preset, truth):
    traces = load_traces([EXAMPLES])
    assert traces
    fake_server.responder = _responder
    gw = make_gateway(fake_server)
    settings = resolve_methods(ATTRIBUTION_METHODS, ["a2p"], preset=preset, with_ground_truth=truth)["a2p"]
    for t in traces:
        a = run_method(t, ATTRIBUTION_METHODS["a2p"], gw, settings)
        assert a.error is None and a.status == "complete"
        assert (a.step, a.agent) == (len(t) - 1, t.steps[-1].agent)
        assert a.details["reverses_failure"] is True and "metres" in a.details["action"]
        assert a.prompt_version == ("a2p/paper-2" if preset == "paper" else "a2p/1")
        assert a.settings["with_ground_truth"] is truth
    assert fake_server.count == len(traces)  # one full-trace call per trace
    for req, t in zip(fake_server.chat_requests, traces):
        user = _user(req)
        assert ("<answer>" in user) is truth
        assert f"Step {len(t) - 1} |" in user  # the whole trace
        if preset == "paper":
            assert "Abduction" in user and "3 to 5 turns" in user and "You must name one agent" in user


def test_a2p_paper_forces_one_bounded_choice(fake_server, make_gateway):
    fake_server.push(_reply(None, None), _reply("Agent1", 9), _reply("Agent0", 3))
    a = run_method(_trace(), ATTRIBUTION_METHODS["a2p"], make_gateway(fake_server))
    schema = _schema(fake_server.chat_requests[0])
    assert set(schema["required"]) >= {"agent", "step", "abduction", "action", "prediction"}
    assert schema["properties"]["step"]["maximum"] == 5 and schema["properties"]["step"]["minimum"] == 0
    assert (a.step, a.agent) == (3, "Agent0") and fake_server.count == 3  # two repairs


@pytest.mark.parametrize("preset", ["paper", "small"])
def test_a2p_agent_not_in_trace_is_repaired(fake_server, make_gateway, preset):
    fake_server.push(_reply("James Bond", 3), _reply("Agent0", 3))
    settings = resolve_methods(ATTRIBUTION_METHODS, ["a2p"], preset=preset)["a2p"]
    a = run_method(_trace(), ATTRIBUTION_METHODS["a2p"], make_gateway(fake_server), settings)
    schema = json.dumps(_schema(fake_server.chat_requests[0]))
    assert "James Bond" not in schema and "Agent2" in schema
    assert fake_server.count == 2 and (a.agent, a.step) == ("Agent0", 3)


def test_a2p_small_undetermined_out_of_range_and_speaker(fake_server, make_gateway):
    fake_server.push(_reply(None, None), _reply("Agent1", 99), _reply(None, 2))
    gw = make_gateway(fake_server, cache=False)
    a = run_method(_trace(), ATTRIBUTION_METHODS["a2p"], gw, SMALL)
    assert (a.step, a.agent, a.error) == (None, None, None)
    b = run_method(_trace(), ATTRIBUTION_METHODS["a2p"], gw, SMALL)
    assert b.step is None and b.details["invalid_step"] == 99
    c = run_method(_trace(), ATTRIBUTION_METHODS["a2p"], gw, SMALL)
    assert (c.step, c.agent) == (2, "Agent2")  # the step's speaker when no agent is named
    schema = _schema(fake_server.chat_requests[0])
    assert schema["properties"]["abduction"]["maxLength"] == 240


def test_a2p_presets():
    paper, small = (resolve_methods(ATTRIBUTION_METHODS, ["a2p"], preset=p)["a2p"] for p in ("paper", "small"))
    assert paper["max_tokens"] is None and paper["prompts"] == "paper"  # budget from the profile
    assert small["max_tokens"] == 384 and small["prompts"] == "small" and small["field_chars"] == 240
    assert paper["field_chars"] is None  # A2P's code has no character bound


def test_a2p_one_agent_trace_keeps_an_enum(fake_server, make_gateway):
    t = Trace(
        id="t/solo",
        question="q",
        ground_truth="a",
        steps=[Step(index=i, agent="Solo", content=f"s{i}") for i in range(3)],
    )
    fake_server.push(_reply("Solo", 1))
    a = run_method(t, ATTRIBUTION_METHODS["a2p"], make_gateway(fake_server))
    assert _schema(fake_server.chat_requests[0])["properties"]["agent"]["enum"] == ["Solo"] and a.agent == "Solo"
