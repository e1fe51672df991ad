"""Attribution jobs: one registered method on one trace, in the run envelope, as one record.

:func:`run_method` runs a method and returns an :class:`~agentcausal.traces.model.Attribution` with
seconds, usage, models and settings filled in. A content failure (a reply still invalid after all
repairs, :func:`~agentcausal.exceptions.is_content_failure`) becomes an Attribution with ``error`` set
and ``status="content_failed"`` (it counts as wrong, and may be cached); any other failure
(transport, 401, rate limit, timeout) is re-raised under ``raise_transient`` so an orchestrator never
caches it, else recorded with ``status="failed"`` (:func:`failed_attribution`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from agentcausal.attribution.registry import get_method, method_settings, usage_item
from agentcausal.llm import Gateway
from agentcausal.records import ResultStatus, failure_fields
from agentcausal.runs.envelope import run_enveloped
from agentcausal.settings import gateway_preset
from agentcausal.traces.model import Attribution, Trace

__all__ = ["failed_attribution", "run_method"]


def failed_attribution(trace_id: str, method: str, exc: BaseException, *,
                       status: ResultStatus | None = None) -> Attribution:
    """An Attribution recording a failure (``error = "<ErrorClass>: <message>"``); counts as wrong.

    Parameters
    ----------
    trace_id, method : str
    exc : the exception
    status : ``content_failed`` or ``failed``; None = from
        :func:`~agentcausal.exceptions.is_content_failure`

    Returns
    -------
    Attribution with step and agent None, ``status`` and ``status_detail`` (the error class) set.
    """
    return Attribution(trace_id=trace_id, method=method, **failure_fields(exc, status))


def run_method(
    trace: Trace,
    method: str,
    gw: Gateway,
    settings: BaseModel | Mapping[str, Any] | None = None,
    *,
    raise_transient: bool = False,
) -> Attribution:
    """Run one registered attribution method on one trace; never raises for a method failure.

    Parameters
    ----------
    trace : Trace
    method : str, a registered name (``all_at_once``, ``step_by_step``, ``binary_search``, ``dcfa`` ...)
    gw : Gateway
    settings : the method's settings (instance, used as it is; or mapping over the preset the gateway's routing
        names, :func:`agentcausal.settings.gateway_preset`); None = that preset (or the model defaults)
    raise_transient : bool, re-raise every failure that is not a content failure
        (:func:`~agentcausal.exceptions.is_content_failure`: transport, 401, rate limit,
        timeout ...) instead of recording it, so an orchestrator retries it and never caches it

    Returns
    -------
    Attribution: the method's answer, ``details``, ``status`` and ``prompt_version`` (the
    registered one when the method sets none), stamped here once with ``trace_id``, ``method``,
    ``settings`` (validated, as a dict) and the envelope's ``models`` (stage -> ``profile:model``),
    ``usage`` (stage -> totals added during this run, from the ledger items ``trace.id`` and
    :func:`~agentcausal.attribution.registry.usage_item`), ``seconds`` and ``reused`` (every LLM
    call a cache hit on an entry an earlier run wrote: this run sent no request; a hit on an entry
    this run wrote, an identical call of another trace or one merged in flight, is not reuse).
    When the method raised an :class:`AgentCausalError`, ``step`` and ``agent`` are None,
    ``error`` holds ``"<ErrorClass>: <message>"`` and ``status`` is ``content_failed`` or
    ``failed``; a method that returned an error itself is ``content_failed`` (methods record
    only content failures); ``degraded`` is kept as the method set it.

    Raises
    ------
    ConfigError
        If the method is unknown or the settings are invalid (a setup error, not a trace failure).
    AgentCausalError
        Only with ``raise_transient=True``: a failure that is not a content failure
        (e.g. EndpointUnreachableError, LLMCallError, a transient AlgorithmError).
    """
    spec = get_method(method)
    st = method_settings(spec.settings_model, settings, spec.presets, gateway_preset(gw))  # routing's preset
    env = run_enveloped(lambda: spec.run(trace, gw, st), gw=gw, stages=spec.stages,
                        usage_items=(trace.id, usage_item(trace.id, method)), raise_transient=raise_transient)
    out = env.result if env.error is None else failed_attribution(trace.id, method, env.error)
    if out.error and out.status == "complete":
        out = out.model_copy(update={"status": "content_failed", "status_detail": out.status_detail or "method error"})
    return out.model_copy(update={"trace_id": trace.id, "method": method, "settings": st.model_dump(mode="json"),
                                  "prompt_version": out.prompt_version or spec.prompt_version, **env.stamp()})
