"""DCFA prompts beside their reply models (MDI, CGC, HG, Correct, Simulation, DED).

Every prompt is a ``*_TEMPLATE`` constant (callers may override it by
assigning the module attribute) filled by one ``*_messages`` builder; every
reply is a pydantic model whose field descriptions the LLM reads through the
JSON schema. :data:`PROMPT_VERSION` enters every cache key and is stored
with every attribution.

Layout, chosen for prompt caching (llama.cpp and vLLM reuse the longest
shared prefix): one system message for every stage, then the question, then
the ``<trace>`` block, then the stage-specific part. So MDI/CGC, HG and
Correct share the prefix up to the end of the trace, and the counterfactual
traces of one trace share the prefix up to the first step where their
corrected prefixes differ (the revision note sits after the steps). The
ground truth goes *before* the steps in Simulation only when
``simulation_sees_truth`` is on (off by default: the outcome is scored
against the truth).

Schema limits written as ``maxItems``/``maxLength`` are *advisory*: grammar-
constrained servers (llama.cpp, vLLM) obey them and so bound decode time;
validation does not enforce them, the callers cut what is too long. Step
ranges, the step count of Correct and the DED candidates *are* validated,
so a bad reply goes through the gateway's repair loop.

The paper shows its prompts only as figures (Figures 9 to 13); these are our
short renditions of them for a 0.5B model.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(seed ``../shared/seeds/002_2c62354fb78fce0f.txt``; code github.com/wzhSteve/DCFA), sections 4.1
and 4.2, appendix L (Figures 9 to 13).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from agentcausal.llm import Message
from agentcausal.llm.replies import ShortText
from agentcausal.traces.model import Step
from agentcausal.traces.render import DATA_NOTICE, delimit, escape_data, render_steps_info

__all__ = [
    "PROMPT_VERSION",
    "SYSTEM_TEMPLATE",
    "GCA_JOINT_TEMPLATE",
    "MDI_TEMPLATE",
    "CGC_TEMPLATE",
    "HG_TEMPLATE",
    "CORRECT_TEMPLATE",
    "SIMULATION_TEMPLATE",
    "DED_TEMPLATE",
    "Deviation",
    "Edge",
    "DeviationsAndGraph",
    "DeviationsReply",
    "EdgesReply",
    "HypothesisReply",
    "CorrectedTraceReply",
    "SimulatedOutcome",
    "DecisionReply",
    "gca_joint_model",
    "mdi_model",
    "cgc_model",
    "hypothesis_model",
    "corrected_trace_model",
    "decision_model",
    "format_deviations",
    "format_edges",
    "gca_joint_messages",
    "mdi_messages",
    "cgc_messages",
    "hg_messages",
    "correct_messages",
    "simulation_messages",
    "ded_messages",
]

#: enters every cache key and every stored attribution; bump on any prompt or reply-model change
PROMPT_VERSION = "dcfa-2"

SYSTEM_TEMPLATE = (
    "You analyse failed runs of LLM multi-agent systems to find the decisive error. "
    + DATA_NOTICE
    + " Steps are numbered from 0. Answer with one JSON object."
)

#: question and trace, shared by every stage (the common prompt prefix)
_CONTEXT_TEMPLATE = "{truth_first}{question}\n{trace}\n\n"

_DEVIATION_TASK = (
    "Minor deviations: list up to {max_deviations} steps whose content is wrong, incomplete, "
    "unverified or misleading, each with a one-sentence reason."
)
_EDGE_TASK = (
    "Dependency edges: list up to {max_edges} edges (source, target) with source < target where "
    "step target depends on step source: without step source, step target would not have happened "
    "as it did (necessity), and step source makes step target plausible (sufficiency). Prefer edges "
    "that start or end at a deviation."
)

#: MDI and CGC in one call (the paper's default, appendix L, Figure 9)
GCA_JOINT_TEMPLATE = (
    "The run above failed to answer the question. Steps are numbered 0 to {last}.\n"
    "1. " + _DEVIATION_TASK + "\n2. " + _EDGE_TASK
)

#: MDI alone (``split_mdi_cgc``)
MDI_TEMPLATE = "The run above failed to answer the question. Steps are numbered 0 to {last}.\n" + _DEVIATION_TASK

#: CGC alone (``split_mdi_cgc``)
CGC_TEMPLATE = (
    "The run above failed to answer the question. Steps are numbered 0 to {last}.\n"
    "Minor deviations found:\n{deviations}\n" + _EDGE_TASK
)

#: HG (Figure 10); asks for the *first* decisive mistake, Who&When's definition (chosen over a
#: "follow the propagation" wording that the 0.5B model parroted, on Algorithm-Generated 38, 47, 73)
HG_TEMPLATE = (
    "The run above failed. The correct answer is {truth}.\n"
    "Minor deviations:\n{deviations}\n"
    "Dependency edges (source -> target): {edges}\n"
    "Which step is the decisive error, the first step whose mistake made the final answer wrong? "
    "Give its number (0 to {last}) and say in one sentence what that step got wrong."
)

#: Correct (Figure 11)
CORRECT_TEMPLATE = (
    "The run above failed. The correct answer is {truth}.\n"
    "Minor deviations:\n{deviations}\n"
    "Dependency edges (source -> target): {edges}\n"
    "Write a corrected version of the run that reaches the correct answer: fix the deviating steps "
    "and the later steps they affect, keeping each step's agent and format. Reply with exactly {n} "
    'strings in "steps", one per step 0 to {last} in order: the corrected content (at most '
    '{max_chars} characters), or "" when the step needs no change.'
)

#: Simulation (Figure 12); {revision} says which prefix is corrected
SIMULATION_TEMPLATE = (
    "{revision} Later steps are from the original run and may contradict revised ones. "
    "Continue the run from the revised steps: what final answer would the team give to the "
    "question? Reply with that answer only, as short as possible."
)

#: DED (Figure 13)
DED_TEMPLATE = (
    "The run failed. The correct answer is {truth}.\n"
    "Dependency edges among all steps (source -> target): {edges}\n"
    "The steps shown are the candidates for the decisive error. Which one is it: the step whose "
    "correction would most plausibly fix the final answer? Choose one of {candidates} and give a "
    "one-sentence reason."
)


# ------------------------------------------------------------------ reply models
class Deviation(BaseModel):
    """A minor deviation: a step that looks wrong, with a short reason."""

    model_config = ConfigDict(frozen=True)

    step: int = Field(description="0-based step number")
    reason: str = Field(description="one sentence: what is wrong in this step")


class Edge(BaseModel):
    """A dependency edge: step ``target`` depends on the earlier step ``source``."""

    model_config = ConfigDict(frozen=True)

    source: int = Field(description="earlier step")
    target: int = Field(description="later step that depends on it")


class DeviationsAndGraph(BaseModel):
    """Minor deviations and dependency edges of a failed run (MDI + CGC in one reply)."""

    deviations: list[Deviation] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)


class DeviationsReply(BaseModel):
    """Minor deviations of a failed run (MDI)."""

    deviations: list[Deviation] = Field(default_factory=list)


class EdgesReply(BaseModel):
    """Dependency edges of a failed run (CGC)."""

    edges: list[Edge] = Field(default_factory=list)


class HypothesisReply(BaseModel):
    """The hypothesised decisive error (HG)."""

    step: int = Field(description="0-based step of the decisive error")
    reason: str = Field(description="one sentence")


class CorrectedTraceReply(BaseModel):
    """A corrected run: one string per original step, "" meaning unchanged (Correct)."""

    steps: list[str] = Field(description='corrected content per step, in order; "" = unchanged')


class SimulatedOutcome(BaseModel):
    """The final answer a (partly corrected) run would give (Simulation)."""

    outcome: str = Field(description="the final answer only", json_schema_extra={"maxLength": 160})


class DecisionReply(BaseModel):
    """The decisive error among the candidates (DED)."""

    step: int = Field(description="one of the candidate steps")
    reason: str = Field(description="one sentence")


def _reason(max_chars: int, description: str = "one sentence") -> object:
    return ShortText(max_chars, description)


@functools.lru_cache(maxsize=64)
def _deviation_model(max_reason_chars: int) -> type[Deviation]:
    return create_model(
        "Deviation",
        __base__=Deviation,
        reason=(_reason(max_reason_chars, "one sentence: what is wrong in this step"), ...),
    )


@functools.lru_cache(maxsize=64)
def gca_joint_model(max_deviations: int, max_edges: int, max_reason_chars: int) -> type[DeviationsAndGraph]:
    """Reply model of MDI + CGC with advisory ``maxItems``/``maxLength`` (see module docstring).

    Parameters
    ----------
    max_deviations, max_edges : int, advisory list caps
    max_reason_chars : int, advisory reason length cap

    Returns
    -------
    a subclass of :class:`DeviationsAndGraph` (cached per argument tuple).
    """
    dev = _deviation_model(max_reason_chars)
    return create_model(
        "DeviationsAndGraph",
        __base__=DeviationsAndGraph,
        deviations=(list[dev], Field(default_factory=list, json_schema_extra={"maxItems": max_deviations})),
        edges=(list[Edge], Field(default_factory=list, json_schema_extra={"maxItems": max(max_edges, 0)})),
    )


@functools.lru_cache(maxsize=64)
def mdi_model(max_deviations: int, max_reason_chars: int) -> type[DeviationsReply]:
    """Reply model of MDI alone (advisory caps as in :func:`gca_joint_model`)."""
    dev = _deviation_model(max_reason_chars)
    return create_model(
        "DeviationsReply",
        __base__=DeviationsReply,
        deviations=(list[dev], Field(default_factory=list, json_schema_extra={"maxItems": max_deviations})),
    )


@functools.lru_cache(maxsize=64)
def cgc_model(max_edges: int) -> type[EdgesReply]:
    """Reply model of CGC alone (advisory ``maxItems``)."""
    return create_model(
        "EdgesReply",
        __base__=EdgesReply,
        edges=(list[Edge], Field(default_factory=list, json_schema_extra={"maxItems": max(max_edges, 0)})),
    )


@functools.lru_cache(maxsize=256)
def hypothesis_model(n_steps: int, max_reason_chars: int) -> type[HypothesisReply]:
    """Reply model of HG whose ``step`` must lie in ``0 .. n_steps - 1`` (validated).

    Raises
    ------
    ValueError
        If ``n_steps < 1``.
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    return create_model(
        "HypothesisReply",
        __base__=HypothesisReply,
        step=(int, Field(ge=0, le=n_steps - 1, description="0-based step of the decisive error")),
        reason=(_reason(max_reason_chars), ...),
    )


