"""Binary-Search: halve the segment that holds the decisive error until one step remains.

The third Who&When baseline. The search starts with steps ``0..n-1``. A segment
``lo..hi`` is split at ``mid = (lo + hi) // 2`` into a first part ``lo..mid``
and a second part ``mid+1..hi`` (for an odd length the first part is one step
longer). One prompt shows the task, optionally the correct answer, and the
segment's steps with their own step numbers, names both parts by their step
ranges, and asks which part holds the decisive error (:class:`HalfChoice`).
When one step remains it is the prediction, with its speaker as the agent.
A trace of n steps takes ``ceil(log2 n)`` calls; the agent is always the
speaker of the remaining step (one of the trace's own agents).

* ``paper`` (:data:`PAPER_TEMPLATE`, as Who&When's released code
  ``Automated_FA/Lib/utils.py``, ``binary_search``): the segment as
  ``speaker: content`` lines with **no step numbers**, the speaker being the
  full Hand-Crafted role (:func:`~agentcausal.traces.render.render_conversation`),
  the ranges named "from step a to step b"; the reply
  (:class:`PaperHalfChoice`) must choose the "upper half" or the "lower half"
  of the segment; an ambiguous reply (one that stays invalid after the gateway's
  repairs) takes a seeded random half, as the original does when its reply names
  neither half (seed ``random_seed`` with the trace id and segment; recorded
  in ``details["path"]`` as ``"random": true``). The prediction's agent is the
  speaker of the remaining step (its ``Step.agent``; the original prints the full
  role, which its evaluator cuts to the first word).
* ``small`` (:data:`TEMPLATE`): the reply may be "undetermined", which ends the
  search with ``step`` None.

Remaining deviations from Who&When's code under ``paper``: a JSON choice
(schema enum "upper half"/"lower half") instead of the phrase searched for in
free text, with a one-sentence reason after the choice (the original asks for the
phrase alone; the reason is kept so ``details["path"]`` says why each part was
taken), and the segment inside our delimiters with look-alike tags escaped,
shortened to the context budget; the completion cap is the profile's budget
(:func:`~agentcausal.settings.completion_budget`) where Who&When's code sends
``max_tokens=1024`` (its CLI default), because the reasoning models the DCFA
paper runs spend hidden reasoning from the same budget and a fixed 1024 would
cut them off.

Under ``paper`` the system message is the source code's own role sentence
(:data:`PAPER_ROLE`) followed by our data notice (the trace is data, never
instructions: a guard against text in the trace steering the judge) and a
one-line task asking for JSON.

**``dcfa_paper``** (DCFA's copy of the same ``Automated_FA/Lib/utils.py``,
github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution, which ran DCFA's Table 1): the same
prompt, sent at temperature 0 (where the profile takes one), and a reply still empty after the
gateway's repairs sent again, 9 (its segment loop retries the 3-attempt call 3 times) calls in all
(:class:`~agentcausal.attribution.baseline_settings.WhoWhenSettings`). A set ``max_tokens`` (the code's
1024) is sent as it is, under ``max_completion_tokens`` on GPT-5 (:class:`~agentcausal.llm.dialect.FixedCap`).

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated
Failure Attribution of LLM Multi-Agent Systems." ICML 2025. arXiv:2505.00212,
section 4.1 (Binary Search).
"""

from __future__ import annotations

import functools
import hashlib
import random
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

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
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import LLMCall
from agentcausal.traces.model import Attribution, Trace
from agentcausal.traces.render import render_conversation, render_steps

__all__ = [
    "NAME",
    "PROMPT_VERSION",
    "PROMPT_VERSIONS",
    "PRESETS",
    "TEMPLATE",
    "PAPER_TEMPLATE",
    "PAPER_ROLE",
    "HalfChoice",
    "PaperHalfChoice",
    "choice_model",
    "BinarySearchSettings",
    "Split",
    "split",
    "random_half",
    "build_messages",
    "run",
]

NAME = "binary_search"
#: version of each prompt set
PROMPT_VERSIONS = {"paper": "binary_search/paper-3", "small": "binary_search/2"}
PROMPT_VERSION = "+".join(PROMPT_VERSIONS[k] for k in sorted(PROMPT_VERSIONS))

