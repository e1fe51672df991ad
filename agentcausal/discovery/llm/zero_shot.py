"""The LLM baseline: a zero-shot graph from the metadata alone (one call, no debate, no data).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1
(zero-shot prompting baseline).
"""

from __future__ import annotations

from typing import Any

from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.data.datasets import metadata_text
from agentcausal.discovery.graphs.graph import RepairedGraph, repair_to_dag
from agentcausal.discovery.llm.baseline_prompts import graph_answer
from agentcausal.discovery.mac import prompts as P
from agentcausal.discovery.mac.calls import completion_cap
from agentcausal.discovery.mac.settings import BASELINE_STAGE
from agentcausal.llm import LLMCall

__all__ = ["llm_zero_shot"]


def llm_zero_shot(
    call: LLMCall, ds: Dataset, *, max_tokens_scale: float = 1.0, edges_per_variable: float | None = None
) -> RepairedGraph:
    """Ask the model once for the causal graph of ``ds`` from its variable descriptions.

    Parameters
    ----------
    call : LLMCall, the run's call context (``discover`` sends the data seed as the sample index, so each seed is
        a fresh answer); stage ``mac.baseline``, routed to ``default`` unless the routing names it
    ds : Dataset
    max_tokens_scale : float, multiplies the completion cap when the edge list has ``small``'s bound
        (from the variables, their names and the reply schema; bounded by the profile's ``max_output_tokens``)
    edges_per_variable : float or None, the edge list's bound as a multiple of d (``MACSettings``'s; ``small``:
        2); None = d(d-1)/2, what a DAG allows, and the profile's completion budget (``paper``)

    Returns
    -------
    RepairedGraph(graph, dropped): a DAG, validated like MAC's output.

    Raises
    ------
    StructuredOutputError, UnknownStageError, EndpointUnreachableError, LLMCallError.
    """
    answer = graph_answer(ds, edges_per_variable)
    msgs = [
        P.system_message(),
        {"role": "user", "content": P.ZERO_SHOT_TEMPLATE.format(metadata=P.delimit("metadata", metadata_text(ds)))},
    ]
    cap = completion_cap(call, BASELINE_STAGE, answer.max_tokens, scale=max_tokens_scale)
    reply: Any = call.structured(BASELINE_STAGE, msgs, answer.model, max_tokens=cap)
    return repair_to_dag(ds.variables, [(e.cause, e.effect) for e in reply.edges])