@functools.lru_cache(maxsize=256)
def corrected_trace_model(n_steps: int, max_chars: int) -> type[CorrectedTraceReply]:
    """Reply model of Correct: exactly ``n_steps`` strings (validated), each advisory ``maxLength``.

    Raises
    ------
    ValueError
        If ``n_steps < 1``.
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    item = Annotated[str, Field(json_schema_extra={"maxLength": max_chars})]
    return create_model(
        "CorrectedTraceReply",
        __base__=CorrectedTraceReply,
        steps=(
            list[item],
            Field(
                min_length=n_steps,
                max_length=n_steps,
                description=f'exactly {n_steps} strings, corrected content per step in order; "" = unchanged',
            ),
        ),
    )


@functools.lru_cache(maxsize=256)
def decision_model(candidates: tuple[int, ...], max_reason_chars: int) -> type[DecisionReply]:
    """Reply model of DED whose ``step`` must be one of ``candidates`` (a JSON-schema enum).

    Raises
    ------
    ValueError
        If ``candidates`` is empty.
    """
    if not candidates:
        raise ValueError("DED needs at least one candidate step")
    return create_model(
        "DecisionReply",
        __base__=DecisionReply,
        step=(Literal[tuple(sorted(set(candidates)))], Field(description="one of the candidate steps")),
        reason=(_reason(max_reason_chars), ...),
    )


# ------------------------------------------------------------------ formatting
def format_deviations(deviations: Sequence[tuple[int, str]]) -> str:
    """``- step 2: reason`` lines (reasons escaped as data); ``- none`` when empty."""
    if not deviations:
        return "- none"
    return "\n".join(f"- step {s}: {escape_data(r).replace(chr(10), ' ')}" for s, r in deviations)


def format_edges(edges: Sequence[tuple[int, int]]) -> str:
    """``0 -> 2, 2 -> 4``; ``none`` when empty."""
    return ", ".join(f"{p} -> {q}" for p, q in edges) if edges else "none"


def _messages(question: str, steps: Sequence[Step], budget: int | None, tail: str,
              truth_first: str = "") -> tuple[list[Message], tuple[int, ...]]:
    rendered = render_steps_info(steps, budget)
    user = _CONTEXT_TEMPLATE.format(
        truth_first=truth_first, question=delimit("question", question), trace=rendered.text
    ) + tail
    return [{"role": "system", "content": SYSTEM_TEMPLATE}, {"role": "user", "content": user}], rendered.shortened


def gca_joint_messages(question: str, steps: Sequence[Step], *, max_deviations: int, max_edges: int,
                       budget: int | None = None) -> list[Message]:
    """Messages of MDI + CGC in one call.

    Parameters
    ----------
    question : str
    steps : sequence of Step, the whole trace (0-based indices)
    max_deviations, max_edges : int, caps stated in the prompt
    budget : int or None, character budget of the trace block (:func:`render_steps_info`)

    Returns
    -------
    list of two messages (system, user).
    """
    tail = GCA_JOINT_TEMPLATE.format(last=len(steps) - 1, max_deviations=max_deviations, max_edges=max_edges)
    return _messages(question, steps, budget, tail)[0]


def mdi_messages(question: str, steps: Sequence[Step], *, max_deviations: int,
                 budget: int | None = None) -> list[Message]:
    """Messages of MDI alone (``split_mdi_cgc``); parameters as in :func:`gca_joint_messages`."""
    return _messages(question, steps, budget, MDI_TEMPLATE.format(last=len(steps) - 1,
                                                                  max_deviations=max_deviations))[0]


def cgc_messages(question: str, steps: Sequence[Step], deviations: Sequence[tuple[int, str]], *,
                 max_edges: int, budget: int | None = None) -> list[Message]:
    """Messages of CGC alone, given MDI's deviations as ``(step, reason)`` pairs."""
    tail = CGC_TEMPLATE.format(last=len(steps) - 1, deviations=format_deviations(deviations), max_edges=max_edges)
    return _messages(question, steps, budget, tail)[0]


