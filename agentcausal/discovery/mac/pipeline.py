"""MAC end to end (alg. 3) and its ablations: DCM -> Meta Fusion -> MDM.

==============  ==============================================================
variant         what runs
==============  ==============================================================
full            DCM (algorithm debate + executor), Meta Fusion, MDM (graph debate)
single_agent    the same with the Affirmative alone in both debates (§4.4)
dcm_only        DCM; the data graph G_C is the answer (may be a CPDAG or PAG)
mdm_only        MDM on the metadata alone (no data graph)
==============  ==============================================================

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.5, alg. 3, §4.3-§4.4.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.mac.dcm import DCMResult, debate_coding_module
from agentcausal.discovery.mac.debate_model import MDMResult
from agentcausal.discovery.mac.fusion import meta_fusion
from agentcausal.discovery.mac.mdm import refine_graph
from agentcausal.discovery.mac.settings import MACSettings
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import LLMCall

__all__ = ["MACResult", "run_mac"]


class MACResult(BaseModel):
    """The final graph and every intermediate: DCM, the fusion sentences, MDM.

    ``degraded`` says why the graph is not the full pipeline's (MDM failed after its repairs, so the
    answer is the DCM graph G_C); the discovery record then has ``status="degraded"``.
    """

    model_config = ConfigDict(frozen=True)
    graph: CausalGraph
    dcm: DCMResult | None = None
    fusion: tuple[str, ...] = ()
    mdm: MDMResult | None = None
    degraded: str | None = None


def run_mac(call: LLMCall, ds: Dataset, settings: MACSettings = MACSettings(), *, seed: int = 0) -> MACResult:
    """Run MAC (or an ablation, per ``settings.stages`` and ``settings.single_agent``) on one dataset.

    Parameters
    ----------
    call : LLMCall, the run's call context (stages ``mac.debate``, ``mac.coder``): ``discover`` sends the
        sample index of (data seed, repeat) and ``sampling_temperature`` when a run asks for several samples
    ds : Dataset
    settings : MACSettings
    seed : int, draws the subset S of the algorithm debate

    Returns
    -------
    MACResult; ``graph`` is a DAG except for ``dcm_only`` (G_C as the algorithm returned it) and a
    degraded full run (MDM failed after its repairs: G_C, with ``degraded`` saying why).

    Raises
    ------
    StructuredOutputError (MDM-only, when the Affirmative's reply stays invalid), AlgorithmError,
    UnknownStageError, EndpointUnreachableError, LLMCallError.

    Examples
    --------
    >>> from agentcausal.discovery.data.datasets import load_dataset      # doctest: +SKIP
    >>> res = run_mac(LLMCall(gw), load_dataset("earthquake"), MACSettings())  # doctest: +SKIP
    >>> res.graph.is_dag()                                           # doctest: +SKIP
    True
    """
    if settings.stages == "mdm_only":
        mdm = refine_graph(call, ds, (), settings)
        return MACResult(graph=mdm.graph, mdm=mdm)
    dcm = debate_coding_module(call, ds, settings, seed=seed)
    if settings.stages == "dcm_only":
        return MACResult(graph=dcm.execution.graph, dcm=dcm)
    sentences = tuple(meta_fusion(dcm.execution.graph, max_orderings=settings.max_orderings))
    try:
        mdm = refine_graph(call, ds, sentences, settings)
    except StructuredOutputError as exc:
        return MACResult(
            graph=dcm.execution.graph,
            dcm=dcm,
            fusion=sentences,
            degraded=f"MDM failed after repairs ({str(exc)[:200]}); the answer is the DCM graph",
        )
    return MACResult(graph=mdm.graph, dcm=dcm, fusion=sentences, mdm=mdm)