#: the ``paper`` user message (Who&When's Binary-Search question); fields as in :data:`TEMPLATE`
PAPER_TEMPLATE = (
    "You are analysing a segment of a multi-agent conversation: several agents collaborate to resolve a user "
    "query through their dialogue. Your task is to locate the most critical mistake in the segment: decide "
    "which half of the segment holds the single step where this crucial error occurs, the error that in the "
    "end made the query fail.\n{task}\n\nReview this conversation segment, from step {lo} to step {hi}:\n\n"
    "{trace}\n\nPredict whether the most critical error more likely lies in the upper half (from step {a_lo} "
    "to step {a_hi}) or in the lower half (from step {b_lo} to step {b_hi}) of this segment. Base the answer "
    "on the mistake that directly contributes to the failure to resolve the query; if no single clear error "
    "is evident, take the step you believe most responsible for the failure, by your own judgement, and "
    "answer for it."
)

#: the ``paper`` system message's role sentence (Who&When's code)
PAPER_ROLE = "You are an AI assistant specializing in localizing errors in conversation segments."

#: the user message; fields: task, trace, lo, hi, a_lo, a_hi, b_lo, b_hi
TEMPLATE = (
    "{task}\n\nThe decisive error is somewhere in steps {lo} to {hi}:\n{trace}\n\n"
    "Is it in the first part (steps {a_lo} to {a_hi}) or the second part (steps {b_lo} to {b_hi})?"
)


class HalfChoice(BaseModel):
    """Your choice of the part that holds the decisive error."""

    reason: str = Field(description="One sentence.")
    part: Literal["first", "second", "undetermined"] = Field(
        description="'first' or 'second' part of the steps shown; 'undetermined' only if you cannot tell."
    )


class PaperHalfChoice(BaseModel):
    """Your prediction of the half of the segment that holds the most critical error."""

    half: Literal["upper half", "lower half"] = Field(description="'upper half' or 'lower half' of the segment.")
    reason: str = Field(description="One sentence.")


class BinarySearchSettings(WhoWhenSettings):
    """Settings of Binary-Search (see :class:`~agentcausal.attribution.baseline_settings.BaselineSettings`).

    Attributes
    ----------
    random_seed : int, seed of the random half taken on an ambiguous reply (``paper``)
    reason_chars : int or None, the most characters of each choice's reason (schema ``maxLength``,
        longer text cut); None = no cap (``paper``: Who&When's code asks for the half and an
        explanation with no length and bounds only the completion); ``small``: 200
    """

    random_seed: int = 0
    reason_chars: int | None = Field(None, ge=40)


#: presets (:mod:`agentcausal.settings`)
PRESETS = {
    "paper": {},
    "small": {**BASELINE_PRESETS["small"], "reason_chars": 200},
    # DCFA's copy of the released code: the same prompt, temperature 0, an empty answer sent again
    # (its segment loop retries the 3-attempt call 3 times: 9 calls)
    "dcfa_paper": {**DCFA_PAPER_PRESET, "empty_attempts": 9},
}


@functools.lru_cache(maxsize=32)
def choice_model(forced: bool, reason_chars: int | None) -> type[HalfChoice] | type[PaperHalfChoice]:
    """The reply model of one halving: :class:`PaperHalfChoice` (``paper``) or :class:`HalfChoice`,
    with ``reason`` capped at ``reason_chars`` characters (none when None)."""
    return capped_reply(PaperHalfChoice if forced else HalfChoice, reason_chars, "reason")


def random_half(trace_id: str, lo: int, hi: int, seed: int) -> str:
    """The seeded random part (``"first"`` or ``"second"``) of segment ``lo..hi`` of a trace.

    Deterministic in (trace id, segment, seed), so a rerun takes the same path.

    >>> random_half("t/1", 0, 5, 0) == random_half("t/1", 0, 5, 0)
    True
    """
    digest = hashlib.sha256(f"{trace_id}|{lo}|{hi}|{seed}".encode()).digest()
    return random.Random(digest).choice(("first", "second"))


class Split(NamedTuple):
    """The two parts of a segment, inclusive 0-based step ranges."""

    first: tuple[int, int]
    second: tuple[int, int]


