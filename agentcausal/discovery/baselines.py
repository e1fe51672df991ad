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
from agentcausal.discovery.mac.calls import budget, graph_reply_tokens, structured
from agentcausal.discovery.mac.settings import BASELINE_STAGE

__all__ = ["llm_zero_shot"]


def llm_zero_shot(gw, ds: Dataset, *, item: str | None = None, max_tokens_scale: float = 1.0,
                  sample: int = 0, temperature: float | None = None) -> RepairedGraph:
    """Ask the model once for the causal graph of ``ds`` from its variable descriptions.

    Parameters
    ----------
    gw : Gateway (stage ``mac.baseline``; routed to ``default`` unless the routing names it)
    ds : Dataset
    item : str, optional
    max_tokens_scale : float, multiplies the completion cap (from the variables, their names and the reply
        schema; bounded by the profile's ``max_output_tokens``)
    sample : int, the LLM sample index (``discover`` passes the data seed, so each seed is a fresh answer)
    temperature : float or None, sampling temperature of every call (None = the profile's)

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
    need = graph_reply_tokens(ds.variables, max_edges=P.max_graph_edges(ds.d), reason_chars=0)
    cap = budget(gw, BASELINE_STAGE, int(need * max_tokens_scale))
    reply = structured(gw, BASELINE_STAGE, msgs, model, item=item, max_tokens=cap, sample=sample,
                       temperature=temperature)
    return repair_to_dag(ds.variables, [(e.cause, e.effect) for e in reply.edges])
