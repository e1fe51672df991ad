"""DCFA's ranked candidates, confidence, evidence and corrected action, from what GCA and LCE computed.

Nothing here calls a model: every number is one LCE already computed (S(i),
ΔS(i) of the search, the corrected trace, the simulations); the definitions are
those of :mod:`agentcausal.attribution.candidates`:

* ``candidates``: DED's decision i* first; then the GCA hypothesis (the global
  view's answer, when DED chose another step); then the accepted search pivots
  by ΔS(i), highest first; then the neighbours the search evaluated and did not
  accept, by ΔS(i); candidates that could not be scored last. ``score`` is ΔS(i),
  the quantity the search ranks by. The hypothesis is the search's start, not a
  neighbour it scores: its ΔS is known only under ``simulation="equations"``
  when S of T~(h) and T~(h-1) were both simulated for other candidates (one S per
  counterfactual trace), else None. Without LCE (the GCA-only ablation, LCE off
  or failed) the hypothesis is the one answer.
* ``confidence``: S of the trace corrected through i*, clipped to [0, 1]: the
  earliest simulated T~(m), m >= i* (:func:`corrected_through`; m = i* whenever
  the search scored i* or i* + 1, so every pivot the search accepted has one, and
  the hypothesis whenever an effect was scored), whatever preset. None when
  Correct left i* as it was (no correction proposed: a copy of the step is not a
  fix, and its S would be that of other steps' corrections), when LCE corrected
  nothing, or when no trace corrected through i* was simulated.
  ``details["confidence_is"]`` says which trace it is. Not calibrated: a rescue
  score, not the probability that i* is the decisive error.
* ``corrected_action``: Correct's content for i* and the outcome of that same
  simulation (``outcome_score`` its raw S); None when Correct left i* as it was
  (up to whitespace) or LCE made no correction.
* ``evidence``: DED's quote when DED decided, HG's when the hypothesis was kept
  (``quote_evidence`` only), checked against the blamed step.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), section 4.2, eqs. 8 to 14.
"""

from __future__ import annotations

from typing import Any

from agentcausal.attribution.candidates import SINGLE_ANSWER
from agentcausal.attribution.dcfa.gca import GcaResult
from agentcausal.attribution.dcfa.lce import LceResult, Simulation
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.attribution.evidence import evidence_fields
from agentcausal.traces.model import Candidate, CorrectedAction, Trace

__all__ = [
    "score_is",
    "dcfa_candidates",
    "corrected_through",
    "confidence_is",
    "dcfa_confidence",
    "dcfa_corrected_action",
    "dcfa_result_fields",
]

#: characters of a simulated outcome kept in ``corrected_action`` (a bound on the record's size)
MAX_OUTCOME_CHARS = 2000


def score_is(settings: DcfaSettings) -> str:
    """What ΔS is under these settings (the ``score_is`` of DCFA's scored candidates)."""
    s = (
        "the embedding cosine of the simulated outcome to the correct answer"
        if settings.with_ground_truth
        else "a judge's probability that the simulated outcome answers the question correctly"
    )
    return f"ΔS(i) = S(i) - S(i-1), S {s}"


def _evaluated(lce: LceResult) -> dict[int, Any]:
    """Per step, its search record: the accepted one, else the one with the largest ΔS, else the first."""
    out: dict[int, Any] = {}
    for e in lce.search.evaluated:
        cur = out.get(e.step)
        if (
            cur is None
            or (e.accepted and not cur.accepted)
            or (not cur.accepted and e.delta_s is not None and (cur.delta_s is None or e.delta_s > cur.delta_s))
        ):
            out[e.step] = e
    return out


def dcfa_candidates(
    trace: Trace, gca: GcaResult, lce: LceResult | None, step: int, settings: DcfaSettings
) -> list[Candidate]:
    """DCFA's ranked candidates, best first (module docstring); ``step`` is the final answer."""
    agent = trace.steps[step].agent
    if lce is None:
        return [Candidate(step=step, agent=agent, score_is=SINGLE_ANSWER, role="answer")]
    what = score_is(settings)
    ev = _evaluated(lce)
    pivots = {m.step for m in lce.search.path}

    named = settings.simulation == "code" and settings.prompts == "paper"

    def cand(i: int, role: str) -> Candidate:
        e = ev.get(i)
        if e is not None:
            s, s_prev, ds = e.s, e.s_prev, e.delta_s
        else:  # not a neighbour the search evaluated: S(i), S(i-1) where the simulations made them
            s = lce.scores.get(i)
            # one S per counterfactual (simulation="equations"): ΔS(i) from two scores LCE has; under "code"
            # S(i-1) of ΔS(i) is a simulation of its own, made only for evaluated neighbours
            s_prev = None if named else lce.scores.get(i - 1)
            ds = None if s is None or s_prev is None else s - s_prev
        return Candidate(
            step=i, agent=trace.steps[i].agent, score=ds, score_is=what, role=role, s=s, s_prev=s_prev, delta_s=ds
        )

    def by_delta(steps: set[int]) -> list[int]:
        return sorted(steps, key=lambda i: (ev[i].delta_s is None, -(ev[i].delta_s or 0.0), i))

    out = [cand(step, "decision")]
    seen = {step}
    if gca.hypothesis_step not in seen:
        out.append(cand(gca.hypothesis_step, "hypothesis"))
        seen.add(gca.hypothesis_step)
    for i in by_delta(pivots - seen):
        out.append(cand(i, "pivot"))
    seen |= pivots
    for i in by_delta(set(ev) - seen):
        out.append(cand(i, "neighbour"))
    return out


