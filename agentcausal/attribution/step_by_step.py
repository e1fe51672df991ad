"""Step-by-Step: walk the steps in order and stop at the first one judged to be in error.

The second Who&When baseline. For step ``i = 0, 1, ...`` one prompt shows the
task, optionally the correct answer, and the steps ``0..i`` (numbered,
delimited, within the context budget), and asks about step ``i``
(:class:`StepVerdict`). The first "yes" ends the walk; its speaker is the
predicted agent (so the agent is always one of the trace's own).

* ``paper`` (:data:`PAPER_TEMPLATE`, as Who&When's released code
  ``Automated_FA/Lib/utils.py``, ``step_by_step``): the steps so far as
  ``Step i - speaker: content`` lines, the speaker being the full Hand-Crafted
  role (:func:`~agentcausal.traces.render.render_conversation`); does the most
  recent step contain an error that could hinder the problem-solving process
  or lead to an incorrect solution, without being overly critical (errors that
  clearly derail the process)? The reply (:class:`StepErrorVerdict`) says yes
  or no first, then the reason, as the original's "1. Yes/No. 2. Reason:";
  the schema states the same criterion as the prompt.
* ``variant="dcfa"`` (preset ``dcfa_paper``; :data:`DCFA_TEMPLATE`, as DCFA's copy of the same file,
  github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution ``Automated_FA/Lib/utils.py``,
  which its Table 1 ran): the same question plus "To make rigorous speculations, even a little bit
  is possible" and a request for a score of the probability that the step contains an error; the
  reply (:class:`DcfaStepVerdict`) is yes/no, the score, then the reason, as the original's
  "1. Yes/No. 2. Score: 3. Reason:". When no step gets a yes (``on_no_yes="max_score"``) the step with
  the highest score is predicted (the first of equal scores, as ``score_list.index(max(score_list))``)
  with **no agent**: the released code prints only its step number, so its ``evaluate.py`` scores the
  agent as wrong (``Unknown_Agent``). The preset also sends temperature 0 and re-sends an empty answer
  up to three times (:class:`~agentcausal.attribution.baseline_settings.WhoWhenSettings`).
* ``small`` (:data:`TEMPLATE`): is step ``i`` the decisive error that made the run fail?

Fixed bug of the released code: its question about the most recent step is
not an f-string, so the model reads "(Step {idx})" literally; here the step's
number is filled in.

Remaining deviations from Who&When's code under ``paper``: a JSON verdict
(schema-constrained boolean) instead of a free-text "Yes"/"No" parsed from the
reply, and the steps so far inside our delimiters with look-alike tags escaped
and shortened to the context budget; the completion cap is the profile's budget
(:func:`~agentcausal.settings.completion_budget`) where Who&When's code sends
``max_tokens=1024`` (its CLI default), because the reasoning models the DCFA
paper runs spend hidden reasoning from the same budget and a fixed 1024 would
cut them off.

Under ``paper`` the system message is the source code's own role sentence
(:data:`PAPER_ROLE`) followed by our data notice (the trace is data, never
instructions: a guard against text in the trace steering the judge) and a
one-line task asking for JSON.

**A verdict that stays invalid** after the gateway's repairs: under ``paper``
the walk goes on to the next step (the step counts as "no" and is listed in
``details["unparsable"]``), as Who&When's code does with a reply in an
unexpected format; under ``small`` it fails the trace (a content failure).

**When no step gets a yes** (setting ``on_no_yes``):

* ``"undetermined"`` (default, both presets): ``step`` and ``agent`` are None and
  the reason says so; the trace counts as wrong in evaluation. This is what
  Who&When's released code does: it prints no prediction for such a trace, and
  its evaluation divides by every trace, so the trace counts as wrong on agent
  and step.
* ``"last_step"`` (beyond the source): predict the last step and its speaker
  (``details["fallback"]`` is True).
* ``"max_score"`` (``variant="dcfa"`` only, its ``dcfa_paper`` value): the step of highest error
  probability among the verdicts that parsed, agent None (``details["fallback"]`` is True,
  ``details["scores"]`` the scores in step order, None for an unparsable verdict).

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated
Failure Attribution of LLM Multi-Agent Systems." ICML 2025. arXiv:2505.00212,
section 4.1 (Step-by-Step).
"""

