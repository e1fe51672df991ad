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

The paper shows its prompts only as figures (Figures 9 to 13) whose captions
and section 4 state their intent. Two prompt sets, chosen by the settings'
``prompts`` field (set by the preset, :mod:`agentcausal.settings`) and
versioned separately (:data:`PROMPT_VERSIONS`):

* ``paper`` (``PAPER_*`` templates): the intent of the appendix prompts:
  minor deviations are candidates, not decisive errors; each CGC edge is
  judged on temporality, necessity and sufficiency in the one reply
  (:class:`JudgedEdge`, kept only when all three hold); HG reasons over the
  propagation along the graph and calls early minor deviations that do not
  reach the answer non-decisive; Correct fixes the mistake events and the
  steps they affect and keeps every step in place; Simulation reconstructs
  the downstream reasoning before the outcome; DED picks the causally
  decisive candidate.
* ``small`` (the unprefixed templates): short renditions for a 0.5B model
  (HG asks for the *first* decisive mistake, chosen over a "follow the
  propagation" wording that the 0.5B model parroted).

Without ground truth (settings ``with_ground_truth=False``) HG, Correct and
DED are told that the run failed but not the answer, and S(i) comes from a
judge (:data:`JUDGE_TEMPLATE`, :class:`JudgeReply`) that sees only the
question and the simulated outcome.

The Correct reply names each step by number (a list of ``{step, content}``),
so a missing or extra entry can never shift the others.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/DCFA), sections 4.1 and 4.2, appendix L (Figures 9 to 13).
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
    "PROMPT_VERSIONS",
    "PAPER_GCA_JOINT_TEMPLATE",
    "PAPER_MDI_TEMPLATE",
    "PAPER_CGC_TEMPLATE",
    "PAPER_HG_TEMPLATE",
    "PAPER_CORRECT_TEMPLATE",
    "PAPER_SIMULATION_TEMPLATE",
    "PAPER_DED_TEMPLATE",
    "JUDGE_TEMPLATE",
    "JudgedEdge",
    "CorrectedStep",
    "JudgeReply",
    "judge_messages",
    "simulation_model",
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

#: version of each prompt set; bump the one whose prompts or reply models change
PROMPT_VERSIONS = {"paper": "dcfa-paper-2", "small": "dcfa-small-3"}

#: enters every cache key and every stored attribution (both sets; the settings name the set used)
PROMPT_VERSION = "+".join(PROMPT_VERSIONS[k] for k in sorted(PROMPT_VERSIONS))

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
    "and the later steps they affect, keeping each step's agent and format. Reply with one entry "
    'per step 0 to {last} in "steps", each {{"step": its number, "content": the corrected content{max_chars}}}, '
    'with content "" when the step needs no change.'
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


#: text in place of "The correct answer is ..." when the method runs without ground truth
_NO_TRUTH = "Its final answer is wrong; the correct answer is not given."

# ------------------------------------------------------------------ paper prompt set (appendix L intent)
_PAPER_DEVIATION_TASK = (
    "Task 1, minor deviations: list every step that contains a mistake event, i.e. content that is wrong, "
    "incomplete, unverified, inconsistent with earlier steps or misleading. These are candidates: a minor "
    "deviation need not be the decisive error. Give a short reason for each.{cap}"
)
_PAPER_EDGE_TASK = (
    "Task 2, causal-inspired dependency graph: list the dependency relations between steps as edges "
    "(source, target), above all those that start or end at a deviation and carry its effect towards the "
    "final answer. For each edge judge three criteria: temporal (step source comes before step target), "
    "necessary (without step source, step target would not have happened as it did) and sufficient (step "
    "source is enough to make step target plausible), each true or false, with a one-sentence reason. An "
    "edge counts only if all three hold.{cap}"
)

#: MDI + CGC in one call (Figure 9)
PAPER_GCA_JOINT_TEMPLATE = (
    "The run above failed to answer the question correctly. Steps are numbered 0 to {last}.\n"
    + _PAPER_DEVIATION_TASK + "\n" + _PAPER_EDGE_TASK
)

#: MDI alone (``split_mdi_cgc``)
PAPER_MDI_TEMPLATE = (
    "The run above failed to answer the question correctly. Steps are numbered 0 to {last}.\n"
    + _PAPER_DEVIATION_TASK
)

