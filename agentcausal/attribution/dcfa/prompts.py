"""DCFA prompts beside their reply models (MDI, CGC, HG, Correct, Simulation; DED in its own module).

Every prompt is a ``*_TEMPLATE``/``*_TASK`` constant filled by one
``*_messages`` builder; every reply is a pydantic model whose field
descriptions the LLM reads through the JSON schema. :data:`PROMPT_VERSION`
enters every cache key and is stored with every attribution.

Two prompt sets, chosen by the settings' ``prompts`` field (set by the preset,
:mod:`agentcausal.settings`) and versioned separately (:data:`PROMPT_VERSIONS`):

* ``paper``: the released code's prompts in our words, with the paper text's
  variants behind settings (:mod:`agentcausal.attribution.dcfa.paper_prompts`).
  MDI and CGC see the log only (no question), as the released code sends them.
* ``small`` (the ``*_TEMPLATE`` constants): short renditions for a 0.5B model
  (HG asks for the *first* decisive mistake, chosen over a "follow the
  propagation" wording that the 0.5B model parroted).

Layout, chosen for prompt caching (llama.cpp and vLLM reuse the longest
shared prefix): one system message for every stage, then (``paper``) the
``<trace>`` block and the stage's inputs and instructions, or (``small``) the
question, the trace block and the instructions. So the calls on one trace
share the prefix up to the end of the trace, and the counterfactual traces of
one trace share the prefix up to the first step where their corrected
prefixes differ.

Inputs that are an earlier stage's reply (deviations, the graph, the spliced
trace, the root-cause step) may be given as a string, shown as it is: what
:mod:`agentcausal.attribution.dcfa.preview` passes as a placeholder.

Schema limits written as ``maxItems``/``maxLength`` are *advisory*: grammar-
constrained servers (llama.cpp, vLLM) obey them and so bound decode time;
validation does not enforce them, the callers cut what is too long. Step
ranges and the step count of Correct *are* validated, so a bad reply goes
through the gateway's repair loop.

Without ground truth (settings ``with_ground_truth=False``) HG, Correct and
DED are told that the run failed but not the answer, and S(i) comes from a
judge (:data:`JUDGE_TEMPLATE`, :class:`JudgeReply`) that sees only the
question and the simulated outcome.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), sections 4.1 and 4.2, appendix L (Figures 9 to 13).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Annotated, Any, NamedTuple, cast

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import JsonDict

from agentcausal.attribution.dcfa import paper_prompts as pp
from agentcausal.llm import Message
from agentcausal.llm.replies import ShortText
from agentcausal.traces.model import Step
from agentcausal.traces.render import DATA_NOTICE, delimit, escape_data, render_steps_info

__all__ = [
    "PROMPT_VERSION",
    "PROMPT_VERSIONS",
    "SYSTEM_TEMPLATE",
    "GCA_JOINT_TEMPLATE",
    "MDI_TEMPLATE",
    "CGC_TEMPLATE",
    "HG_TEMPLATE",
    "CORRECT_TEMPLATE",
    "SIMULATION_TEMPLATE",
    "JUDGE_TEMPLATE",
    "StepLinks",
    "RootCause",
    "Deviation",
    "Edge",
    "JudgedEdge",
    "LinksEntry",
    "CorrectedStep",
    "JudgeReply",
    "DeviationsAndGraph",
    "DeviationsAndLinks",
    "DeviationsReply",
    "EdgesReply",
    "CausalListsReply",
    "HypothesisReply",
    "CorrectedTraceReply",
    "SimulatedOutcome",
    "PaperSimulatedOutcome",
    "RootCauseOutcome",
    "gca_joint_model",
    "mdi_model",
    "cgc_model",
    "hypothesis_model",
    "corrected_trace_model",
    "simulation_model",
    "format_deviations",
    "format_edges",
    "format_links",
    "format_graph",
    "truth_line",
    "paper_messages",
    "gca_joint_messages",
    "mdi_messages",
    "cgc_messages",
    "hg_messages",
    "correct_messages",
    "simulation_messages",
    "judge_messages",
]

#: version of each prompt set; bump the one whose prompts or reply models change (4: a corrected step that
#: repeats the original up to whitespace is unchanged; confidence and fix read the nearest simulated trace;
#: paper 5: Hand-Crafted Correct rewrites every step, no "" for unchanged; paper 6 / small 5: a corrected step
#: that opens with the prompt's own "Step i | agent: " label has it removed before the comparison)
PROMPT_VERSIONS = {"paper": "dcfa-paper-6", "small": "dcfa-small-5"}

#: enters every cache key and every stored attribution (both sets; the settings name the set used)
PROMPT_VERSION = "+".join(PROMPT_VERSIONS[k] for k in sorted(PROMPT_VERSIONS))

SYSTEM_TEMPLATE = (
    "You analyse failed runs of LLM multi-agent systems to find the decisive error. "
    + DATA_NOTICE
    + " Steps are numbered from 0. Answer with one JSON object."
)

# ------------------------------------------------------------------ small prompt set
#: question and trace, shared by every ``small`` stage (the common prompt prefix)
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

#: MDI and CGC in one call (``small``)
GCA_JOINT_TEMPLATE = (
    "The run above failed to answer the question. Steps are numbered 0 to {last}.\n"
    "1. " + _DEVIATION_TASK + "\n2. " + _EDGE_TASK
)

#: MDI alone (``small``, ``mdi_cgc="split"``)
MDI_TEMPLATE = "The run above failed to answer the question. Steps are numbered 0 to {last}.\n" + _DEVIATION_TASK

#: CGC alone (``small``, ``mdi_cgc="split"``)
CGC_TEMPLATE = (
    "The run above failed to answer the question. Steps are numbered 0 to {last}.\n"
    "Minor deviations found:\n{deviations}\n" + _EDGE_TASK
)

#: HG (``small``); asks for the *first* decisive mistake, Who&When's definition (chosen over a
#: "follow the propagation" wording that the 0.5B model parroted, on Algorithm-Generated 38, 47, 73)
HG_TEMPLATE = (
    "The run above failed. The correct answer is {truth}.\n"
    "Minor deviations:\n{deviations}\n"
    "Dependency edges (source -> target): {edges}\n"
    "Which step is the decisive error, the first step whose mistake made the final answer wrong? "
    "Give its number (0 to {last}) and say in one sentence what that step got wrong."
)

#: Correct (``small``)
CORRECT_TEMPLATE = (
    "The run above failed. The correct answer is {truth}.\n"
    "Minor deviations:\n{deviations}\n"
    "Dependency edges (source -> target): {edges}\n"
    "Write a corrected version of the run that reaches the correct answer: fix the deviating steps "
    "and the later steps they affect, keeping each step's agent and format. Reply with one entry "
    'per step 0 to {last} in "steps", each {{"step": its number, "content": the corrected content{max_chars}}}, '
    'with content "" when the step needs no change.'
)

#: Simulation (``small``); {revision} says which prefix is corrected
SIMULATION_TEMPLATE = (
    "{revision} Later steps are from the original run and may contradict revised ones. "
    "Continue the run from the revised steps: what final answer would the team give to the "
    "question? Reply with that answer only, as short as possible."
)

#: text in place of "The correct answer is ..." when the method runs without ground truth
_NO_TRUTH = "Its final answer is wrong; the correct answer is not given."

#: the no-truth judge: S(i) = the probability that the simulated outcome answers the question correctly
JUDGE_TEMPLATE = (
    "A revised run of the team gives this final answer:\n{outcome}\n"
    "How likely is it that this answer is a correct answer to the question? Reply with a probability "
    "between 0 and 1."
)


# ------------------------------------------------------------------ inputs
class StepLinks(NamedTuple):
    """One step's entry of a CGC reply under ``cgc="code"``: the earlier steps that cause it and the
    later steps it causes (0-based, validated)."""

    step: int
    causes: tuple[int, ...]
    effects: tuple[int, ...]


class RootCause(NamedTuple):
    """The candidate a ``simulation="code"`` prompt names: its step, agent and the steps it directly affects."""

    step: int
    agent: str
    effects: tuple[int, ...]


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
    """A candidate dependency edge with the three CGC judgements (``cgc="equations"``, eqs. 3 to 6)."""

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


class LinksEntry(BaseModel):
    """One step of the causal graph (``cgc="code"``): the steps that cause it and the steps it causes."""

    model_config = ConfigDict(frozen=True)

    step: int = Field(description="0-based step number")
    causes: list[int] = Field(default_factory=list, description="earlier steps that cause this step")
    effects: list[int] = Field(default_factory=list, description="later steps this step causes")


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


class DeviationsAndLinks(BaseModel):
    """Mistake steps and the causal graph of every step (MDI + CGC in one reply, ``cgc="code"``)."""

    deviations: list[Deviation] = Field(default_factory=list)
    steps: list[LinksEntry] = Field(default_factory=list)


class DeviationsReply(BaseModel):
    """Minor deviations of a failed run (MDI)."""

    deviations: list[Deviation] = Field(default_factory=list)


class EdgesReply(BaseModel):
    """Dependency edges of a failed run (CGC)."""

    edges: list[Edge] = Field(default_factory=list)


class CausalListsReply(BaseModel):
    """The causal graph of a failed run: the causes and effects of every step (CGC, ``cgc="code"``)."""

    steps: list[LinksEntry] = Field(default_factory=list)


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


class RootCauseOutcome(BaseModel):
    """Simulation as the released code asks it: why the root cause failed the run, then the answer."""

    reason: str = Field(
        description="how the root-cause step led to the wrong answer and how the corrections resolve it"
    )
    answer: str = Field(description="the correct final answer to the question")

    @property
    def outcome(self) -> str:
        """The simulated final answer (what S(i) scores)."""
        return self.answer


def _reason(max_chars: int | None, description: str = "one sentence") -> Any:
    """A reason field: :func:`ShortText` (schema ``maxLength``, cut on validation) when ``max_chars``
    is set, else a plain string (``paper``: no cap)."""
    if max_chars is None:
        return Annotated[str, Field(description=description)]
    return ShortText(max_chars, description)


#: MDI's reason field as each prompt set asks it: ``paper`` the released prompt's detailed reason
#: (``event_extraction.txt``, :data:`~agentcausal.attribution.dcfa.paper_prompts.MDI_TASK`), ``small`` one sentence
_DEVIATION_REASON = {
    "paper": ("A mistake step with a detailed reason.", "a detailed reason why this step is a mistake"),
    "small": (Deviation.__doc__, "one sentence: what is wrong in this step"),
}


@functools.lru_cache(maxsize=64)
def _deviation_model(max_reason_chars: int | None, style: str = "paper") -> type[Deviation]:
    doc, reason = _DEVIATION_REASON[style]
    return create_model("Deviation", __base__=Deviation, __doc__=doc, reason=(_reason(max_reason_chars, reason), ...))


def _list_of(item: type) -> Any:
    """``list[item]`` for a field type built at run time (a reply model class)."""
    return list[item]  # type: ignore[valid-type]  # item is a class made at run time, not a static type


def _items(cap: int | None) -> JsonDict | None:
    return None if cap is None else {"maxItems": max(cap, 0)}


@functools.lru_cache(maxsize=64)
def _judged_edge_model(max_reason_chars: int | None) -> type[JudgedEdge]:
    return create_model(
        "JudgedEdge", __base__=JudgedEdge, reason=(_reason(max_reason_chars, "one sentence on the dependency"), ...)
    )


def _edge_type(judged: bool, max_reason_chars: int | None) -> type:
    return _judged_edge_model(max_reason_chars) if judged else Edge


@functools.lru_cache(maxsize=64)
def gca_joint_model(
    max_deviations: int | None,
    max_edges: int | None,
    max_reason_chars: int | None,
    judged: bool = False,
    links: bool = False,
    style: str = "paper",
) -> type[DeviationsAndGraph] | type[DeviationsAndLinks]:
    """Reply model of MDI + CGC with advisory ``maxItems``/``maxLength`` (see module docstring).

    Parameters
    ----------
    max_deviations, max_edges : int or None, advisory list caps (None = no ``maxItems``)
    max_reason_chars : int or None, reason length cap (``maxLength``, cut on validation); None = none
    judged : bool, edges carry the CGC judgements (:class:`JudgedEdge`, ``cgc="equations"``)
    links : bool, the graph is the cause/effect lists of every step (:class:`DeviationsAndLinks`,
        ``cgc="code"``; ``judged`` is then ignored)
    style : "paper" (each deviation's reason a detailed one, as MDI's released prompt asks) or
        "small" (one sentence)

    Returns
    -------
    a subclass of :class:`DeviationsAndGraph` or :class:`DeviationsAndLinks` (cached per argument tuple).
    """
    dev = _deviation_model(max_reason_chars, style)
    devs: tuple[Any, Any] = (_list_of(dev), Field(default_factory=list, json_schema_extra=_items(max_deviations)))
    if links:
        return create_model(
            "DeviationsAndLinks",
            __base__=DeviationsAndLinks,
            deviations=devs,
            steps=(list[LinksEntry], Field(default_factory=list)),
        )
    edge = _edge_type(judged, max_reason_chars)
    return create_model(
        "DeviationsAndGraph",
        __base__=DeviationsAndGraph,
        deviations=devs,
        edges=(_list_of(edge), Field(default_factory=list, json_schema_extra=_items(max_edges))),
    )


@functools.lru_cache(maxsize=64)
def mdi_model(max_deviations: int | None, max_reason_chars: int | None, style: str = "paper") -> type[DeviationsReply]:
    """Reply model of MDI alone (advisory caps and ``style`` as in :func:`gca_joint_model`)."""
    dev = _deviation_model(max_reason_chars, style)
    return create_model(
        "DeviationsReply",
        __base__=DeviationsReply,
        deviations=(_list_of(dev), Field(default_factory=list, json_schema_extra=_items(max_deviations))),
    )


@functools.lru_cache(maxsize=64)
def cgc_model(
    max_edges: int | None, judged: bool = False, max_reason_chars: int | None = None, links: bool = False
) -> type[EdgesReply] | type[CausalListsReply]:
    """Reply model of CGC alone: :class:`CausalListsReply` when ``links`` (``cgc="code"``), else an
    :class:`EdgesReply` (advisory ``maxItems``; judged edges as in :func:`gca_joint_model`)."""
    if links:
        return CausalListsReply
    return create_model(
        "EdgesReply",
        __base__=EdgesReply,
        edges=(
            _list_of(_edge_type(judged, max_reason_chars)),
            Field(default_factory=list, json_schema_extra=_items(max_edges)),
        ),
    )


@functools.lru_cache(maxsize=256)
def hypothesis_model(n_steps: int, max_reason_chars: int | None, log_answer: bool = False) -> type[HypothesisReply]:
    """Reply model of HG whose ``step`` must lie in ``0 .. n_steps - 1`` (validated).

    Parameters
    ----------
    n_steps : int
    max_reason_chars : int or None, ``maxLength`` of the reason (None = none)
    log_answer : bool, ask first for the final wrong answer of the log (``paper``: the released
        code's reply is log_answer, root-cause event, step, reason)

    Raises
    ------
    ValueError
        If ``n_steps < 1``.
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    step = (int, Field(ge=0, le=n_steps - 1, description="0-based step of the decisive error"))
    reason = (_reason(max_reason_chars, "how the root cause was inferred" if log_answer else "one sentence"), ...)
    if log_answer:  # not a subclass (the released code's field order) but the same step and reason
        return cast(
            type[HypothesisReply],
            create_model(
                "HypothesisReply",
                __doc__=HypothesisReply.__doc__,
                log_answer=(str, Field("", description="the final wrong answer given in the log")),
                step=step,
                reason=reason,
            ),
        )
    return create_model("HypothesisReply", __base__=HypothesisReply, step=step, reason=reason)


@functools.lru_cache(maxsize=256)
def corrected_trace_model(n_steps: int, max_chars: int | None, rewrite_all: bool = False) -> type[CorrectedTraceReply]:
    """Reply model of Correct: a list of ``{step, content}``, ``step`` in ``0 .. n_steps - 1``
    (schema bounds), ``content`` with advisory ``maxLength`` (None = none); ``content`` ``""``
    means unchanged, or, with ``rewrite_all`` (the Hand-Crafted variant), every step's content is
    its rewrite with the redundant content removed.

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
    extra: JsonDict | None = None if max_chars is None else {"maxLength": max_chars}
    content = "the step as corrected, redundant content removed; never empty" if rewrite_all else None
    entry = create_model(
        "CorrectedStep",
        __base__=CorrectedStep,
        step=(int, Field(ge=0, le=n_steps - 1, description="0-based step number")),
        content=(str, Field(description=content or 'corrected content; "" = unchanged', json_schema_extra=extra)),
    )
    listing = "every step rewritten" if rewrite_all else '"" = unchanged'

    return create_model(
        "CorrectedTraceReply",
        __base__=CorrectedTraceReply,
        steps=(
            _list_of(entry),
            Field(
                description=f"one entry per step 0 to {n_steps - 1}: {{step, content}}; {listing}",
                json_schema_extra={"maxItems": n_steps},
            ),
        ),
    )


def simulation_model(
    style: str, variant: str = "equations"
) -> type[SimulatedOutcome] | type[RootCauseOutcome] | type[PaperSimulatedOutcome]:
    """Reply model of Simulation: ``small`` -> :class:`SimulatedOutcome`; ``paper`` ->
    :class:`RootCauseOutcome` (``simulation="code"``: reason, answer) or
    :class:`PaperSimulatedOutcome` (``"equations"``: reasoning, outcome). Each has ``.outcome``."""
    if style != "paper":
        return SimulatedOutcome
    return RootCauseOutcome if variant == "code" else PaperSimulatedOutcome


# ------------------------------------------------------------------ formatting
def format_deviations(deviations: Sequence[tuple[int, str]] | str) -> str:
    """``- step 2: reason`` lines (reasons escaped as data); ``- none`` when empty; a str as it is."""
    if isinstance(deviations, str):
        return deviations
    if not deviations:
        return "- none"
    return "\n".join(f"- step {s}: {escape_data(r).replace(chr(10), ' ')}" for s, r in deviations)


def format_edges(edges: Sequence[tuple[int, int]] | str) -> str:
    """``0 -> 2, 2 -> 4``; ``none`` when empty; a str as it is."""
    if isinstance(edges, str):
        return edges
    return ", ".join(f"{p} -> {q}" for p, q in edges) if edges else "none"


def format_links(links: Sequence[StepLinks]) -> str:
    """``- step 3: causes 1, 2; effects 5`` lines, one per step (the released code's per-step graph).

    >>> print(format_links([StepLinks(0, (), (1,)), StepLinks(1, (0,), ())]))
    - step 0: causes none; effects 1
    - step 1: causes 0; effects none
    """

    def ids(xs: Sequence[int]) -> str:
        return ", ".join(map(str, xs)) if xs else "none"

    return "\n".join(f"- step {e.step}: causes {ids(e.causes)}; effects {ids(e.effects)}" for e in links) or "- none"


def format_graph(graph: Sequence[tuple[int, int]] | Sequence[StepLinks] | str) -> str:
    """The dependency graph as a prompt shows it: per-step lists (:func:`format_links`) for
    :class:`StepLinks` entries, else edges (:func:`format_edges`); a str as it is."""
    if isinstance(graph, str):
        return graph
    if graph and isinstance(graph[0], StepLinks):
        return format_links(graph)  # type: ignore[arg-type]  # graph[0] is a StepLinks: so is every entry
    return format_edges(graph)  # type: ignore[arg-type]  # not StepLinks: (source, target) edges


def truth_line(truth: str | None) -> str:
    """``The correct answer is <answer>…</answer>.``, or the no-truth sentence when ``truth`` is None."""
    return _NO_TRUTH if truth is None else f"The correct answer is {delimit('answer', truth)}."


def _trace_block(steps: Sequence[Step] | str, budget: int | None) -> str:
    return steps if isinstance(steps, str) else render_steps_info(steps, budget).text


def paper_messages(
    steps: Sequence[Step] | str, budget: int | None, inputs: Sequence[str], task: str, example: str | None = None
) -> list[Message]:
    """Messages of one ``paper`` prompt: the shared system message, then the trace block, the stage's
    inputs, its instructions and its worked example, blank lines between.

    Parameters
    ----------
    steps : sequence of Step (rendered, :func:`render_steps_info`) or a str shown as it is
    budget : int or None, character budget of the trace block
    inputs : the stage's inputs, each already delimited or escaped
    task : the instructions
    example : the worked example, or None

    Returns
    -------
    list of two messages (system, user).
    """
    parts = [_trace_block(steps, budget), *inputs, task, *([example] if example else [])]
    return [{"role": "system", "content": SYSTEM_TEMPLATE}, {"role": "user", "content": "\n\n".join(parts)}]


def _messages(
    question: str, steps: Sequence[Step] | str, budget: int | None, tail: str, truth_first: str = ""
) -> list[Message]:
    """Messages of one ``small`` prompt: question, trace block, then the stage's part."""
    user = (
        _CONTEXT_TEMPLATE.format(
            truth_first=truth_first, question=delimit("question", question), trace=_trace_block(steps, budget)
        )
        + tail
    )
    return [{"role": "system", "content": SYSTEM_TEMPLATE}, {"role": "user", "content": user}]


def _check_style(style: str) -> bool:
    if style not in PROMPT_VERSIONS:
        raise ValueError(f"unknown prompt set {style!r}; choose from {sorted(PROMPT_VERSIONS)}")
    return style == "paper"


def _cap(text: str, cap: int | None) -> str:
    return "" if cap is None else text.format(cap=cap)


def _question(question: str) -> str:
    return "The question of the run: " + delimit("question", question)


def _mistakes_input(deviations: Sequence[tuple[int, str]] | str) -> str:
    return "Mistake reasons (MDI):\n" + format_deviations(deviations)


def _graph_input(graph: Sequence[tuple[int, int]] | Sequence[StepLinks] | str) -> str:
    shown = format_graph(graph)
    if not isinstance(graph, str) and not (graph and isinstance(graph[0], StepLinks)):
        shown = "edges (source -> target): " + shown
    return "Causal graph (CGC):\n" + shown


def _cgc_task(cgc: str, last: int, max_edges: int | None, marked: str) -> tuple[str, str | None]:
    if cgc == "code":
        return (
            pp.CGC_LISTS_TASK.format(
                last=last, marked=marked, cap=_cap(" Give at most {cap} links in all.", max_edges)
            ),
            pp.CGC_LISTS_EXAMPLE,
        )
    return pp.CGC_JUDGED_TASK.format(cap=_cap(" List at most {cap} edges.", max_edges)), None


def gca_joint_messages(
    question: str,
    steps: Sequence[Step],
    *,
    max_deviations: int | None,
    max_edges: int | None,
    budget: int | None = None,
    style: str = "paper",
    cgc: str = "code",
) -> list[Message]:
    """Messages of MDI + CGC in one call (``mdi_cgc="joint"``, the paper's text).

    Parameters
    ----------
    question : str, shown under ``small`` only (``paper``: MDI and CGC see the log only)
    steps : sequence of Step, the whole trace (0-based indices)
    max_deviations, max_edges : int or None, caps stated in the prompt (None = no cap; the
        ``small`` wording needs both)
    budget : int or None, character budget of the trace block (:func:`render_steps_info`)
    style : "paper" or "small", the prompt set
    cgc : "code" (cause/effect lists of every step) or "equations" (judged edges); ``paper`` only

    Returns
    -------
    list of two messages (system, user).
    """
    last = len(steps) - 1
    if not _check_style(style):
        tail = GCA_JOINT_TEMPLATE.format(last=last, max_deviations=max_deviations, max_edges=max_edges)
        return _messages(question, steps, budget, tail)
    mdi = "Task 1, mistake steps (MDI). " + pp.MDI_TASK.format(cap=_cap(" Mark at most {cap}.", max_deviations))
    task2, example2 = _cgc_task(cgc, last, max_edges, "you marked in task 1")
    task = mdi + "\n\nTask 2, causal graph (CGC). " + task2
    example = pp.MDI_EXAMPLE + ("\n\n" + example2 if example2 else "")
    return paper_messages(steps, budget, [f"Steps are numbered 0 to {last}."], task, example)


def mdi_messages(
    question: str, steps: Sequence[Step], *, max_deviations: int | None, budget: int | None = None, style: str = "paper"
) -> list[Message]:
    """Messages of MDI alone (``mdi_cgc="split"``); parameters as in :func:`gca_joint_messages`."""
    last = len(steps) - 1
    if not _check_style(style):
        return _messages(question, steps, budget, MDI_TEMPLATE.format(last=last, max_deviations=max_deviations))
    task = pp.MDI_TASK.format(cap=_cap(" Mark at most {cap}.", max_deviations))
    return paper_messages(steps, budget, [f"Steps are numbered 0 to {last}."], task, pp.MDI_EXAMPLE)


def cgc_messages(
    question: str,
    steps: Sequence[Step],
    deviations: Sequence[tuple[int, str]] | str,
    *,
    max_edges: int | None,
    budget: int | None = None,
    style: str = "paper",
    cgc: str = "code",
) -> list[Message]:
    """Messages of CGC alone, given MDI's deviations as ``(step, reason)`` pairs (or a str)."""
    last, devs = len(steps) - 1, format_deviations(deviations)
    if not _check_style(style):
        return _messages(question, steps, budget, CGC_TEMPLATE.format(last=last, deviations=devs, max_edges=max_edges))
    task, example = _cgc_task(cgc, last, max_edges, "listed in the mistake reasons")
    return paper_messages(
        steps, budget, [f"Steps are numbered 0 to {last}.", _mistakes_input(deviations)], task, example
    )


def hg_messages(
    question: str,
    truth: str | None,
    steps: Sequence[Step],
    deviations: Sequence[tuple[int, str]] | str,
    graph: Sequence[tuple[int, int]] | Sequence[StepLinks] | str,
    *,
    budget: int | None = None,
    style: str = "paper",
) -> list[Message]:
    """Messages of HG: question, truth (None = not shown), trace, deviations with reasons and the
    graph (eq. 7); ``graph`` is edges, per-step :class:`StepLinks` or a str."""
    last = len(steps) - 1
    if _check_style(style):
        inputs = [_question(question), truth_line(truth), _mistakes_input(deviations), _graph_input(graph)]
        return paper_messages(steps, budget, inputs, pp.HG_TASK.format(last=last), pp.HG_EXAMPLE)
    tail = HG_TEMPLATE.format(
        truth=delimit("answer", truth) if truth is not None else "not given",
        deviations=format_deviations(deviations),
        edges=format_graph(graph),
        last=last,
    )
    if truth is None:
        tail = tail.replace("The correct answer is not given.", _NO_TRUTH)
    return _messages(question, steps, budget, tail)


def correct_messages(
    question: str,
    truth: str | None,
    steps: Sequence[Step],
    deviations: Sequence[tuple[int, str]] | str,
    graph: Sequence[tuple[int, int]] | Sequence[StepLinks] | str,
    *,
    max_chars: int | None,
    budget: int | None = None,
    style: str = "paper",
    variant: str = "algorithm_generated",
) -> list[Message]:
    """Messages of Correct: question, truth (None = not shown), trace, deviations and graph (eq. 8).

    Parameters
    ----------
    variant : "algorithm_generated" or "hand_crafted", the released code's two prompts (``paper`` only;
        :func:`~agentcausal.attribution.dcfa.settings.correct_variant_for`)

    Raises
    ------
    ValueError
        If ``variant`` is unknown.
    """
    last = len(steps) - 1
    chars = "" if max_chars is None else f", at most {max_chars} characters"
    if _check_style(style):
        if variant not in pp.CORRECT_TASKS:
            raise ValueError(f"unknown Correct variant {variant!r}; choose from {sorted(pp.CORRECT_TASKS)}")
        inputs = [_question(question), truth_line(truth), _mistakes_input(deviations), _graph_input(graph)]
        task = pp.CORRECT_TASKS[variant] + "\n" + pp.CORRECT_FORMATS[variant].format(last=last, max_chars=chars)
        return paper_messages(steps, budget, inputs, task, pp.CORRECT_EXAMPLES[variant])
    tail = CORRECT_TEMPLATE.format(
        truth=delimit("answer", truth) if truth is not None else "not given",
        deviations=format_deviations(deviations),
        edges=format_graph(graph),
        last=last,
        max_chars=chars,
    )
    if truth is None:
        tail = tail.replace("The correct answer is not given.", _NO_TRUTH)
    return _messages(question, steps, budget, tail)


def _root_line(root: RootCause | str | None) -> str:
    if root is None:
        return "Root-cause step: none named."
    if isinstance(root, str):
        return "Root-cause step: " + root
    effects = ", ".join(map(str, root.effects)) or "none"
    return f"Root-cause step: step {root.step} ({escape_data(root.agent)}); the steps it directly affects: {effects}."


def simulation_messages(
    question: str,
    steps: Sequence[Step] | str,
    revised_through: int | str,
    *,
    truth: str | None = None,
    budget: int | None = None,
    style: str = "paper",
    variant: str = "equations",
    root: RootCause | str | None = None,
) -> list[Message]:
    """Messages of Simulation of one counterfactual trace (eq. 9).

    Parameters
    ----------
    question : str
    steps : sequence of Step, the counterfactual trace (corrected 0..i, original after), or a str
    revised_through : int, i (-1 when nothing is revised), or a str; said in the prompt under
        ``variant="equations"`` and ``small`` only
    truth : str or None, shown before the steps when given (``simulation_sees_truth``)
    budget : int or None
    style : "paper" or "small"
    variant : "code" (the released prompt: the root-cause step named, or none for S(i-1)) or
        "equations" (neutral); ``paper`` only
    root : RootCause, str or None, the step ``variant="code"`` names; None = none (S(i-1))

    Returns
    -------
    list of two messages.
    """
    if isinstance(revised_through, str):
        revision = f"Steps 0 to {revised_through} above are revised."
    elif revised_through < 0:
        revision = "No step above is revised."
    else:
        revision = f"Steps 0 to {revised_through} above are revised."
    truth_input = [] if truth is None else [truth_line(truth)]
    if _check_style(style):
        if variant == "code":
            return paper_messages(
                steps, budget, [_question(question), *truth_input, _root_line(root)], pp.SIMULATION_TASK
            )
        return paper_messages(
            steps, budget, [_question(question), *truth_input], pp.NEUTRAL_SIMULATION_TASK.format(revision=revision)
        )
    truth_first = "" if truth is None else truth_line(truth) + "\n"
    return _messages(question, steps, budget, SIMULATION_TEMPLATE.format(revision=revision), truth_first)


def judge_messages(question: str, outcome: str) -> list[Message]:
    """Messages of the no-truth judge: the question and one simulated outcome (no trace, no truth).

    Returns
    -------
    list of two messages.
    """
    user = delimit("question", question) + "\n" + JUDGE_TEMPLATE.format(outcome=delimit("data", outcome))
    return [{"role": "system", "content": SYSTEM_TEMPLATE}, {"role": "user", "content": user}]
