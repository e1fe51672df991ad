"""Attribution methods' settings, checked up front: presets applied, names looked up in the table a caller
hands in (:data:`agentcausal.registry.ATTRIBUTION_METHODS`).

* :func:`method_settings`: one method's settings validated against its settings model;
* :func:`resolve_methods`: a run's method names and settings checked, presets applied;
* :func:`evidence_sets`: ``attribute --evidence`` as ``--set`` values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from agentcausal.attribution.spec import AttributionSpec
from agentcausal.exceptions import ConfigError
from agentcausal.methods import MethodTable
from agentcausal.settings import resolve

__all__ = ["method_settings", "resolve_methods", "evidence_sets"]


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
    table: MethodTable[AttributionSpec[Any]],
    methods: Sequence[str],
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    with_ground_truth: bool | None = None,
    preset: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Check method names and settings up front and return validated settings per method.

    Parameters
    ----------
    table : the attribution methods (:data:`agentcausal.registry.ATTRIBUTION_METHODS`)
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
        spec = table[name]
        values = dict(settings.get(name, {}))
        if with_ground_truth is False and spec.needs_labels:
            raise ConfigError(f"method {name} cannot run without ground truth (drop --no-ground-truth or the method)")
        if spec.needs_labels:
            values.pop("with_ground_truth", None)
        elif with_ground_truth is not None:
            values["with_ground_truth"] = with_ground_truth
        out[name] = resolve(spec.settings_model, spec.presets, preset, values, name=name).model_dump(mode="json")
    return out


def evidence_sets(
    table: MethodTable[AttributionSpec[Any]], methods: Sequence[str], sets: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """``--set`` values with ``quote_evidence`` on for every method that has the setting (``attribute --evidence``).

    A value given with ``--set METHOD.quote_evidence=…`` is kept. Methods without the setting are left as they
    are: ECHO quotes without it (its panel's reply has the field), Binary-Search names a half, never a step.

    Parameters
    ----------
    table : the attribution methods (:data:`agentcausal.registry.ATTRIBUTION_METHODS`)
    methods : the run's method names
    sets : method -> field -> value (``--set``; not changed)

    Returns
    -------
    dict, a copy of ``sets`` with ``quote_evidence=True`` added where the method's settings have the field.

    Raises
    ------
    ConfigError
        If a method is unknown.

    Examples
    --------
    >>> from agentcausal.registry import ATTRIBUTION_METHODS
    >>> evidence_sets(ATTRIBUTION_METHODS, ["all_at_once", "binary_search"], {"all_at_once": {"max_tokens": 200}})
    {'all_at_once': {'max_tokens': 200, 'quote_evidence': True}}
    """
    out = {m: dict(v) for m, v in sets.items()}
    for m in methods:
        if "quote_evidence" in table[m].settings_model.model_fields:
            out.setdefault(m, {}).setdefault("quote_evidence", True)
    return out
