"""A debate of the Meta-Debate Module (MDM, :mod:`agentcausal.discovery.mac.mdm`) as data: the validated
proposals of each round (an algorithm with its parameters, or a graph), the Judge's :class:`Verdict`, the
:class:`Debate` that records them all, and :class:`MDMResult`, the winning graph validated to a DAG.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.3, alg. 1.
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.statistical.algorithms import AlgorithmChoice

__all__ = [
    "ProposedAlgorithm",
    "ProposedGraph",
    "Proposal",
    "Verdict",
    "DebateRound",
    "Debate",
    "MDMResult",
    "choice_label",
]


def choice_label(choice: AlgorithmChoice) -> str:
    """``algorithm(param=value, ...)``: a pool algorithm with its parameters, as reports and prompts show it."""
    params = ", ".join(f"{k}={v}" for k, v in choice.model_dump().items() if k != "algorithm")
    return f"{choice.algorithm}({params})"


_F = ConfigDict(frozen=True)


class ProposedAlgorithm(BaseModel):
    """An algorithm proposal after validation: the parameters that will run, and what was adjusted."""

    model_config = _F
    kind: Literal["algorithm"] = "algorithm"
    choice: AlgorithmChoice
    reason: str = ""
    notes: tuple[str, ...] = ()

    def label(self) -> str:
        return choice_label(self.choice)


class ProposedGraph(BaseModel):
    """A graph proposal: ``(cause, effect)`` pairs over the variables, in the proposer's order, with the
    proposer's reason for each (``reasons[i]`` for ``edges[i]``; empty without reasons) and, under the
    ``paper`` prompts, its argument (``argument``: the procedure's steps)."""

    model_config = _F
    kind: Literal["graph"] = "graph"
    edges: tuple[tuple[str, str], ...]
    reasons: tuple[str, ...] = ()
    argument: str = ""

    def label(self) -> str:
        """The argument (if any), then one line per edge, ``X -> Y: reason`` (``; ``-joined without reasons)."""
        if not any(self.reasons):
            text = "; ".join(f"{a} -> {b}" for a, b in self.edges) or "(no edges)"
        else:
            text = (
                "\n".join(f"{a} -> {b}: {r}" if r else f"{a} -> {b}" for (a, b), r in zip(self.edges, self.reasons))
                or "(no edges)"
            )
        return f"Reasoning: {self.argument}\nEdges:\n{text}" if self.argument else text


Proposal = Union[ProposedAlgorithm, ProposedGraph]


class Verdict(BaseModel):
    """The Judge's decision: winner, per-criterion votes (graph mode) and reason."""

    model_config = _F
    winner: Literal["affirmative", "negative"]
    votes: dict[str, str] = Field(default_factory=dict)
    reason: str = ""


class DebateRound(BaseModel):
    """One Affirmative-Negative exchange (``negative`` is None in the single-agent ablation)."""

    model_config = _F
    affirmative: Proposal = Field(discriminator="kind")
    negative: Proposal | None = Field(None, discriminator="kind")


class Debate(BaseModel):
    """A whole MDM run, as data (``Debate(affirmative, negative, verdict)`` plus the history)."""

    model_config = _F
    mode: Literal["algorithm", "graph"]
    rounds: tuple[DebateRound, ...]
    verdict: Verdict
    notes: tuple[str, ...] = ()

    @property
    def affirmative(self) -> Proposal:
        return self.rounds[-1].affirmative

    @property
    def negative(self) -> Proposal | None:
        return self.rounds[-1].negative

    @property
    def winning(self) -> Proposal:
        """The winning proposal."""
        if self.verdict.winner == "negative" and self.negative is not None:
            return self.negative
        return self.affirmative


class MDMResult(BaseModel):
    """The graph debate, the validated DAG G_D, and the edges dropped to get it."""

    model_config = _F
    debate: Debate
    graph: CausalGraph
    dropped: tuple[str, ...] = ()
