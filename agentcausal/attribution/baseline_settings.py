"""Settings, stage name and budgets shared by the Who&When baselines (All-at-Once, Step-by-Step, Binary-Search)
and the baselines built like them (A2P, ECHO).

* :class:`BaselineSettings`: ``with_ground_truth``, reply cap, context budget (they enter the cache key);
  :data:`BASELINE_PRESETS` their ``paper`` and ``small`` values.
* :func:`baseline_tokens`: the completion cap of one call; :func:`trace_budget`: characters of trace text
  one prompt may hold for a stage's context window.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated Failure Attribution of LLM
Multi-Agent Systems." ICML 2025. arXiv:2505.00212, section 4.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentcausal.llm import Gateway
from agentcausal.settings import completion_budget
from agentcausal.traces.render import budget_chars

__all__ = ["BASELINE_STAGE", "BaselineSettings", "BASELINE_PRESETS", "baseline_tokens", "trace_budget"]

#: the routed stage name of every baseline call
BASELINE_STAGE = "baseline"


class BaselineSettings(BaseModel):
    """Settings shared by the three Who&When baselines (enter the cache key).

    Attributes
    ----------
    prompts : "paper" or "small", the prompt set (set by the preset, :mod:`agentcausal.settings`):
        ``paper`` follows Who&When's released code (forced choices), ``small`` the short wording
        with an "undetermined" escape for sub-2B models
    with_ground_truth : bool, show the correct final answer in the prompt (Who&When's
        "with ground truth" setting)
    max_tokens : int or None, completion cap per call, tokens; None = the profile's budget
        (:func:`agentcausal.settings.completion_budget`); ``small``: 160
    reserve_tokens : int, tokens of the context window kept for instructions and the reply
    context_tokens : int or None, a tighter context cap than the profile's window (CPU runs); None = the window
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompts: Literal["paper", "small"] = "paper"
    with_ground_truth: bool = True
    max_tokens: int | None = Field(None, ge=16)
    reserve_tokens: int = Field(768, ge=0)
    context_tokens: int | None = Field(None, ge=512)


#: presets of the three baselines (:mod:`agentcausal.settings`); fields not listed keep the ``paper`` defaults
BASELINE_PRESETS: dict[str, dict[str, Any]] = {"paper": {}, "small": {"prompts": "small", "max_tokens": 160}}


def baseline_tokens(gw: Gateway, settings: BaselineSettings, stage: str = BASELINE_STAGE) -> int:
    """Completion cap (tokens) of one baseline call: ``max_tokens``, else the profile's budget."""
    return completion_budget(gw, stage, settings.max_tokens)


def trace_budget(gw: Gateway, settings: BaselineSettings, stage: str = BASELINE_STAGE) -> int:
    """Characters of trace text one prompt may hold for ``stage``.

    Parameters
    ----------
    gw : Gateway
    settings : BaselineSettings
    stage : str

    Returns
    -------
    int, :func:`~agentcausal.traces.render.budget_chars` of the smaller of the
    profile's context window and ``settings.context_tokens``, less the reserve
    and the completion cap.

    Raises
    ------
    UnknownStageError
        If the stage has no route.
    """
    window = gw.profile_for(stage).context_window
    if settings.context_tokens is not None:
        window = min(window, settings.context_tokens)
    return budget_chars(window, reserve_tokens=settings.reserve_tokens + baseline_tokens(gw, settings, stage))
