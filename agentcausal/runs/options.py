"""How a run runs, beside what it runs (its plan): the run folder, the spend caps, the chunk size, progress.

:class:`RunOptions` is the second input of the ``attribute`` and ``discover`` flows (the first is the half's
plan, or a request to plan from); nothing in it enters a cache key or changes a stored record.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunOptions"]


class RunOptions(BaseModel):
    """Options of one invocation of a run.

    Attributes
    ----------
    out_dir : str or None, the run folder (None: ``runs/<kind>-<timestamp>``, :func:`agentcausal.runs.folder.default_run_dir`)
    chunk_size : int or None, jobs per chunk task at most (None or 0: the half's default)
    max_cost : float >= 0 or None, USD this invocation may spend; jobs past it are ``not_run``
        (:class:`agentcausal.runs.budget.BudgetGate`; None: no cap)
    max_tokens : int >= 0 or None, the same cap on prompt + completion tokens
    spent_before_usd : float >= 0, USD the run folder's earlier invocations spent (``--resume``), reported beside
    progress : bool, a tqdm bar on stderr
    meta : dict, extra ``run.json`` fields (``name`` names the run; ``corpus`` the trace paths an attribution
        run read, resolved)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    out_dir: str | None = None
    chunk_size: int | None = None
    max_cost: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)
    spent_before_usd: float = Field(0.0, ge=0)
    progress: bool = False
    meta: dict[str, Any] = Field(default_factory=dict)
