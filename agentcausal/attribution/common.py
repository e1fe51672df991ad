"""What the attribution methods share: baseline settings, prompt pieces, budgets, and the runner.

* :class:`BaselineSettings`: the settings every Who&When baseline takes
  (``with_ground_truth``, reply cap, context budget).
* :func:`system_prompt`, :func:`task_block`: the short instructions and the
  delimited question (and, with ground truth, the correct answer).
* :func:`reply_text`: a reply's free-text field, capped (``small``) or not (``paper``).
* :func:`trace_budget`: characters of trace text a stage's context window allows.
* :func:`usage_item`: the usage-ledger item key of one (trace, method) run.
  Baselines pass ``item=usage_item(trace.id, method)`` on every gateway call,
  so two methods running at once on the same trace in one process do not mix
  their token counts; a method that passes ``item=trace.id`` (DCFA) is counted
  too (see :func:`run_method`).
* :func:`run_method`: run one registered method on one trace and return an
  :class:`~agentcausal.traces.model.Attribution` with seconds, usage, models
  and settings filled in. A content failure (a reply still invalid after all
  repairs, :func:`~agentcausal.exceptions.is_content_failure`) becomes an
  Attribution with ``error`` set and ``status="content_failed"`` (it counts as
  wrong, and may be cached); any other failure (transport, 401, rate limit,
  timeout) is re-raised under ``raise_transient`` so an orchestrator never
  caches it, else recorded with ``status="failed"``.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated
Failure Attribution of LLM Multi-Agent Systems." ICML 2025. arXiv:2505.00212, section 4.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

from agentcausal.exceptions import AgentCausalError, ConfigError, is_content_failure
from agentcausal.llm import Gateway
from agentcausal.llm.usage import StageUsage
from agentcausal.presets import gateway_preset
from agentcausal.traces.model import Attribution, ResultStatus, Trace
from agentcausal.traces.render import DATA_NOTICE, budget_chars, delimit

__all__ = [
    "BASELINE_STAGE",
    "BaselineSettings",
    "BASELINE_PRESETS",
    "baseline_tokens",
    "agent_names",
    "enum_choice",
    "reply_text",
    "system_prompt",
    "baseline_messages",
    "decisive_verdict",
    "task_block",
    "trace_budget",
    "usage_item",
    "usage_delta",
    "method_settings",
    "resolve_methods",
    "attribution_key",
    "failed_attribution",
    "run_method",
]

#: the routed stage name of every baseline call
BASELINE_STAGE = "baseline"

_ROLE = (
    "You find the decisive error in a failed multi-agent run: the step whose mistake, "
    "had it been avoided, would have let the team reach the correct answer. "
    "Steps are numbered from 0."
)


class BaselineSettings(BaseModel):
    """Settings shared by the three Who&When baselines (enter the cache key).

    Attributes
    ----------
    prompts : "paper" or "small", the prompt set (set by the preset, :mod:`agentcausal.presets`):
        ``paper`` follows Who&When's released code (forced choices), ``small`` the short wording
        with an "undetermined" escape for sub-2B models
    with_ground_truth : bool, show the correct final answer in the prompt (Who&When's
        "with ground truth" setting)
    max_tokens : int or None, completion cap per call, tokens; None = the profile's budget
        (:func:`agentcausal.presets.completion_budget`); ``small``: 160
    reserve_tokens : int, tokens of the context window kept for instructions and the reply
    context_tokens : int or None, a tighter context cap than the profile's window (CPU runs); None = the window
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompts: Literal["paper", "small"] = "paper"
    with_ground_truth: bool = True
    max_tokens: int | None = Field(None, ge=16)
    reserve_tokens: int = Field(768, ge=0)
    context_tokens: int | None = Field(None, ge=512)


#: presets of the three baselines (:mod:`agentcausal.presets`); fields not listed keep the ``paper`` defaults
BASELINE_PRESETS: dict[str, dict[str, Any]] = {"paper": {}, "small": {"prompts": "small", "max_tokens": 160}}


def baseline_tokens(gw: Gateway, settings: BaselineSettings, stage: str = BASELINE_STAGE) -> int:
    """Completion cap (tokens) of one baseline call: ``max_tokens``, else the profile's budget."""
    from agentcausal.presets import completion_budget

    return completion_budget(gw, stage, settings.max_tokens)


def reply_text(max_chars: int | None) -> Any:
    """The type of a free-text reply field: capped at ``max_chars`` characters, or not at all.

    Parameters
    ----------
    max_chars : int or None; an int gives :func:`~agentcausal.llm.replies.ShortText` (schema
        ``maxLength``, longer text cut on validation: the ``small`` presets' bound on a sub-2B
        model's decode time); None gives a plain ``str`` (the ``paper`` presets: no cap the
        papers do not have; the profile's completion budget bounds the reply)

    Examples
    --------
    >>> from pydantic import create_model
    >>> create_model("R", reason=(reply_text(5), ...))(reason="abcdefgh").reason
    'abcde'
    >>> "maxLength" in create_model("R", reason=(reply_text(None), ...)).model_json_schema()["properties"]["reason"]
    False
    """
    from agentcausal.llm.replies import ShortText

    return str if max_chars is None else ShortText(max_chars)


