"""The Meta-Debate Module (MDM, MAC alg. 1): Affirmative, Negative and Judge, in algorithm or graph mode.

One operator, two output types. Algorithm mode (DCM step (i), alg. 2) debates
over (V, I, S) and returns one pool algorithm with its parameters; graph mode
(alg. 3) debates over (V, I ∪ I_c) and :func:`refine_graph` validates the
winner into the final DAG G_D.

A debate is data (:mod:`agentcausal.discovery.mac.debate_model`): ``Debate`` records every round's
proposals and the ``Verdict``, so a report can show why an algorithm or a graph won.

Control flow (``rounds = R``, paper §4.3):

1. the Affirmative proposes;
2. the Negative proposes a plausible alternative to it;
3. for each further round, the Affirmative revises given the Negative's last
   alternative, and the Negative answers the revision;
4. the Judge compares the last two proposals (skipped when they are equal:
   the Affirmative wins with reason "no disagreement").

Single-agent ablation (§4.4): step 1 only; the Affirmative's proposal wins.

Judge rule. Algorithm mode: the Judge names the winner against stated
criteria (data type, assumptions, sample and graph size). Graph mode: every
edge carries a reason (``MACSettings.edge_reason_chars``; under ``paper``
every proposal also carries its argument), which the Negative answers and the
Judge reads beside the disagreements computed here (pairs linked in one graph
only, colliders in one graph only, reversed edges). ``MACSettings.judge_rule``
says how the Judge decides: ``criteria`` (default) = a vote A, B or tie on each
of skeleton, colliders and directions, one point per vote, more points wins;
``overall`` = one vote. A tie goes to ``MACSettings.tie_break``: the
Affirmative (default), the Negative, or the graph with fewer edges.

Prompts and reply models come from the prompt set ``MACSettings.prompts``
(:mod:`agentcausal.discovery.mac.prompts`); completion caps from
:func:`~agentcausal.discovery.mac.calls.completion_cap` (the profile's budget
under ``paper``).

A Negative or Judge reply that stays invalid after the gateway's repairs does
not stop the debate: it is recorded in ``Debate.notes`` and the Affirmative
wins. An invalid Affirmative reply raises.

Validation to a DAG (:func:`refine_graph`, :func:`agentcausal.discovery.graphs.graph.repair_to_dag`):
unknown variables and self-loops are dropped, and each cycle is broken by
dropping the last-listed edge that closes it (edges in the proposer's order);
dropped edges are recorded with their reasons.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.3, §3.5, alg. 1,
alg. 3, app. A.1.
Du et al. 2023. "Improving Factuality and Reasoning in Language Models through Multiagent Debate."
arXiv:2305.14325.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.data.datasets import metadata_text
from agentcausal.discovery.graphs.graph import repair_to_dag
from agentcausal.discovery.mac import prompts as P
from agentcausal.discovery.mac.calls import completion_cap, graph_reply_tokens
from agentcausal.discovery.mac.debate_model import (
    Debate,
    DebateRound,
    MDMResult,
    Proposal,
    ProposedAlgorithm,
    ProposedGraph,
    Verdict,
)
from agentcausal.discovery.mac.prompts import AlgorithmContext, GraphContext
from agentcausal.discovery.mac.settings import DEBATE_STAGE, MACSettings
from agentcausal.discovery.statistical.algorithms import default_choice
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import LLMCall

__all__ = [
    "debate_algorithm",
    "debate_graph",
    "refine_graph",
    "graph_disagreements",
    "graph_budget",
    "to_choice",
    "format_rows",
]


def format_rows(rows: np.ndarray, data_type: str) -> str:
    """Subset rows as comma-separated lines: integer codes for discrete data, 4 significant digits else.

    Parameters
    ----------
    rows : ndarray of shape (k, d)
    data_type : "discrete" or "continuous"
    """
    fmt = (lambda x: str(int(x))) if data_type == "discrete" else (lambda x: f"{x:.4g}")
    return "\n".join(",".join(fmt(x) for x in r) for r in np.asarray(rows))


def to_choice(reply: Any, data_type: str, d: int) -> ProposedAlgorithm:
    """Validate an algorithm reply into the parameters that will run.

    Starts from the data-type-aware defaults (:func:`default_choice`) and takes
    the reply's test and alpha only where they suit the data type (chi-square
    or G-square for discrete data, Fisher-z for continuous; alpha in (0, 0.5]);
    each rejected value is noted.

    Parameters
    ----------
    reply : an ``AlgorithmProposalReply`` of either prompt set (algorithm, indep_test, alpha, reason)
    data_type : "discrete" or "continuous"
    d : int, number of variables

    Returns
    -------
    ProposedAlgorithm
    """
    base = default_choice(reply.algorithm, data_type, d)
    notes: list[str] = []
    update: dict[str, object] = {}
    if reply.algorithm in ("pc", "fci"):
        ok_tests = ("chisq", "gsq") if data_type == "discrete" else ("fisherz",)
        if reply.indep_test is not None:
            if reply.indep_test in ok_tests:
                update["indep_test"] = reply.indep_test
            else:
                notes.append(f"indep_test {reply.indep_test} unsuited to {data_type} data; used {base.indep_test}")  # type: ignore[union-attr]  # pc/fci: base has one
        if reply.alpha is not None:
            if 0 < reply.alpha <= 0.5:
                update["alpha"] = reply.alpha
            else:
                notes.append(f"alpha {reply.alpha} out of (0, 0.5]; used {base.alpha}")  # type: ignore[union-attr]  # pc/fci: base has one
    if reply.algorithm == "direct_lingam" and data_type == "discrete":
        notes.append("direct_lingam assumes continuous non-Gaussian data; run on integer codes")
    return ProposedAlgorithm(choice=base.model_copy(update=update), reason=reply.reason, notes=tuple(notes))


def _call(call: LLMCall, messages: list[dict[str, str]], model: type[BaseModel], max_tokens: int) -> Any:
    return call.structured(DEBATE_STAGE, messages, model, max_tokens=max_tokens)


def _run(
    propose: Callable[[Proposal | None, Proposal | None], Proposal],
    counter: Callable[[Proposal], Proposal],
    judge: Callable[[Proposal, Proposal], Verdict],
    settings: MACSettings,
    mode: Literal["algorithm", "graph"],
) -> Debate:
    notes: list[str] = []
    aff = propose(None, None)
    if settings.single_agent:
        return Debate(
            mode=mode,
            rounds=(DebateRound(affirmative=aff),),
            verdict=Verdict(winner="affirmative", reason="single agent (no Negative or Judge)"),
        )
    rounds: list[DebateRound] = []
    neg: Proposal | None = None
    for r in range(settings.rounds):
        if r > 0:
            aff = propose(aff, neg)
        try:
            neg = counter(aff)
        except StructuredOutputError as exc:
            notes.append(f"round {r}: Negative reply invalid ({exc.errors[:120]}); Affirmative wins")
            rounds.append(DebateRound(affirmative=aff))
            return Debate(
                mode=mode,
                rounds=tuple(rounds),
                notes=tuple(notes),
                verdict=Verdict(winner="affirmative", reason="Negative gave no valid proposal"),
            )
        rounds.append(DebateRound(affirmative=aff, negative=neg))
    assert neg is not None
    if _same(aff, neg):
        verdict = Verdict(winner="affirmative", reason="no disagreement")
    else:
        try:
            verdict = judge(aff, neg)
        except StructuredOutputError as exc:
            notes.append(f"Judge reply invalid ({exc.errors[:120]}); Affirmative wins")
            verdict = Verdict(winner="affirmative", reason="Judge gave no valid verdict")
    return Debate(mode=mode, rounds=tuple(rounds), verdict=verdict, notes=tuple(notes))


def _same(a: Proposal, b: Proposal) -> bool:
    if isinstance(a, ProposedGraph) and isinstance(b, ProposedGraph):
        return set(a.edges) == set(b.edges)
    if isinstance(a, ProposedAlgorithm) and isinstance(b, ProposedAlgorithm):
        return a.choice == b.choice
    return False


def debate_algorithm(
    call: LLMCall,
    ctx: AlgorithmContext,
    settings: MACSettings = MACSettings(),
) -> Debate:
    """MDM in algorithm mode over (V, I, S): choose one algorithm and its parameters from the pool.

    Parameters
    ----------
    call : LLMCall, the run's call context (usage item, sample index, temperature); the ``mac.debate`` stage is used
    ctx : AlgorithmContext
    settings : MACSettings (prompts, rounds, single_agent, reason_chars, algorithm/verdict_max_tokens)

    Returns
    -------
    Debate with ``mode="algorithm"``; ``debate.winning.choice`` is the algorithm to run.

    Raises
    ------
    StructuredOutputError if the Affirmative's reply stays invalid.
    UnknownStageError, EndpointUnreachableError, LLMCallError from the gateway.

    References
    ----------
    Le et al., arXiv:2407.15073, alg. 1 (algorithm mode) and alg. 2 step (i).
    """
    d, style = len(ctx.variables), settings.prompts
    proposal = P.algorithm_proposal_model(style, settings.reason_chars)
    verdict_model = P.algorithm_verdict_model(style, settings.reason_chars)
    scale = settings.max_tokens_scale
    cap = completion_cap(call, DEBATE_STAGE, settings.algorithm_max_tokens, scale=scale)
    judge_cap = completion_cap(call, DEBATE_STAGE, settings.verdict_max_tokens, scale=scale)

    def propose(own: Proposal | None, other: Proposal | None) -> Proposal:
        first = own is None or other is None
        msgs = P.algorithm_messages(style, "affirmative" if first else "revise", ctx, own=own, other=other)
        return to_choice(_call(call, msgs, proposal, cap), ctx.data_type, d)

    def counter(aff: Proposal) -> Proposal:
        msgs = P.algorithm_messages(style, "negative", ctx, own=aff)
        return to_choice(_call(call, msgs, proposal, cap), ctx.data_type, d)

    def judge(a: Proposal, b: Proposal) -> Verdict:
        msgs = P.algorithm_messages(style, "judge", ctx, own=a, other=b)
        reply = _call(call, msgs, verdict_model, judge_cap)
        return Verdict(winner="affirmative" if reply.winner == "A" else "negative", reason=reply.reason)

    return _run(propose, counter, judge, settings, "algorithm")


def _colliders(edges: Sequence[tuple[str, str]]) -> set[tuple[str, str, str]]:
    parents: dict[str, set[str]] = {}
    for a, b in edges:
        parents.setdefault(b, set()).add(a)
    linked = {frozenset(e) for e in edges}
    out = set()
    for child, ps in parents.items():
        for x, y in itertools.combinations(sorted(ps), 2):
            if frozenset((x, y)) not in linked:
                out.add((x, child, y))
    return out


def graph_disagreements(a: Sequence[tuple[str, str]], b: Sequence[tuple[str, str]]) -> list[str]:
    """Where two proposed graphs differ: skeleton, colliders, directions (one line each, empty lines omitted).

    Parameters
    ----------
    a, b : sequences of (cause, effect) pairs

    Returns
    -------
    list of str, e.g. ``["linked only in A: X -> Y", "reversed: A has X -> Y, B has Y -> X"]``.

    Examples
    --------
    >>> graph_disagreements([("X", "Y"), ("Z", "Y")], [("Y", "X")])
    ['linked only in A: Z -> Y', 'colliders only in A: X -> Y <- Z', 'reversed: A has X -> Y, B has Y -> X']
    """
    sa, sb = {frozenset(e) for e in a}, {frozenset(e) for e in b}
    only_a = [f"{x} -> {y}" for x, y in a if frozenset((x, y)) not in sb]
    only_b = [f"{x} -> {y}" for x, y in b if frozenset((x, y)) not in sa]
    ca, cb = _colliders(a), _colliders(b)
    rev = [f"A has {x} -> {y}, B has {y} -> {x}" for x, y in a if (y, x) in set(b) and (x, y) not in set(b)]
    lines = []
    if only_a:
        lines.append("linked only in A: " + "; ".join(only_a))
    if only_b:
        lines.append("linked only in B: " + "; ".join(only_b))
    if ca - cb:
        lines.append("colliders only in A: " + "; ".join(f"{x} -> {c} <- {y}" for x, c, y in sorted(ca - cb)))
    if cb - ca:
        lines.append("colliders only in B: " + "; ".join(f"{x} -> {c} <- {y}" for x, c, y in sorted(cb - ca)))
    if rev:
        lines.append("reversed: " + "; ".join(rev))
    return lines


def _tie_break(settings: MACSettings, a: ProposedGraph, b: ProposedGraph) -> Literal["affirmative", "negative"]:
    if settings.tie_break == "negative":
        return "negative"
    if settings.tie_break == "fewer_edges" and len(b.edges) < len(a.edges):
        return "negative"
    return "affirmative"


def graph_budget(variables: Sequence[str], settings: MACSettings) -> int | None:
    """The fixed completion cap of a graph proposal under ``settings``, or None (the profile's budget).

    ``graph_max_tokens`` when set; else derived from the edge bound and the per-edge reason cap
    (:func:`~agentcausal.discovery.mac.calls.graph_reply_tokens`) when both are finite (``small``);
    else None (``paper``: no cap of MAC's own).
    """
    if settings.graph_max_tokens is not None:
        return settings.graph_max_tokens
    if settings.edges_per_variable is None or settings.edge_reason_chars is None:
        return None
    return graph_reply_tokens(
        variables,
        max_edges=P.max_graph_edges(len(variables), settings.edges_per_variable),
        reason_chars=settings.edge_reason_chars,
    )


def debate_graph(
    call: LLMCall,
    ctx: GraphContext,
    settings: MACSettings = MACSettings(),
) -> Debate:
    """MDM in graph mode over (V, I ∪ I_c): propose, counter-propose and judge a causal graph.

    Parameters
    ----------
    call : LLMCall, the run's call context (usage item, sample index, temperature); the ``mac.debate`` stage is used
    ctx : GraphContext (evidence = Meta Fusion sentences, empty for MDM-only)
    settings : MACSettings (prompts, rounds, single_agent, edge_reason_chars, edges_per_variable, judge_rule,
        tie_break, graph/verdict_max_tokens)

    Returns
    -------
    Debate with ``mode="graph"``; ``debate.winning.edges`` is the graph, not yet
    validated (see :func:`refine_graph`).

    Raises
    ------
    StructuredOutputError if the Affirmative's reply stays invalid.
    UnknownStageError, EndpointUnreachableError, LLMCallError from the gateway.

    References
    ----------
    Le et al., arXiv:2407.15073, alg. 1 (graph mode), alg. 3, app. A.1.
    """
    style, rc = settings.prompts, settings.edge_reason_chars
    d = len(ctx.variables)
    model = P.graph_reply_model(
        tuple(ctx.variables), rc, style=style, max_edges=P.max_graph_edges(d, settings.edges_per_variable)
    )
    verdict_model = P.graph_verdict_model(style, settings.reason_chars, settings.judge_rule)
    scale = settings.max_tokens_scale
    cap = completion_cap(call, DEBATE_STAGE, graph_budget(ctx.variables, settings), scale=scale)
    judge_cap = completion_cap(call, DEBATE_STAGE, settings.verdict_max_tokens, scale=scale)
    kw: dict[str, Any] = dict(with_reason=rc != 0, judge_rule=settings.judge_rule)

    def parse(reply: BaseModel) -> ProposedGraph:
        edges = reply.edges  # type: ignore[attr-defined]  # graph_model builds the class: edges is its field
        return ProposedGraph(
            edges=tuple((e.cause, e.effect) for e in edges),
            reasons=tuple(getattr(e, "reason", "") for e in edges) if rc != 0 else (),
            argument=str(getattr(reply, "reasoning", "") or ""),
        )

    def propose(own: Proposal | None, other: Proposal | None) -> Proposal:
        first = own is None or other is None
        msgs = P.graph_messages(style, "affirmative" if first else "revise", ctx, own=own, other=other, **kw)
        return parse(_call(call, msgs, model, cap))

    def counter(aff: Proposal) -> Proposal:
        return parse(_call(call, P.graph_messages(style, "negative", ctx, own=aff, **kw), model, cap))

    def judge(a: Proposal, b: Proposal) -> Verdict:
        assert isinstance(a, ProposedGraph) and isinstance(b, ProposedGraph)
        dis = "\n".join(graph_disagreements(a.edges, b.edges)) or "(none)"
        msgs = P.graph_messages(style, "judge", ctx, own=a, other=b, disagreements=dis, **kw)
        reply = _call(call, msgs, verdict_model, judge_cap)
        if settings.judge_rule == "overall":
            votes = {"overall": reply.winner}
        else:
            votes = {"skeleton": reply.skeleton, "colliders": reply.colliders, "directions": reply.directions}
        pa = sum(v == "A" for v in votes.values())
        pb = sum(v == "B" for v in votes.values())
        if pa != pb:
            return Verdict(
                winner="negative" if pb > pa else "affirmative",
                votes=votes,
                reason=f"{reply.reason} (points A {pa}, B {pb})",
            )
        return Verdict(
            winner=_tie_break(settings, a, b),
            votes=votes,
            reason=f"{reply.reason} (points A {pa}, B {pb}; tie to {settings.tie_break})",
        )

    return _run(propose, counter, judge, settings, "graph")


def refine_graph(
    call: LLMCall,
    ds: Dataset,
    evidence: Sequence[str] = (),
    settings: MACSettings = MACSettings(),
) -> MDMResult:
    """Stage 2 of MAC (alg. 3): MDM in graph mode over (V, I ∪ I_c), then validation to a DAG.

    Parameters
    ----------
    call : LLMCall, the run's call context (stage ``mac.debate``)
    ds : Dataset (variables and metadata; the data itself is not shown)
    evidence : sentences of Meta Fusion (I_c); empty for the MDM-only ablation
    settings : MACSettings

    Returns
    -------
    MDMResult; ``graph`` is a DAG over ``ds.variables``.

    Raises
    ------
    StructuredOutputError if the Affirmative's reply stays invalid.
    UnknownStageError, EndpointUnreachableError, LLMCallError from the gateway.
    """
    ctx = GraphContext(variables=ds.variables, metadata=metadata_text(ds), evidence=tuple(evidence))
    debate = debate_graph(call, ctx, settings)
    win = debate.winning
    assert isinstance(win, ProposedGraph)
    repaired = repair_to_dag(ds.variables, win.edges)
    return MDMResult(debate=debate, graph=repaired.graph, dropped=repaired.dropped)
