"""What DCFA will send for one trace, call by call, with no request made (``--dry-run --show-prompts``).

Every call DCFA makes under the given settings, in the order a run makes
them: MDI and CGC (or MDI+CGC), HG; then Correct, the two Simulations of a
candidate (S(i), and S(i-1) under ``simulation="code"``), the no-truth judge
when the truth is not used, and DED. Inputs that are an earlier call's reply
are :func:`~agentcausal.llm.preview.placeholder` text: MDI's reasons, the
graph, the corrected and spliced trace, the candidate step, the candidates of
DED and their Simulation reasons. The encoder (``dcfa.embed``) gets the
simulated answers and the truth, no prompt, and is not shown.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), sections 4.1 and 4.2.
"""

from __future__ import annotations

from typing import Any

from agentcausal.attribution.dcfa import prompts
from agentcausal.attribution.dcfa.correct import STAGE as LCE_STAGE
from agentcausal.attribution.dcfa.correct import lce_budget
from agentcausal.attribution.dcfa.ded import DedCandidate, ded_messages, format_candidate_reasons
from agentcausal.attribution.dcfa.gca import STAGE as GCA_STAGE
from agentcausal.attribution.dcfa.gca import gca_budgets, trace_budget
from agentcausal.attribution.dcfa.settings import DcfaSettings, correct_variant_for
from agentcausal.llm.preview import PromptPreview, placeholder
from agentcausal.traces.model import Trace

__all__ = ["dcfa_previews"]

#: the symbolic candidate of the Simulation previews
_CANDIDATE = "⟨the candidate step i: HG's hypothesis, then each neighbour the search scores⟩"


def dcfa_previews(
    trace: Trace, settings: DcfaSettings, profiles: Any | None = None, *, method: str = "dcfa"
) -> list[PromptPreview]:
    """The messages of every DCFA call for ``trace``, replies of earlier calls as placeholders.

    Parameters
    ----------
    trace : Trace
    settings : DcfaSettings
    profiles : a Gateway or :class:`~agentcausal.llm.profiles.ProfileSet` (anything with
        ``profile_for(stage)``), for the context budgets a run uses; None = the trace unshortened
    method : str, the name shown (``dcfa`` or ``dcfa_gca_only``)

    Returns
    -------
    list of PromptPreview, in the order a run makes the calls.
    """
    s = settings
    n = len(trace)
    truth = trace.ground_truth if s.with_ground_truth else None
    gca_budget = lce_b = None
    if profiles is not None:
        gca_budget = trace_budget(profiles, GCA_STAGE, s, max(gca_budgets(profiles, s)))
        lce_b = lce_budget(profiles, s, n)
    out: list[PromptPreview] = []

    def add(stage: str, call: str, messages: list[dict[str, str]]) -> None:
        out.append(PromptPreview(method, stage, call, messages))

    mdi_reply = placeholder("MDI (the steps it marked, each with its reason)")
    graph_reply = placeholder(
        "CGC (the causes and effects of every step)" if s.cgc == "code" else "CGC (the dependency edges)"
    )
    if s.mdi_cgc == "split":
        add(
            GCA_STAGE,
            "MDI",
            prompts.mdi_messages(
                trace.question, trace.steps, max_deviations=s.max_deviations, budget=gca_budget, style=s.prompts
            ),
        )
        add(
            GCA_STAGE,
            "CGC",
            prompts.cgc_messages(
                trace.question,
                trace.steps,
                mdi_reply,
                max_edges=s.max_edges,
                budget=gca_budget,
                style=s.prompts,
                cgc=s.cgc,
            ),
        )
    else:
        add(
            GCA_STAGE,
            "MDI+CGC",
            prompts.gca_joint_messages(
                trace.question,
                trace.steps,
                max_deviations=s.max_deviations,
                max_edges=s.max_edges,
                budget=gca_budget,
                style=s.prompts,
                cgc=s.cgc,
            ),
        )
        mdi_reply = placeholder("MDI+CGC (the steps it marked, each with its reason)")
        graph_reply = placeholder("MDI+CGC (the graph)")
    add(
        GCA_STAGE,
        "HG",
        prompts.hg_messages(
            trace.question, truth, trace.steps, mdi_reply, graph_reply, budget=gca_budget, style=s.prompts
        ),
    )
    if not s.use_lce:
        return out
    variant = correct_variant_for(s.correct_variant, trace.source)
    add(
        LCE_STAGE,
        f"Correct ({variant.replace('_', '-')})" if s.prompts == "paper" else "Correct",
        prompts.correct_messages(
            trace.question,
            truth,
            trace.steps,
            mdi_reply,
            graph_reply,
            max_chars=s.max_corrected_step_chars,
            budget=lce_b,
            style=s.prompts,
            variant=variant,
        ),
    )
    spliced = placeholder("Correct, spliced: its corrected steps 0..i, then the original steps after i")
    prev = placeholder("Correct, spliced: its corrected steps 0..i-1, then the original steps from i")
    sim_truth = truth if s.simulation_sees_truth else None
    named = s.simulation == "code" and s.prompts == "paper"
    root = f"{_CANDIDATE}; the steps it directly affects: {placeholder('CGC (its effects)')}" if named else None
    add(
        LCE_STAGE,
        "Simulation S(i)",
        prompts.simulation_messages(
            trace.question,
            spliced,
            "i",
            truth=sim_truth,
            budget=lce_b,
            style=s.prompts,
            variant=s.simulation,
            root=root,
        ),
    )
    add(
        LCE_STAGE,
        "Simulation S(i-1)",
        prompts.simulation_messages(
            trace.question, prev, "i-1", truth=sim_truth, budget=lce_b, style=s.prompts, variant=s.simulation, root=None
        ),
    )
    if not s.with_ground_truth:
        add(LCE_STAGE, "Judge (no truth)", prompts.judge_messages(trace.question, placeholder("Simulation")))
    code_ded = s.ded == "code" and s.prompts == "paper"
    reasons = ""
    if code_ded:
        hyp = "⟨HG's hypothesis⟩"
        pivot = "⟨each step the search accepted⟩"
        reasons = format_candidate_reasons(
            [DedCandidate(hyp, None, True), DedCandidate(pivot, placeholder("Simulation S(i) of that step"))],
            {hyp: placeholder("HG (its agent)"), pivot: placeholder("the search (its agent)")},
            {
                hyp: placeholder("MDI (its reason, when MDI marked it)"),
                pivot: placeholder("MDI (its reason, when MDI marked it)"),
            },
        )
    cand_steps = placeholder(
        "the search: the candidate steps T^c (HG's hypothesis and the accepted pivots), as recorded"
    )
    add(
        LCE_STAGE,
        "DED",
        ded_messages(
            trace.question,
            truth,
            cand_steps,
            graph_reply,
            budget=lce_b,
            style=s.prompts,
            variant=s.ded,
            reasons=reasons,
            n_steps=n,
            candidates=placeholder("the search (the candidate steps)"),
        ),
    )
    return out
