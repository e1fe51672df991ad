"""Attribution methods by name: one dispatch table, checked up front.

A method is a plain function ``run(trace, gateway, settings) -> Attribution``
plus a frozen pydantic settings model and a prompt version. The settings and
the prompt version enter every cache key and are stored with every result.

Modules register their method at import; :func:`get_method` imports the known
modules on first use, so ``get_method("dcfa")`` works without importing DCFA
by hand.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from agentcausal.exceptions import ConfigError
from agentcausal.llm import Gateway
from agentcausal.traces.model import Attribution, Trace

__all__ = ["MethodSpec", "register", "get_method", "method_names", "KNOWN_MODULES"]

#: modules that define methods; imported lazily by get_method / method_names
KNOWN_MODULES = [
    "agentcausal.attribution.all_at_once",
    "agentcausal.attribution.step_by_step",
    "agentcausal.attribution.binary_search",
    "agentcausal.attribution.dcfa",
    "agentcausal.attribution.a2p",
    "agentcausal.attribution.echo",
]

_REGISTRY: dict[str, "MethodSpec"] = {}


@dataclass(frozen=True)
class MethodSpec:
    """One attribution method.

    Attributes
    ----------
    name : str, the CLI and results name (``all_at_once``, ``dcfa`` ...)
    run : callable (trace, gateway, settings) -> Attribution; must not raise for a
        method-level failure it can describe (it may raise AgentCausalError)
    settings_model : frozen pydantic model class with defaults for every field
    prompt_version : str
    stages : tuple of stage names the method calls (for routing checks and reports)
    presets : mapping preset name -> settings field values (the settings module's ``PRESETS``;
        :mod:`agentcausal.presets`); empty = every preset is the model defaults
    """

    name: str
    run: Callable[[Trace, Gateway, BaseModel], Attribution]
    settings_model: type[BaseModel]
    prompt_version: str
    stages: tuple[str, ...]
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def register(spec: MethodSpec) -> MethodSpec:
    _REGISTRY[spec.name] = spec
    return spec


def _load_all() -> None:
    for mod in KNOWN_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


def method_names() -> list[str]:
    """Names of all registered methods, sorted."""
    _load_all()
    return sorted(_REGISTRY)


def get_method(name: str) -> MethodSpec:
    """The method called ``name``.

    Raises
    ------
    ConfigError
        If no such method exists; the message lists the valid names.
    """
    _load_all()
    if name not in _REGISTRY:
        raise ConfigError(f"unknown attribution method {name!r}; choose from: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]