from __future__ import annotations

import functools
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from agentcausal.attribution.baseline_prompts import baseline_messages, capped_reply, task_block, undetermined
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
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import LLMCall
from agentcausal.traces.model import Attribution, Trace
from agentcausal.traces.render import escape_data, render_conversation, render_steps, speaker

__all__ = [
    "NAME",
    "PROMPT_VERSION",
    "PROMPT_VERSIONS",
    "PRESETS",
    "TEMPLATE",
    "PAPER_TEMPLATE",
    "DCFA_TEMPLATE",
    "PAPER_ROLE",
    "StepVerdict",
    "StepErrorVerdict",
    "DcfaStepVerdict",
    "StepByStepSettings",
    "verdict_model",
    "build_messages",
    "run",
]

NAME = "step_by_step"
#: version of each prompt set
PROMPT_VERSIONS = {"paper": "step_by_step/paper-3", "small": "step_by_step/2", "dcfa": "step_by_step/dcfa-1"}
PROMPT_VERSION = "+".join(PROMPT_VERSIONS[k] for k in sorted(PROMPT_VERSIONS))

#: the ``paper`` user message (Who&When's Step-by-Step question); fields: task, trace, i, agent
PAPER_TEMPLATE = (
    "You are evaluating the correctness of each step in an ongoing multi-agent conversation that aims at "
    "solving a real-world problem.\n{task}\n\nHere is the conversation history up to the current step:\n"
    "{trace}\n\nThe most recent step ({i}) was by '{agent}'. Determine whether this most recent agent's "
    "action (step {i}) contains an error that could hinder the problem-solving process or lead to an "
    "incorrect solution. Answer yes or no, then give a clear explanation for your judgement. Avoid being "
    "overly critical in your evaluation: focus on errors that clearly derail the process."
)

#: the ``variant="dcfa"`` user message (DCFA's copy of the question: "even a little bit is possible"
#: and the error probability); fields: task, trace, i, agent
DCFA_TEMPLATE = (
    "You are evaluating the correctness of each step in an ongoing multi-agent conversation that aims at "
    "solving a real-world problem.\n{task}\n\nHere is the conversation history up to the current step:\n"
    "{trace}\n\nThe most recent step ({i}) was by '{agent}'. Determine whether this most recent agent's "
    "action (step {i}) contains an error that could hinder the problem-solving process or lead to an "
    "incorrect solution. To make rigorous speculations, even a little bit is possible. Answer yes or no, "
    "give a score (a float) of the probability that this step contains an error, and give a clear "
    "explanation for your judgement. Avoid being overly critical in your evaluation: focus on errors that "
    "clearly derail the process."
)

#: the ``paper`` reply's criterion, the same in prompt and schema
_PAPER_CRITERION = (
    "true (yes) if the most recent step contains an error that could hinder the problem-solving "
    "process or lead to an incorrect solution (not overly critical: an error that clearly derails "
    "the process); false (no) otherwise"
)

#: the ``paper`` system message's role sentence (Who&When's code)
PAPER_ROLE = "You are a precise step-by-step conversation evaluator."

#: the user message; fields: task, trace, i, agent
TEMPLATE = (
    "{task}\n\nThe run so far, up to step {i}:\n{trace}\n\n"
    "Is step {i} (by {agent}) the decisive error that made the run fail? "
    "Say decisive=true only if this step's mistake caused the failure."
)


class StepVerdict(BaseModel):
    """Your verdict on the latest step shown."""

    reason: str = Field(description="One sentence on this step.")
    decisive: bool = Field(description="true if this step is the decisive error, else false.")


class StepErrorVerdict(BaseModel):
    """Your verdict on the most recent step shown: yes or no, then the explanation."""

    error: bool = Field(description=_PAPER_CRITERION)
    reason: str = Field(description="A clear explanation for your judgement.")


class DcfaStepVerdict(BaseModel):
    """Your verdict on the most recent step shown: yes or no, the probability of an error, then the explanation."""

    error: bool = Field(description=_PAPER_CRITERION)
    score: float = Field(description="The probability that the most recent step contains an error, as a float.")
    reason: str = Field(description="A clear explanation for your judgement.")


