"""ECHO: hierarchical context, a panel of objective analysts, and consensus voting.

ECHO (Error attribution through Contextual Hierarchy and Objective consensus
analysis) looks at each suspect step through context of decreasing detail with
distance, lets several analysts with different focus judge it independently,
and takes the verdict by confidence-weighted consensus. ECHO has no official
code; this is a reimplementation from its paper with the DCFA paper's cost
(two full-context calls per trace, about 300 tokens of prompt each plus the trace):

1. **Scan** (one call, the whole trace; :class:`EchoScan`): the model notes
   hand-offs, decisions, observable errors and patterns and lists candidate
   steps for the decisive error, most likely first (at most ``max_candidates``).
2. **Hierarchical context** (no call; :func:`hierarchical_view`). For each
   candidate step *c*, every step *j* is shown at the level of its distance
   ``d = |j - c|``, as in ECHO's four layers: L1 (``d <= l1_radius``, ECHO ±1)
   the step in full; L2 (``d <= l2_radius``, ECHO ±2-3) its key lines
   (:func:`key_lines`: lines that report errors, decisions, results or
   hand-offs, by regular expressions as ECHO extracts content, up to
   ``l2_chars``); L3 (``d <= l3_radius``, ECHO ±4-6) a summary (first
   sentence and warning lines, up to ``l3_chars``); beyond that L4, shared by
   all candidates as one **global view**: one milestone line per step
   (``l4_chars``) with markers for errors, decisions and hand-offs.
3. **Panel** (one call; :class:`EchoPanelReply`): the global view and each
   candidate's L1-L3 window; every analyst in ``analysts`` (a focus from
   :data:`ANALYSTS`, ECHO's panel runs from conservative to balanced) gives a
   hypothesis, the evidence, a vote (one candidate step and the responsible
   agent, among the trace's own agents) and a confidence in [0, 1].
4. **Consensus** (no call; :func:`consensus`, rule pinned by tests). Votes
   with confidence below ``min_confidence`` are dropped; a vote weighs its
   confidence (``consensus = "confidence_weighted"``, ECHO's rule) or 1
   (``"majority"``); the step with the largest total wins. Ties
   (``tie_break``): ``"earliest"`` takes the earliest tied step (the decisive
   error is the earliest mistake whose correction reverses the failure),
   ``"highest_confidence"`` the tied step with the most confident single vote
   (then the earliest), ``"scan_rank"`` the tied step the scan ranked first
   (then the earliest). A winner whose share of the total weight is below
   ``min_support`` is "undetermined". The agent is the confidence-weighted
   vote of the winning step's voters; a tie, or no agent named, takes the
   step's speaker when it is among the tied, else the earliest speaking of them.

The panel shows at most as many candidates as their windows fit the context
(:func:`panel_capacity`: at least ``MIN_WINDOW_CHARS`` each after the global
view's quarter of the budget); candidates beyond are listed in
``details["candidates_over_budget"]`` (a safety bound, not a method setting).

* ``paper``: all six analysts, candidates bounded only by the trace (n), the
  layer radii of ECHO's paper, no character caps (neither on the L2-L4
  extracts nor on the reply's text fields: ECHO gives none; the context
  budget bounds the views and the profile's completion budget the replies),
  forced choices (every analyst votes; candidate steps bounded in the schema).
* ``small``: three analysts, three candidates, short text fields and a fixed
  completion cap for sub-2B models, and the "undetermined" escape (an analyst
  may abstain with null step; out-of-range candidates are dropped and recorded
  in ``details["invalid_candidates"]``; no valid candidate or no vote leaves the
  trace undetermined).

Choices the paper leaves open, each a setting: the number of candidates, the
analysts' foci, the character caps of L2-L4 (none under ``paper``), the consensus and tie-break rules,
and the thresholds. Deviations from ECHO's paper: ECHO's analysts are separate agents (decoupled
analysis, one call each); here the analysts share one panel call over the
scan's candidates (the DCFA paper's cost table counts two full-context calls),
and the scan replaces ECHO's exhaustive per-position pass. Without ground
truth (``with_ground_truth = False``, Who&When's second setting) neither call
sees the correct answer.

Its parts: the settings and presets (:mod:`agentcausal.attribution.echo_settings`), the hierarchical
context (:mod:`agentcausal.attribution.echo_context`) and the consensus
(:mod:`agentcausal.attribution.echo_consensus`); this module holds the prompts, the reply models and
the run.

References
----------
Banerjee, A., Nair, A., Borogovac, T. "Where Did It All Go Wrong? A
Hierarchical Look into Multi-Agent Error Attribution." arXiv:2510.04886 (2025).
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, create_model

from agentcausal.attribution.baseline_prompts import (
    agent_names,
    baseline_messages,
    bounded_step,
    enum_choice,
    task_block,
    text_fields,
    undetermined,
)
from agentcausal.attribution.baseline_settings import ask_baseline, baseline_spec, trace_budget
from agentcausal.attribution.candidates import echo_candidates
from agentcausal.attribution.echo_consensus import Vote, consensus
from agentcausal.attribution.echo_context import global_view, hierarchical_view
from agentcausal.attribution.echo_settings import ANALYSTS, PRESETS, AnalystName, EchoSettings
from agentcausal.attribution.evidence import evidence_fields
from agentcausal.llm import LLMCall
from agentcausal.traces.model import Attribution, Trace
from agentcausal.traces.render import escape_data, render_steps_info

__all__ = [
    "NAME",
    "PROMPT_VERSION",
    "PROMPT_VERSIONS",
    "SCAN_TEMPLATE",
    "PAPER_SCAN_TEMPLATE",
    "PANEL_TEMPLATE",
    "PAPER_PANEL_TEMPLATE",
    "EchoScan",
    "EchoCandidate",
    "EchoVote",
    "EchoPanelReply",
    "scan_model",
    "panel_model",
    "scan_messages",
    "panel_messages",
    "panel_capacity",
    "MIN_WINDOW_CHARS",
    "run",
]

NAME = "echo"
#: version of each prompt set
PROMPT_VERSIONS = {"paper": "echo/paper-2", "small": "echo/1"}
PROMPT_VERSION = "+".join(PROMPT_VERSIONS[k] for k in sorted(PROMPT_VERSIONS))


#: the ``paper`` scan message; fields: task, trace, n_last, k
PAPER_SCAN_TEMPLATE = (
    "{task}\n\nThe run, steps 0 to {n_last}:\n{trace}\n\n"
    "Survey the whole run as the first stage of a hierarchical error analysis. Note the hand-offs between "
    "agents, the decisions, the observable errors (tool failures, wrong formats, wrong values) and recurring "
    "patterns, and tell minor deviations apart from the error that made the run fail. Give a short overview, "
    "then list up to {k} candidate steps for the decisive error, most likely first, each with its reason."
)

#: the ``small`` scan message; fields as in :data:`PAPER_SCAN_TEMPLATE`
SCAN_TEMPLATE = (
    "{task}\n\nThe run, steps 0 to {n_last}:\n{trace}\n\n"
    "List up to {k} step numbers that most likely hold the decisive error, most likely first."
)

#: the ``paper`` panel message; fields: task, overview, global_view, windows, l1, l2, l3, m, analysts
PAPER_PANEL_TEMPLATE = (
    "{task}\n\nOverview of the run from a first survey: {overview}\n\n"
    "A compressed view of the whole run, one milestone line per step ([error], [decision], [hand-off] mark "
    "what the line reports):\n{global_view}\n\n"
    "The candidate steps for the decisive error, each with hierarchical context: steps up to {l1} away in "
    "full (L1), up to {l2} away by their key lines (L2), up to {l3} away summarised (L3):\n{windows}\n\n"
    "Judge the candidates as a panel of {m} independent analysts. Each analyst keeps to its own focus, judges "
    "objectively from the evidence shown, and gives a hypothesis of how the failure arose, the evidence for "
    "it, its vote (the candidate step of the decisive error and the agent responsible) and its confidence "
    "from 0 to 1. The decisive error is the earliest mistake whose correction would have let the team "
    "reach the correct answer; a minor deviation the run recovered from is not decisive.\n"
    "The analysts:\n{analysts}"
)

#: the ``small`` panel message; fields as in :data:`PAPER_PANEL_TEMPLATE`
PANEL_TEMPLATE = (
    "{task}\n\nThe run in short:\n{global_view}\n\nCandidate steps with their neighbours:\n{windows}\n\n"
    "As each of the {m} analysts below, vote for the candidate step of the decisive error and its agent, "
    "with a confidence from 0 to 1; null step only if that analyst cannot tell.\nThe analysts:\n{analysts}"
)


# ------------------------------------------------------------------ replies
class EchoCandidate(BaseModel):
    """One candidate step for the decisive error."""

    step: int = Field(description="Step number.")
    reason: str = Field(description="Why this step may hold the decisive error.")


class EchoScan(BaseModel):
    """Your survey of the run and the candidate steps for the decisive error, most likely first."""

    overview: str = Field(description="What the run did and where it went off track.")
    candidates: list[EchoCandidate] = Field(description="Candidate steps, most likely first.")


class EchoVote(BaseModel):
    """One analyst's judgement."""

    hypothesis: str = Field(description="How the failure arose.")
    evidence: str = Field(description="What in the steps shown supports it.")
    step: int | None = Field(description="The candidate step of the decisive error.")
    agent: str | None = Field(description="The agent responsible, as shown.")
    confidence: float = Field(ge=0.0, le=1.0, description="Confidence in this vote, 0 to 1.")


