"""DCFA end to end: GCA, then (unless ablated) LCE, recorded as one Attribution.

The :class:`~agentcausal.traces.model.Attribution` of a DCFA run carries in
``details`` (all JSON-serialisable):

``n_steps``; ``step_agents`` (agent of each step); ``gca_calls`` ("joint" or
"split"); ``deviations`` (list of {step, reason}); ``dropped_deviations``;
``edges`` (list of [p, q]); ``dropped_edges`` ({out_of_range, self_loops,
backward, duplicates}); ``hypothesis`` ({step, agent, reason}); ``lce``
(None for the GCA-only ablation, else {corrected_steps, correct_fallback,
scores: list of {step, s} with step -1 = original trace, outcomes: list of
{step, outcome} of the counterfactuals actually simulated,
evaluated and path: lists of {direction, iteration, pivot, step, s, delta_s,
accepted}, visited, stopped, candidates, decision: {step, reason, skipped},
error}); ``final`` ({step, agent, reason, source: "ded" | "hypothesis"}).

``usage`` holds the calls, tokens, cache hits and seconds of each DCFA stage
for this trace and method: every call is booked under the ledger item
``"<trace id>::<method>"`` (:func:`agentcausal.attribution.common.usage_item`),
so ``dcfa`` and ``dcfa_gca_only`` running at once on one trace do not count
each other's calls; ``models`` the ``profile:model`` of each stage.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(seed ``../shared/seeds/002_2c62354fb78fce0f.txt``; code github.com/wzhSteve/DCFA), section 4 and
appendix K; the "w/o LCE" ablation of its section 5.
"""

from __future__ import annotations

import time
from typing import Any

from agentcausal.attribution.common import usage_item
from agentcausal.attribution.dcfa.gca import STAGE as GCA_STAGE
from agentcausal.attribution.dcfa.gca import GcaResult, graph_edges, run_gca
from agentcausal.attribution.dcfa.lce import EMBED_STAGE, LceResult, run_lce
from agentcausal.attribution.dcfa.lce import STAGE as LCE_STAGE
from agentcausal.attribution.dcfa.prompts import PROMPT_VERSION
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import Gateway, StageUsage
from agentcausal.traces.model import Attribution, Trace

__all__ = ["STAGES", "run_dcfa"]

#: every stage DCFA may call
STAGES = (GCA_STAGE, LCE_STAGE, EMBED_STAGE)


def _usage_snapshot(gw: Gateway, item: str) -> dict[str, StageUsage]:
    return {k: v for k, v in gw.usage.by_stage(item).items() if k in STAGES}


def _usage_diff(before: dict[str, StageUsage], after: dict[str, StageUsage]) -> dict[str, dict[str, float]]:
    out = {}
    for stage, a in after.items():
        b = before.get(stage, StageUsage())
        d = {k: getattr(a, k) - getattr(b, k) for k in StageUsage.model_fields}
        if d["calls"]:
            out[stage] = d
    return out


def _gca_details(trace: Trace, gca: GcaResult) -> dict[str, Any]:
    h = gca.hypothesis_step
    return {
        "n_steps": len(trace),
        "deviations": [{"step": s, "reason": r} for s, r in gca.deviations],
        "dropped_deviations": gca.dropped_deviations._asdict(),
        "edges": [list(e) for e in graph_edges(gca.graph)],
        "dropped_edges": gca.dropped_edges._asdict(),
        "hypothesis": {"step": h, "agent": trace.steps[h].agent, "reason": gca.hypothesis_reason},
    }


def _lce_details(lce: LceResult) -> dict[str, Any]:
    corr = lce.correction
    return {
        "corrected_steps": list(corr.changed) if corr else None,
        "correct_fallback": corr.fallback if corr else None,
        "scores": [{"step": i, "s": s} for i, s in sorted(lce.scores.items())],
        "outcomes": [{"step": i, "outcome": o[:300]} for i, o in sorted(lce.outcomes.items())],
        "evaluated": [e._asdict() for e in lce.search.evaluated],
        "path": [e._asdict() for e in lce.search.path],
        "visited": list(lce.search.visited),
        "stopped": dict(lce.search.stopped),
        "candidates": list(lce.candidates),
        "decision": lce.decision._asdict(),
        "error": None,
    }


def run_dcfa(trace: Trace, gw: Gateway, settings: DcfaSettings, *, method: str = "dcfa") -> Attribution:
    """Attribute one failed trace with DCFA (GCA, then LCE unless ``settings.use_lce`` is False).

    Parameters
    ----------
    trace : Trace, N steps, 0-based
    gw : Gateway; stages ``dcfa.gca``, ``dcfa.lce``, ``dcfa.embed``; usage item ``"<trace id>::<method>"``
    settings : DcfaSettings
    method : str, the name stored in the Attribution (``dcfa`` or ``dcfa_gca_only``)

    Returns
    -------
    Attribution with ``step``/``agent``/``reason`` of the decisive error
    (0-based step) and the DCFA record in ``details`` (see module docstring).
    A GCA reply that stays invalid gives an Attribution with ``error`` set and
    no step; one in LCE falls back to the GCA hypothesis, recorded in
    ``details["lce"]["error"]`` and marked ``status="degraded"``.

    Raises
    ------
    UnknownStageError, MissingAPIKeyError, EndpointUnreachableError, LLMCallError
        From the gateway (so a caller such as a Prefect task can retry).

    References
    ----------
    DCFA section 4; appendix K, Algorithms 1 and 2.
    """
    t0 = time.perf_counter()
    item = usage_item(trace.id, method)
    before = _usage_snapshot(gw, item)
    stages = STAGES if settings.use_lce else (GCA_STAGE,)
    base = dict(trace_id=trace.id, method=method, settings=settings.model_dump(), prompt_version=PROMPT_VERSION,
                models={s: gw.model_for(s) for s in stages})
    details: dict[str, Any] = {"n_steps": len(trace), "step_agents": [st.agent for st in trace.steps],
                               "gca_calls": "split" if settings.split_mdi_cgc else "joint"}
    try:
        gca = run_gca(trace, gw, settings, item=item)
    except StructuredOutputError as exc:
        return Attribution(**base, error=f"GCA: {exc}", details=details,
                           usage=_usage_diff(before, _usage_snapshot(gw, item)),
                           seconds=time.perf_counter() - t0)
    details.update(_gca_details(trace, gca))
    step, reason, source = gca.hypothesis_step, gca.hypothesis_reason, "hypothesis"
    details["lce"] = None
    if settings.use_lce:
        try:
            lce = run_lce(trace, gca, gw, settings, item=item)
        except StructuredOutputError as exc:
            details["lce"] = {"error": str(exc)}
        else:
            details["lce"] = _lce_details(lce)
            if not lce.decision.skipped:
                step, reason, source = lce.decision.step, lce.decision.reason, "ded"
    details["final"] = {"step": step, "agent": trace.steps[step].agent, "reason": reason, "source": source}
    lce_error = (details["lce"] or {}).get("error")
    return Attribution(**base, step=step, agent=trace.steps[step].agent, reason=reason, details=details,
                       usage=_usage_diff(before, _usage_snapshot(gw, item)),
                       seconds=time.perf_counter() - t0,
                       status="degraded" if lce_error else "complete",
                       status_detail=f"LCE failed, GCA hypothesis kept: {lce_error[:300]}" if lce_error else None)
