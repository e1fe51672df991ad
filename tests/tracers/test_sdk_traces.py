"""OpenAI Agents SDK and CrewAI runs recorded by the real SDKs and their PyPI OpenInference instrumentation
(in .venv-agents, on the fake OpenAI server, a test double), imported; and the Agents SDK's own export."""

from __future__ import annotations

import json

import pytest

from agentcausal.traces.importers import detect_format, import_traces
from agentcausal_cli import main
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from tests.tracers.conftest import run_sdk

QUESTION = "Which city hosted the 1992 Summer Olympics?"
PLAN = "1. look up the host city of the 1992 Games"
ANSWER = "Barcelona hosted the 1992 Summer Olympics."


def _agents_responder(body: dict) -> str:
    system = " ".join(str(m.get("content")) for m in body["messages"] if m["role"] == "system")
    return PLAN if "PLANNER" in system else ANSWER


def _crew_responder(body: dict) -> str:
    text = " ".join(str(m.get("content")) for m in body["messages"])
    answer = "Barcelona" if "RESEARCHER" in text else ANSWER
    return f"Thought: I now know the final answer\nFinal Answer: {answer}"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_openai_agents_openinference_spans_import(tmp_path):
    out = tmp_path / "agents-spans.txt"
    with FakeOpenAIServer(responder=_agents_responder) as srv:
        run_sdk("openai_agents_run.py", srv.base_url, out)
        assert srv.count == 2
    assert detect_format(out) == "openinference"
    (t,) = import_traces([out])
    assert [(s.agent, s.role, s.content) for s in t.steps] == [
        ("planner", "assistant", PLAN),
        ("writer", "assistant", ANSWER),
    ]
    assert t.question == QUESTION
    assert all(len(s.metadata["span_id"]) == 16 and s.metadata["trace_id"] == t.id for s in t.steps)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_crewai_openinference_spans_import(tmp_path):
    out = tmp_path / "crew-spans.txt"
    with FakeOpenAIServer(responder=_crew_responder) as srv:
        run_sdk("crewai_run.py", srv.base_url, out)
        assert srv.count == 2
    assert detect_format(out) == "openinference"
    (t,) = import_traces([out])
    assert [s.agent for s in t.steps] == ["researcher", "writer"]
    assert "Final Answer: Barcelona" in t.steps[0].content and ANSWER in t.steps[1].content
    assert t.question == QUESTION  # the crew's first task (CrewAI's kickoff span has no input.value)
    assert all(s.metadata["span_name"] == "ChatCompletion" for s in t.steps)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_openai_agents_own_export_is_read_not_as_who_and_when(tmp_path, capsys):
    out = tmp_path / "agents-export.json"
    with FakeOpenAIServer(responder=_agents_responder) as srv:
        run_sdk("openai_agents_export.py", srv.base_url, out)
    assert detect_format(out) == "openai-agents"  # was read as Who&When: "'history' must be a non-empty list"
    (t,) = import_traces([out])
    assert t.source == "openai-agents" and t.id.startswith("trace_")
    assert [(s.agent, s.content) for s in t.steps] == [("planner", PLAN), ("writer", ANSWER)]
    assert t.question == QUESTION
    assert main(["import", str(out), "-o", str(tmp_path / "t.jsonl")]) == 0
    assert "planner, writer" in capsys.readouterr().out


def test_responses_api_export_says_what_to_do(tmp_path, capsys):
    """The SDK's default (Responses API) export has 'response' spans without text: refused with the remedy."""
    recs = [
        {"object": "trace", "id": "trace_1", "workflow_name": "w", "group_id": None, "metadata": None},
        {
            "object": "trace.span",
            "id": "span_a",
            "trace_id": "trace_1",
            "parent_id": None,
            "started_at": "2025-01-01T00:00:00+00:00",
            "ended_at": "2025-01-01T00:00:02+00:00",
            "span_data": {"type": "agent", "name": "planner", "handoffs": [], "tools": [], "output_type": "str"},
            "error": None,
        },
        {
            "object": "trace.span",
            "id": "span_b",
            "trace_id": "trace_1",
            "parent_id": "span_a",
            "started_at": "2025-01-01T00:00:01+00:00",
            "ended_at": "2025-01-01T00:00:02+00:00",
            "span_data": {"type": "response", "response_id": "resp_1"},
            "error": None,
        },
    ]
    f = tmp_path / "export.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert detect_format(f) == "openai-agents"
    assert main(["import", str(f), "-o", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "trace_1" in err and "openinference-instrumentation-openai-agents" in err and err.count("\n") == 1
