"""ECHO's consensus voting (no LLM call): the panel's votes to one decisive step and agent, by
confidence-weighted or majority vote, with the tie-break rules and thresholds of :class:`EchoSettings`
(:mod:`agentcausal.attribution.echo_settings`).

References
----------
Banerjee, A., Nair, A., Borogovac, T. "Where Did It All Go Wrong? A
Hierarchical Look into Multi-Agent Error Attribution." arXiv:2510.04886 (2025).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from agentcausal.attribution.baseline_prompts import (
    agent_names,
)
from agentcausal.traces.model import Trace

__all__ = ["Vote", "Consensus", "consensus"]


class Vote(NamedTuple):
    """One analyst's vote (step None = abstains)."""

    analyst: str
    step: int | None
    agent: str | None
    confidence: float


class Consensus(NamedTuple):
    """The panel's verdict.

    Attributes
    ----------
    step, agent : the winner (None when undetermined)
    scores : dict step -> total vote weight
    support : float, the winner's share of the total weight (0 when no vote counted)
    tied : tuple of steps tied at the top score (one when no tie)
    counted : int, votes that counted
    """

    step: int | None
    agent: str | None
    scores: dict[int, float]
    support: float
    tied: tuple[int, ...]
    counted: int


def consensus(
    votes: Sequence[Vote],
    trace: Trace,
    *,
    rule: str = "confidence_weighted",
    tie_break: str = "earliest",
    scan_order: Sequence[int] = (),
    min_confidence: float = 0.0,
    min_support: float = 0.0,
) -> Consensus:
    """Consensus of the panel's votes (the rule of :class:`EchoSettings`; see the module docstring).

    Parameters
    ----------
    votes : sequence of Vote
    trace : Trace, for the speakers and the order of first appearance of agents
    rule : ``"confidence_weighted"`` or ``"majority"``
    tie_break : ``"earliest"``, ``"highest_confidence"`` or ``"scan_rank"``
    scan_order : the scan's candidate steps, most likely first (for ``scan_rank``)
    min_confidence, min_support : float, thresholds

    Returns
    -------
    Consensus

    Raises
    ------
    ValueError
        For an unknown rule or tie-break.

    Examples
    --------
    >>> from agentcausal.traces.model import Step, Trace
    >>> t = Trace(id="x", question="q", ground_truth="a",
    ...           steps=[Step(index=i, agent=a, content="") for i, a in enumerate("ABAB")])
    >>> v = [Vote("x", 1, "B", 0.9), Vote("y", 2, "A", 0.5), Vote("z", 2, "A", 0.3)]
    >>> consensus(v, t).step, consensus(v, t, rule="majority").step
    (1, 2)
    """
    if rule not in ("confidence_weighted", "majority"):
        raise ValueError(f"unknown consensus rule {rule!r}")
    if tie_break not in ("earliest", "highest_confidence", "scan_rank"):
        raise ValueError(f"unknown tie-break {tie_break!r}")
    counted = [v for v in votes if v.step is not None and 0 <= v.step < len(trace) and v.confidence >= min_confidence]
    if not counted:
        return Consensus(None, None, {}, 0.0, (), 0)

    def weight(v: Vote) -> float:
        return max(0.0, min(1.0, v.confidence)) if rule == "confidence_weighted" else 1.0

    scores: dict[int, float] = {}
    for v in counted:
        if v.step is not None:  # every counted vote has a step
            scores[v.step] = scores.get(v.step, 0.0) + weight(v)
    top = max(scores.values())
    tied = tuple(sorted(s for s, w in scores.items() if abs(w - top) <= 1e-9))
    if tie_break == "highest_confidence":
        best = {s: max(v.confidence for v in counted if v.step == s) for s in tied}
        step = min(tied, key=lambda s: (-best[s], s))
    elif tie_break == "scan_rank":
        rank = {s: i for i, s in enumerate(scan_order)}
        step = min(tied, key=lambda s: (rank.get(s, len(rank)), s))
    else:
        step = tied[0]
    total = sum(scores.values())
    support = scores[step] / total if total > 0 else 1.0 / len(scores)
    if support < min_support:
        return Consensus(None, None, scores, support, tied, len(counted))
    # the agent: weighted vote among the winning step's voters; ties -> the speaker, else the earliest
    agent_w: dict[str, float] = {}
    for v in counted:
        if v.step == step and v.agent:
            agent_w[v.agent] = agent_w.get(v.agent, 0.0) + weight(v)
    speaker = trace.steps[step].agent
    if not agent_w:
        agent = speaker
    else:
        amax = max(agent_w.values())
        tied_agents = [a for a, w in agent_w.items() if abs(w - amax) <= 1e-9]
        order = {a: i for i, a in enumerate(agent_names(trace))}
        agent = speaker if speaker in tied_agents else min(tied_agents, key=lambda a: order.get(a, len(order)))
    return Consensus(step, agent, scores, support, tied, len(counted))
