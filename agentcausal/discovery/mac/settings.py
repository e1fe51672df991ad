"""Settings of MAC and its ablations (frozen, so they enter cache keys)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MACSettings", "DEBATE_STAGE", "CODER_STAGE", "BASELINE_STAGE"]

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
