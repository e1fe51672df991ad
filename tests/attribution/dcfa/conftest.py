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
_ROOT = re.compile(r"Root-cause step: step (\d+)")
_BLOCK = re.compile(r'<step n="(\d+)">\nStep \d+ \| [^:]*: (.*?)\n</step>', re.S)


def user_text(body: dict[str, Any]) -> str:
    """The first user message of a chat request (the prompt, also in repair requests)."""
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def revised_through(body: dict[str, Any]) -> int:
    """i of a neutral Simulation prompt: ``Steps 0 to i above are revised`` or -1."""
    m = _REVISED.search(user_text(body))
    return int(m.group(1)) if m else -1


def named_root(body: dict[str, Any]) -> int | None:
    """The root-cause step a ``simulation="code"`` prompt names (``Root-cause step: step i``), or None."""
    m = _ROOT.search(user_text(body))
    return int(m.group(1)) if m else None


def shown_steps(body: dict[str, Any]) -> dict[int, str]:
    """Step number -> content of every step block of a prompt."""
    return {int(i): c for i, c in _BLOCK.findall(user_text(body))}


def kind_of(body: dict[str, Any]) -> str:
    """Which DCFA prompt a request carries (either prompt set, ``small`` or ``paper``)."""
    u = user_text(body)
    if "Task 1, mistake steps (MDI)" in u or "1. Minor deviations" in u:
        return "gca"
    if (
        "Minor deviations found:" in u
        or "Build a causal graph over all steps" in u
        or "Causal-inspired dependency graph: list" in u
    ):
        return "cgc"
    if "Minor deviations: list up to" in u or "Mark the potential mistakes" in u:
        return "mdi"
    if "Which step is the decisive error" in u or "root cause of the failure of the run above" in u:
        return "hg"
    if "Write a corrected version" in u or "Correct the run above" in u:
        return "correct"
    if "Continue the run" in u or "Starting from the revised steps" in u or "The run above is partly corrected" in u:
        return "simulation"
    if (
        "candidates for the decisive error" in u
        or "candidate decisive errors" in u
        or "among the candidate steps above" in u
    ):
        return "ded"
    if "How likely is it that this answer" in u:
        return "judge"
    return "unknown"


def is_paper(body: dict[str, Any]) -> bool:
    """Whether the request uses the ``paper`` prompt set."""
    u = user_text(body)
    return any(
        m in u
        for m in (
            "Task 1, mistake steps",
            "Build a causal graph over all steps",
            "Causal-inspired dependency graph",
            "Mark the potential mistakes",
            "root cause of the failure of the run above",
            "Correct the run above",
            "The run above is partly corrected",
            "Starting from the revised steps",
            "candidate decisive errors",
            "among the candidate steps above",
            "How likely is it",
        )
    )


