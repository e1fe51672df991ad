"""Assertions shared by the importer tests over the 3-agent run of :mod:`agentcausal_fakes.spans`."""

from __future__ import annotations

from typing import Any

from agentcausal_fakes.spans import EXPECTED, QUESTION


def check_run(trace: Any) -> None:
    """Assert the imported trace is the 3-agent run: steps, agents, roles, order, question, span ids."""
    assert trace.question == QUESTION
    got = [(s.agent, s.role) for s in trace.steps]
    assert got == [(a, r) for a, r, _ in EXPECTED]
    for step, (_, _, frag) in zip(trace.steps, EXPECTED):
        assert frag in step.content, (step.index, step.content)
    assert trace.agents == ["planner", "researcher", "writer"]
    ids = [s.metadata["span_id"] for s in trace.steps]
    assert len(set(ids)) == len(ids) and all(len(i) == 16 for i in ids)
    assert {s.metadata["trace_id"] for s in trace.steps} == {trace.id}
