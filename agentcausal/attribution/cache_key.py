"""The cache key of one attribution: what determines its result, and nothing else.

The key holds the trace id and :meth:`~agentcausal.traces.model.Trace.content_hash` (question, ground
truth and steps; not the label: scoring reads the current trace's label, never a cached one), the
method, its validated settings, the prompt version, each stage's routing identity
(:meth:`~agentcausal.llm.gateway.Gateway.stage_identity`: ``profile:model``, context window, endpoint and
dialect), and the repeat index when above 0.
"""

from __future__ import annotations

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


def attribution_keyer(gw: Gateway) -> Callable[..., str]:
    """:func:`attribution_key` with ``gw`` bound, the method's part of the key (validated settings, prompt
    version, models per stage) computed once per method and settings: what a run computes for every job.

    Returns
    -------
    callable (trace or plan item, spec, settings, repeat=0) -> str, the same key :func:`attribution_key` gives

    Raises
    ------
    ConfigError
        If the settings are invalid (on the call).
    """
    parts: dict[tuple[str, str], dict[str, Any]] = {}

    def method_part(spec: AttributionSpec[Any], settings: BaseModel | Mapping[str, Any] | None) -> dict[str, Any]:
        memo = (
            spec.name,
            settings.model_dump_json()
            if isinstance(settings, BaseModel)
            else json.dumps(settings, sort_keys=True, default=str),
        )
        if memo not in parts:
            st = method_settings(spec.settings_model, settings, spec.presets, gateway_preset(gw)).model_dump(
                mode="json"
            )
            models = {}
            for stage in spec.stages:
                try:
                    models[stage] = gw.stage_identity(stage)
                except AgentCausalError:
                    models[stage] = ["unrouted", 0]
            parts[memo] = {"method": spec.name, "settings": st, "prompt_version": spec.prompt_version, "models": models}
        return parts[memo]

    def key(
        trace: Trace | PlanItem,
        spec: AttributionSpec[Any],
        settings: BaseModel | Mapping[str, Any] | None,
        repeat: int = 0,
    ) -> str:
        payload = {"trace_id": trace.id, "trace": trace.content_hash(), **method_part(spec, settings)}
        if repeat:
            payload["repeat"] = repeat
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    return key
