"""Settings of DCFA (GCA + LCE), one frozen model that enters every cache key, and its presets.

The model defaults are the ``paper`` preset: DCFA as its paper defines it,
with no cap the paper does not have (``max_edges``, ``max_deviations``,
``max_iterations``, ``max_corrected_step_chars`` and ``max_reason_chars`` are None; safety bounds
come from the trace: at most n(n-1)/2 edges and n deviations survive
validation, and the search moves monotonically so it ends within n moves),
completion budgets from the profile's ``max_output_tokens``
(:func:`agentcausal.settings.completion_budget`), and the paper-intent prompts.
:data:`PRESETS` ``"small"`` holds the caps and wording tuned for the embedded
Qwen2.5-Coder-0.5B on 2 CPU cores (8192-token context per slot, about 47 tok/s
prefill and 18 tok/s decode), where one short Who&When trace (6 steps, ~3k
characters) should be attributed in two to three minutes.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/DCFA), sections 4.1, 4.2 and appendix K, Algorithms 1 and 2.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DcfaSettings", "DcfaGcaOnlySettings", "PRESETS"]

#: field values per preset; fields not listed keep the model default (the ``paper`` value)
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {
        "prompts": "small",
        "max_iterations": 3,
        "max_deviations": 5,
        "max_edges": 10,
        "max_reason_chars": 120,
        "max_corrected_step_chars": 300,
        "hg_max_tokens": 96,
        "simulation_max_tokens": 48,
        "ded_max_tokens": 96,
        "judge_max_tokens": 64,
    },
}


class DcfaSettings(BaseModel):
    """Settings of one DCFA attribution.

    Attributes
    ----------
    prompts : "paper" or "small", the prompt set (``prompts.PROMPT_VERSIONS``); set by the preset
    with_ground_truth : bool, show the correct answer to HG, Correct and DED and score
        S(i) by similarity to it (the paper's setting). False = the "no_truth" variant
        (Who&When's second setting, beyond the paper): no stage sees the answer and S(i)
        is a judge's probability that the simulated outcome answers the question correctly.
    use_lce : bool, run LCE after GCA (False = the paper's "w/o LCE" ablation,
        the GCA hypothesis is the answer). Default True.
    split_mdi_cgc : bool, ask MDI and CGC in two calls instead of one (the
        paper's default is one call, then HG in a second). Default False.
    max_iterations : int or None, pivot moves per search direction; None = no cap
        (Algorithm 2 has none; edges point forward in time, so a direction ends
        within n moves). ``small``: 3.
    max_deviations : int or None, most minor deviations kept (also ``maxItems`` in the
        reply schema); None = no cap (at most n survive validation). ``small``: 5.
    max_edges : int or None, most dependency edges LCE searches; HG always sees every
        valid edge, and a cap keeps the edges closest to the hypothesis (the dropped
        count is reported as ``capped``). None = no cap (at most n(n-1)/2 valid edges).
        ``small``: 10 (also ``maxItems`` in the CGC reply schema).
    max_reason_chars : int or None, ``maxLength`` of each reason of MDI, CGC, HG and DED
        (schema; longer ones are cut). None = no cap (``paper``: the paper's prompts ask for
        brief explanations, appendix K, and give no length; the profile's completion budget
        bounds the reply). ``small``: 120.
    max_corrected_step_chars : int or None, ``maxLength`` of each corrected step (a longer
        one is cut after the changed/unchanged comparison). None = no cap. ``small``: 300.
    gca_max_tokens : int or None, completion cap of the MDI+CGC call (and of each when
        split); None = enough for the caps when both list caps are set (:meth:`gca_tokens`),
        else the profile's budget (:func:`agentcausal.settings.completion_budget`).
    hg_max_tokens, simulation_max_tokens, ded_max_tokens, judge_max_tokens : int or None,
        completion caps of HG, one Simulation, DED and the no-truth judge; None = the
        profile's budget. ``small``: 96, 48, 96, 64.
    correct_max_tokens : int or None, completion cap of Correct; None = derived from the
        step count and ``max_corrected_step_chars`` when that is set (about 1 token per
        3 characters, plus 64), else the profile's budget.
    simulation_sees_truth : bool, show the correct answer to Simulation. Default
        False: the outcome is scored by its similarity to the truth, so showing
        the truth would let the simulator copy it and flatten every ΔS.
    max_workers : int, threads that evaluate a pivot's neighbours concurrently
        (the gateway also caps requests per endpoint). Default 4.
    reserve_tokens : int, tokens of a context window kept free of trace text
        for instructions and the completion. Default 1024.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompts: Literal["paper", "small"] = "paper"
    with_ground_truth: bool = True
    use_lce: bool = True
    split_mdi_cgc: bool = False
    max_iterations: int | None = Field(None, ge=0)
    max_deviations: int | None = Field(None, ge=1)
    max_edges: int | None = Field(None, ge=0)
    max_reason_chars: int | None = Field(None, ge=20)
    max_corrected_step_chars: int | None = Field(None, ge=40)
    gca_max_tokens: int | None = Field(None, ge=16)
    hg_max_tokens: int | None = Field(None, ge=16)
    correct_max_tokens: int | None = Field(None, ge=16)
    simulation_max_tokens: int | None = Field(None, ge=8)
    ded_max_tokens: int | None = Field(None, ge=16)
    judge_max_tokens: int | None = Field(None, ge=16)
    simulation_sees_truth: bool = False
    max_workers: int = Field(4, ge=1)
    reserve_tokens: int = Field(1024, ge=0)

    @property
    def variant(self) -> str:
        """``"with_truth"`` or ``"no_truth"`` (what the plan and results name)."""
        return "with_truth" if self.with_ground_truth else "no_truth"

    @property
    def gca_tokens(self) -> int | None:
        """Completion cap of an MDI/CGC call: ``gca_max_tokens``, or enough for the caps when both
        list caps and ``max_reason_chars`` are set (about 1 token per 3 reason characters + 12 per
        deviation, 14 per edge (``small`` wording; 40 + reason per judged edge under ``paper``
        prompts), 32 of framing); None = the profile's budget."""
        if self.gca_max_tokens is not None:
            return self.gca_max_tokens
        if self.max_deviations is None or self.max_edges is None or self.max_reason_chars is None:
            return None
        per_edge = 14 if self.prompts == "small" else 40 + self.max_reason_chars // 3
        return self.max_deviations * (self.max_reason_chars // 3 + 12) + self.max_edges * per_edge + 32


class DcfaGcaOnlySettings(DcfaSettings):
    """Settings of the "w/o LCE" ablation (``dcfa_gca_only``): ``use_lce`` defaults to False."""

    use_lce: bool = False
