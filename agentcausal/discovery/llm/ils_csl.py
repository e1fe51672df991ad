"""ILS-CSL: iterative LLM supervision of causal structure learning.

Ban et al. (arXiv:2311.11689) alternate two steps until nothing changes:

1. a score-based structure search learns a DAG under the constraints so far;
2. the LLM checks each *learned* edge ``x -> y`` it has not judged yet, from the
   metadata: ``correct`` (``x`` directly causes ``y``), ``reversed`` (``y``
   directly causes ``x``) or ``absent`` (no direct causal relation); each
   verdict becomes a constraint: correct -> ``x -> y`` required; reversed ->
   ``x -> y`` forbidden and ``y -> x`` required; absent -> both directions
   forbidden.

The loop stops when an iteration adds no constraint: the paper's own stopping rule, which
``paper`` follows (``max_iterations=None``; each iteration judges at least one pair not judged
before, so it ends after at most d(d-1)/2 iterations); ``small`` bounds it (``max_iterations``, shown
in the plan). Supervising only the learned edges, rather than every pair, is what keeps the LLM's
work linear in the graph's size.

**Contradictory verdicts.** Each pair is judged once, so a pair never gets both a required and a
forbidden direction; but verdicts on different pairs can require edges that close a directed cycle
(``A -> B`` and ``B -> C`` correct, then ``C -> A`` correct), which no DAG search can honour (pgmpy:
"required_edges create a cycle"). The paper does not say what to do. Here the *cycle-closing*
requirement is dropped: verdicts are applied in the order they are given (iteration by iteration,
each iteration's edges in sorted order), and a required edge that would close a cycle among the
required edges so far is not added (its verdict stays recorded, its other constraint, the
forbidden direction of a ``reversed``, stays); it is listed in :attr:`ILSCSLResult.dropped`. The
earlier verdicts win, so the search always runs under an acyclic set of requirements.

The search here is pgmpy's hill climbing (one of the paper's backbones) with
``ExpertKnowledge`` carrying the constraints (hard constraints, as the paper's
main variant), scored with BDeu (equivalent sample size 1, parent sets of at most
3, as the authors' code scores them) on discrete data and Gaussian BIC on
continuous data.

The MAC paper (arXiv:2407.15073, §4.1) lists ILS-CSL among its LLM baselines but
cites it as Takayama et al. (2024); ILS-CSL is the name Ban et al. give their method,
which this module implements (docs/baselines.md).

References
----------
Ban et al. 2023. "Causal Structure Learning Supervised by Large Language Model." arXiv:2311.11689.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.llm.baseline_prompts import (
    baseline_messages,
    metadata_block,
    reasoned_answer_model,
    reasoned_answer_tokens,
)
from agentcausal.discovery.mac.calls import completion_cap
from agentcausal.discovery.mac.settings import BASELINE_STAGE
from agentcausal.exceptions import AlgorithmError
from agentcausal.llm import LLMCall

__all__ = ["ILSCSLSettings", "PRESETS", "ILSCSLResult", "ils_csl", "hill_climb", "closes_cycle"]


class ILSCSLSettings(BaseModel):
    """Settings of ILS-CSL.

    Attributes
    ----------
    max_iterations : int or None, bound on learn-supervise rounds; None (``paper``) = the paper's own rule,
        until an iteration adds no constraint (``small``: 2)
    discrete_score : pgmpy score on discrete data ("bdeu", "bic-d" or "k2"); the authors' default
        is BDeu (their code's ``--score bdeu``)
    equivalent_sample_size : float, BDeu's prior strength (equivalent sample size). The paper's text
        names no value; the authors' released code (github.com/tyMadara/ILS-CSL) computes the BDeu local
        scores with pygobnilp at its ``--alpha`` default of 1, which ``paper`` follows (pgmpy's own
        default, 10, would favour denser graphs on the 250-2000-row samples these methods see)
    max_parents : int or None, bound on each node's parents in the search; the authors' scores cover
        parent sets of at most 3 (their ``--palim`` default); None = unbounded
    reason_chars : int or None, ``maxLength`` of the reason the LLM gives before its verdict; None = unbounded,
        and the completion budget is the profile's (``small``: 80)
    sampling_temperature : float or None, temperature of the method's LLM calls in a run that asks for
        more than one LLM sample per (dataset, method) (several seeds, or ``--repeats``), so that
        mean ± std over them measures sampling variation; a single-sample run, and None, use the
        profile's temperature (0 unless the profile sets one: the MAC paper's setting, arXiv:2407.15073
        §4.1, for all its LLM methods). ``paper`` keeps None as the MAC paper does (at temperature 0 a method whose prompt does not
        depend on the data answers the same for every seed, and the report then says "identical
        samples: std not informative"); ``small`` samples at 0.7, the temperature of the published
        generation config of Qwen2.5-Coder-Instruct, the embedded model's family
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_iterations: int | None = Field(None, ge=1, le=50)
    discrete_score: Literal["bdeu", "bic-d", "k2"] = "bdeu"
    equivalent_sample_size: float = Field(1.0, gt=0)
    max_parents: int | None = Field(3, ge=1)
    reason_chars: int | None = Field(None, ge=20)
    sampling_temperature: float | None = Field(None, ge=0, le=2)


#: ``paper`` = the defaults (no iteration bound); ``small``: two rounds and short reasons (sub-2B models on CPU)
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {"max_iterations": 2, "reason_chars": 80, "sampling_temperature": 0.7},
}

