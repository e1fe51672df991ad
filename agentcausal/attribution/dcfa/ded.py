"""DED, the Decisive Error Decision of DCFA (section 4.2.2, eq. 14): the last call of LCE.

DED(Ŷ, T^c, G) picks the decisive error τ* from the local candidate set
T^c = {hypothesis} ∪ C_fwd ∪ C_bwd that the bidirectional search left
(:mod:`agentcausal.attribution.dcfa.search`). Two versions, setting ``ded``:

* ``"code"`` (the ``paper`` preset: ``final_failure_attribution.txt`` and
  ``identify_final_mistake`` of the released code): the question, the correct
  answer, the text of every candidate step, and per candidate its reasons: the
  GCA hypothesis flagged as the initial choice to be checked, each accepted
  pivot with the reason its own Simulation S(i) gave, and each candidate's
  MDI reason when MDI marked it. No graph. The prompt asks for the roles of
  the mistakes, then the one causally decisive step (an upstream non-obvious
  error or a downstream decisive one), then a reason; the answer may be any
  step of the trace, not only a candidate (as the released code reads its
  reply), and the call is made even for a single candidate.
* ``"equations"`` (the paper's eq. 14; the ``small`` preset): the correct
  answer, the candidate steps and the dependency graph; the answer is one of
  the candidates (a JSON-schema enum), so with one candidate no call is made.

Fixed bug of the released code: it gathers the candidates' texts with
``dict.update`` on per-step records that all have the same two keys, so the
prompt held only the last candidate's step; here every candidate's step is
shown.

Stage ``dcfa.lce``; usage item ``item`` (default ``trace.id``).

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), section 4.2.2, eq. 14; appendix K, Algorithm 2 (last line);
appendix L, Figure 13.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

import networkx as nx
from pydantic import BaseModel, Field, create_model

from agentcausal.attribution.dcfa import prompts
from agentcausal.attribution.dcfa.correct import STAGE, lce_budget, lce_tokens
from agentcausal.attribution.dcfa.gca_validation import graph_edges
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.attribution.evidence import ask_evidence, with_evidence
from agentcausal.llm import LLMCall, Message
from agentcausal.traces.model import Step, Trace
from agentcausal.traces.render import delimit, escape_data

__all__ = [
    "DED_TEMPLATE",
    "PAPER_DED_TASK",
    "PAPER_DED_EXAMPLE",
    "EQUATIONS_DED_TASK",
    "HYPOTHESIS_FLAG",
    "DedCandidate",
    "Decision",
    "DecisionReply",
    "decision_model",
    "format_candidate_reasons",
    "ded_messages",
    "decide",
]

#: DED (``small``): the candidates shown, the graph, an enum of the candidates
DED_TEMPLATE = (
    "The run failed. The correct answer is {truth}.\n"
    "Dependency edges among all steps (source -> target): {edges}\n"
    "The steps shown are the candidates for the decisive error. Which one is it: the step whose "
    "correction would most plausibly fix the final answer? Choose one of {candidates} and give a "
    "one-sentence reason."
)

#: what the released code writes beside the GCA hypothesis for DED (in our words)
HYPOTHESIS_FLAG = (
    "the initial root cause chosen by the global analysis (GCA hypothesis): check it, and find the true root cause"
)

#: DED as the released code asks it (``ded="code"``); fields: last
PAPER_DED_TASK = (
    "Find the single most fundamental root cause of the failure among the candidate steps above, the step "
    "directly responsible for the system's wrong final answer.\n"
    "1. The roles of the mistakes: go through every entry of the candidates' reasons, work out what kind of "
    "mistake each one is (a wrong assumption, a calculation error, invented data, a misused tool, ...) and how "
    "it contributed to the failure. Do not just list them: understand the part each plays in the causal "
    "chain.\n"
    "2. The true root cause: among these mistakes, find the one step that is causally decisive for the wrong "
    "final outcome. It may be an upstream, non-obvious error (a flawed assumption, invented data, or the "
    "wrong tool chosen, which led to an obvious error further on) or a downstream, decisive error (a wrong "
    "calculation or a wrong final decision made on otherwise correct data, which caused the failure "
    "directly).\n"
    "3. The reason: write a concise, accurate reason stating which step is the true root cause and how the "
    "causal chain shows it.\n"
    'Reply with "step" (the number of the root-cause step, 0 to {last}) and "reason".'
)

#: our own worked example of DED (same form as the released one)
PAPER_DED_EXAMPLE = (
    "Example. Question: what is the population density, in people per square kilometre, of the country whose "
    "capital is Canberra? Correct answer: 3.4.\n"
    "step 1, Geography_Expert: Canberra is the capital of New Zealand.\n"
    "step 5, Data_Expert: The final answer is 19.0.\n"
    "Reasons: step 1, " + HYPOTHESIS_FLAG + "; mistake reason (MDI): the wrong country. Step 5, when this step "
    "was corrected (Simulation): the answer stays wrong while the country is wrong; mistake reason (MDI): the "
    "final answer is wrong.\n"
    'Reply: {"step": 1, "reason": "Step 5 only reports the figure computed for the country named at step 1; '
    "the wrong country at step 1 is an upstream data error that decided every later figure, so it is the "
    'true root cause."}'
)

#: DED as the paper's eq. 14 states it (``ded="equations"``, ``paper`` prompts); fields: truth_line, edges,
#: candidates
EQUATIONS_DED_TASK = (
    "The run failed. {truth_line}\n"
    "Causal-inspired dependency graph among all steps (source -> target): {edges}\n"
    "The steps shown are the candidate decisive errors found by the counterfactual search (the global "
    "hypothesis and the steps the search moved to). Using the graph, decide which single candidate is "
    "causally decisive for the failure: the step whose correction would most reduce the failure, so that "
    "correcting it would most plausibly have given the correct answer. It may lie upstream of the others (an "
    "early error the later steps inherit) or downstream (a later error made on otherwise correct inputs). A "
    "minor deviation that does not reach the final answer is not decisive. Choose one of {candidates} and "
    "give a short reason."
)


class DedCandidate(NamedTuple):
    """One element of T^c as DED sees it.

    Attributes
    ----------
    step : int, 0-based (or a str label in a preview)
    simulation_reason : str or None, the reason the candidate's own Simulation S(i) gave when the
        search accepted it; None for the hypothesis (flagged instead) and where the Simulation
        reply has no reason (``small``)
    hypothesis : bool, the GCA hypothesis
    """

    step: int | str
    simulation_reason: str | None = None
    hypothesis: bool = False


class Decision(NamedTuple):
    """DED's answer.

    Attributes
    ----------
    step : int, 0-based
    reason : str
    skipped : bool, no call was made (``ded="equations"`` with one candidate)
    off_candidates : bool, the step is not in T^c (``ded="code"`` allows it, as the released code)
    evidence : str or None, the quote from the chosen step, as replied (unchecked; ``quote_evidence`` only)
    """

    step: int
    reason: str
    skipped: bool
    off_candidates: bool = False
    evidence: str | None = None


class DecisionReply(BaseModel):
    """The decisive error among the candidates (DED)."""

    step: int = Field(description="one of the candidate steps")
    reason: str = Field(description="one sentence")


def _one_of(steps: tuple[int, ...]) -> Any:
    """``Literal[steps]``: a field type of values known at run time."""
    return Literal[steps]


@functools.lru_cache(maxsize=256)
def decision_model(
    candidates: tuple[int, ...], max_reason_chars: int | None, n_steps: int | None = None
) -> type[DecisionReply]:
    """Reply model of DED: ``step`` one of ``candidates`` (a JSON-schema enum), or, when ``n_steps``
    is given (``ded="code"``), any step ``0 .. n_steps - 1`` (validated).

    Raises
    ------
    ValueError
        If ``candidates`` is empty (and ``n_steps`` not given), or ``n_steps < 1``.
    """
    reason = (prompts._reason(max_reason_chars, "why this step is the true root cause"), ...)
    if n_steps is not None:
        if n_steps < 1:
            raise ValueError(f"n_steps must be >= 1, got {n_steps}")
        return create_model(
            "DecisionReply",
            __base__=DecisionReply,
            reason=reason,
            step=(int, Field(ge=0, le=n_steps - 1, description="0-based step of the root cause")),
        )
    if not candidates:
        raise ValueError("DED needs at least one candidate step")
    return create_model(
        "DecisionReply",
        __base__=DecisionReply,
        step=(_one_of(tuple(sorted(set(candidates)))), Field(description="one of the candidate steps")),
        reason=reason,
    )


def format_candidate_reasons(
    candidates: Sequence[DedCandidate], agents: Mapping[int | str, str], mdi_reasons: Mapping[int | str, str]
) -> str:
    """The per-candidate reasons block of ``ded="code"``, one entry per candidate in step order.

    Parameters
    ----------
    candidates : sequence of DedCandidate
    agents : mapping step -> agent name
    mdi_reasons : mapping step -> MDI's reason (steps MDI did not mark are absent)

    Returns
    -------
    str; reasons are escaped as data.

    Examples
    --------
    >>> print(format_candidate_reasons([DedCandidate(2, "the fix flows on"), DedCandidate(1, None, True)],
    ...                                {1: "A", 2: "B"}, {1: "wrong lookup"}))
    - step 1 (A): the initial root cause chosen by the global analysis (GCA hypothesis): check it, and find the true root cause
      mistake reason (MDI): wrong lookup
    - step 2 (B): when this step was corrected (Simulation): the fix flows on
    """

    def key(c: DedCandidate) -> tuple[int, str]:
        return (c.step, "") if isinstance(c.step, int) else (10**9, str(c.step))

    lines = []
    for c in sorted(candidates, key=key):
        head = f"- step {c.step} ({escape_data(agents.get(c.step, '?'))}): "
        if c.hypothesis:
            head += HYPOTHESIS_FLAG
        elif c.simulation_reason:
            head += "when this step was corrected (Simulation): " + escape_data(c.simulation_reason).replace("\n", " ")
        else:
            head += "accepted by the counterfactual search"
        lines.append(head)
        if c.step in mdi_reasons:
            lines.append("  mistake reason (MDI): " + escape_data(mdi_reasons[c.step]).replace("\n", " "))
    return "\n".join(lines)


def ded_messages(
    question: str,
    truth: str | None,
    candidate_steps: Sequence[Step] | str,
    edges: Sequence[tuple[int, int]] | str,
    *,
    budget: int | None = None,
    style: str = "paper",
    variant: str = "code",
    reasons: str = "",
    n_steps: int | str | None = None,
    candidates: str | None = None,
) -> list[Message]:
    """Messages of DED.

    Parameters
    ----------
    question : str
    truth : str or None (None = not shown)
    candidate_steps : sequence of Step (the candidates, their own numbers) or a str
    edges : the dependency graph's edges or a str (``equations`` and ``small`` only)
    budget : int or None, character budget of the candidates' block
    style : "paper" or "small"
    variant : "code" or "equations" (``paper`` only)
    reasons : str, :func:`format_candidate_reasons` (``code`` only)
    n_steps : int or str, the trace's length (``code``: the answer may be any step)
    candidates : str or None, the candidate list said in the prompt; None = the steps' numbers

    Returns
    -------
    list of two messages.
    """
    if candidates is None:
        candidates = (
            candidate_steps if isinstance(candidate_steps, str) else ", ".join(str(s.index) for s in candidate_steps)
        )
    if style == "paper" and variant == "code":
        last = n_steps - 1 if isinstance(n_steps, int) else n_steps
        inputs = [
            prompts._question(question),
            prompts.truth_line(truth),
            "Reasons of the candidate steps:\n" + (reasons or "- none"),
        ]
        return prompts.paper_messages(
            candidate_steps, budget, inputs, PAPER_DED_TASK.format(last=last), PAPER_DED_EXAMPLE
        )
    if style == "paper":
        task = EQUATIONS_DED_TASK.format(
            truth_line=prompts.truth_line(truth), edges=prompts.format_edges(edges), candidates=candidates
        )
        return prompts.paper_messages(candidate_steps, budget, [prompts._question(question)], task)
    tail = DED_TEMPLATE.format(
        truth=delimit("answer", truth) if truth is not None else "not given",
        edges=prompts.format_edges(edges),
        candidates=candidates,
    )
    if truth is None:
        tail = tail.replace("The correct answer is not given.", prompts._NO_TRUTH)
    return prompts._messages(question, candidate_steps, budget, tail)


def decide(
    trace: Trace,
    candidates: Sequence[DedCandidate],
    graph: nx.DiGraph,
    deviations: Sequence[tuple[int, str]],
    call: LLMCall,
    settings: DcfaSettings,
) -> Decision:
    """DED(Ŷ, T^c, G): the decisive error among the candidate steps.

    Parameters
    ----------
    trace : Trace
    candidates : sequence of DedCandidate, {hypothesis} ∪ accepted pivots (0-based)
    graph : networkx.DiGraph, the dependency graph (shown under ``ded="equations"`` and ``small``)
    deviations : MDI's (step, reason) pairs (their reasons are shown under ``ded="code"``)
    call : LLMCall, the run's call context; stage ``dcfa.lce``
    settings : DcfaSettings (``ded``, ``prompts``, ``ded_max_tokens``, ``max_reason_chars``)

    Returns
    -------
    Decision; under ``ded="equations"`` a single candidate makes no call (``skipped=True``).

    Raises
    ------
    ValueError
        If ``candidates`` is empty.
    StructuredOutputError
        If the reply stays invalid after every repair (a step outside the trace, or outside
        the candidates under ``equations``).

    References
    ----------
    DCFA section 4.2.2, eq. 14; appendix K, Algorithm 2 (last line); appendix L, Figure 13.
    """
    steps = sorted({int(c.step) for c in candidates})
    if not steps:
        raise ValueError("DED needs at least one candidate step")
    code = settings.ded == "code" and settings.prompts == "paper"
    if not code and len(steps) == 1:
        return Decision(steps[0], "", True)
    truth = trace.ground_truth if settings.with_ground_truth else None
    reasons = ""
    if code:
        reasons = format_candidate_reasons(candidates, {s.index: s.agent for s in trace.steps}, dict(deviations))
    msgs = ded_messages(
        trace.question,
        truth,
        [trace.steps[c] for c in steps],
        graph_edges(graph),
        budget=lce_budget(call, settings, len(trace)),
        style=settings.prompts,
        variant=settings.ded,
        reasons=reasons,
        n_steps=len(trace),
    )
    model = decision_model(tuple(steps), settings.max_reason_chars, len(trace) if code else None)
    if settings.quote_evidence:  # one more reply field (off in every preset): agentcausal.attribution.evidence
        msgs, model = ask_evidence(msgs), with_evidence(model)
    reply = call.structured(STAGE, msgs, model, max_tokens=lce_tokens(call, settings)[1])
    step = int(reply.step)
    return Decision(
        step,
        reply.reason.strip()[: settings.max_reason_chars],
        False,
        step not in steps,
        getattr(reply, "evidence", None),
    )
