"""Settings of DCFA (GCA + LCE), one frozen model that enters every cache key, and its presets.

The model defaults are the ``paper`` preset: the procedure of the authors'
released code (github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution,
``Automated_FA/DCFA_failure_attribution.py`` and ``agent_prompt/*.txt``), which
produced the published tables, minus its known bugs (named where they are
fixed: :mod:`~agentcausal.attribution.dcfa.method`). Where the paper's text
and the released code differ, one setting switches to the text's version:

==================  ============================================  ==============================================
setting             ``paper`` (released code)                      the paper's text
==================  ============================================  ==============================================
``mdi_cgc``         ``split``: MDI, then CGC, two calls            ``joint``: one call (appendix L, Fig. 9; eq. 15)
``cgc``             ``code``: cause and effect lists of every      ``equations``: each edge judged temporal,
                    step (temporality, precondition, influence)    necessary, sufficient (eqs. 3 to 5)
``simulation``      ``code``: S(i) names candidate i and its       ``equations``: Simulation(T~(i)) with no
                    effects; S(i-1) is its own simulation with     candidate, one S per counterfactual (eqs. 9 to
                    no candidate                                   11)
``search_order``    ``causes_first``                               ``successors_first`` (Algorithm 2)
``delta_s_decimals`` 3: ΔS rounded before ``> 0`` and ``> max``    None: raw floats (eqs. 12, 13)
``search_ties``     ``outward``: the lower step towards causes,    ``lower``: the lower step in both directions
                    the higher towards effects                     (the text names no rule)
``revisit``         False: a step evaluated once is never          True: every neighbour of every pivot is
                    evaluated again (one visited set)              evaluated (Algorithm 2 keeps no set)
``max_iterations``  5 pivot moves per direction                    None: until no positive ΔS (Algorithm 2)
``ded``             ``code``: question, truth, each candidate's    ``equations``: truth, candidates and graph
                    text with its Simulation and MDI reasons,      (eq. 14), the answer one of the candidates
                    the hypothesis flagged, no graph, any step,
                    always called
==================  ============================================  ==============================================

``correct_variant`` chooses Correct's prompt: the released code has one for
Algorithm-Generated and one for Hand-Crafted traces; ``auto`` takes the
Hand-Crafted one for traces whose ``source`` is ``Hand-Crafted`` and the
Algorithm-Generated one for every other source (imported traces included:
set ``hand_crafted`` for long traces with code and logs in their steps).

:data:`PRESETS` ``"small"`` holds what the embedded Qwen2.5-Coder-0.5B on 2 CPU
cores needs (8192-token context per slot, about 47 tok/s prefill and 18 tok/s
decode; one short Who&When trace of 6 steps should be attributed in two to
three minutes): short prompts, one MDI+CGC call listing edges, the neutral
Simulation prompt (one S per counterfactual), DED over the candidates only,
and caps. The search rules are the ``paper`` ones in both presets.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), sections 4.1, 4.2 and appendix K, Algorithms 1 and 2.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["DcfaSettings", "DcfaGcaOnlySettings", "PRESETS", "CORRECT_VARIANTS", "correct_variant_for"]

#: field values per preset; fields not listed keep the model default (the ``paper`` value)
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {
        "prompts": "small",
        "mdi_cgc": "joint",
        "cgc": "edges",
        "link_checks": "strict",
        "simulation": "equations",
        "ded": "equations",
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

#: Correct's prompt variants of the released code
CORRECT_VARIANTS = ("algorithm_generated", "hand_crafted")


def correct_variant_for(setting: str, source: str) -> str:
    """The Correct variant a trace gets: ``setting`` itself, or under ``auto`` ``hand_crafted`` for
    a ``Hand-Crafted`` trace and ``algorithm_generated`` for any other source.

    Examples
    --------
    >>> correct_variant_for("auto", "Hand-Crafted"), correct_variant_for("auto", "otel")
    ('hand_crafted', 'algorithm_generated')
    >>> correct_variant_for("hand_crafted", "Algorithm-Generated")
    'hand_crafted'
    """
    if setting != "auto":
        return setting
    return "hand_crafted" if source == "Hand-Crafted" else "algorithm_generated"


class DcfaSettings(BaseModel):
    """Settings of one DCFA attribution (see the module docstring for the paper/code settings).

    Attributes
    ----------
    prompts : "paper" or "small", the prompt set (``prompts.PROMPT_VERSIONS``); set by the preset
    with_ground_truth : bool, show the correct answer to HG, Correct and DED and score
        S(i) by similarity to it (the paper's setting). False = the "no_truth" variant
        (Who&When's second setting, beyond the paper): no stage sees the answer and S(i)
        is a judge's probability that the simulated outcome answers the question correctly.
    use_lce : bool, run LCE after GCA (False = the paper's "w/o LCE" ablation,
        the GCA hypothesis is the answer). Default True.
    mdi_cgc : "split" (released code: MDI, then CGC) or "joint" (the text: one call)
    cgc : "code" (cause/effect lists of every step), "equations" (each proposed edge judged on
        eqs. 3 to 5, kept when all three hold) or "edges" (a plain edge list, ``small``)
    link_checks : "code" (the released code: CGC's self-links and links against time are kept and
        followed) or "strict" (dropped and counted, temporality being the prompt's own criterion);
        out-of-range and repeated links are dropped under both
        (:mod:`~agentcausal.attribution.dcfa.gca_validation`). ``small``: "strict".
    correct_variant : "auto", "algorithm_generated" or "hand_crafted" (:func:`correct_variant_for`)
    simulation : "code" or "equations" (module docstring); ``small`` prompts have only the neutral one
    search_order : "causes_first" (released code) or "successors_first" (Algorithm 2)
    delta_s_decimals : int or None, ΔS is rounded to this many decimals before it is compared
        with 0 and with the best so far (released code: 3); None = raw floats
    search_ties : "outward" (released code: ties go to the lower step towards causes, the higher
        towards effects) or "lower" (the lower step in both directions)
    revisit : bool, evaluate a step again when it is a neighbour of a later pivot (False, the
        released code: one visited set across iterations and directions)
    ded : "code" or "equations" (module docstring)
    max_iterations : int or None, pivot moves per search direction; None = no cap
        (edges point forward in time, so a direction ends within n moves). ``paper``: 5
        (the released code's default), ``small``: 3.
    max_deviations : int or None, most minor deviations kept (also ``maxItems`` in the
        reply schema); None = no cap (at most n survive validation). ``small``: 5.
    max_edges : int or None, most dependency edges LCE searches; HG always sees every
        valid edge, and a cap keeps the edges closest to the hypothesis (the dropped
        count is reported as ``capped``). None = no cap (at most n(n-1)/2 valid edges).
        ``small``: 10 (also ``maxItems`` in the CGC reply schema).
    max_reason_chars : int or None, ``maxLength`` of each reason of MDI, CGC, HG and DED
        (schema; longer ones are cut). None = no cap. ``small``: 120.
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
        False (as the released code): the outcome is scored by its similarity to the
        truth, so showing the truth would let the simulator copy it.
    max_workers : int, threads that evaluate a pivot's neighbours concurrently
        (the gateway also caps requests per endpoint). Default 4.
    reserve_tokens : int, tokens of a context window kept free of trace text
        for instructions and the completion. Default 1024.
    quote_evidence : bool, ask HG and DED for one more reply field, ``evidence``, a verbatim quote
        from the step they name (kept only when it is a substring of that step:
        :mod:`agentcausal.attribution.evidence`). Beyond the paper; False in every preset, so
        what ``paper`` and ``small`` send is unchanged.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompts: Literal["paper", "small"] = "paper"
    with_ground_truth: bool = True
    use_lce: bool = True
    mdi_cgc: Literal["split", "joint"] = "split"
    cgc: Literal["code", "equations", "edges"] = "code"
    link_checks: Literal["code", "strict"] = "code"
    correct_variant: Literal["auto", "algorithm_generated", "hand_crafted"] = "auto"
    simulation: Literal["code", "equations"] = "code"
    search_order: Literal["causes_first", "successors_first"] = "causes_first"
    delta_s_decimals: int | None = Field(3, ge=0, le=12)
    search_ties: Literal["outward", "lower"] = "outward"
    revisit: bool = False
    ded: Literal["code", "equations"] = "code"
    max_iterations: int | None = Field(5, ge=0)
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
    quote_evidence: bool = False

    @model_validator(mode="after")
    def _prompt_set_has_it(self) -> "DcfaSettings":
        # the ``small`` prompt set has one wording per stage; the ``paper`` set has no plain edge list
        if self.prompts == "small":
            wrong = [
                f"{k}={getattr(self, k)!r}"
                for k, v in (("cgc", "edges"), ("simulation", "equations"), ("ded", "equations"))
                if getattr(self, k) != v
            ]
            if wrong:
                raise ValueError(
                    f"prompts='small' has only cgc='edges', simulation='equations' and "
                    f"ded='equations'; got {', '.join(wrong)}"
                )
        elif self.cgc == "edges":
            raise ValueError("cgc='edges' needs prompts='small'; the paper prompts take cgc='code' or 'equations'")
        return self

    @property
    def variant(self) -> str:
        """``"with_truth"`` or ``"no_truth"`` (what the plan and results name)."""
        return "with_truth" if self.with_ground_truth else "no_truth"

    @property
    def gca_tokens(self) -> int | None:
        """Completion cap of an MDI/CGC call: ``gca_max_tokens``, or enough for the caps when both
        list caps and ``max_reason_chars`` are set (about 1 token per 3 reason characters + 12 per
        deviation, 14 per plain edge, 40 + reason per judged edge, 12 per step's cause/effect lists
        under ``cgc="code"``, 32 of framing); None = the profile's budget."""
        if self.gca_max_tokens is not None:
            return self.gca_max_tokens
        if self.max_deviations is None or self.max_edges is None or self.max_reason_chars is None:
            return None
        per_edge = {"edges": 14, "equations": 40 + self.max_reason_chars // 3, "code": 12}[self.cgc]
        return self.max_deviations * (self.max_reason_chars // 3 + 12) + self.max_edges * per_edge + 32


class DcfaGcaOnlySettings(DcfaSettings):
    """Settings of the "w/o LCE" ablation (``dcfa_gca_only``): ``use_lce`` defaults to False."""

    use_lce: bool = False
