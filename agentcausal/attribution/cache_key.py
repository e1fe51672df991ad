"""The cache key of one attribution: what determines its result, and nothing else.

The key holds the trace id and :meth:`~agentcausal.traces.model.Trace.content_hash` (question, ground
truth and steps; not the label: scoring reads the current trace's label, never a cached one), the
method, its validated settings, the prompt version, each stage's routing identity
(:meth:`~agentcausal.llm.gateway.Gateway.stage_identity`: ``profile:model``, context window, endpoint and
dialect), and the repeat index when above 0.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from agentcausal.attribution.method_settings import method_settings
from agentcausal.attribution.spec import AttributionSpec
from agentcausal.exceptions import AgentCausalError
from agentcausal.llm import Gateway
from agentcausal.runs.plan import PlanItem
from agentcausal.settings import gateway_preset
from agentcausal.traces.model import Trace

__all__ = ["attribution_key", "attribution_keyer"]


def attribution_key(
    trace: Trace | PlanItem,
    spec: AttributionSpec[Any],
    settings: BaseModel | Mapping[str, Any] | None,
    gw: Gateway,
    repeat: int = 0,
) -> str:
    """Cache key of one attribution: what determines its result and nothing else.

    Parameters
    ----------
    trace : Trace or its PlanItem (its id and :meth:`~agentcausal.traces.model.Trace.content_hash`; not the
        label, which no method sees: scoring reads the current trace's label, never a cached one)
    spec : AttributionSpec, the method
    settings : the method settings (validated against the method's model first)
    gw : Gateway, for the model serving each of the method's stages
    repeat : int, the repeat index (``--repeats``); 0 leaves the key as it was without repeats

    Returns
    -------
    str, sha256 hex of (trace id, trace content hash, method, settings, prompt version,
    :meth:`Gateway.stage_identity <agentcausal.llm.gateway.Gateway.stage_identity>` per stage, and the
    repeat when > 0). The id is in the key
    so two traces with the same content keep one record each.

    Raises
    ------
    ConfigError
        If the settings are invalid.
    """
    return attribution_keyer(gw)(trace, spec, settings, repeat)


#: the method part's keys before ``"repeat"`` in sorted order (``"settings"`` comes after it)
_HEAD = ("method", "models", "prompt_version")


def _method_json(part: Mapping[str, Any]) -> tuple[str, str]:
    """The method's part of the key payload as the two pieces of ``json.dumps(payload, sort_keys=True)`` around
    the ``"repeat"`` field: ``{"method": .., "models": .., "prompt_version": ..`` and ``"settings": ..`` (the
    payload's keys in sorted order: method, models, prompt_version, repeat, settings, trace, trace_id)."""
    head = ", ".join(f"{json.dumps(k)}: {json.dumps(part[k], sort_keys=True)}" for k in _HEAD)
    return "{" + head, f'"settings": {json.dumps(part["settings"], sort_keys=True)}'


class _Keyer:
    """:func:`attribution_keyer`'s callable (see there)."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self._parts: dict[tuple[str, str], tuple[str, str]] = {}

    def _part(self, spec: AttributionSpec[Any], settings: BaseModel | Mapping[str, Any] | None) -> tuple[str, str]:
        memo = (
            spec.name,
            settings.model_dump_json()
            if isinstance(settings, BaseModel)
            else json.dumps(settings, sort_keys=True, default=str),
        )
        got = self._parts.get(memo)
        if got is None:
            st = method_settings(spec.settings_model, settings, spec.presets, gateway_preset(self.gw)).model_dump(
                mode="json"
            )
            models = {}
            for stage in spec.stages:
                try:
                    models[stage] = self.gw.stage_identity(stage)
                except AgentCausalError:
                    models[stage] = ["unrouted", 0]
            part = {"method": spec.name, "settings": st, "prompt_version": spec.prompt_version, "models": models}
            got = self._parts[memo] = _method_json(part)
        return got

    def bound(self, spec: AttributionSpec[Any], settings: BaseModel | Mapping[str, Any] | None) -> Callable[..., str]:
        """The key of the method ``spec`` under ``settings`` for any trace: (trace or plan item, repeat=0) -> str.
        The method's part is made once, here (a run keys every job of a method with one of these)."""
        head, st = self._part(spec, settings)
        return functools.partial(_key, head, st)

    def __call__(
        self,
        trace: Trace | PlanItem,
        spec: AttributionSpec[Any],
        settings: BaseModel | Mapping[str, Any] | None,
        repeat: int = 0,
    ) -> str:
        head, st = self._part(spec, settings)
        return _key(head, st, trace, repeat)


def _key(head: str, settings: str, trace: Trace | PlanItem, repeat: int = 0) -> str:
    """sha256 of ``json.dumps({"trace_id", "trace", **method part, ["repeat"]}, sort_keys=True)``, written from
    the method part's pieces (:func:`_method_json`)."""
    rep = f', "repeat": {json.dumps(repeat)}' if repeat else ""
    text = f'{head}{rep}, {settings}, "trace": {json.dumps(trace.content_hash())}, "trace_id": {json.dumps(trace.id)}}}'
    return hashlib.sha256(text.encode()).hexdigest()


def attribution_keyer(gw: Gateway) -> _Keyer:
    """:func:`attribution_key` with ``gw`` bound, the method's part of the key (validated settings, prompt
    version, models per stage) computed once per method and settings: what a run computes for every job.

    Returns
    -------
    callable (trace or plan item, spec, settings, repeat=0) -> str, the same key :func:`attribution_key` gives;
    its ``bound(spec, settings)`` gives (trace or plan item, repeat=0) -> str for one method, with no work per
    call but the trace's part and the hash

    Raises
    ------
    ConfigError
        If the settings are invalid (on the call, or on ``bound``).
    """
    return _Keyer(gw)
