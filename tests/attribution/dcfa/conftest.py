"""Fixtures for DCFA tests: tiny traces named after what they show, and a rule-based
responder for the fake OpenAI server (test double) that answers each DCFA prompt by its content."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from agentcausal.traces.model import Label, Step, Trace

_REVISED = re.compile(r"Steps 0 to (\d+) above are revised")


def user_text(body: dict[str, Any]) -> str:
    """The first user message of a chat request (the prompt, also in repair requests)."""
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def revised_through(body: dict[str, Any]) -> int:
    """i of a Simulation prompt: ``Steps 0 to i above are revised`` or -1."""
    m = _REVISED.search(user_text(body))
    return int(m.group(1)) if m else -1


def kind_of(body: dict[str, Any]) -> str:
    """Which DCFA prompt a request carries."""
    u = user_text(body)
    if "Minor deviations found:" in u:
        return "cgc"
    if "1. Minor deviations" in u:
        return "gca"
    if "Minor deviations: list up to" in u:
        return "mdi"
    if "Which step is the decisive error" in u:
        return "hg"
    if "Write a corrected version" in u:
        return "correct"
    if "Continue the run" in u:
        return "simulation"
    if "candidates for the decisive error" in u:
        return "ded"
    return "unknown"


class DcfaResponder:
    """Rule-based replies for every DCFA prompt; records what was asked (thread-safe).

    Parameters
    ----------
    deviations : list of (step, reason)
    edges : list of (p, q), as the "model" proposes them (may be invalid)
    hypothesis : int, HG's step (or a callable body -> reply text)
    corrected : list of str, Correct's strings ("" = unchanged)
    outcomes : mapping revised-through index -> simulated outcome (default "wrong")
    decision : int or None, DED's step (None = the largest candidate)
    """

    def __init__(self, *, deviations=((1, "wrong lookup"),), edges=(), hypothesis: int | Callable = 1,
                 corrected=("",) * 6, outcomes: Mapping[int, str] | None = None, decision: int | None = None):
        self.deviations = list(deviations)
        self.edges = list(edges)
        self.hypothesis = hypothesis
        self.corrected = list(corrected)
        self.outcomes = dict(outcomes or {})
        self.decision = decision
        self.calls: list[str] = []
        self.simulated: list[int] = []
        self._lock = threading.Lock()

    def count(self, kind: str) -> int:
        return self.calls.count(kind)

    def __call__(self, body: dict[str, Any]) -> str:
        kind = kind_of(body)
        with self._lock:
            self.calls.append(kind)
        devs = [{"step": s, "reason": r} for s, r in self.deviations]
        edges = [{"source": p, "target": q} for p, q in self.edges]
        if kind == "gca":
            return json.dumps({"deviations": devs, "edges": edges})
        if kind == "mdi":
            return json.dumps({"deviations": devs})
        if kind == "cgc":
            return json.dumps({"edges": edges})
        if kind == "hg":
            if callable(self.hypothesis):
                return self.hypothesis(body)
            return json.dumps({"step": self.hypothesis, "reason": "origin of the wrong value"})
        if kind == "correct":
            return json.dumps({"steps": self.corrected})
        if kind == "simulation":
            i = revised_through(body)
            with self._lock:
                self.simulated.append(i)
            return json.dumps({"outcome": self.outcomes.get(i, "wrong")})
        if kind == "ded":
            cands = [int(x) for x in re.findall(r'<step n="(\d+)">', user_text(body))]
            return json.dumps({"step": self.decision if self.decision is not None else max(cands),
                               "reason": "its correction fixes the answer"})
        raise AssertionError(f"unexpected prompt: {user_text(body)[:300]}")


def make_trace(n: int = 6, tid: str = "examples/arith", step: int = 1) -> Trace:
    return Trace(id=tid, source="examples", question="What is 6 x 7?", ground_truth="42",
                 steps=[Step(index=i, agent=f"Agent{i % 3}", content=f"content of step {i}") for i in range(n)],
                 label=Label(agent=f"Agent{step % 3}", step=step))


@pytest.fixture
def wrong_lookup_at_step_1() -> Trace:
    """Six steps; the annotated decisive error is step 1."""
    return make_trace()