#: CGC alone (``split_mdi_cgc``)
PAPER_CGC_TEMPLATE = (
    "The run above failed to answer the question correctly. Steps are numbered 0 to {last}.\n"
    "Minor deviations found:\n{deviations}\n" + _PAPER_EDGE_TASK
)

#: HG (Figure 10): global reasoning over the propagation along the graph
PAPER_HG_TEMPLATE = (
    "The run above failed. {truth_line}\n"
    "Minor deviations, with explanations:\n{deviations}\n"
    "Causal-inspired dependency graph (source -> target): {edges}\n"
    "Reason globally over this graph: follow how each deviation propagates along the edges to later steps "
    "and to the final answer. An early or minor deviation whose effect is corrected later, or never reaches "
    "the final answer, is not decisive. The decisive error is the step whose mistake, propagated through the "
    "dependencies, most plausibly explains the failure: had it been right, the run would have reached the "
    "correct answer. Give its number (0 to {last}) and a short reason."
)

#: Correct (Figure 11): fix mistake events and the steps they affect; every step stays in place
PAPER_CORRECT_TEMPLATE = (
    "The run above failed. {truth_line}\n"
    "Minor deviations:\n{deviations}\n"
    "Causal-inspired dependency graph (source -> target): {edges}\n"
    "Write the corrected run: correct the mistake events and every later step causally affected by them "
    "(follow the edges), so that the corrected run reaches the correct answer. Keep every step in place: "
    "the same steps in the same order, each by the same agent in the same format; do not add, drop, merge "
    'or reorder steps. Reply with one entry per step 0 to {last} in "steps", each {{"step": its number, '
    '"content": the full corrected content{max_chars}}}, with content "" when the step needs no change.'
)

#: Simulation (Figure 12): reconstruct the downstream reasoning, then the outcome
PAPER_SIMULATION_TEMPLATE = (
    "{revision} Later steps are from the original run and may contradict the revised ones. Starting from "
    "the revised steps, reconstruct briefly how the run would continue (which later steps would change and "
    'how), in "reasoning"; then give in "outcome" the final answer the team would give to the question, '
    "as short as possible."
)

#: DED (Figure 13)
PAPER_DED_TEMPLATE = (
    "The run failed. {truth_line}\n"
    "Causal-inspired dependency graph among all steps (source -> target): {edges}\n"
    "The steps shown are the candidate decisive errors found by the counterfactual search. Using the graph, "
    "decide which single candidate is causally decisive for the failure: the step whose mistake starts the "
    "chain of dependencies that leads to the wrong final answer, so that correcting it would most plausibly "
    "have given the correct answer. A minor deviation that does not propagate to the answer is not decisive. "
    "Choose one of {candidates} and give a short reason."
)

