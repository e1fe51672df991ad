"""The Debate-Coding Module (DCM, MAC alg. 2): choose an algorithm by debate, then run it on the full data.

Step (i): MDM in algorithm mode over (V, I, S), S a few rows sampled with the
seed (``subset_size`` rows). Step (ii): the executor (typed or coding) runs the
winning algorithm on the full O and returns the data graph G_C.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.4, alg. 2.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.data.datasets import metadata_text, sample_rows
from agentcausal.discovery.mac.debate_model import Debate, DebateRound, ProposedAlgorithm, Verdict
from agentcausal.discovery.mac.executor import Execution, execute
from agentcausal.discovery.mac.mdm import debate_algorithm, format_rows
from agentcausal.discovery.mac.prompts import AlgorithmContext
from agentcausal.discovery.mac.settings import MACSettings
from agentcausal.discovery.statistical.algorithms import default_choice
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import LLMCall

__all__ = ["DCMResult", "algorithm_context", "debate_coding_module"]


class DCMResult(BaseModel):
    """The algorithm debate and the execution that produced G_C."""

    model_config = ConfigDict(frozen=True)
    debate: Debate
    execution: Execution


def algorithm_context(ds: Dataset, settings: MACSettings, seed: int) -> AlgorithmContext:
    """(V, I, S) for algorithm mode: S is ``settings.subset_size`` rows drawn with ``seed``."""
    rows = sample_rows(ds, settings.subset_size, seed) if settings.subset_size else ds.data[:0]
    return AlgorithmContext(
        variables=ds.variables,
        metadata=metadata_text(ds),
        rows=format_rows(rows, ds.data_type),
        n=ds.n,
        data_type=ds.data_type,
    )


def debate_coding_module(
    call: LLMCall, ds: Dataset, settings: MACSettings = MACSettings(), *, seed: int = 0
) -> DCMResult:
    """Run DCM: algorithm debate, then the executor on the full data.

    Parameters
    ----------
    call : LLMCall, the run's call context, the debate's and the coder's (stages ``mac.debate`` and, in coding
        mode, ``mac.coder``)
    ds : Dataset
    settings : MACSettings
    seed : int, draws the subset S

    Returns
    -------
    DCMResult(debate, execution); ``execution.graph`` is G_C. When the algorithm
    debate gives no valid proposal (the Affirmative's reply stays invalid after
    the gateway's repairs), ``settings.fallback_algorithm`` runs with the pool's
    defaults and the debate's ``notes`` say so (the run is degraded).

    Raises
    ------
    AlgorithmError if the chosen algorithm fails or times out.
    UnknownStageError, EndpointUnreachableError, LLMCallError from the gateway.
    """
    try:
        debate = debate_algorithm(call, algorithm_context(ds, settings, seed), settings)
    except StructuredOutputError as exc:
        choice = default_choice(settings.fallback_algorithm, ds.data_type, ds.d)
        note = f"algorithm debate gave no valid proposal ({str(exc)[:120]}); ran {settings.fallback_algorithm}"
        debate = Debate(
            mode="algorithm",
            notes=(note,),
            rounds=(DebateRound(affirmative=ProposedAlgorithm(choice=choice, reason="fallback")),),
            verdict=Verdict(winner="affirmative", reason="fallback algorithm"),
        )
    win = debate.winning
    assert isinstance(win, ProposedAlgorithm)
    execution = execute(call, ds, win.choice, settings)
    return DCMResult(debate=debate, execution=execution)
