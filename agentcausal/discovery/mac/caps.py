"""The completion cap every MAC call will send, per call kind, for the dry-run (no request, no dataset read).

One line per call kind of each MAC method of a plan (``mac``, ``mac_single``, ``dcm_only``, ``mdm_only`` and
their variants): the routed profile, the field and value the dialect sends
(:func:`agentcausal.llm.dialect.sent_cap`), and how the value was reached, by the one rule of every MAC call
(:func:`agentcausal.discovery.mac.calls.completion_cap`): a cap set in the settings (the ``small`` preset's),
times ``max_tokens_scale`` and bounded by the profile's ``max_output_tokens``; a graph proposal's cap derived
from the edge bound and the reason caps (largest over the run's datasets, marked ``derived``); or, with the
setting unset (``paper``), the profile's budget: its ``max_output_tokens``, else ``min(4096, context_window //
4)`` (:func:`agentcausal.settings.completion_budget`). Calls: DCM's algorithm debate (Affirmative, Negative,
Judge) and, with the coding executor, the coder; MDM's graph debate. A single-agent variant sends the
Affirmative's call only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from agentcausal.discovery.mac.calls import completion_cap, graph_reply_tokens
from agentcausal.discovery.mac.prompts import max_graph_edges
from agentcausal.discovery.mac.settings import CODER_STAGE, DEBATE_STAGE, MACSettings
from agentcausal.llm.preview import cap_line
from agentcausal.settings import FALLBACK_MAX_OUTPUT_TOKENS

__all__ = ["mac_caps"]


def _cap(
    profiles: Any, stage: str, fixed: int | None, scale: float, setting: str, label: str | None = None
) -> tuple[int, str]:
    """(cap, how) of one call: the cap :func:`~agentcausal.discovery.mac.calls.completion_cap` gives it, and where
    it came from (``label`` says where ``fixed`` came from; default ``SETTING=VALUE``)."""
    cap = completion_cap(profiles, stage, fixed, scale=scale)
    profile = profiles.profile_for(stage)
    if fixed is None:
        if profile.max_output_tokens is not None:
            return cap, f"{setting} unset: the profile's max_output_tokens"
        return cap, (
            f"{setting} unset, no max_output_tokens on the profile: "
            f"min({FALLBACK_MAX_OUTPUT_TOKENS}, context_window {profile.context_window} // 4)"
        )
    how = (label or f"{setting}={fixed}") + (f" x max_tokens_scale {scale:g}" if scale != 1 else "")
    if cap < max(16, int(fixed * scale)):
        how += f", bounded by max_output_tokens {profile.max_output_tokens}"
    return cap, how


def _graph_fixed(s: MACSettings, variables: Mapping[str, Sequence[str]]) -> tuple[int | None, str | None]:
    """The graph proposal's own cap before scaling (None: none of MAC's own) and, when derived, how."""
    if s.graph_max_tokens is not None or s.edges_per_variable is None or s.edge_reason_chars is None:
        return s.graph_max_tokens, None
    if not variables:
        return None, None
    name, names = max(variables.items(), key=lambda kv: (len(kv[1]), kv[0]))
    need = graph_reply_tokens(
        names, max_edges=max_graph_edges(len(names), s.edges_per_variable), reason_chars=s.edge_reason_chars
    )
    return need, (
        f"derived per dataset from edges_per_variable {s.edges_per_variable:g} and edge_reason_chars "
        f"{s.edge_reason_chars}, the largest shown ({name}, {len(names)} variables): {need}"
    )


def mac_caps(
    profiles: Any, resolved: Mapping[str, Mapping[str, Any]], variables: Mapping[str, Sequence[str]] | None = None
) -> list[str]:
    """One line per call kind of every MAC method in ``resolved``: the completion cap it sends.

    Parameters
    ----------
    profiles : ProfileSet (or Gateway), the active routing
    resolved : method name -> its settings as the plan holds them (``MethodPlan.settings``: MACSettings' fields
        for the MAC family, the executor resolved); other methods are left out
    variables : dataset name -> its variable names, for a graph cap derived per dataset (None: not shown)

    Returns
    -------
    list of str, ``"METHOD: STAGE CALL -> PROFILE FIELD=N (how; as the dialect sends it)"``

    Raises
    ------
    UnknownStageError
        If a MAC stage has no route.
    """
    out: list[str] = []
    for method, values in resolved.items():
        try:
            s = MACSettings.model_validate({k: v for k, v in values.items() if k in MACSettings.model_fields})
        except ValidationError:
            continue
        if not set(MACSettings.model_fields) <= set(values):
            continue  # not a MAC method: a baseline reads a few of MAC's fields only
        scale = s.max_tokens_scale
        debaters = ["Affirmative"] if s.single_agent else ["Affirmative", "Negative"]
        if s.stages in ("full", "dcm_only"):
            cap, how = _cap(profiles, DEBATE_STAGE, s.algorithm_max_tokens, scale, "algorithm_max_tokens")
            out += [cap_line(method, f"DCM {who}", profiles, DEBATE_STAGE, cap, how) for who in debaters]
            if not s.single_agent:
                cap, how = _cap(profiles, DEBATE_STAGE, s.verdict_max_tokens, scale, "verdict_max_tokens")
                out.append(cap_line(method, "DCM Judge", profiles, DEBATE_STAGE, cap, how))
            if s.executor == "coding":
                cap, how = _cap(profiles, CODER_STAGE, s.coder_max_tokens, scale, "coder_max_tokens")
                out.append(cap_line(method, "DCM coder", profiles, CODER_STAGE, cap, how))
        if s.stages in ("full", "mdm_only"):
            fixed, derived = _graph_fixed(s, variables or {})
            cap, how = _cap(profiles, DEBATE_STAGE, fixed, scale, "graph_max_tokens", derived)
            out += [cap_line(method, f"MDM {who}", profiles, DEBATE_STAGE, cap, how) for who in debaters]
            if not s.single_agent:
                cap, how = _cap(profiles, DEBATE_STAGE, s.verdict_max_tokens, scale, "verdict_max_tokens")
                out.append(cap_line(method, "MDM Judge", profiles, DEBATE_STAGE, cap, how))
    return out
