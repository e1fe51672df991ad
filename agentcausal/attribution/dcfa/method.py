"""DCFA end to end: GCA, then (unless ablated) LCE, recorded as one Attribution.

The :class:`~agentcausal.traces.model.Attribution` of a DCFA run carries in
``details`` (all JSON-serialisable; built as the typed
:class:`~agentcausal.attribution.dcfa.details.DcfaDetails`, read back with
``DcfaDetails.read``):

``n_steps``; ``step_agents`` (agent of each step); ``gca_calls`` ("joint" or
"split"); ``cgc`` ("code", "equations" or "edges"); ``preset_prompts`` ("paper" or "small") and
``prompt_version`` (of that prompt set); ``variant`` ("with_truth" or "no_truth"); ``deviations``
(list of {step, reason}); ``dropped_deviations``; ``edges`` (list of [p, q], every valid edge, what
HG saw); ``links`` (``cgc="code"``: the per-step lists {step, causes, effects} HG saw, else
None); ``search_edges`` (the edges LCE searched when ``max_edges`` capped the graph, else None);
``edge_judgements`` (``cgc="equations"``: every proposed edge with {temporal, necessary,
sufficient, reason, kept}); ``dropped_edges`` ({out_of_range, self_loops, backward, duplicates,
capped, not_causal}); ``hypothesis`` ({step, agent, reason}); ``log_answer`` (the log's final
answer as HG read it, ``paper`` prompts); ``lce`` (None for the GCA-only ablation, else
{corrected_steps, correct_variant ("algorithm_generated" | "hand_crafted" under ``paper``, else
None), correct_fallback (how Correct's reply had to be read, or None), correct_invalid (the reply
stayed invalid after every repair: the Attribution is then degraded), correct_missing,
correct_truncated, scores: list of {step, s} of the candidates scored (and, under
``simulation="equations"``, of the traces T~(i-1) they needed), outcomes: list of {step, named,
outcome} of every distinct simulation (``named``: the root-cause step the prompt named, or None;
each outcome's first 300 characters, a bound on the record's size only: S(i) is computed from the
whole outcome), evaluated and path: lists of {direction, iteration, pivot, step, s, s_prev,
delta_s, accepted, error}, visited, stopped, candidates, unscored (candidates whose Simulation
reply stayed invalid or that Correct gave no content; never accepted, and the row is degraded),
decision: {step, reason, skipped, off_candidates, and evidence when asked}, error}); ``final`` ({step, agent, reason,
source: "ded" | "hypothesis"}); ``confidence_is`` (which simulated trace the confidence is the S of, when there
is one).

The Attribution's ``candidates``, ``confidence``, ``evidence`` and ``corrected_action`` are read
from these records without another call (:mod:`agentcausal.attribution.dcfa.result_fields`).

Fixed bugs of the released code: after an exception its main loop writes the
step it last computed, which before GCA's hypothesis is the previous trace's
step (here a GCA failure is an error row and an LCE failure keeps this trace's
hypothesis, marked degraded); DED's candidate texts (:mod:`~agentcausal.attribution.dcfa.ded`);
the splice by list position (:mod:`~agentcausal.attribution.dcfa.lce`).

Any LCE failure (an endpoint error, an invalid, empty or over-long reply, a
context overflow) falls back to the GCA hypothesis: ``details["lce"]`` is
``{"error": "<ErrorClass>: <message>"}``, ``final.source`` is
``"hypothesis"`` and the Attribution is marked degraded (``status`` and
``status_detail``), so a trace whose GCA succeeded is never scored as failed.
``details["lce"]["cause"]`` says whether the failure was one of content
(``"content"``: a reply still invalid, cacheable) or of the run (``"run"``:
transport, 401, timeout), which the ``attribute`` task returns without caching
(so a plain rerun recomputes it); ``status_detail`` starts ``"LCE failed (content)"`` or
``"LCE failed (run)"`` accordingly.

Every call is booked under the call context's ledger item, ``"<trace id>::<method>"`` in a run
(:func:`agentcausal.attribution.spec.usage_item`, set by :func:`agentcausal.attribution.jobs.run_method`), so ``dcfa`` and
``dcfa_gca_only`` running at once on one trace do not count each other's calls;
the run envelope (:func:`agentcausal.attribution.jobs.run_method`) stamps the
record's usage, seconds, settings and the ``profile:model`` of each stage.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), section 4 and appendix K; the "w/o LCE" ablation of its section 5.
"""

from __future__ import annotations

from typing import Any

from agentcausal.attribution.dcfa.correct import STAGE as LCE_STAGE
from agentcausal.attribution.dcfa.details import (
    DcfaDetails,
    DeviationRecord,
    FinalChoice,
    LceFailure,
    LceRecord,
    StepChoice,
)
from agentcausal.attribution.dcfa.gca import STAGE as GCA_STAGE
from agentcausal.attribution.dcfa.gca import GcaResult, run_gca
from agentcausal.attribution.dcfa.gca_validation import graph_edges
from agentcausal.attribution.dcfa.lce import EMBED_STAGE, LceResult, run_lce
from agentcausal.attribution.dcfa.prompts import PROMPT_VERSIONS
from agentcausal.attribution.dcfa.result_fields import confidence_is, dcfa_result_fields
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.exceptions import AgentCausalError, StructuredOutputError, is_content_failure
from agentcausal.llm import LLMCall
from agentcausal.traces.model import Attribution, Trace

__all__ = ["STAGES", "run_dcfa"]

#: every stage DCFA may call
STAGES = (GCA_STAGE, LCE_STAGE, EMBED_STAGE)