class EchoPanelReply(BaseModel):
    """The panel's judgements: one entry per analyst."""


@functools.lru_cache(maxsize=256)
def scan_model(n_steps: int, k: int, forced: bool, field_chars: int | None) -> type[EchoScan]:
    """The scan reply model: 1..k candidates; ``forced`` (``paper``) bounds steps to ``0..n_steps-1``."""
    step_f = bounded_step(n_steps, "Step number.") if forced else (int, Field(description="Step number."))
    cand = create_model(
        "EchoCandidate", __base__=EchoCandidate, step=step_f, **text_fields(EchoCandidate, field_chars, "reason")
    )
    return create_model(
        "EchoScan",
        __base__=EchoScan,
        **text_fields(EchoScan, field_chars, "overview"),
        candidates=(
            list[cand],
            Field(min_length=1 if forced else 0, max_length=k, description="Candidate steps, most likely first."),
        ),
    )


@functools.lru_cache(maxsize=256)
def panel_model(
    agents: tuple[str, ...],
    candidates: tuple[int, ...],
    analysts: tuple[AnalystName, ...],
    forced: bool,
    field_chars: int | None,
) -> type[EchoPanelReply]:
    """The panel reply model: one required :class:`EchoVote` per analyst; ``step`` an enum of the
    candidates and ``agent`` an enum of the trace's agents (both nullable unless ``forced``)."""
    step_t: Any = enum_choice(candidates, "integer")
    agent_t: Any = enum_choice(agents)
    if not forced:
        step_t, agent_t = step_t | None, agent_t | None
    vote = create_model(
        "EchoVote",
        __base__=EchoVote,
        **text_fields(EchoVote, field_chars, "hypothesis", "evidence"),
        step=(
            step_t,
            Field(
                description="The candidate step of the decisive error"
                + ("." if forced else "; null if you cannot tell.")
            ),
        ),
        agent=(agent_t, Field(description="The agent responsible, as shown.")),
    )
    fields: dict[str, Any] = {a: (vote, Field(description=f"The {a} analyst: {ANALYSTS[a]}.")) for a in analysts}
    return create_model("EchoPanelReply", __base__=EchoPanelReply, **fields)


