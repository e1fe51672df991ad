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

from agentcausal.discovery.datasets import Dataset
from agentcausal.discovery.graph import CausalGraph
from agentcausal.discovery.mac.dcm import DCMResult, debate_coding_module
from agentcausal.discovery.mac.fusion import meta_fusion
from agentcausal.discovery.mac.mdm import MDMResult, refine_graph
from agentcausal.discovery.mac.settings import MACSettings

__all__ = ["MACResult", "run_mac"]


class MACResult(BaseModel):
    """The final graph and every intermediate: DCM, the fusion sentences, MDM."""

    model_config = ConfigDict(frozen=True)
    graph: CausalGraph
    dcm: DCMResult | None = None
    fusion: tuple[str, ...] = ()
    mdm: MDMResult | None = None


def run_mac(gw, ds: Dataset, settings: MACSettings = MACSettings(), *, seed: int = 0,
            item: str | None = None) -> MACResult:
    """Run MAC (or an ablation, per ``settings.stages`` and ``settings.single_agent``) on one dataset.

    Parameters
    ----------
    gw : Gateway (stages ``mac.debate``, ``mac.coder``)
    ds : Dataset
    settings : MACSettings
    seed : int, draws the subset S of the algorithm debate
    item : str, optional; usage-accounting id

    Returns
    -------
    MACResult; ``graph`` is a DAG except for ``dcm_only`` (G_C as the algorithm returned it).

    Raises
    ------
    StructuredOutputError, AlgorithmError, UnknownStageError, EndpointUnreachableError, LLMCallError.

    Examples
    --------
    >>> from agentcausal.discovery.datasets import load_dataset      # doctest: +SKIP
    >>> res = run_mac(gw, load_dataset("earthquake"), MACSettings())  # doctest: +SKIP
    >>> res.graph.is_dag()                                           # doctest: +SKIP
    True
    """
    if settings.stages == "mdm_only":
        mdm = refine_graph(gw, ds, (), settings, item=item)
        return MACResult(graph=mdm.graph, mdm=mdm)
    dcm = debate_coding_module(gw, ds, settings, seed=seed, item=item)
    if settings.stages == "dcm_only":
        return MACResult(graph=dcm.execution.graph, dcm=dcm)
    sentences = tuple(meta_fusion(dcm.execution.graph, max_orderings=settings.max_orderings))
    mdm = refine_graph(gw, ds, sentences, settings, item=item)
    return MACResult(graph=mdm.graph, dcm=dcm, fusion=sentences, mdm=mdm)
