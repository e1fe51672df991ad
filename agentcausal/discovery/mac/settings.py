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
    executor : "typed" (run the chosen algorithm through the pool) or
        "coding" (LLM-written causal-learn script in a sandbox; falls back to typed)
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
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    stages: Literal["full", "dcm_only", "mdm_only"] = "full"
    single_agent: bool = False
    rounds: int = Field(1, ge=1, le=5)
    subset_size: int = Field(5, ge=0, le=50)
    executor: Literal["typed", "coding"] = "typed"
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


#: field values per preset (:mod:`agentcausal.presets`); ``paper`` = the model defaults. ``small`` (sub-2B
#: models on CPU): shorter per-edge reasons, so a graph reply over Alarm's 37 variables still fits.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {"edge_reason_chars": 60},
}