class DcfaResponder:
    """Rule-based replies for every DCFA prompt; records what was asked (thread-safe).

    Parameters
    ----------
    deviations : list of (step, reason)
    edges : list of (p, q), as the "model" proposes them (may be invalid); under ``cgc="code"``
        each edge is written into q's causes and p's effects
    hypothesis : int, HG's step (or a callable body -> reply text)
    corrected : list of str, Correct's content per step ("" = unchanged), sent as {step, content}
        entries in order; or a list of dicts sent as they are
    outcomes : mapping i -> simulated outcome (default "wrong"): i is the step a ``simulation="code"``
        prompt names, else the last corrected step the prompt's trace shows (-1 = none)
    decision : int or None, DED's step (None = the largest candidate shown)
    judgements : mapping (p, q) -> (temporal, necessary, sufficient) for judged edges (default all true)
    probabilities : mapping outcome -> the no-truth judge's probability (default 0.1)

    Attributes
    ----------
    calls : list of kinds, in order; simulated : list of the i each Simulation was answered for;
    named : list of the root-cause step each Simulation named (None = none)
    """

    def __init__(
        self,
        *,
        deviations=((1, "wrong lookup"),),
        edges=(),
        hypothesis: int | Callable = 1,
        corrected=("",) * 6,
        outcomes: Mapping[int, str] | None = None,
        decision: int | None = None,
        judgements: Mapping[tuple[int, int], tuple[bool, bool, bool]] | None = None,
        probabilities: Mapping[str, float] | None = None,
    ):
        self.deviations = list(deviations)
        self.edges = list(edges)
        self.hypothesis = hypothesis
        self.corrected = list(corrected)
        self.outcomes = dict(outcomes or {})
        self.decision = decision
        self.judgements = dict(judgements or {})
        self.probabilities = dict(probabilities or {})
        self.calls: list[str] = []
        self.simulated: list[int] = []
        self.named: list[int | None] = []
        self._lock = threading.Lock()

    def count(self, kind: str) -> int:
        return self.calls.count(kind)

    def _through(self, body: dict[str, Any]) -> int:
        """The last step whose corrected content the prompt's trace shows (-1 = none)."""
        if _REVISED.search(user_text(body)):
            return revised_through(body)
        shown = shown_steps(body)
        fixed = [k for k, c in enumerate(self.corrected) if isinstance(c, str) and c and shown.get(k) == c]
        fixed += [
            c["step"]
            for c in self.corrected
            if isinstance(c, dict) and c.get("content") and shown.get(c["step"]) == c["content"]
        ]
        return max(fixed, default=-1)

    def _links(self) -> list[dict[str, Any]]:
        steps: dict[int, dict[str, Any]] = {}
        for p, q in self.edges:
            steps.setdefault(q, {"step": q, "causes": [], "effects": []})["causes"].append(p)
            steps.setdefault(p, {"step": p, "causes": [], "effects": []})["effects"].append(q)
        return [steps[k] for k in sorted(steps)]

    def __call__(self, body: dict[str, Any]) -> str:
        kind = kind_of(body)
        with self._lock:
            self.calls.append(kind)
        devs = [{"step": s, "reason": r} for s, r in self.deviations]
        schema = json.dumps(body.get("response_format", {}))
        if "JudgedEdge" in schema:
            edges = []
            for p, q in self.edges:
                t, n, s = self.judgements.get((p, q), (True, True, True))
                edges.append(
                    {
                        "source": p,
                        "target": q,
                        "reason": "uses its value",
                        "temporal": t,
                        "necessary": n,
                        "sufficient": s,
                    }
                )
        else:
            edges = [{"source": p, "target": q} for p, q in self.edges]
        links = '"causes"' in schema
        if kind == "gca":
            return json.dumps({"deviations": devs, **({"steps": self._links()} if links else {"edges": edges})})
        if kind == "mdi":
            return json.dumps({"deviations": devs})
        if kind == "cgc":
            return json.dumps({"steps": self._links()} if links else {"edges": edges})
        if kind == "hg":
            if callable(self.hypothesis):
                return self.hypothesis(body)
            out = {"step": self.hypothesis, "reason": "origin of the wrong value"}
            return json.dumps({"log_answer": "41", **out} if is_paper(body) else out)
        if kind == "correct":
            entries = [c if isinstance(c, dict) else {"step": i, "content": c} for i, c in enumerate(self.corrected)]
            return json.dumps({"steps": entries})
        if kind == "simulation":
            named = named_root(body)
            i = self._through(body)
            key = named if named is not None and named in self.outcomes else i
            with self._lock:
                self.simulated.append(key)
                self.named.append(named)
            outcome = self.outcomes.get(key, "wrong")
            if "The run above is partly corrected" in user_text(body):
                return json.dumps({"reason": f"correcting through step {i} changes the answer", "answer": outcome})
            out = {"outcome": outcome}
            if is_paper(body):
                out = {"reasoning": "the revised value flows on", **out}
            return json.dumps(out)
        if kind == "judge":
            m = re.search(r"<data>\n?(.*?)\n?</data>", user_text(body), re.S)
            return json.dumps({"probability": self.probabilities.get(m.group(1).strip() if m else "", 0.1)})
        if kind == "ded":
            cands = [int(x) for x in re.findall(r'<step n="(\d+)">', user_text(body))]
            return json.dumps(
                {
                    "step": self.decision if self.decision is not None else max(cands),
                    "reason": "its correction fixes the answer",
                }
            )
        raise AssertionError(f"unexpected prompt: {user_text(body)[:300]}")


def make_trace(n: int = 6, tid: str = "examples/arith", step: int = 1) -> Trace:
    return Trace(
        id=tid,
        source="examples",
        question="What is 6 x 7?",
        ground_truth="42",
        steps=[Step(index=i, agent=f"Agent{i % 3}", content=f"content of step {i}") for i in range(n)],
        label=Label(agent=f"Agent{step % 3}", step=step),
    )


@pytest.fixture
def wrong_lookup_at_step_1() -> Trace:
    """Six steps; the annotated decisive error is step 1."""
    return make_trace()


def small(**overrides: Any):
    """DcfaSettings of the ``small`` preset (today's caps and wording) with overrides."""
    from agentcausal.attribution.dcfa import PRESETS, DcfaSettings
    from agentcausal.settings import resolve

    return resolve(DcfaSettings, PRESETS, "small", overrides)
