"""Either half's plan, told apart by ``kind``: what a reader of any run folder's ``plan.json`` uses.

:data:`AnyPlan` is the discriminated union of :class:`~agentcausal.attribution.plan_model.AttributionPlan`
(``kind: "attribute"``) and :class:`~agentcausal.discovery.plan_model.DiscoveryPlan` (``kind: "discover"``);
:func:`read_any_plan` reads a ``plan.json`` as the one its ``kind`` names. A reader that knows its half
reads with :func:`agentcausal.runs.plan.read_plan` and that half's plan type.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from agentcausal.attribution.plan_model import AttributionPlan
from agentcausal.discovery.plan_model import DiscoveryPlan
from agentcausal.exceptions import RunFileError

__all__ = ["AnyPlan", "PLAN_TYPES", "parse_any_plan", "read_any_plan"]

#: a plan of either half, by its ``kind``
AnyPlan = Annotated[AttributionPlan | DiscoveryPlan, Field(discriminator="kind")]
#: the plan type of each ``kind``
PLAN_TYPES: dict[str, type[AttributionPlan] | type[DiscoveryPlan]] = {
    "attribute": AttributionPlan,
    "discover": DiscoveryPlan,
}

_ADAPTER: TypeAdapter[AttributionPlan | DiscoveryPlan] = TypeAdapter(AnyPlan)


def parse_any_plan(data: str | bytes | dict[str, Any]) -> AttributionPlan | DiscoveryPlan:
    """The plan of a ``plan.json``'s text (or its parsed dict), as the type its ``kind`` names.

    Raises
    ------
    pydantic.ValidationError
        If it is no plan, or its ``kind`` is neither ``attribute`` nor ``discover``.
    """
    if isinstance(data, dict):
        return _ADAPTER.validate_python(data)
    return _ADAPTER.validate_json(data)


def read_any_plan(path: str | Path) -> AttributionPlan | DiscoveryPlan:
    """The plan whose header is the file ``path`` (``plan.json``) of either half, its items streamed from its file.

    Raises
    ------
    RunFileError
        If the file is missing, or not a plan header of either half.
    """
    p = Path(path)
    try:
        return parse_any_plan(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunFileError(f"cannot read the run plan: {exc.strerror or exc}", path=str(p)) from exc
    except ValueError as exc:
        raise RunFileError(f"not a run plan (torn?): {str(exc)[:200]}", path=str(p)) from exc