def agent_names(trace: Trace) -> tuple[str, ...]:
    """The trace's own agents, in order of first appearance (the choices of an agent-naming reply)."""
    return tuple(dict.fromkeys(s.agent for s in trace.steps))


@functools.lru_cache(maxsize=1024)
def enum_choice(values: tuple[Any, ...], json_type: Literal["string", "integer"] = "string") -> Any:
    """A reply field's type that takes one of ``values``, written as a JSON-schema ``enum``.

    An enum even for one value: pydantic writes a one-value ``Literal`` as ``const``, which
    fewer servers take.

    Parameters
    ----------
    values : tuple of str or int, the allowed values (e.g. :func:`agent_names`)
    json_type : "string" or "integer", the schema type of the values

    Returns
    -------
    An ``Annotated[Literal[values], WithJsonSchema(...)]`` type for a pydantic field; the same
    object for the same arguments (cached: building the ``Literal`` costs more than the lookup,
    and pydantic copies the schema dict before use).
    """
    return Annotated[Literal[values], WithJsonSchema({"type": json_type, "enum": list(values)})]  # type: ignore


def decisive_verdict(trace: Trace, step: int | None, agent: str | None,
                     details: dict[str, Any]) -> tuple[int | None, str | None]:
    """The decisive error a reply names, checked against the trace.

    A step outside ``0..n-1`` is recorded as ``details["invalid_step"]`` and read as
    undetermined (None); a blank agent is None; a step without an agent takes the
    step's speaker.

    Parameters
    ----------
    trace : Trace, n steps
    step : int or None, the reply's 0-based step
    agent : str or None, the reply's agent
    details : dict, the attribution's details (updated in place)

    Returns
    -------
    (step, agent), each None when undetermined.
    """
    agent = (agent or "").strip() or None
    if step is not None and not 0 <= step < len(trace):
        details["invalid_step"] = step
        step = None
    if step is not None and agent is None:
        agent = trace.steps[step].agent
    return step, agent


def baseline_messages(instruction: str, user: str, role: str | None = None) -> list[dict[str, str]]:
    """The chat messages of one baseline call: :func:`system_prompt` of ``instruction``, then ``user``.

    Parameters
    ----------
    instruction : str, one sentence saying what to answer
    user : str, the user message
    role : str or None, the system message's first sentence; None = ours (the decisive-error
        definition). The ``paper`` presets pass the source code's own system message.

    Returns
    -------
    list of two message dicts (system, user)
    """
    return [{"role": "system", "content": system_prompt(instruction, role)}, {"role": "user", "content": user}]


def system_prompt(task: str, role: str | None = None) -> str:
    """The system message: role, the data notice, and the task.

    Parameters
    ----------
    task : str, one sentence saying what to answer
    role : str or None, the role sentence; None = ours (the decisive-error definition)

    Returns
    -------
    str

    Examples
    --------
    >>> system_prompt("Say hi.", "You are a helpful assistant.").startswith("You are a helpful assistant. ")
    True
    """
    return f"{role or _ROLE} {DATA_NOTICE} {task} Reply with one JSON object."


def task_block(trace: Trace, with_ground_truth: bool) -> str:
    """The delimited question and, optionally, the correct answer.

    Parameters
    ----------
    trace : Trace
    with_ground_truth : bool

    Returns
    -------
    str, ``<question>...</question>`` and ``<answer>...</answer>`` lines, escaped.
    """
    out = "The team's task:\n" + delimit("question", trace.question.strip())
    if with_ground_truth:
        out += "\nThe correct answer:\n" + delimit("answer", trace.ground_truth.strip())
    return out


def trace_budget(gw: Gateway, settings: BaselineSettings, stage: str = BASELINE_STAGE) -> int:
    """Characters of trace text one prompt may hold for ``stage``.

    Parameters
    ----------
    gw : Gateway
    settings : BaselineSettings
    stage : str

    Returns
    -------
    int, :func:`~agentcausal.traces.render.budget_chars` of the smaller of the
    profile's context window and ``settings.context_tokens``, less the reserve
    and the completion cap.

    Raises
    ------
    UnknownStageError
        If the stage has no route.
    """
    window = gw.profile_for(stage).context_window
    if settings.context_tokens is not None:
        window = min(window, settings.context_tokens)
    return budget_chars(window, reserve_tokens=settings.reserve_tokens + baseline_tokens(gw, settings, stage))