def corrected_through(lce: LceResult | None, step: int) -> Simulation | None:
    """The simulation of a trace corrected through the blamed step that LCE made, or None.

    The earliest simulated T~(m) with m >= ``step``: T~(step) itself (under ``simulation="code"`` the one
    naming ``step`` first, then the neutral one LCE made as S(step) of candidate step + 1), else the
    nearest later T~(m), which also carries Correct's changes of steps step + 1..m. Simulations naming
    another step are never read (naming a root cause steers the outcome). None when Correct left ``step``
    as it was ("no correction proposed": nothing of it was simulated), or LCE made no correction.
    """
    corr = None if lce is None else lce.correction
    if lce is None or corr is None or step not in corr.changed:
        return None
    sims = [x for x in lce.simulations if x.through >= step and x.named in (None, step)]
    return min(sims, key=lambda x: (x.through, x.named is None)) if sims else None


def confidence_is(lce: LceResult | None, step: int, settings: DcfaSettings) -> str | None:
    """How :func:`dcfa_confidence` was computed for this row (stored as ``details["confidence_is"]``), or None."""
    sim = corrected_through(lce, step)
    if sim is None:
        return None
    s = (
        "cosine of its simulated outcome to the correct answer"
        if settings.with_ground_truth
        else ("a judge's probability that its simulated outcome answers the question correctly")
    )
    which = (
        f"T~({step}), the trace corrected through the blamed step"
        + (" with it named as the root cause" if sim.named is not None else "")
        if sim.through == step
        else f"T~({sim.through}), the nearest simulated trace corrected through the blamed step {step} and on "
        f"to step {sim.through}"
    )
    return f"S of {which} ({s}), clipped to [0, 1]; not calibrated, not a probability of being right"


def dcfa_confidence(lce: LceResult | None, step: int) -> float | None:
    """S of the trace corrected through the blamed step (:func:`corrected_through`) clipped to [0, 1], or None."""
    sim = corrected_through(lce, step)
    return None if sim is None else float(min(1.0, max(0.0, sim.s)))


def dcfa_corrected_action(lce: LceResult | None, step: int, settings: DcfaSettings) -> CorrectedAction | None:
    """Correct's content of the blamed step and the simulated outcome with it (module docstring).

    None when LCE made no correction or Correct left the blamed step as it was (up to whitespace): no
    correction proposed, so no fix.
    """
    corr = None if lce is None else lce.correction
    if lce is None or corr is None or not 0 <= step < len(corr.contents) or step not in corr.changed:
        return None
    sim = corrected_through(lce, step)
    outcome = None if sim is None else sim.outcome[:MAX_OUTCOME_CHARS]
    if sim is None:
        how = "; no simulation of the trace corrected through it"
    else:
        named = " with it named as the root cause" if sim.named is not None else ""
        how = f", then Simulation (eq. 9) of T~({sim.through}), the trace corrected through step {sim.through}{named}"
    return CorrectedAction(
        step=step,
        content=corr.contents[step],
        changed=True,
        outcome=outcome,
        outcome_score=None if sim is None else float(sim.s),
        source="dcfa: Correct (eq. 8)" + how,
    )


def dcfa_result_fields(
    trace: Trace, gca: GcaResult, lce: LceResult | None, step: int, source: str, settings: DcfaSettings
) -> dict[str, Any]:
    """The Attribution fields ``candidates``, ``confidence``, ``evidence``, ``evidence_note``, ``corrected_action``.

    Parameters
    ----------
    trace : Trace
    gca : GcaResult
    lce : LceResult or None (None: no LCE, or it failed)
    step : int, the final 0-based answer
    source : ``"ded"`` or ``"hypothesis"``, where the answer came from
    settings : DcfaSettings
    """
    quote = lce.decision.evidence if source == "ded" and lce is not None else gca.hypothesis_evidence
    return {
        "candidates": dcfa_candidates(trace, gca, lce, step, settings),
        "confidence": dcfa_confidence(lce, step),  # how: details["confidence_is"] (confidence_is)
        **evidence_fields(quote, trace.steps, step, asked=settings.quote_evidence),
        "corrected_action": dcfa_corrected_action(lce, step, settings),
    }
