"""``--set METHOD.FIELD=VALUE`` of ``agentcausal attribute`` and ``agentcausal discover``: method settings
read from the command line, boolean ones parsed strictly (:func:`agentcausal.settings.parse_bool`); and
``--method``/``-m NAME`` of every verb that takes method names (:func:`add_method_argument`).

::

    agentcausal attribute traces.jsonl --method step_by_step --set step_by_step.on_no_yes=last_step
    agentcausal discover --dataset asia --method mac --method react --set mac.rounds=2 --set react.max_steps=6
"""

from __future__ import annotations

import argparse
import json
import typing
from typing import Any

from agentcausal.exceptions import AgentCausalError, ConfigError
from agentcausal.settings import parse_bool

__all__ = ["add_method_argument", "parse_sets", "parse_bool_sets", "discover_sets"]


def add_method_argument(p: argparse.ArgumentParser, what: str) -> None:
    """Add ``--method``/``-m NAME`` (repeatable, into ``args.methods``; None when not given) with help ``what``.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_method_argument(p, "method to run (repeatable)")
    >>> p.parse_args(["-m", "dcfa", "--method", "a2p"]).methods, p.parse_args([]).methods
    (['dcfa', 'a2p'], None)
    """
    p.add_argument("--method", "-m", action="append", dest="methods", metavar="NAME", help=what)


def parse_sets(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["m.field=value", ...]`` as ``{"m": {"field": value}}``; values parsed as JSON, else kept as text.

    Raises
    ------
    ConfigError
        If an item is not ``METHOD.FIELD=VALUE``.

    Examples
    --------
    >>> parse_sets(["step_by_step.on_no_yes=last_step", "all_at_once.max_tokens=200"])
    {'step_by_step': {'on_no_yes': 'last_step'}, 'all_at_once': {'max_tokens': 200}}
    """
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        method, dot, field = key.partition(".")
        if not sep or not dot or not method or not field:
            raise ConfigError(f"--set expects METHOD.FIELD=VALUE, got {item!r}")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.setdefault(method, {})[field] = value
    return out


def parse_bool_sets(sets: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``--set`` values of boolean attribution-method settings parsed by :func:`agentcausal.settings.parse_bool`.

    ``dcfa.x=Yes`` and ``dcfa.x=off`` become True and False; anything but
    true/false, 1/0, yes/no, on/off (any case) is refused naming the setting,
    instead of pydantic's looser reading (``"t"``, ``"y"``). Settings of unknown
    methods and non-boolean fields pass unchanged.

    Raises
    ------
    ConfigError
        If a boolean setting has another value.
    """
    from agentcausal.registry import ATTRIBUTION_METHODS  # start-up cost (see attribute.cmd_attribute)

    out = {m: dict(v) for m, v in sets.items()}
    for method, values in out.items():
        try:
            fields = ATTRIBUTION_METHODS[method].settings_model.model_fields
        except AgentCausalError:
            continue  # resolve_methods names the unknown method
        for field, value in values.items():
            values[field] = _bool_checked(fields, method, field, value)
    return out


def discover_sets(items: list[str], models: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``--set METHOD.FIELD=VALUE`` of ``discover`` as ``{method: {field: value}}``, names checked up front.

    Parameters
    ----------
    items : the ``--set`` values
    models : method name -> its settings model (pydantic), the methods ``--set`` may name

    Raises
    ------
    ConfigError
        On a malformed item, a method other than those of ``models``, an unknown field (the
        message lists the valid ones) or a boolean setting with another value.
    """
    sets = parse_sets(items)
    for method, values in sets.items():
        if method not in models:
            raise ConfigError(
                f"--set {method}.{next(iter(values))}: discover settings belong to {', '.join(models)} "
                "(mac covers mac_single, dcm_only, mdm_only and llm_zero_shot)"
            )
        fields = models[method].model_fields
        for field, value in values.items():
            if method == "mac" and field == "executor":
                raise ConfigError("--set mac.executor: use --executor (it checks the sandbox)")
            if field not in fields:
                raise ConfigError(f"--set {method}.{field}: unknown field; valid: {', '.join(fields)}")
            values[field] = _bool_checked(fields, method, field, value)
    return sets


def _bool_checked(fields: dict[str, Any], method: str, field: str, value: Any) -> Any:
    """``value`` parsed by :func:`agentcausal.settings.parse_bool` where ``field`` of ``fields`` (a settings
    model's ``model_fields``) is a boolean (or an optional boolean given a value); else unchanged.

    Raises
    ------
    ConfigError
        If the setting is boolean and ``value`` is none of true/false, 1/0, yes/no, on/off.
    """
    ann = fields[field].annotation if field in fields else None
    if ann is bool or (bool in typing.get_args(ann) and value is not None):
        return parse_bool(value, name=f"--set {method}.{field}")
    return value
