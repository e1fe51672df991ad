"""What each attribution method will send for one trace, with no request made.

:func:`attribution_previews` returns the :class:`~agentcausal.llm.preview.PromptPreview`
of every call one method makes on one trace under its resolved settings;
:func:`show_prompts` renders them for the first selected trace (or the ones
``--id`` names), what ``agentcausal attribute --dry-run --show-prompts``
prints. A call whose input is an earlier call's reply shows a
:func:`~agentcausal.llm.preview.placeholder` there.

What is shown per method: DCFA every call (:mod:`agentcausal.attribution.dcfa.preview`);
All-at-Once and A2P their one call; Step-by-Step its first and last question
(each question shows the steps so far and waits on the previous "no");
Binary-Search its first halving (later ones take the half chosen); ECHO its
scan (the panel is built from the scan's candidates, a reply, so it is not shown).

Examples
--------
>>> from agentcausal.traces.model import Step, Trace
>>> t = Trace(id="t/1", question="q?", ground_truth="a", steps=[Step(index=0, agent="A", content="x")])
>>> from agentcausal.attribution.all_at_once import SPEC
>>> [p.call for p in attribution_previews(t, SPEC, {})]
['All-at-Once']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentcausal.attribution import a2p, all_at_once, binary_search, echo, step_by_step
from agentcausal.attribution.baseline_settings import BASELINE_STAGE, trace_budget
from agentcausal.attribution.dcfa.preview import dcfa_previews
from agentcausal.attribution.evidence import ask_evidence
from agentcausal.attribution.method_settings import method_settings
from agentcausal.attribution.spec import AttributionSpec
from agentcausal.exceptions import AgentCausalError, ConfigError
from agentcausal.llm.preview import PromptPreview, render_previews
from agentcausal.llm.profiles import load_profiles
from agentcausal.traces.model import Trace

__all__ = ["PREVIEWS", "attribution_previews", "show_prompts"]


def _budget(profiles: Any | None, settings: Any) -> int | None:
    return None if profiles is None else trace_budget(profiles, settings)


def _all_at_once(trace: Trace, s: Any, profiles: Any | None, method: str) -> list[PromptPreview]:
    return [
        PromptPreview(
            method, BASELINE_STAGE, "All-at-Once", all_at_once.build_messages(trace, s, _budget(profiles, s)).messages
        )
    ]


def _step_by_step(trace: Trace, s: Any, profiles: Any | None, method: str) -> list[PromptPreview]:
    b = _budget(profiles, s)
    steps = sorted({0, len(trace) - 1})
    return [
        PromptPreview(
            method,
            BASELINE_STAGE,
            f"Step-by-Step, step {i}" + (" (asked after every earlier step got no)" if i else ""),
            step_by_step.build_messages(trace, i, s, b),
        )
        for i in steps
    ]


def _binary_search(trace: Trace, s: Any, profiles: Any | None, method: str) -> list[PromptPreview]:
    if len(trace) < 2:
        return []
    return [
        PromptPreview(
            method,
            BASELINE_STAGE,
            "Binary-Search, first halving",
            binary_search.build_messages(trace, 0, len(trace) - 1, s, _budget(profiles, s)),
        )
    ]


def _a2p(trace: Trace, s: Any, profiles: Any | None, method: str) -> list[PromptPreview]:
    return [
        PromptPreview(
            method,
            BASELINE_STAGE,
            "A2P (abduction, action, prediction)",
            a2p.build_messages(trace, s, _budget(profiles, s))[0],
        )
    ]


def _echo(trace: Trace, s: Any, profiles: Any | None, method: str) -> list[PromptPreview]:
    k = min(len(trace), s.max_candidates or len(trace))
    return [PromptPreview(method, BASELINE_STAGE, "ECHO scan", echo.scan_messages(trace, s, _budget(profiles, s), k))]


def _dcfa(trace: Trace, s: Any, profiles: Any | None, method: str) -> list[PromptPreview]:
    return dcfa_previews(trace, s, profiles, method=method)


#: method name -> preview builder (trace, settings, profiles or None, method) -> previews
PREVIEWS: dict[str, Callable[[Trace, Any, Any | None, str], list[PromptPreview]]] = {
    "all_at_once": _all_at_once,
    "step_by_step": _step_by_step,
    "binary_search": _binary_search,
    "a2p": _a2p,
    "echo": _echo,
    "dcfa": _dcfa,
    "dcfa_gca_only": _dcfa,
}


def attribution_previews(
    trace: Trace, spec: AttributionSpec[Any], settings: Mapping[str, Any] | None = None, profiles: Any | None = None
) -> list[PromptPreview]:
    """The previews of every call the method ``spec`` makes on ``trace``.

    Parameters
    ----------
    trace : Trace
    spec : AttributionSpec, a method with a preview (:data:`PREVIEWS`)
    settings : mapping of the method's settings (resolved, as the plan holds them); None = its defaults
    profiles : a :class:`~agentcausal.llm.profiles.ProfileSet` (or Gateway) for the context budgets;
        None = traces unshortened

    Returns
    -------
    list of PromptPreview

    Raises
    ------
    ConfigError
        If the method has no preview, or the settings do not validate.
    """
    method = spec.name
    if method not in PREVIEWS:
        raise ConfigError(f"no prompt preview for method {method!r}; methods with one: {', '.join(sorted(PREVIEWS))}")
    s = method_settings(spec.settings_model, dict(settings or {}))
    out = PREVIEWS[method](trace, s, profiles, method)
    if getattr(s, "quote_evidence", False):  # the calls that name the blamed step ask for a verbatim quote
        asks = {"HG", "DED"} if method.startswith("dcfa") else None
        out = [p._replace(messages=ask_evidence(p.messages)) if asks is None or p.call in asks else p for p in out]
    return out


def show_prompts(
    traces: Sequence[Trace],
    methods: Sequence[AttributionSpec[Any]],
    resolved: Mapping[str, Mapping[str, Any]],
    *,
    ids: Sequence[str] | None = None,
    profiles_path: str | None = None,
    routing: str | None = None,
    max_lines: int = 8,
) -> str:
    """The rendered previews of every method on the first trace, or on each trace ``ids`` names.

    Parameters
    ----------
    traces : the corpus, in order
    methods : the methods shown, in order
    resolved : method -> resolved settings (:func:`~agentcausal.attribution.method_settings.resolve_methods`)
    ids : trace ids to show (``--id``); None = the first trace
    profiles_path, routing : the profiles file and routing, for the context budgets a run uses;
        a routing that cannot be read gives unshortened traces (said in the header)
    max_lines : int, lines of each data block shown

    Returns
    -------
    str

    Raises
    ------
    ConfigError
        If an id names no trace, or a method has no preview.
    """
    by_id = {t.id: t for t in traces}
    missing = [i for i in ids or () if i not in by_id]
    if missing:
        raise ConfigError(f"no trace with id {', '.join(missing)}")
    chosen = [by_id[i] for i in ids] if ids else list(traces[:1])
    try:
        profiles = load_profiles(profiles_path, routing) if routing else None
        note = f"traces shortened to the context windows of routing {routing!r}" if profiles else "traces unshortened"
    except AgentCausalError as exc:
        profiles, note = None, f"traces unshortened (routing not readable: {exc})"
    parts = []
    for t in chosen:
        for spec in methods:
            st = resolved[spec.name]
            head = (
                f"##### {spec.name} on {t.id} ({len(t)} steps, source {t.source or '-'}); preset prompts "
                f"{st.get('prompts', '-')}; {note}; no request made"
            )
            parts += [head, render_previews(attribution_previews(t, spec, st, profiles), max_lines=max_lines)]
    return "\n\n".join(parts)
