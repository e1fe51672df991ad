"""The DCFA record in ``Attribution.details`` as typed models.

:func:`agentcausal.attribution.dcfa.method.run_dcfa` builds a
:class:`DcfaDetails` and stores ``DcfaDetails.dump()`` in the Attribution's
``details`` (the same JSON as before: keys that a run did not reach are left
out, not stored as null), so ``details_json`` in ``results.parquet`` is
unchanged. Readers turn a stored record back into the model with
:meth:`DcfaDetails.read`. The fields are described in
:mod:`agentcausal.attribution.dcfa.method`.

References
----------
DCFA section 4 and appendix K.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["DeviationRecord", "StepChoice", "FinalChoice", "SearchStepRecord", "LceRecord", "LceFailure", "DcfaDetails"]

Number = int | float  # S(i) and ΔS as computed (an int stays an int in the stored JSON)


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", validate_assignment=True)  # extra: keys a later version adds are kept


class DeviationRecord(_Record):
    """One deviation found by MDI: its 0-based step and the reason."""

    step: int
    reason: str


class StepChoice(_Record):
    """The GCA hypothesis: step (0-based), the agent of that step, the reason."""

    step: int
    agent: str
    reason: str


class FinalChoice(StepChoice):
    """The answer: from DED (``ded``) or the GCA hypothesis kept (``hypothesis``)."""

    source: Literal["ded", "hypothesis"]


class SearchStepRecord(_Record):
    """One neighbour evaluated by the greedy search (:class:`agentcausal.attribution.dcfa.search.SearchStep`)."""

    direction: str
    iteration: int
    pivot: int
    step: int
    s: Number | None
    delta_s: Number | None
    accepted: bool
    s_prev: Number | None = None
    error: str | None = None


class LceRecord(_Record):
    """What LCE did (Correct, Simulation, search, DED); ``error`` None."""

    corrected_steps: list[int] | None
    correct_variant: str | None = None
    correct_fallback: str | None  # Correction.fallback: how the reply had to be read, None when read as sent
    correct_invalid: bool = False  # Correct's reply failed validation and was read leniently (or not at all)
    correct_missing: list[int] | None
    correct_truncated: list[int] | None
    scores: list[dict[str, Number]]
    outcomes: list[dict[str, Any]]
    evaluated: list[SearchStepRecord]
    path: list[SearchStepRecord]
    visited: list[int]
    stopped: dict[str, str]
    candidates: list[int]
    unscored: list[int] = []
    decision: dict[str, Any]
    error: None = None


class LceFailure(_Record):
    """LCE failed and the GCA hypothesis was kept: the error and whether it was one of ``content`` or the ``run``."""

    error: str
    cause: Literal["content", "run"]


class DcfaDetails(_Record):
    """The DCFA record of one trace (see :mod:`agentcausal.attribution.dcfa.method` for every field)."""

    n_steps: int
    step_agents: list[str] | None = None
    gca_calls: Literal["joint", "split"] | None = None
    cgc: str | None = None
    preset_prompts: str | None = None
    prompt_version: str | None = None
    variant: str | None = None
    deviations: list[DeviationRecord] | None = None
    dropped_deviations: dict[str, int] | None = None
    edges: list[list[int]] | None = None
    links: list[dict[str, Any]] | None = None
    search_edges: list[list[int]] | None = None
    edge_judgements: list[dict[str, Any]] | None = None
    dropped_edges: dict[str, int] | None = None
    hypothesis: StepChoice | None = None
    log_answer: str | None = None
    lce: LceRecord | LceFailure | None = None
    final: FinalChoice | None = None
    confidence_is: str | None = None

    def dump(self) -> dict[str, Any]:
        """The record as stored in ``Attribution.details``: the keys set, nested models as dicts."""
        return self.model_dump(exclude_unset=True)

    @classmethod
    def read(cls, details: Mapping[str, Any]) -> DcfaDetails:
        """A stored ``details`` dict (or the parsed ``details_json``) as the typed record."""
        return cls.model_validate(dict(details))
