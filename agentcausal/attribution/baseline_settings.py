"""Settings, stage name and budgets shared by the Who&When baselines (All-at-Once, Step-by-Step, Binary-Search)
and the baselines built like them (A2P, ECHO).

* :class:`BaselineSettings`: ``with_ground_truth``, reply cap, context budget (they enter the cache key);
  :data:`BASELINE_PRESETS` their ``paper`` and ``small`` values.
* :class:`WhoWhenSettings`: the three Who&When baselines' sampling switches, ``temperature`` and
  ``empty_attempts`` (DCFA's copy of the baselines sends temperature 0 and re-sends a call whose answer
  is empty, up to three times: ``Automated_FA/Lib/utils.py`` of
  github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution, ``_make_api_call``);
  :func:`ask_baseline` one structured call under them (and, with ``quote_evidence``, the evidence request).
* :func:`baseline_spec`: the spec of a baseline-family method (its one stage, ``baseline``).
* :func:`baseline_tokens`: the completion cap of one call (a set ``max_tokens`` is sent as it is, under
  the dialect's own cap field: :class:`~agentcausal.llm.dialect.FixedCap`); :func:`trace_budget`:
  characters of trace text one prompt may hold for a stage's context window.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated Failure Attribution of LLM
Multi-Agent Systems." ICML 2025. arXiv:2505.00212, section 4.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agentcausal.attribution.evidence import EVIDENCE_TOKENS, ask_evidence, with_evidence
from agentcausal.attribution.spec import AttributionSpec
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import LLMCall, Routing
from agentcausal.llm.dialect import FixedCap, sent_cap
from agentcausal.settings import completion_budget
from agentcausal.traces.model import Attribution, Trace
from agentcausal.traces.render import budget_chars

__all__ = [
    "BASELINE_STAGE",
    "BaselineSettings",
    "WhoWhenSettings",
    "BASELINE_PRESETS",
    "DCFA_PAPER_PRESET",
    "ask_baseline",
    "baseline_caps",
    "baseline_spec",
    "baseline_tokens",
    "evidence_allowance",
    "trace_budget",
]

T = TypeVar("T", bound=BaseModel)
#: a method's settings model
S = TypeVar("S", bound=BaseModel)

#: the routed stage name of every baseline call
BASELINE_STAGE = "baseline"


class BaselineSettings(BaseModel):
    """Settings shared by the three Who&When baselines (enter the cache key).

    Attributes
    ----------
    prompts : "paper" or "small", the prompt set (set by the preset, :mod:`agentcausal.settings`):
        ``paper`` follows Who&When's released code (forced choices), ``small`` the short wording
        with an "undetermined" escape for sub-2B models
    with_ground_truth : bool, show the correct final answer in the prompt (Who&When's
        "with ground truth" setting)
    max_tokens : int or None, completion cap per call, tokens; None = the profile's budget
        (:func:`agentcausal.settings.completion_budget`); ``small``: 160. A number is sent as it is
        under the profile's cap field (``max_completion_tokens`` on GPT-5, where hidden reasoning
        counts against it), never raised to the profile's ceiling; one above that ceiling is refused
        (:class:`~agentcausal.llm.dialect.FixedCap`)
    reserve_tokens : int, tokens of the context window kept for instructions and the reply
    context_tokens : int or None, a tighter context cap than the profile's window (CPU runs); None = the window
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompts: Literal["paper", "small"] = "paper"
    with_ground_truth: bool = True
    max_tokens: int | None = Field(None, ge=16)
    reserve_tokens: int = Field(768, ge=0)
    context_tokens: int | None = Field(None, ge=512)


class WhoWhenSettings(BaselineSettings):
    """Settings of the three Who&When baselines beyond :class:`BaselineSettings` (enter the cache key).

    Attributes
    ----------
    temperature : float or None, sampling temperature of every call; None = the profile's (0 unless
        the profile sets another; Who&When's code sends none). ``dcfa_paper``: 0, as DCFA's code
        sends; not sent where the profile takes no temperature (GPT-5)
    empty_attempts : int, calls made when the answer comes back empty (after the gateway's repairs):
        1 = no re-send (Who&When's code); ``dcfa_paper``: 3 (DCFA's ``_make_api_call``), 9 for
        Binary-Search (its segment loop retries the 3-attempt call 3 times)
    """

    temperature: float | None = Field(None, ge=0.0, le=2.0)
    empty_attempts: int = Field(1, ge=1, le=9)


#: presets of the three baselines (:mod:`agentcausal.settings`); fields not listed keep the ``paper`` defaults
BASELINE_PRESETS: dict[str, dict[str, Any]] = {"paper": {}, "small": {"prompts": "small", "max_tokens": 160}}

#: the ``dcfa_paper`` preset's values shared by the three (DCFA's ``_make_api_call``: temperature 0, 3 attempts)
DCFA_PAPER_PRESET: dict[str, Any] = {"temperature": 0.0, "empty_attempts": 3}


def evidence_allowance(settings: Any) -> int:
    """Tokens added to a set ``max_tokens`` when the method quotes evidence (``quote_evidence``), else 0.

    >>> from types import SimpleNamespace as N
    >>> evidence_allowance(N(quote_evidence=True)) > 0, evidence_allowance(N(quote_evidence=False)), evidence_allowance(N())
    (True, 0, 0)
    """
    return EVIDENCE_TOKENS if getattr(settings, "quote_evidence", False) else 0


