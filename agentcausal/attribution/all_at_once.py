"""All-at-Once: the whole trace in one call; the model names the decisive agent, step and reason.

The first Who&When baseline. One prompt holds the task, optionally the correct
answer, and the whole trace (numbered, delimited, shortened to the stage's
context budget); the reply is an :class:`AllAtOnceReply`. The model may answer
"undetermined" (``step`` null). A step outside ``0..n-1`` is recorded as
undetermined with the raw value in ``details["invalid_step"]``. When the reply
names a step but no agent, the speaker of that step is taken.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated
Failure Attribution of LLM Multi-Agent Systems." ICML 2025. arXiv:2505.00212,
section 4.1 (All-at-Once).
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel, Field

from agentcausal.attribution.common import (
    BASELINE_STAGE,
    BaselineSettings,
    system_prompt,
    task_block,
    trace_budget,
    usage_item,
)
from agentcausal.attribution.registry import MethodSpec, register
from agentcausal.llm import Gateway
from agentcausal.llm.replies import ShortText
from agentcausal.traces.model import Attribution, Trace
from agentcausal.traces.render import render_steps_info

__all__ = ["NAME", "PROMPT_VERSION", "TEMPLATE", "AllAtOnceReply", "AllAtOnceSettings", "Prompt", "build_messages", "run"]

NAME = "all_at_once"
PROMPT_VERSION = "all_at_once/2"

#: the user message; fields: task, trace, n_last
TEMPLATE = (
    "{task}\n\nThe run, steps 0 to {n_last}:\n{trace}\n\n"
    "Which agent made the decisive error, and at which step number? "
    "Use null for agent and step only if you cannot tell."
)


class AllAtOnceReply(BaseModel):
    """Your verdict on the decisive error of the whole run."""

    reason: ShortText(300) = Field(description="One or two sentences: what went wrong at that step.")
    agent: str | None = Field(description="Name of the agent who made the decisive error, as shown; null if undetermined.")
    step: int | None = Field(description="Step number of the decisive error; null if undetermined.")


class AllAtOnceSettings(BaselineSettings):
    """Settings of All-at-Once (see :class:`~agentcausal.attribution.common.BaselineSettings`)."""


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
    user = TEMPLATE.format(task=task_block(trace, settings.with_ground_truth), trace=rendered.text,
                           n_last=len(trace) - 1)
    sys = system_prompt("Name the agent and the step of the decisive error.")
    return Prompt([{"role": "system", "content": sys}, {"role": "user", "content": user}], rendered.shortened)


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
        From the gateway (:func:`~agentcausal.attribution.common.run_method` turns them into an error record).

    Examples
    --------
    >>> from agentcausal.attribution.common import run_method  # doctest: +SKIP
    >>> run_method(trace, "all_at_once", gw).step  # doctest: +SKIP
    3
    """
    messages, shortened = build_messages(trace, settings, trace_budget(gw, settings))
    reply = gw.structured(BASELINE_STAGE, messages, AllAtOnceReply, item=usage_item(trace.id, NAME),
                          max_tokens=settings.max_tokens)
    details: dict[str, object] = {"shortened": list(shortened)}
    step, agent = reply.step, (reply.agent or "").strip() or None
    if step is not None and not 0 <= step < len(trace):
        details["invalid_step"] = step
        step = None
    if step is not None and agent is None:
        agent = trace.steps[step].agent
    return Attribution(trace_id=trace.id, method=NAME, step=step, agent=agent, reason=reply.reason,
                       prompt_version=PROMPT_VERSION, details=details)


SPEC = register(MethodSpec(name=NAME, run=run, settings_model=AllAtOnceSettings, prompt_version=PROMPT_VERSION,
                           stages=(BASELINE_STAGE,)))
