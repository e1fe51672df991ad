r"""All-at-Once: the whole trace in one call; the model names the decisive agent, step and reason.

The first Who&When baseline. One prompt holds the task, optionally the correct
answer, and the whole trace; the reply is an :class:`AllAtOnceReply`.

* ``paper`` (:data:`PAPER_TEMPLATE`, as Who&When's released code
  ``Automated_FA/Lib/utils.py``, ``all_at_once``): the trace as ``speaker:
  content`` lines with **no step numbers**, the speaker being the full
  Hand-Crafted role (:func:`~agentcausal.traces.render.render_conversation`);
  the prompt explains how steps are counted by the code's example (four
  entries of three agents, counted from 0) and asks for a forced single
  choice: the agent directly responsible for the wrong solution (one agent
  even when none made an obvious mistake), the step where it first made the
  mistake, and the reason, in that order. The **agent is free text**, as the
  original reads "Agent Name: ..." from the reply; it is mapped after the
  reply to one of the trace's ``Step.agent`` names (:func:`map_agent_name`: the
  normalisation of :func:`~agentcausal.traces.model.normalise_agent`, then the
  first run of word characters, which both papers' evaluators take from the
  reply with ``Agent Name:\s*([\w_]+)``, compared case-folded). A name that
  maps to no agent of the trace is kept as it is and scores as a wrong agent,
  not as a failure (``details["agent_mapped"]`` False). The step is
  range-checked (schema bounds; an out-of-range step goes through the
  gateway's repair loop).
* ``small`` (:data:`TEMPLATE`): numbered steps, ``agent`` an enum of the trace's
  own agents, and the model may answer "undetermined" (``step`` and ``agent``
  null). A step outside ``0..n-1`` is recorded as undetermined with the raw
  value in ``details["invalid_step"]``. When the reply names a step but no
  agent, the speaker of that step is taken.

Remaining deviations from Who&When's code under ``paper``, each for its
reason: the reply is one JSON object (schema-constrained: a parser of free
text is the part of the original most sensitive to the model's formatting);
the trace sits inside our delimiters with look-alike tags escaped and is
shortened to the context budget (the original sends it whole: a guard
against text in the trace steering the judge, and a fit to the window); the
completion cap is the profile's budget
(:func:`~agentcausal.settings.completion_budget`) where Who&When's code sends
``max_tokens=1024`` (its CLI default), because the reasoning models the DCFA
paper runs spend hidden reasoning from the same budget and a fixed 1024 would
cut them off; the system message is the source code's own role sentence
(:data:`PAPER_ROLE`) followed by our data notice and a one-line task asking
for JSON; case is ignored when the agent's name is mapped (both evaluators
compare case-sensitively, so "orchestrator" would score as a wrong agent
there).

**``dcfa_paper``** (DCFA's copy of the same ``Automated_FA/Lib/utils.py``,
github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution, which ran DCFA's Table 1): the same
prompt, sent at temperature 0 (where the profile takes one), and a reply still empty after the
gateway's repairs sent again, 3 calls in all
(:class:`~agentcausal.attribution.baseline_settings.WhoWhenSettings`). A set ``max_tokens`` (the code's
1024) is sent as it is, under ``max_completion_tokens`` on GPT-5 (:class:`~agentcausal.llm.dialect.FixedCap`).

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated
Failure Attribution of LLM Multi-Agent Systems." ICML 2025. arXiv:2505.00212,
section 4.1 (All-at-Once); code github.com/ag2ai/Agents_Failure_Attribution (MIT).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, create_model, field_validator

from agentcausal.attribution.baseline_prompts import (
    Prompt,
    agent_names,
    baseline_messages,
    bounded_step,
    decisive_verdict,
    enum_choice,
    reply_text,
    task_block,
    text_fields,
)
from agentcausal.attribution.baseline_settings import (
    BASELINE_PRESETS,
    DCFA_PAPER_PRESET,
    WhoWhenSettings,
    ask_baseline,
    baseline_spec,
    trace_budget,
)
from agentcausal.attribution.candidates import single_answer
from agentcausal.attribution.evidence import evidence_fields
from agentcausal.llm import LLMCall
from agentcausal.traces.model import Attribution, Trace, normalise_agent
from agentcausal.traces.render import render_conversation, render_steps_info

__all__ = [
    "NAME",
    "PROMPT_VERSION",
    "PROMPT_VERSIONS",
    "PRESETS",
    "TEMPLATE",
    "PAPER_TEMPLATE",
    "PAPER_ROLE",
    "AllAtOnceReply",
    "AllAtOnceSettings",
    "Prompt",
    "build_messages",
    "reply_model",
    "ReplyShape",
    "reply_shape",
    "map_agent_name",
    "run",
]

NAME = "all_at_once"
#: version of each prompt set
PROMPT_VERSIONS = {"paper": "all_at_once/paper-3", "small": "all_at_once/3"}
PROMPT_VERSION = "+".join(PROMPT_VERSIONS[k] for k in sorted(PROMPT_VERSIONS))

#: the ``paper`` user message (Who&When's All-at-Once question, its counting example included); fields: task, trace
PAPER_TEMPLATE = (
    "{task}\n\nIdentify which agent made an error, at which step, and explain the reason for the error. "
    "Here is the conversation:\n\n{trace}\n\n"
    "Based on this conversation, predict the following:\n"
    "1. The name of the agent who made a mistake that is directly responsible for the wrong solution to the "
    "problem. If no agent made an obvious mistake, decide on one single agent anyway. Give the name as the "
    "conversation shows it.\n"
    "2. The step at which that agent first made a mistake. For example, in a conversation structured as "
    '{{"agent a": "xx", "agent b": "xxxx", "agent c": "xxxxx", "agent a": "xxxxxxx"}}, each entry is one '
    "step where an agent speaks, and the x stand for what it says. If the mistake is in agent c's entry, the "
    "step number is 2; if it is in the second entry of agent a, the step number is 3, and so on. Give the "
    "number of the step where the first mistake occurred.\n"
    '3. The reason for your prediction.\nAnswer with "agent", then "step", then "reason".'
)

#: the ``paper`` system message's role sentence (Who&When's code)
PAPER_ROLE = "You are a helpful assistant skilled in analyzing conversations."

#: the user message; fields: task, trace, n_last
TEMPLATE = (
    "{task}\n\nThe run, steps 0 to {n_last}:\n{trace}\n\n"
    "Which agent made the decisive error, and at which step number? "
    "Use null for agent and step only if you cannot tell."
)


class AllAtOnceReply(BaseModel):
    """Your verdict on the decisive error of the whole run."""

    reason: str = Field(description="One or two sentences: what went wrong at that step.")
    agent: str | None = Field(
        description="Name of the agent who made the decisive error, as shown; null if undetermined."
    )
    step: int | None = Field(description="Step number of the decisive error; null if undetermined.")


class AllAtOnceSettings(WhoWhenSettings):
    """Settings of All-at-Once (see :class:`~agentcausal.attribution.baseline_settings.BaselineSettings`).

    Attributes
    ----------
    reason_chars : int or None, the most characters of the reply's reason (schema ``maxLength``,
        longer text cut); None = no cap (``paper``: Who&When's code asks for "the reason for your
        prediction" with no length and bounds only the completion); ``small``: 300
    quote_evidence : bool, ask for one more reply field, ``evidence``, a verbatim quote from the
        blamed step (kept only when it is a substring of it: :mod:`agentcausal.attribution.evidence`).
        Beyond the paper; False in every preset, so what ``paper`` and ``small`` send is unchanged.
    """

    reason_chars: int | None = Field(None, ge=40)
    quote_evidence: bool = False


#: presets (:mod:`agentcausal.settings`)
PRESETS = {
    "paper": {},
    "small": {**BASELINE_PRESETS["small"], "reason_chars": 300},
    # DCFA's copy of the released code: the same prompt, temperature 0, an empty answer sent again (3 calls)
    "dcfa_paper": dict(DCFA_PAPER_PRESET),
}


def reply_model(
    agents: tuple[str, ...], n_steps: int, forced: bool, reason_chars: int | None = None
) -> type[AllAtOnceReply]:
    """The reply model of one trace. ``forced`` (``paper``): ``agent`` free text, then ``step`` bounded
    to ``0..n_steps-1``, then ``reason``, all required (the original's reply order); otherwise
    ``agent`` an enum of ``agents`` and agent and step may be null; ``reason`` carries
    ``maxLength = reason_chars`` (none when None). One class per distinct shape (cached): ``paper``'s
    depends on the step count only, ``small``'s on the agents (:func:`reply_shape` sends its schema
    without a class per trace)."""
    return _forced_model(n_steps, reason_chars) if forced else _choice_model(agents, reason_chars)


@functools.lru_cache(maxsize=256)
def _forced_model(n_steps: int, reason_chars: int | None) -> type[AllAtOnceReply]:
    # not a subclass (the original's field order) but the same fields, agent and step required
    return cast(
        type[AllAtOnceReply],
        create_model(
            "AllAtOnceReply",
            __doc__=AllAtOnceReply.__doc__,
            agent=(
                str,
                Field(
                    description="Name of the agent who made the mistake directly responsible for the "
                    "wrong solution, as the conversation shows it."
                ),
            ),
            step=bounded_step(n_steps, "Step number of that agent's first mistake, counted from 0."),
            reason=(reply_text(reason_chars), Field(description="The reason for your prediction.")),
        ),
    )


@functools.lru_cache(maxsize=256)
def _choice_model(agents: tuple[str, ...], reason_chars: int | None) -> type[AllAtOnceReply]:
    agent_t = enum_choice(agents)
    return create_model(
        "AllAtOnceReply",
        __base__=AllAtOnceReply,
        **text_fields(AllAtOnceReply, reason_chars, "reason"),
        agent=(
            agent_t | None,
            Field(description="Name of the agent who made the decisive error, as shown; null if undetermined."),
        ),
    )


#: stands for the agents in the ``small`` schema template (no agent is named so: a NUL is not in a name)
_AGENTS_SLOT = "\x00agents"


@functools.lru_cache(maxsize=64)
def _choice_template(reason_chars: int | None) -> dict[str, Any]:
    """``small``'s reply schema with :data:`_AGENTS_SLOT` as the one agent (built once per cap)."""
    return _choice_model((_AGENTS_SLOT,), reason_chars).model_json_schema()


def _with_agents(node: Any, agents: list[str]) -> Any:
    """A copy of a schema template with the slot's enum replaced by ``agents`` (the rest copied as it is)."""
    if isinstance(node, dict):
        if node.get("enum") == [_AGENTS_SLOT]:
            return {k: (list(agents) if k == "enum" else copy.deepcopy(v)) for k, v in node.items()}
        return {k: _with_agents(v, agents) for k, v in node.items()}
    if isinstance(node, list):
        return [_with_agents(v, agents) for v in node]
    return node


class _AnyAgentReply(AllAtOnceReply):
    """``small``'s reply checked against the agents of the validation context (``{"agents": (...)}``); an invalid
    reply is validated again by the trace's own model (:func:`reply_model`), so its error reads as that model's."""

    @field_validator("agent")
    @classmethod
    def _one_of_the_agents(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and value not in (info.context or {}).get("agents", ()):
            raise ValueError("not an agent of the trace")  # replaced by the trace model's error below
        return value

    @classmethod
    def model_validate_json(
        cls,
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        extra: Any = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Any:
        kw: dict[str, Any] = dict(strict=strict, extra=extra, by_alias=by_alias, by_name=by_name)
        try:
            return super().model_validate_json(json_data, context=context, **kw)
        except ValidationError:
            agents, reason_chars = (context or {}).get("agents", ()), getattr(cls, "_reason_chars", None)
            return _choice_model(tuple(agents), reason_chars).model_validate_json(json_data, **kw)


@functools.lru_cache(maxsize=64)
def _any_agent_model(reason_chars: int | None) -> type[AllAtOnceReply]:
    model = create_model(
        "AllAtOnceReply", __base__=_AnyAgentReply, **text_fields(AllAtOnceReply, reason_chars, "reason")
    )
    model._reason_chars = reason_chars  # type: ignore[attr-defined]  # read by model_validate_json's fallback
    return model


class ReplyShape(NamedTuple):
    """What :meth:`~agentcausal.llm.gateway.Gateway.structured` gets for one trace: the reply model, and the
    JSON schema and validation context to send with it (None: the model's own)."""

    model: type[AllAtOnceReply]
    schema: dict[str, Any] | None
    context: Any


def reply_shape(agents: tuple[str, ...], n_steps: int, forced: bool, reason_chars: int | None = None) -> ReplyShape:
    """The reply of one trace as :func:`reply_model` defines it, without a pydantic class per trace.

    ``paper`` (``forced``): :func:`reply_model` itself (one class per step count). ``small``: one class per
    ``reason_chars`` that reads the agents from the validation context, and the schema of
    ``reply_model(agents, ...)`` copied from a template (equal to it, so requests and cache keys are
    unchanged); building a class and its schema per trace cost about 2 ms of CPU per call.

    >>> shape = reply_shape(("Coder", "WebSurfer"), 4, False)
    >>> shape.schema == reply_model(("Coder", "WebSurfer"), 4, False).model_json_schema()
    True
    >>> shape.model.model_validate_json('{"reason": "r", "agent": "Coder", "step": 1}', context=shape.context).agent
    'Coder'
    """
    if forced:
        return ReplyShape(reply_model(agents, n_steps, True, reason_chars), None, None)
    return ReplyShape(
        _any_agent_model(reason_chars), _with_agents(_choice_template(reason_chars), list(agents)), {"agents": agents}
    )


def build_messages(trace: Trace, settings: AllAtOnceSettings, budget: int | None) -> Prompt:
    """The chat messages for one trace.

    Parameters
    ----------
    trace : Trace
    settings : AllAtOnceSettings
    budget : int or None, characters of trace text allowed

    Returns
    -------
    Prompt(messages, shortened)
    """
    paper = settings.prompts == "paper"
    rendered = render_conversation(trace.steps, budget) if paper else render_steps_info(trace.steps, budget)
    template = PAPER_TEMPLATE if paper else TEMPLATE
    user = template.format(
        task=task_block(trace, settings.with_ground_truth), trace=rendered.text, n_last=len(trace) - 1
    )
    role = PAPER_ROLE if settings.prompts == "paper" else None
    return Prompt(
        baseline_messages("Name the agent and the step of the decisive error.", user, role), rendered.shortened
    )


_WORD = re.compile(r"\w+")


def map_agent_name(name: str | None, agents: Sequence[str]) -> str | None:
    r"""The trace agent a free-text agent name stands for, or None.

    Tried in order: the name as it is; :func:`~agentcausal.traces.model.normalise_agent`
    equality (case, spaces, ``_``, ``-``, markdown and a trailing parenthetical
    ignored: ``"Orchestrator (thought)"``); the first run of word characters of
    the name against that of each agent, case-folded (both papers' evaluators
    read the agent from a reply as ``Agent Name:\s*([\w_]+)``). The first agent
    that matches, in the order given, wins.

    Parameters
    ----------
    name : str or None, the reply's agent
    agents : sequence of str, the trace's ``Step.agent`` names (:func:`agent_names`)

    Returns
    -------
    str or None

    Examples
    --------
    >>> map_agent_name("orchestrator", ["Orchestrator", "WebSurfer"])
    'Orchestrator'
    >>> map_agent_name("Orchestrator (-> WebSurfer)", ["Orchestrator", "WebSurfer"])
    'Orchestrator'
    >>> map_agent_name("**Web_Surfer**", ["Orchestrator", "WebSurfer"]), map_agent_name("Planner", ["A"])
    ('WebSurfer', None)
    """
    name = (name or "").strip()
    if not name:
        return None
    if name in agents:
        return name
    norm = normalise_agent(name)
    for a in agents:
        if norm and normalise_agent(a) == norm:
            return a
    m = _WORD.search(name)
    token = m.group(0).casefold() if m else ""
    for a in agents:
        ma = _WORD.search(a)
        if token and ma and ma.group(0).casefold() == token:
            return a
    return None


def run(trace: Trace, call: LLMCall, settings: AllAtOnceSettings) -> Attribution:
    """Attribute one trace with All-at-Once.

    Parameters
    ----------
    trace : Trace, n steps
    call : LLMCall, the run's call context; calls stage ``baseline`` once
    settings : AllAtOnceSettings

    Returns
    -------
    Attribution with the predicted 0-based step and agent (None when undetermined);
    ``details`` holds ``shortened`` (steps cut to fit the budget), under ``paper``
    ``agent_reply`` (the name as replied) and ``agent_mapped`` (whether it named a
    trace agent), and under ``small``, for an out-of-range reply, ``invalid_step``.

    Raises
    ------
    StructuredOutputError, EndpointUnreachableError, LLMCallError
        From the gateway (:func:`~agentcausal.attribution.jobs.run_method` turns them into an error record).

    Examples
    --------
    >>> from agentcausal.attribution.jobs import run_method  # doctest: +SKIP
    >>> run_method(trace, "all_at_once", gw).step  # doctest: +SKIP
    3
    """
    messages, shortened = build_messages(trace, settings, trace_budget(call, settings))
    agents, forced = agent_names(trace), settings.prompts == "paper"
    model, schema, context = reply_shape(agents, len(trace), forced, settings.reason_chars)
    if settings.quote_evidence:  # one more reply field (off in every preset), added to the trace's own model
        model, schema, context = reply_model(agents, len(trace), forced, settings.reason_chars), None, None
    reply = ask_baseline(call, settings, messages, model, schema=schema, context=context)
    details: dict[str, object] = {"shortened": list(shortened), "prompt_version": PROMPT_VERSIONS[settings.prompts]}
    if settings.prompts == "paper":
        mapped = map_agent_name(reply.agent, agent_names(trace))
        details.update(agent_reply=reply.agent, agent_mapped=mapped is not None)
        step, agent = reply.step, mapped or (reply.agent or "").strip() or None  # paper: agent is a str
    else:
        step, agent = decisive_verdict(trace, reply.step, reply.agent, details)
    return Attribution(
        trace_id=trace.id,
        method=NAME,
        step=step,
        agent=agent,
        reason=reply.reason,
        prompt_version=PROMPT_VERSIONS[settings.prompts],
        details=details,
        candidates=single_answer(trace, step),
        **evidence_fields(getattr(reply, "evidence", None), trace.steps, step, asked=settings.quote_evidence),
    )


SPEC = baseline_spec(NAME, run, AllAtOnceSettings, PRESETS, PROMPT_VERSION)
