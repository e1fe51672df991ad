"""Stage 2 of MAC (alg. 3): MDM in graph mode over (V, I ∪ I_c), then validation to a DAG.

The winning proposal is validated by :func:`agentcausal.discovery.graph.repair_to_dag`:
unknown variables and self-loops are dropped, and each cycle is broken by
dropping the last-listed edge that closes it (edges are taken in the
proposer's order). Dropped edges are recorded with their reasons.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.5, alg. 3.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from agentcausal.discovery.datasets import Dataset, metadata_text
from agentcausal.discovery.graph import CausalGraph, repair_to_dag
from agentcausal.discovery.mac.debate import Debate, GraphContext, ProposedGraph, debate_graph
from agentcausal.discovery.mac.settings import MACSettings

__all__ = ["MDMResult", "refine_graph"]


class MDMResult(BaseModel):
    """The graph debate, the validated DAG G_D, and the edges dropped to get it."""

    model_config = ConfigDict(frozen=True)
    debate: Debate
    graph: CausalGraph
    dropped: tuple[str, ...] = ()


def refine_graph(gw, ds: Dataset, evidence: Sequence[str] = (), settings: MACSettings = MACSettings(), *,
                 item: str | None = None, sample: int = 0, temperature: float | None = None) -> MDMResult:
    """MDM in graph mode, then validation to a DAG.

    Parameters
    ----------
    gw : Gateway (stage ``mac.debate``)
    ds : Dataset (variables and metadata; the data itself is not shown)
    evidence : sentences of Meta Fusion (I_c); empty for the MDM-only ablation
    settings : MACSettings
    item : str, optional
    sample : int, the LLM sample index
    temperature : float or None, sampling temperature (None = the profile's)

    Returns
    -------
    MDMResult; ``graph`` is a DAG over ``ds.variables``.

    Raises
    ------
    StructuredOutputError if the Affirmative's reply stays invalid.
    UnknownStageError, EndpointUnreachableError, LLMCallError from the gateway.
    """
    ctx = GraphContext(variables=ds.variables, metadata=metadata_text(ds), evidence=tuple(evidence))
    debate = debate_graph(gw, ctx, settings, item=item, sample=sample, temperature=temperature)
    win = debate.winning
    assert isinstance(win, ProposedGraph)
    repaired = repair_to_dag(ds.variables, win.edges)
    return MDMResult(debate=debate, graph=repaired.graph, dropped=repaired.dropped)
