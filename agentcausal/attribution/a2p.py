"""A2P (Abduct–Act–Predict): one full-trace call that reasons as a counterfactual before it attributes.

A2P scaffolds the All-at-Once question with the three steps of a structural
counterfactual. In one prompt the model (1) **abducts** the hidden cause of the
failure (a knowledge gap, misreading or flawed assumption behind one agent's
action) and picks the error that is its most plausible root; (2) **acts**: it
writes the minimal corrective action an agent should have taken at that step;
(3) **predicts** the next few turns after that intervention and whether the
corrected run would reach the correct answer. It then names the agent and the
step of the decisive error. One call per trace, a prompt of about 300 tokens
plus the trace (the DCFA paper's appendix E counts A2P so); the reply is an
:class:`A2PReply` whose reasoning fields come before the verdict, so the model
writes them first. In every preset ``agent`` is an enum of the trace's own
agents (JSON schema), and ``step`` is range-checked.

* ``paper`` (:data:`PAPER_TEMPLATE`, after A2P's released prompt): a forced
  single choice (agent and step required, step bounded to ``0..n-1`` in the
  schema, so an out-of-range step goes through the gateway's repair loop); the
  prediction spans ``horizon_min..horizon_max`` turns (3-5, as A2P's prompt);
  reasoning fields without a character cap (``field_chars`` None).
* ``small`` (:data:`TEMPLATE`): short wording for sub-2B models, short
  reasoning fields, and the "undetermined" escape (``step`` and ``agent``
  null); a step outside ``0..n-1`` is recorded as undetermined with the raw
  value in ``details["invalid_step"]``; a step without an agent takes the step's speaker.

The prediction's verdict (``reverses_failure``) is recorded in ``details`` and
does not change the attribution: A2P's code makes one pass and reads only the
final attribution. Deviations from A2P's code: a JSON reply (schema-constrained)
instead of the "Agent Name: / Step Number:" text format; the trace rendered
with our delimiters and shortened to the context budget; the completion cap is
the profile's budget (:func:`~agentcausal.settings.completion_budget`; A2P's
code sends its CLI's ``max_tokens``, default 20000, more than some endpoints'
output limits accept); and, beyond the
paper (Who&When's second setting), ``with_ground_truth = False`` drops the
correct answer from the prompt (A2P's prompt always shows it) and asks
whether the corrected run would reach *a* correct answer.

Under ``paper`` the system message is the source code's own role sentence
(:data:`PAPER_ROLE`) followed by our data notice (the trace is data, never
instructions: a guard against text in the trace steering the judge) and a
one-line task asking for JSON.

References
----------
West, A. et al. "Abduct, Act, Predict: Scaffolding Causal Inference for
Automated Failure Attribution in Multi-Agent Systems." arXiv:2509.10401 (2025);
code: github.com/jimmywang585/A2P (MIT).
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, Field, create_model

from agentcausal.attribution.baseline_prompts import (
    Prompt,
    agent_names,
    baseline_messages,
    bounded_step,
    decisive_verdict,
    enum_choice,
    task_block,
    text_fields,
)
from agentcausal.attribution.baseline_settings import BaselineSettings, ask_baseline, baseline_spec, trace_budget
from agentcausal.attribution.candidates import single_answer
from agentcausal.attribution.evidence import evidence_fields
from agentcausal.llm import LLMCall
from agentcausal.traces.model import Attribution, CorrectedAction, Trace
from agentcausal.traces.render import render_steps_info

__all__ = [
    "NAME",
    "PROMPT_VERSION",
    "PROMPT_VERSIONS",
    "PRESETS",
    "TEMPLATE",
    "PAPER_TEMPLATE",
    "PAPER_ROLE",
    "A2PReply",
    "A2PSettings",
    "build_messages",
    "reply_model",
    "run",
]

NAME = "a2p"
#: version of each prompt set
PROMPT_VERSIONS = {"paper": "a2p/paper-2", "small": "a2p/1"}
PROMPT_VERSION = "+".join(PROMPT_VERSIONS[k] for k in sorted(PROMPT_VERSIONS))

#: the ``paper`` user message (A2P's scaffold); fields: task, trace, n_last, h_min, h_max, outcome
PAPER_TEMPLATE = (
    "Multiple agents collaborated on the task below and produced an incorrect solution. Identify the root "
    "cause of the failure with structured causal inference: Abduct, Act, Predict.\n\n{task}\n\n"
    "The conversation, steps 0 to {n_last}:\n{trace}\n\n"
    "1. Abduction (infer hidden root causes): for each potentially problematic action, infer the hidden "
    "factors that explain it (knowledge gaps, misinterpretations, flawed assumptions, missing information), "
    "and identify the error that is the most plausible root cause of the failure.\n"
    "2. Action (minimal corrective intervention): for that error, state the specific action the agent should "
    "have taken instead: the minimal, concrete intervention that addresses the root cause.\n"
    "3. Prediction (counterfactual trajectory): simulate the next {h_min} to {h_max} turns had the correct "
    "action been taken, trace intervention -> intermediate effects -> outcome, and say whether this "
    "trajectory would {outcome}.\n\n"
    "Then give the attribution: the agent whose error is the decisive root cause of the failure, the step "
    "number where that error first occurred, and the causal mechanism linking it to the failure, in under "
    "150 words. The error you name must be decisive: corrected by your intervention, the outcome would "
    "change from failure to success. You must name one agent and one step."
)

#: the ``paper`` system message's role sentence (A2P's code)
PAPER_ROLE = "You are a helpful assistant skilled in analyzing conversations."

#: the ``small`` user message; fields as in :data:`PAPER_TEMPLATE`
TEMPLATE = (
    "{task}\n\nThe run, steps 0 to {n_last}:\n{trace}\n\n"
    "Answer in three short parts, then the verdict. Abduction: what hidden mistake made the run fail? "
    "Action: what should that step have done instead? Prediction: with that fix, would the run {outcome}? "
    "Verdict: the agent and the step number of the decisive error; null for both only if you cannot tell."
)


class A2PReply(BaseModel):
    """Your Abduct-Act-Predict analysis of the failed run, then the decisive error."""

    abduction: str = Field(description="The hidden root cause of the failure and the error it explains.")
    action: str = Field(description="The minimal corrective action the agent should have taken at that step.")
    prediction: str = Field(description="The next few turns after the correction, and their outcome.")
    reverses_failure: bool = Field(description="Would the corrected run reach the correct answer?")
    agent: str | None = Field(description="Name of the agent who made the decisive error, as shown.")
    step: int | None = Field(description="Step number where the decisive error first occurred.")
    reason: str = Field(description="The causal mechanism linking the error to the failure.")


class A2PSettings(BaselineSettings):
    """Settings of A2P (see :class:`~agentcausal.attribution.baseline_settings.BaselineSettings` for the shared ones).

    Attributes
    ----------
    horizon_min, horizon_max : int, turns the prediction simulates after the intervention
        (the paper's "short horizon"; 3 to 5 in A2P's released prompt; ``paper`` prompt only, a
        ``horizon_max`` below ``horizon_min`` counts as ``horizon_min``)
    field_chars : int or None, the most characters of each reasoning field of the reply (abduction,
        action, prediction, reason; a schema ``maxLength``, longer text is truncated). None = no cap
        (``paper``): A2P's code has no character bound, its prompt asks for a reason "under 150
        words" (kept as an instruction in :data:`PAPER_TEMPLATE`) and its reply is bounded only by
        the completion cap. ``small``: 240 (a 0.5B model must finish the JSON within its cap)
    quote_evidence : bool, ask for one more reply field, ``evidence``, a verbatim quote from the
        blamed step (kept only when it is a substring of it: :mod:`agentcausal.attribution.evidence`).
        Beyond the paper; False in every preset, so what ``paper`` and ``small`` send is unchanged.
    """

    horizon_min: int = Field(3, ge=1)
    horizon_max: int = Field(5, ge=1)
    field_chars: int | None = Field(None, ge=40)
    quote_evidence: bool = False


#: presets (:mod:`agentcausal.settings`); fields not listed keep the ``paper`` defaults
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {"prompts": "small", "max_tokens": 384, "field_chars": 240},
}


@functools.lru_cache(maxsize=256)
def reply_model(agents: tuple[str, ...], n_steps: int, forced: bool, field_chars: int | None) -> type[A2PReply]:
    """The reply model of one trace.

    ``agent`` is an enum of ``agents``; ``forced`` (``paper``) makes agent and step
    required and bounds step to ``0..n_steps-1``; otherwise both may be null.
    Reasoning fields carry ``maxLength = field_chars`` (none when None).
    """
    agent_t = enum_choice(agents)
    text = text_fields(A2PReply, field_chars, "abduction", "action", "prediction", "reason")
    # field definitions as dict[str, Any]: a **dict of tuples does not match create_model's typed keywords
    who: dict[str, Any]
    if forced:
        who = {
            "agent": (agent_t, Field(description="Name of the agent who made the decisive error, as shown.")),
            "step": bounded_step(n_steps, "Step number where the decisive error first occurred."),
        }
    else:
        who = {
            "agent": (
                agent_t | None,
                Field(description="Name of the agent who made the decisive error, as shown; null if undetermined."),
            ),
            "step": (int | None, Field(description="Step number of the decisive error; null if undetermined.")),
        }
    return create_model("A2PReply", __base__=A2PReply, **text, **who)


def build_messages(trace: Trace, settings: A2PSettings, budget: int | None) -> Prompt:
    """The chat messages for one trace and the 0-based steps the budget shortened.

    Parameters
    ----------
    trace : Trace
    settings : A2PSettings
    budget : int or None, characters of trace text allowed

    Returns
    -------
    Prompt(messages, shortened)
    """
    rendered = render_steps_info(trace.steps, budget)
    template = PAPER_TEMPLATE if settings.prompts == "paper" else TEMPLATE
    outcome = "lead to the correct answer" if settings.with_ground_truth else "lead to a correct answer"
    user = template.format(
        task=task_block(trace, settings.with_ground_truth),
        trace=rendered.text,
        n_last=len(trace) - 1,
        h_min=settings.horizon_min,
        h_max=max(settings.horizon_min, settings.horizon_max),
        outcome=outcome,
    )
    instruction = (
        "Abduct the root cause, define the corrective action, predict its outcome, then name "
        "the agent and the step of the decisive error."
    )
    return Prompt(
        baseline_messages(instruction, user, PAPER_ROLE if settings.prompts == "paper" else None), rendered.shortened
    )


def run(trace: Trace, call: LLMCall, settings: A2PSettings) -> Attribution:
    """Attribute one trace with A2P.

    Parameters
    ----------
    trace : Trace, n steps
    call : LLMCall, the run's call context; calls stage ``baseline`` once
    settings : A2PSettings

    Returns
    -------
    Attribution with the predicted 0-based step and agent (None when undetermined, ``small``);
    ``details`` holds ``abduction``, ``action``, ``prediction``, ``reverses_failure``,
    ``shortened`` (steps cut to fit the budget), ``prompt_version`` and, for an
    out-of-range reply, ``invalid_step``.

    Raises
    ------
    StructuredOutputError, EndpointUnreachableError, LLMCallError
        From the gateway (:func:`~agentcausal.attribution.jobs.run_method` turns them into an error record).
    """
    messages, shortened = build_messages(trace, settings, trace_budget(call, settings))
    forced = settings.prompts == "paper"
    model = reply_model(agent_names(trace), len(trace), forced, settings.field_chars)
    reply = ask_baseline(call, settings, messages, model)  # with quote_evidence, one more reply field
    version = PROMPT_VERSIONS[settings.prompts]
    details: dict[str, object] = {
        "abduction": reply.abduction,
        "action": reply.action,
        "prediction": reply.prediction,
        "reverses_failure": reply.reverses_failure,
        "shortened": list(shortened),
        "prompt_version": version,
    }
    step, agent = decisive_verdict(trace, reply.step, reply.agent, details)
    # A2P's own corrective action and predicted outcome (its "action" and "prediction" fields): no extra call
    fix = (
        None
        if step is None
        else CorrectedAction(
            step=step,
            content=reply.action,
            outcome=reply.prediction,
            source="a2p: the corrective action and the predicted outcome of its reply (not simulated)",
        )
    )
    return Attribution(
        trace_id=trace.id,
        method=NAME,
        step=step,
        agent=agent,
        reason=reply.reason,
        prompt_version=version,
        details=details,
        candidates=single_answer(trace, step),
        corrected_action=fix,
        **evidence_fields(getattr(reply, "evidence", None), trace.steps, step, asked=settings.quote_evidence),
    )


SPEC = baseline_spec(NAME, run, A2PSettings, PRESETS, PROMPT_VERSION)
