"""Settings of ECHO (:mod:`agentcausal.attribution.echo`): the analyst panel, the layer radii and caps of its
hierarchical context, the consensus rule and thresholds, and the ``paper`` and ``small`` presets.

References
----------
Banerjee, A., Nair, A., Borogovac, T. "Where Did It All Go Wrong? A
Hierarchical Look into Multi-Agent Error Attribution." arXiv:2510.04886 (2025).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from agentcausal.attribution.baseline_settings import BaselineSettings

__all__ = ["AnalystName", "ANALYSTS", "EchoSettings", "PRESETS"]


AnalystName = Literal["conservative", "evidence", "causal_chain", "coordination", "reasoning", "balanced"]


#: the analysts' foci, from conservative to balanced (our reading of ECHO's six-analyst panel)
ANALYSTS: dict[AnalystName, str] = {
    "conservative": "blames a step only on direct evidence of a mistake in that step; discounts speculation",
    "evidence": "checks every claim, value and tool result against the task and the data shown",
    "causal_chain": "follows the wrong final result back along the steps it depends on to where it began",
    "coordination": "examines hand-offs, plans and instructions between agents, and who acted on what",
    "reasoning": "looks for flawed logic, wrong assumptions and misread requirements",
    "balanced": "weighs all of these and the severity of each deviation: decisive or minor",
}


class EchoSettings(BaselineSettings):
    """Settings of ECHO (see :class:`~agentcausal.attribution.baseline_settings.BaselineSettings` for the shared ones).

    Attributes
    ----------
    analysts : tuple of analyst names (:data:`ANALYSTS`), the panel, in order; ``paper``: all six
        (ECHO's panel size), ``small``: conservative, causal_chain, balanced
    max_candidates : int or None, the most candidate steps the scan lists; None = the trace's
        length (``paper``, no cap); ``small``: 3
    l1_radius, l2_radius, l3_radius : int, the distances of ECHO's layers L1 (full, ±1), L2 (key
        lines, ±2-3) and L3 (summary, ±4-6); farther steps are in the global view only (L4)
    l2_chars, l3_chars, l4_chars : int or None, the most characters per step at L2, L3 and in the
        global view (L4). ECHO defines each layer by what it keeps (L2 key reasoning lines, L3 an
        outcome summary and warnings, L4 a milestone line, extracted by pattern matching) and gives
        no character counts, so ``paper`` has none (None: the extraction alone compresses; the
        rendered views stay within the context budget, see :func:`panel_messages`); ``small``:
        300 / 120 / 60
    consensus : ``"confidence_weighted"`` (a vote weighs its confidence, ECHO's rule) or ``"majority"``
        (every vote weighs 1)
    tie_break : ``"earliest"`` (default), ``"highest_confidence"`` or ``"scan_rank"`` (see the module docstring)
    min_confidence : float, votes with a lower confidence are dropped (0 = keep all)
    min_support : float, the winner's least share of the total vote weight; below it the trace is
        undetermined (0 = always decide)
    field_chars : int or None, the most characters of each text field of the replies (schema
        ``maxLength``, longer text cut); None = no cap (``paper``: ECHO's paper gives none; the
        profile's completion budget bounds the reply); ``small``: 160
    """

    analysts: tuple[AnalystName, ...] = Field(tuple(ANALYSTS), min_length=1)
    max_candidates: int | None = Field(None, ge=1)
    l1_radius: int = Field(1, ge=0)
    l2_radius: int = Field(3, ge=0)
    l3_radius: int = Field(6, ge=0)
    l2_chars: int | None = Field(None, ge=40)
    l3_chars: int | None = Field(None, ge=40)
    l4_chars: int | None = Field(None, ge=20)
    consensus: Literal["confidence_weighted", "majority"] = "confidence_weighted"
    tie_break: Literal["earliest", "highest_confidence", "scan_rank"] = "earliest"
    min_confidence: float = Field(0.0, ge=0.0, le=1.0)
    min_support: float = Field(0.0, ge=0.0, le=1.0)
    field_chars: int | None = Field(None, ge=40)

    @field_validator("analysts")
    @classmethod
    def _distinct(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(v)) != len(v):
            raise ValueError(f"analysts must be distinct, got {list(v)}")
        return v


#: presets (:mod:`agentcausal.settings`); fields not listed keep the ``paper`` defaults
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {
        "prompts": "small",
        "max_tokens": 384,
        "analysts": ("conservative", "causal_chain", "balanced"),
        "max_candidates": 3,
        "l2_chars": 300,
        "l3_chars": 120,
        "l4_chars": 60,
        "field_chars": 160,
    },
}