def usage_item(trace_id: str, method: str) -> str:
    """Usage-ledger item key of one (trace, method) run: ``"<trace_id>::<method>"``.

    >>> usage_item("Hand-Crafted/20", "all_at_once")
    'Hand-Crafted/20::all_at_once'
    """
    return f"{trace_id}::{method}"


def usage_delta(before: Mapping[str, StageUsage], after: Mapping[str, StageUsage]) -> dict[str, StageUsage]:
    """Per-stage usage added between two ledger snapshots (stages with no calls dropped).

    Parameters
    ----------
    before, after : mapping stage -> StageUsage (``gw.usage.by_stage(item)``)

    Returns
    -------
    dict stage -> StageUsage
    """
    out: dict[str, StageUsage] = {}
    for stage, a in after.items():
        b = before.get(stage, StageUsage())
        d = StageUsage(**{k: getattr(a, k) - getattr(b, k) for k in StageUsage.model_fields})
        if d.calls or d.requests:
            out[stage] = d
    return out


def method_settings(settings_model: type[BaseModel], values: BaseModel | Mapping[str, Any] | None,
                    presets: Mapping[str, Mapping[str, Any]] | None = None, preset: str | None = None) -> BaseModel:
    """Validate method settings against the method's settings model.

    Parameters
    ----------
    settings_model : the method's frozen settings class
    values : an instance (used as it is), a mapping of field values, or None for the defaults.
        A ``with_ground_truth`` key is dropped for a model that does not define
        it (it is a run-wide switch); any other unknown key is an error.
    presets, preset : the method's ``PRESETS`` and the preset whose values lie under ``values``
        (:mod:`agentcausal.presets`); None = the model defaults (``paper``)

    Returns
    -------
    An instance of ``settings_model``.

    Raises
    ------
    ConfigError
        If the values do not validate (unknown field, wrong type) or the preset is unknown; lists the valid fields.
    """
    from agentcausal.presets import resolve

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
        :mod:`agentcausal.presets`); None = the settings models' defaults (``paper``)

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
    from agentcausal.attribution.registry import get_method
    from agentcausal.presets import resolve

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
    from agentcausal.attribution.registry import get_method

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
    if status is None:
        status = "content_failed" if is_content_failure(exc) else "failed"
    return Attribution(trace_id=trace_id, method=method, error=f"{type(exc).__name__}: {exc}", status=status,
                       status_detail=type(exc).__name__)


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
        names, :func:`agentcausal.presets.gateway_preset`); None = that preset (or the model defaults)
    raise_transient : bool, re-raise every failure that is not a content failure
        (:func:`~agentcausal.exceptions.is_content_failure`: transport, 401, rate limit,
        timeout ...) instead of recording it, so an orchestrator retries it and never caches it

    Returns
    -------
    Attribution with ``trace_id``, ``method``, ``settings`` (validated, as a dict),
    ``prompt_version``, ``models`` (stage -> ``profile:model``), ``usage`` (stage ->
    totals added during this run, from the ledger items ``trace.id`` and
    :func:`usage_item`) and ``seconds`` filled in. When the method raised an
    :class:`AgentCausalError`, ``step`` and ``agent`` are None, ``error``
    holds ``"<ErrorClass>: <message>"`` and ``status`` is ``content_failed`` or
    ``failed``; a method that returned an error itself is ``content_failed``
    (methods record only content failures); ``degraded`` is kept as the method
    set it. ``reused`` is True when every LLM call was a cache hit on an entry
    an earlier run wrote (this run sent no request); a hit on an entry this run
    wrote (an identical call of another trace, or one merged in flight) is not reuse.

    Raises
    ------
    ConfigError
        If the method is unknown or the settings are invalid (a setup error, not a trace failure).
    AgentCausalError
        Only with ``raise_transient=True``: a failure that is not a content failure
        (e.g. EndpointUnreachableError, LLMCallError, a transient AlgorithmError).
    """
    from agentcausal.attribution.registry import get_method

    from agentcausal.runs.envelope import run_enveloped

    spec = get_method(method)
    st = method_settings(spec.settings_model, settings, spec.presets, gateway_preset(gw))  # routing's preset
    env = run_enveloped(lambda: spec.run(trace, gw, st), gw=gw, stages=spec.stages,
                        usage_items=(trace.id, usage_item(trace.id, method)), raise_transient=raise_transient)
    out = env.result if env.error is None else failed_attribution(trace.id, method, env.error)
    if out.error and out.status == "complete":
        out = out.model_copy(update={"status": "content_failed", "status_detail": out.status_detail or "method error"})
    return out.model_copy(
        update={
            "trace_id": trace.id,
            "method": method,
            "settings": st.model_dump(mode="json"),
            "prompt_version": out.prompt_version or spec.prompt_version,  # the prompt set used
            "models": {**env.models, **out.models},
            "usage": {k: v.model_dump() for k, v in env.usage.items()},
            "seconds": env.seconds,
            "reused": env.reused,
        }
    )

