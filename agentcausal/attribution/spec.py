"""What an attribution method is (:class:`MethodSpec`, defined by each method module and listed in
:data:`agentcausal.attribution.registry.METHODS`), and the usage item it books its calls under."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from agentcausal.llm import LLMCall
from agentcausal.traces.model import Attribution, Trace

__all__ = ["MethodSpec", "usage_item"]

#: a method's settings model
S = TypeVar("S", bound=BaseModel)


@dataclass(frozen=True)
class MethodSpec(Generic[S]):
    """One attribution method: a plain function, a frozen settings model and a prompt version (the settings
    and the prompt version enter every cache key and are stored with every result).

    Attributes
    ----------
    name : str, the CLI and results name (``all_at_once``, ``dcfa`` ...)
    run : callable (trace, call, settings) -> Attribution, ``call`` the run's
        :class:`~agentcausal.llm.call.LLMCall` (its usage item ``"<trace id>::<method>"``, its sample the repeat
        index); must not raise for a method-level failure it can describe (it may raise AgentCausalError)
    settings_model : frozen pydantic model class with defaults for every field
    prompt_version : str
    stages : tuple of stage names the method calls (for routing checks and reports); every
        attribution method calls an LLM
    presets : mapping preset name -> settings field values (the settings module's ``PRESETS``;
        :mod:`agentcausal.settings`); empty = every preset is the model defaults
    """

    name: str
    run: Callable[[Trace, LLMCall, S], Attribution]
    settings_model: type[S]
    prompt_version: str
    stages: tuple[str, ...]
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def needs_labels(self) -> bool:
        """True when the method cannot run without the trace's label (its settings have no
        ``with_ground_truth`` switch)."""
        return "with_ground_truth" not in self.settings_model.model_fields


def usage_item(trace_id: str, method: str) -> str:
    """Usage-ledger item key of one (trace, method) run: ``"<trace_id>::<method>"``, so two methods running at
    once on one trace in one process do not mix their token counts.

    >>> usage_item("Hand-Crafted/20", "all_at_once")
    'Hand-Crafted/20::all_at_once'
    """
    return f"{trace_id}::{method}"
