"""The completion cap every DCFA call will send, per stage, for the dry-run (no request, no trace).

Each line names the call, the routed profile, the field and value the dialect sends
(:func:`agentcausal.llm.dialect.sent_cap`) and how the value was reached: a cap set in
the settings (or the preset), one derived from the list and reason caps, the profile's
``max_output_tokens``, or, when the profile has none (a ``--base-url/--model`` route),
``min(4096, context_window // 4)`` (:func:`agentcausal.settings.completion_budget`). A
derived cap is marked ``derived``. The caps are the ones :mod:`~agentcausal.attribution.dcfa.gca`,
:mod:`~agentcausal.attribution.dcfa.correct` and :mod:`~agentcausal.attribution.dcfa.lce` pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentcausal.attribution.dcfa.correct import STAGE as LCE_STAGE
from agentcausal.attribution.dcfa.gca import STAGE as GCA_STAGE
from agentcausal.attribution.dcfa.settings import DcfaGcaOnlySettings, DcfaSettings
from agentcausal.llm.preview import cap_line
from agentcausal.settings import FALLBACK_MAX_OUTPUT_TOKENS, completion_budget

__all__ = ["dcfa_caps"]


def _budget(profiles: Any, stage: str, fixed: int | None, setting: str) -> tuple[int, str]:
    """(cap, how): :func:`agentcausal.settings.completion_budget`'s cap and how it derived it."""
    cap = completion_budget(profiles, stage, fixed)
    if fixed is not None:
        return cap, f"{setting}={fixed}"
    profile = profiles.profile_for(stage)
    if profile.max_output_tokens is not None:
        return cap, f"derived: {setting} unset, the profile's max_output_tokens"
    ctx = profile.context_window
    return (
        cap,
        f"derived: no max_output_tokens on the profile: min({FALLBACK_MAX_OUTPUT_TOKENS}, context_window {ctx} // 4)",
    )


def _settings_of(method: str, values: Mapping[str, Any]) -> DcfaSettings | None:
    fields = set(DcfaSettings.model_fields)
    if not fields.issubset(values):
        return None
    model = DcfaGcaOnlySettings if method == "dcfa_gca_only" else DcfaSettings
    return model.model_validate({k: values[k] for k in fields})


def dcfa_caps(profiles: Any, resolved: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per DCFA call kind of every DCFA method in ``resolved``: the completion cap it sends.

    Parameters
    ----------
    profiles : ProfileSet (or Gateway), the active routing
    resolved : method name -> resolved settings (``resolve_methods``); methods whose settings are not
        DCFA's are left out

    Returns
    -------
    list of str, ``"METHOD: STAGE CALL -> PROFILE FIELD=N (how; as the dialect sends it)"``; the
    embedding calls (``dcfa.embed``) send no completion cap and are not listed.

    Raises
    ------
    UnknownStageError
        If a DCFA stage has no route.
    """
    out: list[str] = []
    for method, values in resolved.items():
        s = _settings_of(method, values)
        if s is None:
            continue
        fixed_gca = s.gca_max_tokens
        gca, how = _budget(profiles, GCA_STAGE, s.gca_tokens, "gca_max_tokens")
        if fixed_gca is None and s.gca_tokens is not None:
            how = "derived from max_deviations, max_edges and max_reason_chars (DcfaSettings.gca_tokens)"
        calls = ["MDI", "CGC"] if s.mdi_cgc == "split" else ["MDI+CGC"]
        out += [cap_line(method, c, profiles, GCA_STAGE, gca, how) for c in calls]
        out.append(
            cap_line(method, "HG", profiles, GCA_STAGE, *_budget(profiles, GCA_STAGE, s.hg_max_tokens, "hg_max_tokens"))
        )
        if not s.use_lce:
            continue
        if s.correct_max_tokens is None and s.max_corrected_step_chars is not None:
            ctx = profiles.profile_for(LCE_STAGE).context_window
            top = max(256, ctx // 3)
            how = (
                f"derived per trace: steps x (max_corrected_step_chars {s.max_corrected_step_chars} // 3 + 12) + 64, "
                f"at most {top} (a third of context_window {ctx}); the largest shown"
            )
            out.append(cap_line(method, "Correct", profiles, LCE_STAGE, top, how))
        else:
            cap, how = _budget(profiles, LCE_STAGE, s.correct_max_tokens, "correct_max_tokens")
            out.append(cap_line(method, "Correct", profiles, LCE_STAGE, cap, how))
        stages = [("Simulation", s.simulation_max_tokens, "simulation_max_tokens")]
        stages.append(("DED", s.ded_max_tokens, "ded_max_tokens"))
        if not s.with_ground_truth:
            stages.append(("judge", s.judge_max_tokens, "judge_max_tokens"))
        for call, fixed, name in stages:
            out.append(cap_line(method, call, profiles, LCE_STAGE, *_budget(profiles, LCE_STAGE, fixed, name)))
    return out
