"""The plan of a discovery run, and the request a flow plans one from.

:class:`DiscoveryPlan` is the header of :mod:`agentcausal.runs.plan` (its fields and ``plan.json``) with
what only discovery plans: seeds, rows, the run's :class:`~agentcausal.discovery.config.DiscoveryConfig`,
the datasets LLM methods run on and the anonymisation asked. :class:`DiscoveryRequest` is what a scheduled
deployment gives the ``discover`` flow instead of a plan: :func:`agentcausal.discovery.plan.plan_discovery`
turns it into the plan at the start of the flow run.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.runs.plan import SHOWN_ITEMS, Plan

__all__ = ["DiscoveryPlan", "DiscoveryRequest"]


class DiscoveryPlan(Plan):
    """What a discovery run will do (``kind`` ``discover``): a dataset per item, run for each seed.

    Attributes
    ----------
    seeds : list of int or None, the data seeds (None: ``[0]``)
    n : int or None, rows sampled from a bnlearn network (None: 1000)
    config : DiscoveryConfig or None, the run-wide configuration, its executor resolved and ``samples`` set
        (None: the defaults); ``plan.json`` holds it as its JSON
    llm_datasets : list of str or None, the item ids LLM methods run on (None: every one)
    anonymise : list of str or None, the ``--anonymise`` choices (empty or None: not asked, shown as ``["none"]``)

    The shared fields are :class:`agentcausal.runs.plan.Plan`'s; items carry ``spec``, ``n``, ``d`` and
    ``data_hashes``.
    """

    ITEM_FIELDS_NOT_SHOWN: ClassVar[tuple[str, ...]] = ("file_sha256", "offset")

    kind: Literal["discover"] = "discover"
    seeds: list[int] | None = None
    n: int | None = None
    config: DiscoveryConfig | None = None
    llm_datasets: list[str] | None = None
    anonymise: list[str] | None = None

    def run_config(self) -> DiscoveryConfig:
        """``config``, or the defaults when the plan has none."""
        return self.config if self.config is not None else DiscoveryConfig()

    def to_json_dict(self, *, shown: int = SHOWN_ITEMS) -> dict[str, Any]:
        """:meth:`agentcausal.runs.plan.Plan.to_json_dict`, ``anonymise`` ``["none"]`` when not asked."""
        out = super().to_json_dict(shown=shown)
        if not out.get("anonymise"):  # not asked: the names as they are, ``--anonymise``'s default
            out["anonymise"] = ["none"]
        return out


class DiscoveryRequest(BaseModel):
    """What to plan a discovery run from: the inputs of :func:`agentcausal.discovery.plan.plan_discovery`.

    Attributes
    ----------
    datasets : list of str, benchmark names, data files or ``DATA::META`` pairs
    methods : list of str, method names (``agentcausal discover --help``)
    seeds : list of int, the data seeds
    n : int >= 10, rows sampled from a bnlearn network
    config : DiscoveryConfig or None, the run-wide configuration (None: the defaults)
    repeats : int >= 1, runs per (dataset, seed, LLM method)
    llm_datasets : list of str or None, run LLM methods only on these datasets (None: on every one)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    datasets: list[str]
    methods: list[str] = Field(default_factory=lambda: ["mac"])
    seeds: list[int] = Field(default_factory=lambda: [0])
    n: int = Field(1000, ge=10)
    config: DiscoveryConfig | None = None
    repeats: int = Field(1, ge=1)
    llm_datasets: list[str] | None = None
