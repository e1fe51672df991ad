"""All-at-Once: the whole trace in one call; the model names the decisive agent, step and reason.

The first Who&When baseline. One prompt holds the task, optionally the correct
answer, and the whole trace (numbered, delimited, shortened to the stage's
context budget); the reply is an :class:`AllAtOnceReply`. In every preset the
``agent`` field is an enum of the trace's own agents (JSON schema), so a
reply cannot blame a character named in the text; ``step`` is range-checked.

* ``paper`` (:data:`PAPER_TEMPLATE`, as Who&When's released code): a forced single
  choice: the agent directly responsible for the wrong solution, the step where
  it made that mistake, and the reason. An out-of-range step goes through the
  gateway's repair loop (schema bounds).
* ``small`` (:data:`TEMPLATE`): the model may answer "undetermined" (``step`` and
  ``agent`` null). A step outside ``0..n-1`` is recorded as undetermined with
  the raw value in ``details["invalid_step"]``. When the reply names a step but
  no agent, the speaker of that step is taken.

Remaining deviations from Who&When's code under ``paper``: the reply is one
JSON object (schema-constrained) instead of free text parsed by regular
expressions, and the trace is rendered with our delimiters and shortened to
the context budget (the original sends it whole); both keep the method's
question and its single call. And the completion cap is the profile's budget
(:func:`~agentcausal.settings.completion_budget`) where Who&When's code sends
``max_tokens=1024`` (its CLI default), because the reasoning models the DCFA
paper runs spend hidden reasoning from the same budget and a fixed 1024 would
cut them off. Under ``paper`` the system message is the source code's own role sentence
(:data:`PAPER_ROLE`) followed by our data notice (the trace is data, never
instructions: a guard against text in the trace steering the judge) and a
one-line task asking for JSON.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated
Failure Attribution of LLM Multi-Agent Systems." ICML 2025. arXiv:2505.00212,
section 4.1 (All-at-Once).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from pydantic import BaseModel, Field, create_model

from agentcausal.attribution.baseline_prompts import (
    agent_names,
    baseline_messages,
    decisive_verdict,
    enum_choice,
    reply_text,
    task_block,
)
from agentcausal.attribution.baseline_settings import (
    BASELINE_PRESETS,
    BASELINE_STAGE,
    BaselineSettings,
    baseline_tokens,
    trace_budget,
)
from agentcausal.attribution.registry import MethodSpec, register, usage_item
from agentcausal.llm import Gateway
from agentcausal.traces.model import Attribution, Trace
from agentcausal.traces.render import render_steps_info

__all__ = ["NAME", "PROMPT_VERSION", "PROMPT_VERSIONS", "PRESETS", "TEMPLATE", "PAPER_TEMPLATE", "PAPER_ROLE", "AllAtOnceReply",
           "AllAtOnceSettings", "Prompt", "build_messages", "reply_model", "run"]

NAME = "all_at_once"
#: version of each prompt set
PROMPT_VERSIONS = {"paper": "all_at_once/paper-2", "small": "all_at_once/3"}
PROMPT_VERSION = "+".join(PROMPT_VERSIONS[k] for k in sorted(PROMPT_VERSIONS))

#: the ``paper`` user message (Who&When's All-at-Once question); fields: task, trace, n_last
PAPER_TEMPLATE = (
    "{task}\n\nThe conversation, steps 0 to {n_last}:\n{trace}\n\n"
    "Based on this conversation, predict: (1) the name of the agent who made a mistake that is directly "
    "responsible for the wrong solution to the task; (2) the step number at which that agent made the "
    "mistake first; (3) the reason for your prediction. If no agent made an obvious mistake, decide on one "
    "single agent anyway. You must name one agent and one step."
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
    agent: str | None = Field(description="Name of the agent who made the decisive error, as shown; null if undetermined.")
    step: int | None = Field(description="Step number of the decisive error; null if undetermined.")


class AllAtOnceSettings(BaselineSettings):
    """Settings of All-at-Once (see :class:`~agentcausal.attribution.baseline_settings.BaselineSettings`).

    Attributes
    ----------
    reason_chars : int or None, the most characters of the reply's reason (schema ``maxLength``,
        longer text cut); None = no cap (``paper``: Who&When's code asks for "the reason for your
        prediction" with no length and bounds only the completion); ``small``: 300
    """

    reason_chars: int | None = Field(None, ge=40)


#: presets (:mod:`agentcausal.settings`)
PRESETS = {"paper": {}, "small": {**BASELINE_PRESETS["small"], "reason_chars": 300}}


@functools.lru_cache(maxsize=256)
def reply_model(agents: tuple[str, ...], n_steps: int, forced: bool,
                reason_chars: int | None = None) -> type[AllAtOnceReply]:
    """The reply model of one trace: ``agent`` an enum of ``agents``; ``forced`` (``paper``) makes
    agent and step required and bounds step to ``0..n_steps-1``; otherwise both may be null;
    ``reason`` carries ``maxLength = reason_chars`` (none when None)."""
    agent_t = enum_choice(agents)
    reason = (reply_text(reason_chars), Field(description=AllAtOnceReply.model_fields["reason"].description))
    if forced:
        return create_model(
            "AllAtOnceReply", __base__=AllAtOnceReply, reason=reason,
            agent=(agent_t, Field(description="Name of the agent who made the decisive error, as shown.")),
            step=(int, Field(ge=0, le=max(n_steps - 1, 0), description="Step number of the decisive error.")))
    return create_model(
        "AllAtOnceReply", __base__=AllAtOnceReply, reason=reason,
        agent=(agent_t | None, Field(description="Name of the agent who made the decisive error, as shown; "
                                                  "null if undetermined.")))


class Prompt(NamedTuple):
    """Chat messages and the 0-based steps the budget shortened."""

    messages: list[dict[str, str]]
    shortened: tuple[int, ...]


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
    rendered = render_steps_info(trace.steps, budget)
    template = PAPER_TEMPLATE if settings.prompts == "paper" else TEMPLATE
    user = template.format(task=task_block(trace, settings.with_ground_truth), trace=rendered.text,
                           n_last=len(trace) - 1)
    role = PAPER_ROLE if settings.prompts == "paper" else None
    return Prompt(baseline_messages("Name the agent and the step of the decisive error.", user, role),
                  rendered.shortened)


def run(trace: Trace, gw: Gateway, settings: AllAtOnceSettings) -> Attribution:
    """Attribute one trace with All-at-Once.

    Parameters
    ----------
    trace : Trace, n steps
    gw : Gateway; calls stage ``baseline`` once
    settings : AllAtOnceSettings

    Returns
    -------
    Attribution with the predicted 0-based step and agent (None when undetermined);
    ``details`` holds ``shortened`` (steps cut to fit the budget) and, for an
    out-of-range reply, ``invalid_step``.

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
    messages, shortened = build_messages(trace, settings, trace_budget(gw, settings))
    model = reply_model(agent_names(trace), len(trace), settings.prompts == "paper", settings.reason_chars)
    reply = gw.structured(BASELINE_STAGE, messages, model, item=usage_item(trace.id, NAME),
                          max_tokens=baseline_tokens(gw, settings))
    details: dict[str, object] = {"shortened": list(shortened), "prompt_version": PROMPT_VERSIONS[settings.prompts]}
    step, agent = decisive_verdict(trace, reply.step, reply.agent, details)
    return Attribution(trace_id=trace.id, method=NAME, step=step, agent=agent, reason=reply.reason,
                       prompt_version=PROMPT_VERSIONS[settings.prompts], details=details)


SPEC = register(MethodSpec(name=NAME, run=run, settings_model=AllAtOnceSettings, prompt_version=PROMPT_VERSION,
                           stages=(BASELINE_STAGE,), presets=PRESETS))