# ------------------------------------------------------------------ messages and run
def scan_messages(trace: Trace, settings: EchoSettings, budget: int | None, k: int) -> list[dict[str, str]]:
    """The scan call's messages (the whole trace within ``budget`` characters)."""
    template = PAPER_SCAN_TEMPLATE if settings.prompts == "paper" else SCAN_TEMPLATE
    user = template.format(
        task=task_block(trace, settings.with_ground_truth),
        trace=render_steps_info(trace.steps, budget).text,
        n_last=len(trace) - 1,
        k=k,
    )
    return baseline_messages("List the candidate steps for the decisive error.", user)


#: the least characters of one candidate's window in the panel prompt
MIN_WINDOW_CHARS = 1000


def panel_capacity(budget: int | None) -> int:
    """How many candidate windows fit the panel prompt: ``(budget - global view) // MIN_WINDOW_CHARS``
    (at least 1; unbounded without a budget). The global view takes a quarter of the budget.

    >>> panel_capacity(20_000), panel_capacity(None) > 10**6
    (15, True)
    """
    if budget is None:
        return 10**9
    return max(1, (budget - max(MIN_WINDOW_CHARS, budget // 4)) // MIN_WINDOW_CHARS)


def panel_messages(
    trace: Trace, settings: EchoSettings, budget: int | None, overview: str, candidates: Sequence[tuple[int, str]]
) -> list[dict[str, str]]:
    """The panel call's messages: the global view (a quarter of ``budget``) and each candidate's
    window (the rest, shared equally)."""
    share = None if budget is None else max(MIN_WINDOW_CHARS, budget // 4)
    per = None if budget is None else max(MIN_WINDOW_CHARS, (budget - (share or 0)) // max(1, len(candidates)))
    windows = "\n".join(
        f"Candidate step {c} (from the survey: {escape_data(reason)})\n{hierarchical_view(trace, c, settings, per)}"
        for c, reason in candidates
    )
    template = PAPER_PANEL_TEMPLATE if settings.prompts == "paper" else PANEL_TEMPLATE
    analysts = "\n".join(f"- {a}: {ANALYSTS[a]}" for a in settings.analysts)
    user = template.format(
        task=task_block(trace, settings.with_ground_truth),
        overview=escape_data(overview),
        global_view=global_view(trace, settings, share),
        windows=windows,
        l1=settings.l1_radius,
        l2=max(settings.l1_radius, settings.l2_radius),
        l3=max(settings.l1_radius, settings.l2_radius, settings.l3_radius),
        m=len(settings.analysts),
        analysts=analysts,
    )
    return baseline_messages("Give each analyst's vote on the decisive error.", user)


def run(trace: Trace, call: LLMCall, settings: EchoSettings) -> Attribution:
    """Attribute one trace with ECHO: scan, hierarchical context, panel, consensus.

    Parameters
    ----------
    trace : Trace, n steps
    call : LLMCall, the run's call context; calls stage ``baseline`` twice (once when the ``small`` scan finds no valid candidate)
    settings : EchoSettings

    Returns
    -------
    Attribution with the consensus step and agent (None when undetermined). ``details``:
    ``candidates`` (scan order, with reasons), ``overview``, ``votes`` (per analyst: step,
    agent, confidence, hypothesis, evidence), ``scores`` (step -> weight), ``support``,
    ``tied``, ``consensus`` and ``tie_break`` (the rules used), ``prompt_version`` and,
    under ``small``, ``invalid_candidates`` (out-of-range steps the scan listed).

    Raises
    ------
    StructuredOutputError, EndpointUnreachableError, LLMCallError
        From the gateway.
    """
    n = len(trace)
    forced = settings.prompts == "paper"
    version = PROMPT_VERSIONS[settings.prompts]
    budget = trace_budget(call, settings)
    k = min(n, settings.max_candidates or n)
    scan = ask_baseline(
        call, settings, scan_messages(trace, settings, budget, k), scan_model(n, k, forced, settings.field_chars)
    )
    cands: dict[int, str] = {}
    invalid: list[int] = []
    for c in scan.candidates:
        if 0 <= c.step < n:
            cands.setdefault(c.step, c.reason)
        else:
            invalid.append(c.step)
    listed = list(cands.items())[:k]
    candidates = listed[: panel_capacity(budget)]  # the windows that fit the context (safety bound)
    details: dict[str, Any] = {
        "overview": scan.overview,
        "candidates": [{"step": s, "reason": r} for s, r in candidates],
        "consensus": settings.consensus,
        "tie_break": settings.tie_break,
        "prompt_version": version,
    }
    if invalid:
        details["invalid_candidates"] = invalid
    if len(listed) > len(candidates):
        details["candidates_over_budget"] = [s for s, _ in listed[len(candidates) :]]
    if not candidates:
        return undetermined(trace, NAME, version, "undetermined: the scan listed no valid candidate step", details)
    model = panel_model(
        agent_names(trace), tuple(s for s, _ in candidates), tuple(settings.analysts), forced, settings.field_chars
    )
    reply = ask_baseline(call, settings, panel_messages(trace, settings, budget, scan.overview, candidates), model)
    votes = [
        Vote(a, getattr(reply, a).step, getattr(reply, a).agent, getattr(reply, a).confidence)
        for a in settings.analysts
    ]
    result = consensus(
        votes,
        trace,
        rule=settings.consensus,
        tie_break=settings.tie_break,
        scan_order=[s for s, _ in candidates],
        min_confidence=settings.min_confidence,
        min_support=settings.min_support,
    )
    details.update(
        {
            "votes": [
                {
                    "analyst": a,
                    "step": getattr(reply, a).step,
                    "agent": getattr(reply, a).agent,
                    "confidence": getattr(reply, a).confidence,
                    "hypothesis": getattr(reply, a).hypothesis,
                    "evidence": getattr(reply, a).evidence,
                }
                for a in settings.analysts
            ],
            "scores": {str(s): round(w, 6) for s, w in sorted(result.scores.items())},
            "support": round(result.support, 6),
            "tied": list(result.tied),
        }
    )
    best = None
    if result.step is None:
        reason = (
            "undetermined: no analyst vote counted"
            if not result.counted
            else f"undetermined: support {result.support:.2f} below {settings.min_support}"
        )
    else:
        winners = [a for a in settings.analysts if getattr(reply, a).step == result.step]
        best = max(winners, key=lambda a: getattr(reply, a).confidence, default=None)
        reason = getattr(reply, best).hypothesis if best else ""
        reason = f"{len(winners)}/{len(votes)} analysts, support {result.support:.2f}: {reason}"
    # ranked by consensus weight; confidence = the consensus support; evidence = the most confident winning
    # analyst's, kept only when it quotes the blamed step (agentcausal.attribution.candidates, .evidence)
    return Attribution(
        trace_id=trace.id,
        method=NAME,
        step=result.step,
        agent=result.agent,
        reason=reason,
        prompt_version=version,
        details=details,
        candidates=echo_candidates(trace, result.step, result.scores, result.tied, settings.consensus),
        confidence=None if result.step is None else float(min(1.0, max(0.0, result.support))),
        **evidence_fields(
            getattr(reply, best).evidence if best else None, trace.steps, result.step, asked=result.step is not None
        ),
    )


SPEC = baseline_spec(NAME, run, EchoSettings, PRESETS, PROMPT_VERSION)
