"""Settings of DCFA (GCA + LCE), one frozen model that enters every cache key.

Defaults are tuned for the default routing: the embedded Qwen2.5-Coder-0.5B
on 2 CPU cores (8192-token context per slot, about 47 tok/s prefill and
18 tok/s decode), where one short Who&When trace (6 steps, ~3k characters)
should be attributed in two to three minutes. Raise the token caps and the
search depth for a larger model (``--routing paper``).

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(seed ``../shared/seeds/002_2c62354fb78fce0f.txt``; code github.com/wzhSteve/DCFA), sections 4.1,
4.2 and appendix K, Algorithms 1 and 2.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DcfaSettings", "DcfaGcaOnlySettings"]


class DcfaSettings(BaseModel):
    """Settings of one DCFA attribution.

    Attributes
    ----------
    use_lce : bool, run LCE after GCA (False = the paper's "w/o LCE" ablation,
        the GCA hypothesis is the answer). Default True.
    split_mdi_cgc : bool, ask MDI and CGC in two calls instead of one (the
        paper's default is one call, then HG in a second). Default False.
    max_iterations : int, pivot moves per search direction (Algorithm 2 has no
        cap; each move costs up to two simulations). Default 3.
    max_deviations : int, most minor deviations asked for (advisory ``maxItems``
        in the reply schema; extra ones are cut). Default 5.
    max_edges : int, most dependency edges asked for (same mechanism). Default 10.
    max_reason_chars : int, advisory ``maxLength`` of each reason; longer ones are cut. Default 120.
    max_corrected_step_chars : int, advisory ``maxLength`` of each corrected step
        (a corrected step longer than this is cut). Default 300.
    gca_max_tokens : int or None, completion cap of the MDI+CGC call (and of each
        when split); None = derived from the caps so a full reply fits
        (:attr:`gca_tokens`, 432 with the defaults). Default None.
    hg_max_tokens : int, completion cap of HG. Default 96.
    correct_max_tokens : int or None, completion cap of Correct; None = derived
        from the step count and ``max_corrected_step_chars`` (about 1 token per
        3 characters, plus 64). Default None.
    simulation_max_tokens : int, completion cap of one Simulation. Default 48.
    ded_max_tokens : int, completion cap of DED. Default 96.
    simulation_sees_truth : bool, show the correct answer to Simulation. Default
        False: the outcome is scored by its similarity to the truth, so showing
        the truth would let the simulator copy it and flatten every ΔS.
    max_workers : int, threads that evaluate a pivot's neighbours concurrently
        (the gateway also caps requests per endpoint). Default 4.
    reserve_tokens : int, tokens of a context window kept free of trace text
        for instructions and the completion. Default 1024.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    use_lce: bool = True
    split_mdi_cgc: bool = False
    max_iterations: int = Field(3, ge=0)
    max_deviations: int = Field(5, ge=1)
    max_edges: int = Field(10, ge=0)
    max_reason_chars: int = Field(120, ge=20)
    max_corrected_step_chars: int = Field(300, ge=40)
    gca_max_tokens: int | None = Field(None, ge=16)
    hg_max_tokens: int = Field(96, ge=16)
    correct_max_tokens: int | None = Field(None, ge=16)
    simulation_max_tokens: int = Field(48, ge=8)
    ded_max_tokens: int = Field(96, ge=16)
    simulation_sees_truth: bool = False
    max_workers: int = Field(4, ge=1)
    reserve_tokens: int = Field(1024, ge=0)

    @property
    def gca_tokens(self) -> int:
        """Completion cap of an MDI/CGC call: ``gca_max_tokens``, or enough for the caps
        (about 1 token per 3 reason characters + 12 per deviation, 14 per edge, 32 of framing)."""
        if self.gca_max_tokens is not None:
            return self.gca_max_tokens
        return self.max_deviations * (self.max_reason_chars // 3 + 12) + self.max_edges * 14 + 32


class DcfaGcaOnlySettings(DcfaSettings):
    """Settings of the "w/o LCE" ablation (``dcfa_gca_only``): ``use_lce`` defaults to False."""

    use_lce: bool = False