def split(lo: int, hi: int) -> Split:
    """Split the inclusive segment ``lo..hi`` (``hi > lo``) in two.

    Parameters
    ----------
    lo, hi : int, 0-based inclusive bounds

    Returns
    -------
    Split, first ``lo..mid`` and second ``mid+1..hi`` with ``mid = (lo + hi) // 2``.

    Raises
    ------
    ValueError
        If the segment has fewer than two steps.

    Examples
    --------
    >>> split(0, 4)
    Split(first=(0, 2), second=(3, 4))
    >>> split(3, 4)
    Split(first=(3, 3), second=(4, 4))
    """
    if hi <= lo:
        raise ValueError(f"segment {lo}..{hi} has fewer than two steps")
    mid = (lo + hi) // 2
    return Split((lo, mid), (mid + 1, hi))


def build_messages(
    trace: Trace, lo: int, hi: int, settings: BinarySearchSettings, budget: int | None
) -> list[dict[str, str]]:
    """The chat messages that ask which part of ``lo..hi`` holds the decisive error.

    Parameters
    ----------
    trace : Trace
    lo, hi : int, 0-based inclusive segment bounds, ``hi > lo``
    settings : BinarySearchSettings
    budget : int or None

    Returns
    -------
    list of message dicts

    Raises
    ------
    ValueError
        If the segment has fewer than two steps.
    """
    s = split(lo, hi)
    paper = settings.prompts == "paper"
    segment = trace.steps[lo : hi + 1]
    template = PAPER_TEMPLATE if paper else TEMPLATE
    user = template.format(
        task=task_block(trace, settings.with_ground_truth),
        trace=render_conversation(segment, budget).text if paper else render_steps(segment, budget),
        lo=lo,
        hi=hi,
        a_lo=s.first[0],
        a_hi=s.first[1],
        b_lo=s.second[0],
        b_hi=s.second[1],
    )
    return baseline_messages(
        "Choose the part of the steps shown that holds the decisive error.",
        user,
        PAPER_ROLE if settings.prompts == "paper" else None,
    )


def run(trace: Trace, call: LLMCall, settings: BinarySearchSettings) -> Attribution:
    """Attribute one trace with Binary-Search.

    Parameters
    ----------
    trace : Trace, n steps
    call : LLMCall, the run's call context; calls stage ``baseline`` about ``ceil(log2 n)`` times
    settings : BinarySearchSettings

    Returns
    -------
    Attribution with the remaining step and its speaker, or step None when a
    reply was "undetermined" (``small``). ``details["path"]`` lists each segment, the
    part chosen and whether it was a random half (``paper``, ambiguous reply).

    Raises
    ------
    StructuredOutputError, EndpointUnreachableError, LLMCallError
        From the gateway.
    """
    budget = trace_budget(call, settings)
    lo, hi = 0, len(trace) - 1
    path: list[dict[str, object]] = []
    reason = "single-step trace"
    forced = settings.prompts == "paper"
    while hi > lo:
        msgs = build_messages(trace, lo, hi, settings, budget)
        try:
            reply = ask_baseline(call, settings, msgs, choice_model(forced, settings.reason_chars))
        except StructuredOutputError:
            if not forced:
                raise
            part = random_half(trace.id, lo, hi, settings.random_seed)
            reason = f"ambiguous reply; random {part} part"
            path.append({"segment": [lo, hi], "part": part, "reason": reason, "random": True})
        else:
            part = (
                {"upper half": "first", "lower half": "second"}[reply.half]
                if isinstance(reply, PaperHalfChoice)
                else reply.part
            )
            reason = reply.reason
            path.append({"segment": [lo, hi], "part": part, "reason": reason, "random": False})
        if part == "undetermined":
            why = f"undetermined in steps {lo}-{hi}: {reason}"
            return undetermined(trace, NAME, PROMPT_VERSIONS[settings.prompts], why, {"path": path})
        s = split(lo, hi)
        lo, hi = s.first if part == "first" else s.second
    return Attribution(
        trace_id=trace.id,
        method=NAME,
        step=lo,
        agent=trace.steps[lo].agent,
        reason=reason,
        prompt_version=PROMPT_VERSIONS[settings.prompts],
        details={"path": path},
        candidates=single_answer(trace, lo),
    )


SPEC = baseline_spec(NAME, run, BinarySearchSettings, PRESETS, PROMPT_VERSION)
