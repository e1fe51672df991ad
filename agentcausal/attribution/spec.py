"""What an attribution method is (:class:`AttributionSpec`, defined by each method module and listed in
:mod:`agentcausal.registry`), and the usage item it books its calls under."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from agentcausal.llm import LLMCall
from agentcausal.methods import MethodSpec
from agentcausal.traces.model import Attribution, Trace

__all__ = ["AttributionSpec", "usage_item"]

#: a method's settings model
S = TypeVar("S", bound=BaseModel)


@dataclass(frozen=True, kw_only=True, eq=False)
class AttributionSpec(MethodSpec, Generic[S]):
    """One attribution method (:class:`~agentcausal.methods.MethodSpec`): a plain function, a frozen settings
    model and a prompt version (the settings and the prompt version enter every cache key and are stored with
    every result).

    Attributes
    ----------
    run : callable (trace, call, settings) -> Attribution, ``call`` the run's
        :class:`~agentcausal.llm.call.LLMCall` (its usage item ``"<trace id>::<method>"``, its sample the repeat
        index); must not raise for a method-level failure it can describe (it may raise AgentCausalError)
    settings_model : frozen pydantic model class with defaults for every field
    stages : every attribution method calls an LLM
    needs_labels : True when its settings have no ``with_ground_truth`` switch (it cannot run without the
        trace's ground truth)
    """

    run: Callable[[Trace, LLMCall, S], Attribution]
    settings_model: type[S]


def usage_item(trace_id: str, method: str) -> str:
    """Usage-ledger item key of one (trace, method) run: ``"<trace_id>::<method>"``, so two methods running at
    once on one trace in one process do not mix their token counts.

    >>> usage_item("Hand-Crafted/20", "all_at_once")
    'Hand-Crafted/20::all_at_once'
    """
    return f"{trace_id}::{method}"
