"""The plan of an attribution run, and the request a flow plans one from.

:class:`AttributionPlan` is the header of :mod:`agentcausal.runs.plan` (its fields and ``plan.json``) with
what only attribution plans: the provenance of an imported corpus. :class:`AttributionRequest` is what a
scheduled deployment gives the ``attribute`` flow instead of a plan (trace paths, methods, selection):
:func:`agentcausal.attribution.plan.plan_attribution` turns it into the plan at the start of the flow run.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentcausal.runs.plan import Plan, SourceFile

__all__ = ["AttributionPlan", "AttributionRequest"]


class AttributionPlan(Plan):
    """What an attribution run will do (``kind`` ``attribute``): a trace per item, the methods as they run.

    Attributes
    ----------
    sources : list of SourceFile or None, the files an imported corpus was read from (None: read as it is)
    labels : SourceFile or None, the ``--labels`` file of an imported corpus

    The shared fields are :class:`agentcausal.runs.plan.Plan`'s; items carry ``path``, ``sha256``,
    ``file_sha256``, ``offset`` and ``facts``.
    """

    ITEM_FIELDS_NOT_SHOWN: ClassVar[tuple[str, ...]] = ("n", "d", "spec", "data_hashes")

    kind: Literal["attribute"] = "attribute"
    sources: list[SourceFile] | None = None
    labels: SourceFile | None = None


class AttributionRequest(BaseModel):
    """What to plan an attribution run from: the inputs of :func:`agentcausal.attribution.plan.plan_attribution`.

    Attributes
    ----------
    paths : list of str, trace folders or files (any supported format is imported by the CLI; here Trace JSONL
        or Who&When); empty: the Who&When folder of the run's settings (``AGENTCAUSAL_WHO_AND_WHEN_DIR``)
    methods : list of str, method names (``agentcausal attribute --help``)
    method_settings : dict method -> {field: value} or None, settings over the preset's
    with_ground_truth : bool or None, show the methods the correct answer (None: each method's default)
    preset : str or None, the settings preset (None: the routing's)
    ids : list of str or None, only these trace ids
    limit : int >= 1 or None, at most this many traces (after ``ids`` and ``max_steps``)
    max_steps : int >= 1 or None, only traces of at most this many steps
    repeats : int >= 1, runs per (trace, method)
    skip_invalid : bool, leave out invalid trace inputs (named in the log and the plan's ``skipped``)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    paths: list[str] = Field(default_factory=list)
    methods: list[str] = Field(default_factory=lambda: ["all_at_once"])
    method_settings: dict[str, dict[str, Any]] | None = None
    with_ground_truth: bool | None = None
    preset: str | None = None
    ids: list[str] | None = None
    limit: int | None = Field(None, ge=1)
    max_steps: int | None = Field(None, ge=1)
    repeats: int = Field(1, ge=1)
    skip_invalid: bool = False