def baseline_tokens(gw: Routing, settings: BaselineSettings, stage: str = BASELINE_STAGE) -> int:
    """Completion cap (tokens) of one baseline call: ``max_tokens`` as a :class:`~agentcausal.llm.dialect.FixedCap`
    (sent as it is), else the profile's budget (which the dialect may raise for hidden reasoning). ``max_tokens``
    caps the method's own reply: with ``quote_evidence`` on, the evidence field's allowance
    (:data:`~agentcausal.attribution.evidence.EVIDENCE_TOKENS`) is added, so asking for a quote never cuts the
    reply it is asked of."""
    if settings.max_tokens is not None:
        return FixedCap(settings.max_tokens + evidence_allowance(settings))
    return completion_budget(gw, stage, None)


def ask_baseline(
    call: LLMCall,
    settings: BaselineSettings,
    messages: Sequence[dict[str, str]],
    reply_model: type[T],
    *,
    stage: str = BASELINE_STAGE,
    schema: dict[str, Any] | None = None,
    context: Any = None,
) -> T:
    """One structured baseline call at the settings' cap, temperature and empty-answer attempts.

    With ``quote_evidence`` on (a setting beyond the papers, off in every preset) the call asks for evidence:
    :func:`~agentcausal.attribution.evidence.ask_evidence` on the messages,
    :func:`~agentcausal.attribution.evidence.with_evidence` on ``reply_model``.

    Parameters
    ----------
    call : LLMCall, the run's call context (its usage item and sample)
    settings : BaselineSettings (``temperature``, which replaces the call's when set, and ``empty_attempts`` read
        when it is a :class:`WhoWhenSettings`; ``quote_evidence`` where the settings have it)
    messages : the chat messages
    reply_model : the pydantic reply model
    stage : str, the routed stage
    schema, context : the JSON schema to send instead of ``reply_model``'s own and the validation context
        (:meth:`~agentcausal.llm.gateway.Gateway.structured`); None: the model's schema, no context (always
        None with ``quote_evidence``: the evidence field is added to the model's own schema)

    Returns
    -------
    An instance of ``reply_model`` (of its subclass with ``evidence`` when asked).

    Raises
    ------
    StructuredOutputError
        When the reply stays invalid, at once if it is not empty, else after ``empty_attempts`` calls.
    EndpointUnreachableError, LLMCallError
        From the gateway.
    """
    temperature = settings.temperature if isinstance(settings, WhoWhenSettings) else None
    attempts = settings.empty_attempts if isinstance(settings, WhoWhenSettings) else 1
    tokens = baseline_tokens(call, settings, stage)
    if getattr(settings, "quote_evidence", False):
        messages, reply_model = ask_evidence(messages), with_evidence(reply_model)
    if temperature is not None:
        call = replace(call, temperature=temperature)
    for attempt in range(attempts):
        try:
            return call.structured(stage, messages, reply_model, max_tokens=tokens, schema=schema, context=context)
        except StructuredOutputError as exc:
            if exc.raw.strip() or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")  # the loop returns or raises


def baseline_spec(
    name: str,
    run: Callable[[Trace, LLMCall, S], Attribution],
    settings_model: type[S],
    presets: Mapping[str, Mapping[str, Any]],
    prompt_version: str,
) -> AttributionSpec[S]:
    """The :class:`~agentcausal.attribution.spec.AttributionSpec` of a baseline-family method: every call it makes
    is routed as :data:`BASELINE_STAGE`."""
    return AttributionSpec(
        name=name,
        run=run,
        settings_model=settings_model,
        prompt_version=prompt_version,
        stages=(BASELINE_STAGE,),
        presets=presets,
    )


def trace_budget(gw: Routing, settings: BaselineSettings, stage: str = BASELINE_STAGE) -> int:
    """Characters of trace text one prompt may hold for ``stage``.

    Parameters
    ----------
    gw : Gateway, LLMCall or ProfileSet, the routing
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


def baseline_caps(profiles: Any, resolved: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per baseline-family method (settings with ``max_tokens``): the completion cap each call sends.

    Parameters
    ----------
    profiles : ProfileSet (or Gateway), the active routing
    resolved : method name -> resolved settings (``resolve_methods``); methods without ``max_tokens``
        (DCFA's several caps) are left out

    Returns
    -------
    list of str, ``"METHOD: STAGE -> PROFILE FIELD=N (how)"``, e.g.
    ``"step_by_step: baseline -> openai-gpt5 max_completion_tokens=1024 (set, sent as it is; ...)"``.

    Raises
    ------
    ConfigError
        If a set ``max_tokens`` exceeds the routed profile's ``max_output_tokens`` (:func:`~agentcausal.llm.dialect.sent_cap`).
    UnknownStageError
        If the stage has no route.
    """
    out = []
    for method, values in resolved.items():
        if "max_tokens" not in values or "prompts" not in values:
            continue
        profile = profiles.profile_for(BASELINE_STAGE)
        fixed = values["max_tokens"]
        extra = EVIDENCE_TOKENS if values.get("quote_evidence") else 0
        cap = FixedCap(fixed + extra) if fixed is not None else completion_budget(profiles, BASELINE_STAGE, None)
        field, value, why = sent_cap(profile, cap)
        derived = "" if fixed is not None else "; max_tokens unset: derived from the profile's budget"
        derived += f"; max_tokens {fixed} + {extra} for the evidence quote" if fixed is not None and extra else ""
        sent = f"{field}={value}" if value is not None else "no cap"
        out.append(f"{method}: {BASELINE_STAGE} -> {profile.name} {sent} ({why}{derived})")
    return out
