"""Binary-Search: halve the segment that holds the decisive error until one step remains.

The third Who&When baseline. The search starts with steps ``0..n-1``. A segment
``lo..hi`` is split at ``mid = (lo + hi) // 2`` into a first part ``lo..mid``
and a second part ``mid+1..hi`` (for an odd length the first part is one step
longer). One prompt shows the task, optionally the correct answer, and the
segment's steps with their own step numbers, names both parts by their step
ranges, and asks which part holds the decisive error (:class:`HalfChoice`).
When one step remains it is the prediction, with its speaker as the agent.
A trace of n steps takes ``ceil(log2 n)`` calls. An "undetermined" reply ends
the search with ``step`` None.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated
Failure Attribution of LLM Multi-Agent Systems." ICML 2025. arXiv:2505.00212,
section 4.1 (Binary Search).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

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
from agentcausal.traces.render import render_steps

__all__ = ["NAME", "PROMPT_VERSION", "TEMPLATE", "HalfChoice", "BinarySearchSettings", "Split", "split",
           "build_messages", "run"]

NAME = "binary_search"
PROMPT_VERSION = "binary_search/2"

#: the user message; fields: task, trace, lo, hi, a_lo, a_hi, b_lo, b_hi
TEMPLATE = (
    "{task}\n\nThe decisive error is somewhere in steps {lo} to {hi}:\n{trace}\n\n"
    "Is it in the first part (steps {a_lo} to {a_hi}) or the second part (steps {b_lo} to {b_hi})?"
)


class HalfChoice(BaseModel):
    """Your choice of the part that holds the decisive error."""

    reason: ShortText(200) = Field(description="One sentence.")
    part: Literal["first", "second", "undetermined"] = Field(
        description="'first' or 'second' part of the steps shown; 'undetermined' only if you cannot tell.")


class BinarySearchSettings(BaselineSettings):
    """Settings of Binary-Search (see :class:`~agentcausal.attribution.common.BaselineSettings`)."""


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


def build_messages(trace: Trace, lo: int, hi: int, settings: BinarySearchSettings,
                   budget: int | None) -> list[dict[str, str]]:
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
    user = TEMPLATE.format(task=task_block(trace, settings.with_ground_truth),
                           trace=render_steps(trace.steps[lo : hi + 1], budget), lo=lo, hi=hi,
                           a_lo=s.first[0], a_hi=s.first[1], b_lo=s.second[0], b_hi=s.second[1])
    sys = system_prompt("Choose the part of the steps shown that holds the decisive error.")
    return [{"role": "system", "content": sys}, {"role": "user", "content": user}]


def run(trace: Trace, gw: Gateway, settings: BinarySearchSettings) -> Attribution:
    """Attribute one trace with Binary-Search.

    Parameters
    ----------
    trace : Trace, n steps
    gw : Gateway; calls stage ``baseline`` about ``ceil(log2 n)`` times
    settings : BinarySearchSettings

    Returns
    -------
    Attribution with the remaining step and its speaker, or step None when a
    reply was "undetermined". ``details["path"]`` lists each segment and the part chosen.

    Raises
    ------
    StructuredOutputError, EndpointUnreachableError, LLMCallError
        From the gateway.
    """
    budget = trace_budget(gw, settings)
    lo, hi = 0, len(trace) - 1
    path: list[dict[str, object]] = []
    reason = "single-step trace"
    while hi > lo:
        reply = gw.structured(BASELINE_STAGE, build_messages(trace, lo, hi, settings, budget), HalfChoice,
                              item=usage_item(trace.id, NAME), max_tokens=settings.max_tokens)
        path.append({"segment": [lo, hi], "part": reply.part, "reason": reply.reason})
        reason = reply.reason
        if reply.part == "undetermined":
            return Attribution(trace_id=trace.id, method=NAME, step=None, agent=None,
                               reason=f"undetermined in steps {lo}-{hi}: {reply.reason}",
                               prompt_version=PROMPT_VERSION, details={"path": path})
        s = split(lo, hi)
        lo, hi = s.first if reply.part == "first" else s.second
    return Attribution(trace_id=trace.id, method=NAME, step=lo, agent=trace.steps[lo].agent, reason=reason,
                       prompt_version=PROMPT_VERSION, details={"path": path})


SPEC = register(MethodSpec(name=NAME, run=run, settings_model=BinarySearchSettings, prompt_version=PROMPT_VERSION,
                           stages=(BASELINE_STAGE,)))
