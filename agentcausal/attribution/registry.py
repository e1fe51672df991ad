"""Attribution methods by name: one dispatch table, checked up front, and the resolution of their settings.

A method is a plain function ``run(trace, gateway, settings) -> Attribution``
plus a frozen pydantic settings model and a prompt version. The settings and
the prompt version enter every cache key and are stored with every result.

* :func:`get_method`, :func:`method_names`: the table;
* :func:`resolve_methods`, :func:`method_settings`: names and settings checked up front, presets applied;
* :func:`usage_item`: the usage-ledger item a method books its calls under (``"<trace id>::<method>"``),
  so two methods running at once on one trace in one process do not mix their token counts.

Modules register their method at import; :func:`get_method` imports the known
modules on first use, so ``get_method("dcfa")`` works without importing DCFA
by hand.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from agentcausal.exceptions import ConfigError
from agentcausal.llm import Gateway
from agentcausal.settings import resolve
from agentcausal.traces.model import Attribution, Trace

__all__ = [
    "MethodSpec",
    "register",
    "get_method",
    "method_names",
    "KNOWN_MODULES",
    "usage_item",
    "method_settings",
    "resolve_methods",
]

#: modules that define methods; imported lazily by get_method / method_names
KNOWN_MODULES = [
    "agentcausal.attribution.all_at_once",
    "agentcausal.attribution.step_by_step",
    "agentcausal.attribution.binary_search",
    "agentcausal.attribution.dcfa",
    "agentcausal.attribution.a2p",
    "agentcausal.attribution.echo",
]

_REGISTRY: dict[str, "MethodSpec[Any]"] = {}

#: a method's settings model
S = TypeVar("S", bound=BaseModel)


@dataclass(frozen=True)
class MethodSpec(Generic[S]):
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
        :mod:`agentcausal.settings`); empty = every preset is the model defaults
    """

    name: str
    run: Callable[[Trace, Gateway, S], Attribution]
    settings_model: type[S]
    prompt_version: str
    stages: tuple[str, ...]
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def register(spec: MethodSpec[S]) -> MethodSpec[S]:
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


def get_method(name: str) -> MethodSpec[Any]:
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


def usage_item(trace_id: str, method: str) -> str:
    """Usage-ledger item key of one (trace, method) run: ``"<trace_id>::<method>"``.

    >>> usage_item("Hand-Crafted/20", "all_at_once")
    'Hand-Crafted/20::all_at_once'
    """
    return f"{trace_id}::{method}"


def method_settings(
    settings_model: type[BaseModel],
    values: BaseModel | Mapping[str, Any] | None,
    presets: Mapping[str, Mapping[str, Any]] | None = None,
    preset: str | None = None,
) -> BaseModel:
    """Validate method settings against the method's settings model.

    Parameters
    ----------
    settings_model : the method's frozen settings class
    values : an instance (used as it is), a mapping of field values, or None for the defaults.
        A ``with_ground_truth`` key is dropped for a model that does not define
        it (it is a run-wide switch); any other unknown key is an error.
    presets, preset : the method's ``PRESETS`` and the preset whose values lie under ``values``
        (:mod:`agentcausal.settings`); None = the model defaults (``paper``)

    Returns
    -------
    An instance of ``settings_model``.

    Raises
    ------
    ConfigError
        If the values do not validate (unknown field, wrong type) or the preset is unknown; lists the valid fields.
    """
    if isinstance(values, settings_model):
        return values
    data = dict(values.model_dump() if isinstance(values, BaseModel) else (values or {}))
    if "with_ground_truth" in data and "with_ground_truth" not in settings_model.model_fields:
        data.pop("with_ground_truth")
    return resolve(settings_model, presets or {}, preset, data)


def resolve_methods(
    methods: Sequence[str],
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    with_ground_truth: bool | None = None,
    preset: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Check method names and settings up front and return validated settings per method.

    Parameters
    ----------
    methods : method names, in order (duplicates dropped)
    settings : optional mapping method -> field values (``--set``; win over the preset)
    with_ground_truth : bool or None; when given, overrides ``with_ground_truth``
        for every method
    preset : str or None, the settings preset (``"paper"``, ``"small"``;
        :mod:`agentcausal.settings`); None = the settings models' defaults (``paper``)

    Returns
    -------
    dict method -> settings as JSON-friendly dict (all fields, defaults filled in)

    Raises
    ------
    ConfigError
        If no method is given, a name is unknown (lists the valid ones), settings name a
        method that is not run, settings do not validate, the preset is unknown, or
        ``with_ground_truth`` is False and a method cannot run without the truth.
    """
    if not methods:
        raise ConfigError("no attribution method given")
    settings = dict(settings or {})
    extra = sorted(set(settings) - set(methods))
    if extra:
        raise ConfigError(f"settings given for methods that are not run: {', '.join(extra)}")
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(methods):
        spec = get_method(name)
        values = dict(settings.get(name, {}))
        has_truth = "with_ground_truth" in spec.settings_model.model_fields
        if with_ground_truth is False and not has_truth:
            raise ConfigError(f"method {name} cannot run without ground truth (drop --no-ground-truth or the method)")
        if with_ground_truth is not None and has_truth:
            values["with_ground_truth"] = with_ground_truth
        if "with_ground_truth" in values and not has_truth:
            values.pop("with_ground_truth")
        out[name] = resolve(spec.settings_model, spec.presets, preset, values, name=name).model_dump(mode="json")
    return out
