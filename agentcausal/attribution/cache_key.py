"""The cache key of one attribution: what determines its result, and nothing else.

The key holds the trace id and :meth:`~agentcausal.traces.model.Trace.content_hash` (question, ground
truth and steps; not the label: scoring reads the current trace's label, never a cached one), the
method, its validated settings, the prompt version, the ``profile:model`` and context window of each
stage, and the repeat index when above 0.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from agentcausal.attribution.registry import get_method, method_settings
from agentcausal.exceptions import AgentCausalError
from agentcausal.llm import Gateway
from agentcausal.settings import gateway_preset
from agentcausal.traces.model import Trace

__all__ = ["attribution_key"]


def attribution_key(trace: Trace, method: str, settings: BaseModel | Mapping[str, Any] | None, gw: Gateway,
                    repeat: int = 0) -> str:
    """Cache key of one attribution: what determines its result and nothing else.

    Parameters
    ----------
    trace : Trace (its id and :meth:`~agentcausal.traces.model.Trace.content_hash`; not the
        label, which no method sees: scoring reads the current trace's label, never a cached one)
    method : str
    settings : the method settings (validated against the method's model first)
    gw : Gateway, for the model serving each of the method's stages
    repeat : int, the repeat index (``--repeats``); 0 leaves the key as it was without repeats

    Returns
    -------
    str, sha256 hex of (trace id, trace content hash, method, settings, prompt version,
    ``profile:model`` and context window per stage, and the repeat when > 0). The id is in the key
    so two traces with the same content keep one record each.

    Raises
    ------
    ConfigError
        If the method is unknown or the settings are invalid.
    """
    spec = get_method(method)
    st = method_settings(spec.settings_model, settings, spec.presets, gateway_preset(gw)).model_dump(mode="json")
    models = {}
    for stage in spec.stages:
        try:
            models[stage] = [gw.model_for(stage), gw.profile_for(stage).context_window]
        except AgentCausalError:
            models[stage] = ["unrouted", 0]
    payload = {"trace_id": trace.id, "trace": trace.content_hash(), "method": method, "settings": st,
               "prompt_version": spec.prompt_version, "models": models}
    if repeat:
        payload["repeat"] = repeat
    blob = json.dumps(payload, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()
