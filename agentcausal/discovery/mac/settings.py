"""Settings of MAC and its ablations (frozen, so they enter cache keys)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MACSettings", "PRESETS", "DEBATE_STAGE", "CODER_STAGE", "BASELINE_STAGE"]

DEBATE_STAGE = "mac.debate"
CODER_STAGE = "mac.coder"
BASELINE_STAGE = "mac.baseline"


class MACSettings(BaseModel):
    """How MAC runs.

    Attributes
    ----------
    stages : "full" (DCM, Meta Fusion, MDM), "dcm_only" (the data graph is the
        answer), "mdm_only" (graph debate on metadata alone)
    single_agent : bool, Affirmative only: no Negative, no Judge (paper §4.4)
    rounds : int in [1, 5], Affirmative-Negative exchanges before the Judge (paper §4.3; default 1)
    subset_size : int, rows of the subset S shown in algorithm mode
    executor : "auto" (default, the paper's DCM: the Causal Coding Executor where the sandbox of
        :mod:`agentcausal.discovery.mac.sandbox` works here, else the typed executor; resolved at run
        time by :func:`agentcausal.discovery.mac.executor.resolve_executor`, and the run records why
        when it falls back), "coding" (LLM-written causal-learn script in the sandbox; falls back to
        typed after ``coding_attempts`` failed scripts) or "typed" (run the chosen algorithm through the
        pool, no coder calls)
    coding_attempts : int, scripts tried (traceback fed back) before falling back
    algorithm_timeout_s : float, wall limit of one pool algorithm
    sandbox_timeout_s : float, wall limit of one sandboxed script
    sandbox_memory_mb : int, address-space limit of a sandboxed script
    max_orderings : int, cap on implied-ordering sentences in Meta Fusion
    max_tokens_scale : float, multiplies every completion cap (raise it for verbose models)
    edge_reason_chars : int, the cap (characters) of the short reason each graph-mode edge carries, which
        the Negative and the Judge read; 0 = edges without reasons (the paper's figures show arguments,
        so ``paper`` keeps them)
    judge_rule : how the graph-mode Judge decides (the paper leaves the rule open, app. A.1):
        "criteria" = the Judge votes A, B or tie on each of three criteria (skeleton, colliders,
        directions), a vote is a point and the graph with more points wins; "overall" = the Judge names
        the better graph (A, B or tie) in one vote
    tie_break : who wins a graph-mode tie (equal points, or an "overall" tie): "affirmative" (the
        proposal under debate stands), "negative", or "fewer_edges" (the sparser graph; the Affirmative
        on equal counts)
    fallback_algorithm : the pool algorithm DCM runs when the algorithm debate gives no valid proposal
        (the run is then marked degraded)
    sampling_temperature : float or None, temperature of MAC's LLM calls (debates and coder; ``llm_zero_shot`` reads it too) in a run that asks for
        more than one LLM sample per (dataset, method) (several seeds, or ``--repeats``), so that
        mean ± std over them measures sampling variation; a single-sample run, and None, use the
        profile's temperature (0 unless the profile sets one: the MAC paper's setting, arXiv:2407.15073
        §4.1). ``paper`` keeps None as the paper does (at temperature 0 a method whose prompt does not
        depend on the data answers the same for every seed, and the report then says "identical
        samples: std not informative"); ``small`` samples at 0.7, the temperature of the published
        generation config of Qwen2.5-Coder-Instruct, the embedded model's family
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    stages: Literal["full", "dcm_only", "mdm_only"] = "full"
    single_agent: bool = False
    rounds: int = Field(1, ge=1, le=5)
    subset_size: int = Field(5, ge=0, le=50)
    executor: Literal["auto", "typed", "coding"] = "auto"
    coding_attempts: int = Field(3, ge=1, le=10)
    algorithm_timeout_s: float = Field(120.0, gt=0)
    sandbox_timeout_s: float = Field(120.0, gt=0)
    sandbox_memory_mb: int = Field(4096, ge=256)
    max_orderings: int = Field(10, ge=0)
    max_tokens_scale: float = Field(1.0, gt=0, le=10)
    edge_reason_chars: int = Field(160, ge=0, le=400)
    judge_rule: Literal["criteria", "overall"] = "criteria"
    tie_break: Literal["affirmative", "negative", "fewer_edges"] = "affirmative"
    fallback_algorithm: Literal["pc", "fci", "ges", "exact_search", "direct_lingam"] = "pc"
    sampling_temperature: float | None = Field(None, ge=0, le=2)


#: field values per preset (:mod:`agentcausal.settings`); ``paper`` = the model defaults (the coding
#: executor where the sandbox works). ``small`` (sub-2B models on CPU): shorter per-edge reasons, so a
#: graph reply over Alarm's 37 variables still fits; and the typed executor: a coder call is a prompt
#: of about 1,000 tokens (algorithm, parameters, usage block, encodings) and a script of up to 600
#: tokens, up to ``coding_attempts`` = 3 times with the traceback fed back, while the embedded 0.5B
#: model on 2 CPU cores takes about 60 s for 1,000 prompt + 70 completion tokens (the embedded-model
#: benchmark of ``python -m bench``): coding would add several minutes to each MAC run (the demo runs
#: MAC on two datasets), and a script that fails all attempts ends in the typed executor anyway, with
#: the row marked degraded. ``--executor auto`` or ``--executor coding`` turns it on under ``small``.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {"edge_reason_chars": 60, "executor": "typed", "sampling_temperature": 0.7},
}
