"""The LLM baseline: a zero-shot graph from the metadata alone (one call, no debate, no data).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1
(zero-shot prompting baseline).
"""

from __future__ import annotations

from agentcausal.discovery.datasets import Dataset, metadata_text
from agentcausal.discovery.graph import RepairedGraph, repair_to_dag
from agentcausal.discovery.mac import prompts as P
from agentcausal.discovery.mac.settings import BASELINE_STAGE

__all__ = ["llm_zero_shot"]


def llm_zero_shot(gw, ds: Dataset, *, item: str | None = None, max_tokens_scale: float = 1.0) -> RepairedGraph:
    """Ask the model once for the causal graph of ``ds`` from its variable descriptions.

    Parameters
    ----------
    gw : Gateway (stage ``mac.baseline``; routed to ``default`` unless the routing names it)
    ds : Dataset
    item : str, optional
    max_tokens_scale : float, multiplies the completion cap

    Returns
    -------
    RepairedGraph(graph, dropped): a DAG, validated like MAC's output.

    Raises
    ------
    StructuredOutputError, UnknownStageError, EndpointUnreachableError, LLMCallError.
    """
    model = P.graph_reply_model(tuple(ds.variables))
    msgs = [P.system_message(),
            {"role": "user", "content": P.ZERO_SHOT_TEMPLATE.format(metadata=P.delimit("metadata", metadata_text(ds)))}]
    cap = int((24 + 15 * max(2, 2 * ds.d)) * max_tokens_scale)
    reply = gw.structured(BASELINE_STAGE, msgs, model, item=item, max_tokens=cap)
    return repair_to_dag(ds.variables, [(e.cause, e.effect) for e in reply.edges])