EDGE_TEMPLATE = (
    "{metadata}\nA structure-learning algorithm proposes the edge {x} -> {y}.\n"
    "Is it correct ({x} directly causes {y}), reversed ({y} directly causes {x}), or absent (no direct "
    "causal relation)? Give a short reason, then the verdict."
)


class ILSCSLResult(BaseModel):
    """Per iteration the learned graph; the verdicts and constraints; the final graph.

    Attributes
    ----------
    iterations : the learned graph's edges, one tuple per iteration
    verdicts : ``"x -> y"`` -> ``correct`` | ``reversed`` | ``absent``, in the order given
    required, forbidden : the constraints the last search ran under, ``"x -> y"``
    dropped : required edges left out because they would close a directed cycle among the required
        edges before them (the earlier verdicts win), in the order met
    stopped : ``"no_new_constraint"`` (the paper's rule) or ``"max_iterations"``
    graph : the last learned DAG
    """

    model_config = ConfigDict(frozen=True)
    iterations: tuple[tuple[str, ...], ...]
    verdicts: dict[str, str]
    required: tuple[str, ...]
    forbidden: tuple[str, ...]
    graph: CausalGraph
    dropped: tuple[str, ...] = ()
    stopped: Literal["no_new_constraint", "max_iterations"] = "no_new_constraint"


def closes_cycle(required: set[tuple[str, str]], edge: tuple[str, str]) -> bool:
    """Whether adding ``edge`` (x, y) to the ``required`` edges closes a directed cycle (a path y ~> x).

    >>> closes_cycle({("A", "B"), ("B", "C")}, ("C", "A")), closes_cycle({("A", "B")}, ("A", "C"))
    (True, False)
    """
    x, y = edge
    if x == y:
        return True
    out: dict[str, list[str]] = {}
    for a, b in required:
        out.setdefault(a, []).append(b)
    seen, stack = {y}, [y]
    while stack:
        for nxt in out.get(stack.pop(), []):
            if nxt == x:
                return True
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def hill_climb(
    ds: Dataset,
    required: set[tuple[str, str]],
    forbidden: set[tuple[str, str]],
    settings: ILSCSLSettings = ILSCSLSettings(),
) -> CausalGraph:
    """pgmpy hill climbing under hard constraints; a DAG over ``ds.variables``.

    Raises
    ------
    AlgorithmError if pgmpy fails (e.g. contradictory constraints).
    """
    import logging
    import warnings

    import pandas as pd
    from pgmpy.causal_discovery import ExpertKnowledge
    from pgmpy.estimators import BDeu, HillClimbSearch

    logging.getLogger("pgmpy").setLevel(logging.ERROR)
    frame = pd.DataFrame(ds.data, columns=list(ds.variables))
    if ds.data_type == "discrete":
        frame = frame.astype(int)
        score: Any = (
            BDeu(frame, equivalent_sample_size=settings.equivalent_sample_size)
            if settings.discrete_score == "bdeu"
            else settings.discrete_score
        )
    else:
        score = "bic-g"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dag = HillClimbSearch(frame).estimate(
                scoring_method=score,
                show_progress=False,
                max_indegree=settings.max_parents,
                expert_knowledge=ExpertKnowledge(forbidden_edges=sorted(forbidden), required_edges=sorted(required)),
            )
    except Exception as exc:  # pgmpy raises plain exceptions
        raise AlgorithmError("ils_csl", f"hill climbing failed: {type(exc).__name__}: {exc}") from exc
    return CausalGraph.from_edges(ds.variables, [(str(a), str(b)) for a, b in dag.edges()])