#: the no-truth judge: S(i) = the probability that the simulated outcome answers the question correctly
JUDGE_TEMPLATE = (
    "A revised run of the team gives this final answer:\n{outcome}\n"
    "How likely is it that this answer is a correct answer to the question? Reply with a probability "
    "between 0 and 1."
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


class JudgedEdge(BaseModel):
    """A candidate dependency edge with the three CGC judgements (``paper`` prompts, eqs. 3 to 6)."""

    model_config = ConfigDict(frozen=True)

    source: int = Field(description="earlier step")
    target: int = Field(description="later step that may depend on it")
    reason: str = Field(description="one sentence on the dependency")
    temporal: bool = Field(description="step source comes before step target")
    necessary: bool = Field(description="without step source, step target would not have happened as it did")
    sufficient: bool = Field(description="step source is enough to make step target plausible")

    @property
    def holds(self) -> bool:
        """All three criteria hold (the edge is kept)."""
        return self.temporal and self.necessary and self.sufficient


class CorrectedStep(BaseModel):
    """One step of a corrected run, named by its number."""

    step: int = Field(description="0-based step number")
    content: str = Field(description='corrected content; "" = unchanged')


class JudgeReply(BaseModel):
    """The no-truth judge's probability that an outcome answers the question correctly."""

    probability: float = Field(ge=0.0, le=1.0, description="probability in [0, 1]")


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
    """A corrected run: entries {step, content} by step number, "" meaning unchanged (Correct)."""

    steps: list[CorrectedStep] = Field(description='one entry per step: {step, content}; "" = unchanged')


# ``small`` prompts: the advisory maxLength of 160 bounds a 0.5B model's decode time (the class
# docstring is the schema description the model reads, so it stays as the prompt version has it)
class SimulatedOutcome(BaseModel):
    """The final answer a (partly corrected) run would give (Simulation)."""

    outcome: str = Field(description="the final answer only", json_schema_extra={"maxLength": 160})


# no length cap on the outcome (the paper's Figure 12 prompt has none; the profile's completion
# budget bounds the reply); the class docstring is the schema description the model reads
class PaperSimulatedOutcome(BaseModel):
    """Simulation under the ``paper`` prompts: the reconstructed continuation, then the answer."""

    reasoning: str = Field("", description="how the run would continue from the revised steps")
    outcome: str = Field(description="the final answer only")


class DecisionReply(BaseModel):
    """The decisive error among the candidates (DED)."""

    step: int = Field(description="one of the candidate steps")
    reason: str = Field(description="one sentence")


def _reason(max_chars: int | None, description: str = "one sentence") -> object:
    """A reason field: :func:`ShortText` (schema ``maxLength``, cut on validation) when ``max_chars``
    is set, else a plain string (``paper``: no cap)."""
    if max_chars is None:
        return Annotated[str, Field(description=description)]
    return ShortText(max_chars, description)


@functools.lru_cache(maxsize=64)
def _deviation_model(max_reason_chars: int | None) -> type[Deviation]:
    return create_model(
        "Deviation",
        __base__=Deviation,
        reason=(_reason(max_reason_chars, "one sentence: what is wrong in this step"), ...),
    )


def _items(cap: int | None) -> dict[str, int] | None:
    return None if cap is None else {"maxItems": max(cap, 0)}


@functools.lru_cache(maxsize=64)
def _judged_edge_model(max_reason_chars: int | None) -> type[JudgedEdge]:
    return create_model("JudgedEdge", __base__=JudgedEdge,
                        reason=(_reason(max_reason_chars, "one sentence on the dependency"), ...))


def _edge_type(judged: bool, max_reason_chars: int | None) -> type:
    return _judged_edge_model(max_reason_chars) if judged else Edge


@functools.lru_cache(maxsize=64)
def gca_joint_model(max_deviations: int | None, max_edges: int | None, max_reason_chars: int | None,
                    judged: bool = False) -> type[DeviationsAndGraph]:
    """Reply model of MDI + CGC with advisory ``maxItems``/``maxLength`` (see module docstring).

    Parameters
    ----------
    max_deviations, max_edges : int or None, advisory list caps (None = no ``maxItems``)
    max_reason_chars : int or None, reason length cap (``maxLength``, cut on validation); None = none
    judged : bool, edges carry the CGC judgements (:class:`JudgedEdge`, ``paper`` prompts)

    Returns
    -------
    a subclass of :class:`DeviationsAndGraph` (cached per argument tuple).
    """
    dev = _deviation_model(max_reason_chars)
    edge = _edge_type(judged, max_reason_chars)
    return create_model(
        "DeviationsAndGraph",
        __base__=DeviationsAndGraph,
        deviations=(list[dev], Field(default_factory=list, json_schema_extra=_items(max_deviations))),
        edges=(list[edge], Field(default_factory=list, json_schema_extra=_items(max_edges))),
    )


@functools.lru_cache(maxsize=64)
def mdi_model(max_deviations: int | None, max_reason_chars: int | None) -> type[DeviationsReply]:
    """Reply model of MDI alone (advisory caps as in :func:`gca_joint_model`)."""
    dev = _deviation_model(max_reason_chars)
    return create_model(
        "DeviationsReply",
        __base__=DeviationsReply,
        deviations=(list[dev], Field(default_factory=list, json_schema_extra=_items(max_deviations))),
    )


@functools.lru_cache(maxsize=64)
def cgc_model(max_edges: int | None, judged: bool = False, max_reason_chars: int | None = None) -> type[EdgesReply]:
    """Reply model of CGC alone (advisory ``maxItems``; judged edges as in :func:`gca_joint_model`)."""
    return create_model(
        "EdgesReply",
        __base__=EdgesReply,
        edges=(list[_edge_type(judged, max_reason_chars)], Field(default_factory=list,
                                                                 json_schema_extra=_items(max_edges))),
    )


@functools.lru_cache(maxsize=256)
def hypothesis_model(n_steps: int, max_reason_chars: int | None) -> type[HypothesisReply]:
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
def corrected_trace_model(n_steps: int, max_chars: int | None) -> type[CorrectedTraceReply]:
    """Reply model of Correct: a list of ``{step, content}``, ``step`` in ``0 .. n_steps - 1``
    (schema bounds), ``content`` with advisory ``maxLength`` (None = none).

    Entries are matched to steps by number, never by position
    (:func:`agentcausal.attribution.dcfa.correct.normalise_correction`), so a
    missing entry leaves its step unchanged and shifts nothing. The number
    of entries is advisory (``maxItems`` = n); an out-of-range step number
    fails validation (the gateway's repair loop re-asks).

    Raises
    ------
    ValueError
        If ``n_steps < 1``.
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    extra = None if max_chars is None else {"maxLength": max_chars}
    entry = create_model(
        "CorrectedStep",
        __base__=CorrectedStep,
        step=(int, Field(ge=0, le=n_steps - 1, description="0-based step number")),
        content=(str, Field(description='corrected content; "" = unchanged', json_schema_extra=extra)),
    )
    return create_model(
        "CorrectedTraceReply",
        __base__=CorrectedTraceReply,
        steps=(list[entry], Field(description=f'one entry per step 0 to {n_steps - 1}: {{step, content}}; '
                                              '"" = unchanged', json_schema_extra={"maxItems": n_steps})),
    )


def simulation_model(style: str) -> type[BaseModel]:
    """Reply model of Simulation for a prompt set (``paper``: reasoning, then outcome)."""
    return PaperSimulatedOutcome if style == "paper" else SimulatedOutcome


@functools.lru_cache(maxsize=256)
def decision_model(candidates: tuple[int, ...], max_reason_chars: int | None) -> type[DecisionReply]:
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


def _check_style(style: str) -> bool:
    if style not in PROMPT_VERSIONS:
        raise ValueError(f"unknown prompt set {style!r}; choose from {sorted(PROMPT_VERSIONS)}")
    return style == "paper"


def _truth_line(truth: str | None) -> str:
    return _NO_TRUTH if truth is None else f"The correct answer is {delimit('answer', truth)}."


def _cap(text: str, cap: int | None) -> str:
    return "" if cap is None else text.format(cap=cap)


def gca_joint_messages(question: str, steps: Sequence[Step], *, max_deviations: int | None,
                       max_edges: int | None, budget: int | None = None, style: str = "paper") -> list[Message]:
    """Messages of MDI + CGC in one call.

    Parameters
    ----------
    question : str
    steps : sequence of Step, the whole trace (0-based indices)
    max_deviations, max_edges : int or None, caps stated in the prompt (None = no cap; the
        ``small`` wording needs both)
    budget : int or None, character budget of the trace block (:func:`render_steps_info`)
    style : "paper" or "small", the prompt set

    Returns
    -------
    list of two messages (system, user).
    """
    last = len(steps) - 1
    if _check_style(style):
        dev = _PAPER_DEVIATION_TASK.format(cap=_cap(" List at most {cap}.", max_deviations))
        edge = _PAPER_EDGE_TASK.format(cap=_cap(" List at most {cap} edges.", max_edges))
        tail = (f"The run above failed to answer the question correctly. Steps are numbered 0 to {last}.\n"
                f"{dev}\n{edge}")
    else:
        tail = GCA_JOINT_TEMPLATE.format(last=last, max_deviations=max_deviations, max_edges=max_edges)
    return _messages(question, steps, budget, tail)[0]


def mdi_messages(question: str, steps: Sequence[Step], *, max_deviations: int | None,
                 budget: int | None = None, style: str = "paper") -> list[Message]:
    """Messages of MDI alone (``split_mdi_cgc``); parameters as in :func:`gca_joint_messages`."""
    last = len(steps) - 1
    if _check_style(style):
        tail = PAPER_MDI_TEMPLATE.format(last=last, cap=_cap(" List at most {cap}.", max_deviations))
    else:
        tail = MDI_TEMPLATE.format(last=last, max_deviations=max_deviations)
    return _messages(question, steps, budget, tail)[0]


def cgc_messages(question: str, steps: Sequence[Step], deviations: Sequence[tuple[int, str]], *,
                 max_edges: int | None, budget: int | None = None, style: str = "paper") -> list[Message]:
    """Messages of CGC alone, given MDI's deviations as ``(step, reason)`` pairs."""
    last, devs = len(steps) - 1, format_deviations(deviations)
    if _check_style(style):
        tail = PAPER_CGC_TEMPLATE.format(last=last, deviations=devs, cap=_cap(" List at most {cap} edges.", max_edges))
    else:
        tail = CGC_TEMPLATE.format(last=last, deviations=devs, max_edges=max_edges)
    return _messages(question, steps, budget, tail)[0]


def hg_messages(question: str, truth: str | None, steps: Sequence[Step], deviations: Sequence[tuple[int, str]],
                edges: Sequence[tuple[int, int]], *, budget: int | None = None,
                style: str = "paper") -> list[Message]:
    """Messages of HG: truth (None = not shown), trace, deviations with reasons, and the graph (eq. 7)."""
    fields = dict(deviations=format_deviations(deviations), edges=format_edges(edges), last=len(steps) - 1)
    if _check_style(style):
        tail = PAPER_HG_TEMPLATE.format(truth_line=_truth_line(truth), **fields)
    else:
        tail = HG_TEMPLATE.format(truth=delimit("answer", truth) if truth is not None else "not given", **fields)
        if truth is None:
            tail = tail.replace("The correct answer is not given.", _NO_TRUTH)
    return _messages(question, steps, budget, tail)[0]


def correct_messages(question: str, truth: str | None, steps: Sequence[Step], deviations: Sequence[tuple[int, str]],
                     edges: Sequence[tuple[int, int]], *, max_chars: int | None,
                     budget: int | None = None, style: str = "paper") -> list[Message]:
    """Messages of Correct: truth (None = not shown), trace, deviations and graph (eq. 8)."""
    fields = dict(deviations=format_deviations(deviations), edges=format_edges(edges), last=len(steps) - 1,
                  max_chars="" if max_chars is None else f", at most {max_chars} characters")
    if _check_style(style):
        tail = PAPER_CORRECT_TEMPLATE.format(truth_line=_truth_line(truth), **fields)
    else:
        tail = CORRECT_TEMPLATE.format(truth=delimit("answer", truth) if truth is not None else "not given",
                                       **fields)
        if truth is None:
            tail = tail.replace("The correct answer is not given.", _NO_TRUTH)
    return _messages(question, steps, budget, tail)[0]


def simulation_messages(question: str, steps: Sequence[Step], revised_through: int, *,
                        truth: str | None = None, budget: int | None = None, style: str = "paper") -> list[Message]:
    """Messages of Simulation of one counterfactual trace (eq. 9).

    Parameters
    ----------
    question : str
    steps : sequence of Step, the counterfactual trace (corrected 0..i, original after)
    revised_through : int, i; -1 when nothing is revised
    truth : str or None, shown before the steps when given (``simulation_sees_truth``)
    budget : int or None
    style : "paper" or "small"

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
    template = PAPER_SIMULATION_TEMPLATE if _check_style(style) else SIMULATION_TEMPLATE
    return _messages(question, steps, budget, template.format(revision=revision), truth_first)[0]


def ded_messages(question: str, truth: str | None, candidate_steps: Sequence[Step],
                 edges: Sequence[tuple[int, int]], *, budget: int | None = None,
                 style: str = "paper") -> list[Message]:
    """Messages of DED: truth (None = not shown), the candidate steps only (their own numbers), and the graph."""
    fields = dict(edges=format_edges(edges), candidates=", ".join(str(s.index) for s in candidate_steps))
    if _check_style(style):
        tail = PAPER_DED_TEMPLATE.format(truth_line=_truth_line(truth), **fields)
    else:
        tail = DED_TEMPLATE.format(truth=delimit("answer", truth) if truth is not None else "not given", **fields)
        if truth is None:
            tail = tail.replace("The correct answer is not given.", _NO_TRUTH)
    return _messages(question, candidate_steps, budget, tail)[0]


def judge_messages(question: str, outcome: str) -> list[Message]:
    """Messages of the no-truth judge: the question and one simulated outcome (no trace, no truth).

    Returns
    -------
    list of two messages.
    """
    user = (delimit("question", question) + "\n" + JUDGE_TEMPLATE.format(outcome=delimit("data", outcome)))
    return [{"role": "system", "content": SYSTEM_TEMPLATE}, {"role": "user", "content": user}]