def hg_messages(question: str, truth: str, steps: Sequence[Step], deviations: Sequence[tuple[int, str]],
                edges: Sequence[tuple[int, int]], *, budget: int | None = None) -> list[Message]:
    """Messages of HG: truth, trace, deviations with reasons, and the graph (eq. 7)."""
    tail = HG_TEMPLATE.format(truth=delimit("answer", truth), deviations=format_deviations(deviations),
                              edges=format_edges(edges), last=len(steps) - 1)
    return _messages(question, steps, budget, tail)[0]


def correct_messages(question: str, truth: str, steps: Sequence[Step], deviations: Sequence[tuple[int, str]],
                     edges: Sequence[tuple[int, int]], *, max_chars: int,
                     budget: int | None = None) -> list[Message]:
    """Messages of Correct: truth, trace, deviations and graph (eq. 8)."""
    tail = CORRECT_TEMPLATE.format(truth=delimit("answer", truth), deviations=format_deviations(deviations),
                                   edges=format_edges(edges), n=len(steps), last=len(steps) - 1,
                                   max_chars=max_chars)
    return _messages(question, steps, budget, tail)[0]


def simulation_messages(question: str, steps: Sequence[Step], revised_through: int, *,
                        truth: str | None = None, budget: int | None = None) -> list[Message]:
    """Messages of Simulation of one counterfactual trace (eq. 9).

    Parameters
    ----------
    question : str
    steps : sequence of Step, the counterfactual trace (corrected 0..i, original after)
    revised_through : int, i; -1 when nothing is revised
    truth : str or None, shown before the steps when given (``simulation_sees_truth``)
    budget : int or None

    Returns
    -------
    list of two messages.
    """
    revision = (
        "No step above is revised."
        if revised_through < 0
        else f"Steps 0 to {revised_through} above are revised."
    )
    truth_first = "" if truth is None else f"The correct answer is {delimit('answer', truth)}.\n"
    return _messages(question, steps, budget, SIMULATION_TEMPLATE.format(revision=revision), truth_first)[0]


def ded_messages(question: str, truth: str, candidate_steps: Sequence[Step],
                 edges: Sequence[tuple[int, int]], *, budget: int | None = None) -> list[Message]:
    """Messages of DED: truth, the candidate steps only (their own numbers), and the graph."""
    tail = DED_TEMPLATE.format(truth=delimit("answer", truth), edges=format_edges(edges),
                               candidates=", ".join(str(s.index) for s in candidate_steps))
    return _messages(question, candidate_steps, budget, tail)[0]