class StepByStepSettings(WhoWhenSettings):
    """Settings of Step-by-Step.

    Attributes
    ----------
    variant : "whowhen" or "dcfa", whose copy of the released ``utils.py`` the ``paper`` prompt follows:
        Who&When's (``paper``) or DCFA's (``dcfa_paper``: "even a little bit is possible" and a score of
        the error probability per step); ``dcfa`` needs ``prompts="paper"``
    on_no_yes : "undetermined", "last_step" or "max_score", what to return when no step gets a yes
        (see the module docstring); ``max_score`` needs ``variant="dcfa"`` (its ``dcfa_paper`` value)
    reason_chars : int or None, the most characters of each verdict's reason (schema ``maxLength``,
        longer text cut); None = no cap (``paper``: Who&When's code asks for "a clear explanation"
        with no length and bounds only the completion); ``small``: 200
    quote_evidence : bool, ask for one more reply field, ``evidence``, a verbatim quote from the
        step asked about (the first step judged decisive is the blamed one) (kept only when it is a substring of it: :mod:`agentcausal.attribution.evidence`).
        Beyond the paper; False in every preset, so what ``paper`` and ``small`` send is unchanged.
    """

    variant: Literal["whowhen", "dcfa"] = "whowhen"
    on_no_yes: Literal["undetermined", "last_step", "max_score"] = "undetermined"
    reason_chars: int | None = Field(None, ge=40)
    quote_evidence: bool = False

    @model_validator(mode="after")
    def _variant_fits(self) -> "StepByStepSettings":
        if self.variant == "dcfa" and self.prompts != "paper":
            raise ValueError("variant='dcfa' needs prompts='paper' (DCFA's copy of the paper prompt)")
        if self.on_no_yes == "max_score" and self.variant != "dcfa":
            raise ValueError("on_no_yes='max_score' needs variant='dcfa' (only its verdicts carry a score)")
        return self


#: presets (:mod:`agentcausal.settings`); ``dcfa_paper``: DCFA's copy of the released code
PRESETS = {
    "paper": {},
    "small": {**BASELINE_PRESETS["small"], "reason_chars": 200},
    "dcfa_paper": {**DCFA_PAPER_PRESET, "variant": "dcfa", "on_no_yes": "max_score"},
}


def prompt_version(settings: StepByStepSettings) -> str:
    """The version of the prompt ``settings`` send (``dcfa`` for DCFA's variant, else the prompt set's)."""
    return PROMPT_VERSIONS["dcfa" if settings.variant == "dcfa" else settings.prompts]


@functools.lru_cache(maxsize=16)
def verdict_model(
    reason_chars: int | None, paper: bool = False, dcfa: bool = False
) -> type[StepVerdict] | type[StepErrorVerdict] | type[DcfaStepVerdict]:
    """The verdict model with ``reason`` capped at ``reason_chars`` characters (none when None):
    :class:`DcfaStepVerdict` (``dcfa``: yes/no, score, reason), :class:`StepErrorVerdict` (``paper``:
    ``error`` first, the prompt's criterion) or :class:`StepVerdict`."""
    return capped_reply(DcfaStepVerdict if dcfa else StepErrorVerdict if paper else StepVerdict, reason_chars, "reason")


def build_messages(trace: Trace, i: int, settings: StepByStepSettings, budget: int | None) -> list[dict[str, str]]:
    """The chat messages that ask about step ``i`` (0-based), showing steps ``0..i``.

    Parameters
    ----------
    trace : Trace
    i : int, 0-based step asked about
    settings : StepByStepSettings
    budget : int or None, characters of trace text allowed

    Returns
    -------
    list of message dicts
    """
    paper = settings.prompts == "paper"
    if paper:
        shown = render_conversation(trace.steps[: i + 1], budget, numbered=True).text
        who = speaker(trace.steps[i])
    else:
        shown, who = render_steps(trace.steps[: i + 1], budget), trace.steps[i].agent
    template = (DCFA_TEMPLATE if settings.variant == "dcfa" else PAPER_TEMPLATE) if paper else TEMPLATE
    user = template.format(
        task=task_block(trace, settings.with_ground_truth), trace=shown, i=i, agent=escape_data(who).replace("\n", " ")
    )
    instruction = (
        "Judge only whether the latest step shown contains an error that could hinder the task."
        if settings.prompts == "paper"
        else "Judge only whether the latest step shown is the decisive error."
    )
    return baseline_messages(instruction, user, PAPER_ROLE if settings.prompts == "paper" else None)