def _gca_details(trace: Trace, gca: GcaResult) -> dict[str, Any]:
    h = gca.hypothesis_step
    return {
        "n_steps": len(trace),
        "links": [{"step": e.step, "causes": list(e.causes), "effects": list(e.effects)} for e in gca.links]
        if gca.links
        else None,
        "log_answer": gca.log_answer,
        "deviations": [DeviationRecord(step=s, reason=r) for s, r in gca.deviations],
        "dropped_deviations": gca.dropped_deviations._asdict(),
        "edges": [list(e) for e in graph_edges(gca.graph)],
        "search_edges": None if gca.search_graph is None else [list(e) for e in graph_edges(gca.search_graph)],
        "edge_judgements": list(gca.edge_judgements),
        "dropped_edges": gca.dropped_edges._asdict(),
        "hypothesis": StepChoice(step=h, agent=trace.steps[h].agent, reason=gca.hypothesis_reason),
    }


def _lce_details(lce: LceResult) -> LceRecord:
    corr = lce.correction
    return LceRecord(
        **{
            "corrected_steps": list(corr.changed) if corr else None,
            "correct_variant": corr.variant if corr else None,
            "correct_fallback": corr.fallback if corr else None,
            "correct_invalid": corr.invalid if corr else False,
            "correct_missing": list(corr.missing) if corr else None,
            "correct_truncated": list(corr.truncated) if corr else None,
            "scores": [{"step": i, "s": s} for i, s in sorted(lce.scores.items())],
            "outcomes": [{"step": x.through, "named": x.named, "outcome": x.outcome[:300]} for x in lce.simulations],
            "evaluated": [e._asdict() for e in lce.search.evaluated],
            "path": [e._asdict() for e in lce.search.path],
            "visited": list(lce.search.visited),
            "stopped": dict(lce.search.stopped),
            "candidates": list(lce.candidates),
            "unscored": [e.step for e in lce.search.evaluated if e.error is not None],
            "decision": {k: v for k, v in lce.decision._asdict().items() if k != "evidence" or v is not None},
            "error": None,
        }
    )


def run_dcfa(trace: Trace, call: LLMCall, settings: DcfaSettings, *, method: str = "dcfa") -> Attribution:
    """Attribute one failed trace with DCFA (GCA, then LCE unless ``settings.use_lce`` is False).

    Parameters
    ----------
    trace : Trace, N steps, 0-based
    call : LLMCall, the run's call context (usage item ``"<trace id>::<method>"`` in a run); stages ``dcfa.gca``,
        ``dcfa.lce``, ``dcfa.embed``
    settings : DcfaSettings
    method : str, the name stored in the Attribution (``dcfa`` or ``dcfa_gca_only``)

    Returns
    -------
    Attribution with ``step``/``agent``/``reason`` of the decisive error
    (0-based step) and the DCFA record in ``details`` (see module docstring).
    A GCA reply that stays invalid gives an Attribution with ``error`` set and
    no step; any LCE failure falls back to the GCA hypothesis, is recorded in
    ``details["lce"]["error"]`` and marks the Attribution degraded.

    Raises
    ------
    UnknownStageError, MissingAPIKeyError, EndpointUnreachableError, LLMCallError
        From the gateway (so a caller such as a Prefect task can retry).

    References
    ----------
    DCFA section 4; appendix K, Algorithms 1 and 2.
    """
    base = dict(trace_id=trace.id, method=method, prompt_version=PROMPT_VERSIONS[settings.prompts])
    details = DcfaDetails(
        n_steps=len(trace),
        step_agents=[st.agent for st in trace.steps],
        gca_calls=settings.mdi_cgc,
        cgc=settings.cgc,
        preset_prompts=settings.prompts,
        prompt_version=PROMPT_VERSIONS[settings.prompts],
        variant=settings.variant,
    )
    try:
        gca = run_gca(trace, call, settings)
    except StructuredOutputError as exc:
        return Attribution(**base, error=f"GCA: {exc}", details=details.dump())
    for k, v in _gca_details(trace, gca).items():
        setattr(details, k, v)
    step, reason, source = gca.hypothesis_step, gca.hypothesis_reason, "hypothesis"
    details.lce = None
    degraded: str | None = None
    lce: LceResult | None = None
    if settings.use_lce:
        try:
            lce = run_lce(trace, gca, call, settings)
        except AgentCausalError as exc:  # endpoint, invalid/empty reply, context overflow: keep GCA's answer
            # "run": a failure of the run (transport, 401, timeout), which an orchestrator must not cache
            cause = "content" if is_content_failure(exc) else "run"
            degraded = f"LCE failed ({cause}), GCA hypothesis kept: {type(exc).__name__}: {exc}"[:500]
            details.lce = LceFailure(error=f"{type(exc).__name__}: {exc}", cause=cause)
            lce = None
        else:
            details.lce = _lce_details(lce)
            unscored = [e.step for e in lce.search.evaluated if e.error is not None]
            if lce.correction is not None and lce.correction.invalid:  # a content failure: cacheable, marked
                degraded = f"Correct's reply stayed invalid ({lce.correction.fallback}); LCE ran on what could be read"
            elif unscored:  # content failures of Simulation (or no corrected content): those candidates skipped
                degraded = f"{len(unscored)} search candidate(s) could not be scored and were skipped: {unscored}"
            if not lce.decision.skipped:
                step, reason, source = lce.decision.step, lce.decision.reason, "ded"
    details.final = FinalChoice(step=step, agent=trace.steps[step].agent, reason=reason, source=source)
    how = confidence_is(lce, step, settings)
    if how is not None:
        details.confidence_is = how
    return Attribution(
        **base,
        step=step,
        agent=trace.steps[step].agent,
        reason=reason,
        details=details.dump(),
        status="degraded" if degraded else "complete",
        status_detail=degraded,
        **dcfa_result_fields(trace, gca, lce, step, source, settings),
    )