def ils_csl(call: LLMCall, ds: Dataset, settings: ILSCSLSettings = ILSCSLSettings()) -> ILSCSLResult:
    """Run ILS-CSL on one dataset.

    Parameters
    ----------
    call : LLMCall, the run's call context (usage item, sample index, temperature; stage ``mac.baseline``)
    ds : Dataset
    settings : ILSCSLSettings

    Returns
    -------
    ILSCSLResult; ``graph`` is the last learned DAG.

    Raises
    ------
    AlgorithmError if the search fails; StructuredOutputError, UnknownStageError,
    EndpointUnreachableError, LLMCallError from the gateway.

    References
    ----------
    Ban et al., arXiv:2311.11689.
    """
    model = reasoned_answer_model(
        "EdgeVerdictReply", "verdict", ("correct", "reversed", "absent"), settings.reason_chars
    )
    cap = completion_cap(call, BASELINE_STAGE, reasoned_answer_tokens(settings.reason_chars))
    meta = metadata_block(ds)
    required: set[tuple[str, str]] = set()
    forbidden: set[tuple[str, str]] = set()
    verdicts: dict[str, str] = {}
    iterations: list[tuple[str, ...]] = []
    dropped: list[str] = []

    def require(edge: tuple[str, str]) -> None:
        if closes_cycle(required, edge):
            dropped.append(f"{edge[0]} -> {edge[1]}")
        else:
            required.add(edge)

    graph = hill_climb(ds, required, forbidden, settings)
    stopped: Literal["no_new_constraint", "max_iterations"] = "max_iterations"
    iteration = 0
    while settings.max_iterations is None or iteration < settings.max_iterations:
        iteration += 1
        iterations.append(tuple(graph.edge_strings()))
        new = 0
        for x, y in sorted(graph.directed_edges()):
            key = f"{x} -> {y}"
            if key in verdicts or f"{y} -> {x}" in verdicts:
                continue
            msgs = baseline_messages(EDGE_TEMPLATE.format(metadata=meta, x=x, y=y))
            reply: Any = call.structured(BASELINE_STAGE, msgs, model, max_tokens=cap)
            verdict = reply.verdict
            verdicts[key] = verdict
            before = len(required) + len(forbidden)
            if verdict == "correct":
                require((x, y))
            elif verdict == "reversed":
                forbidden.add((x, y))
                require((y, x))
            else:
                forbidden.update({(x, y), (y, x)})
            new += len(required) + len(forbidden) - before
        if not new:
            stopped = "no_new_constraint"
            break
        graph = hill_climb(ds, required, forbidden, settings)
    return ILSCSLResult(
        iterations=tuple(iterations),
        verdicts=verdicts,
        graph=graph,
        required=tuple(f"{a} -> {b}" for a, b in sorted(required)),
        forbidden=tuple(f"{a} -> {b}" for a, b in sorted(forbidden)),
        dropped=tuple(dropped),
        stopped=stopped,
    )