def run(trace: Trace, call: LLMCall, settings: StepByStepSettings) -> Attribution:
    """Attribute one trace with Step-by-Step.

    Parameters
    ----------
    trace : Trace, n steps
    call : LLMCall, the run's call context; calls stage ``baseline`` up to n times
    settings : StepByStepSettings

    Returns
    -------
    Attribution: the first step judged decisive and its speaker; when none is,
    see ``on_no_yes``. ``details["asked"]`` is the number of steps asked about,
    ``details["verdicts"]`` the reasons given, in order, and ``details["unparsable"]``
    the steps whose verdict stayed invalid (``paper``: counted as "no").

    Raises
    ------
    StructuredOutputError
        From the gateway, under ``small`` only (``paper`` goes on to the next step).
    EndpointUnreachableError, LLMCallError
        From the gateway.
    """
    budget = trace_budget(call, settings)
    dcfa = settings.variant == "dcfa"
    version = prompt_version(settings)
    reasons: list[str] = []
    unparsable: list[int] = []
    scores: list[float | None] = []
    model = verdict_model(settings.reason_chars, settings.prompts == "paper", dcfa)
    for i in range(len(trace)):
        try:  # with quote_evidence, one more reply field (ask_baseline)
            reply = ask_baseline(call, settings, build_messages(trace, i, settings, budget), model)
        except StructuredOutputError:
            if settings.prompts != "paper":
                raise
            unparsable.append(i)
            reasons.append("unparsable verdict; taken as no")
            scores.append(None)
            continue
        reasons.append(reply.reason)
        scores.append(reply.score if isinstance(reply, DcfaStepVerdict) else None)
        if reply.decisive if isinstance(reply, StepVerdict) else reply.error:  # small: decisive; paper, dcfa: error
            return Attribution(
                trace_id=trace.id,
                method=NAME,
                step=i,
                agent=trace.steps[i].agent,
                reason=reply.reason,
                prompt_version=version,
                details={
                    "asked": i + 1,
                    "verdicts": reasons,
                    "unparsable": unparsable,
                    "fallback": False,
                    **({"scores": scores} if dcfa else {}),
                },
                candidates=single_answer(trace, i),
                **evidence_fields(getattr(reply, "evidence", None), trace.steps, i, asked=settings.quote_evidence),
            )
    details = {
        "asked": len(trace),
        "verdicts": reasons,
        "unparsable": unparsable,
        "fallback": settings.on_no_yes in ("last_step", "max_score"),
        **({"scores": scores} if dcfa else {}),
    }
    scored = [(sc, i) for i, sc in enumerate(scores) if sc is not None]
    if settings.on_no_yes == "max_score" and scored:
        best = max(sc for sc, _ in scored)
        step = next(i for sc, i in scored if sc == best)  # the first of equal scores, as list.index(max(...))
        return Attribution(
            trace_id=trace.id,
            method=NAME,
            step=step,
            agent=None,
            reason=(
                f"no step was judged an error; step {step} has the highest error probability ({best:g}); "
                "no agent, as DCFA's code prints none here"
            ),
            prompt_version=version,
            details=details,
            evidence_note="no step was judged decisive" if settings.quote_evidence else None,
        )
    if settings.on_no_yes == "max_score":
        details["fallback"] = False  # no verdict parsed: nothing to rank
    if settings.on_no_yes == "last_step":
        last = len(trace) - 1
        return Attribution(
            trace_id=trace.id,
            method=NAME,
            step=last,
            agent=trace.steps[last].agent,
            reason="no step was judged decisive; fell back to the last step",
            prompt_version=version,
            details=details,
            candidates=single_answer(trace, last),
            evidence_note="no step was judged decisive" if settings.quote_evidence else None,
        )
    return undetermined(trace, NAME, version, "undetermined: no step was judged decisive", details)


SPEC = baseline_spec(NAME, run, StepByStepSettings, PRESETS, PROMPT_VERSION)
