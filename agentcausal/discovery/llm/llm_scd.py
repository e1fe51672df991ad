"""LLM-SCD: statistical causal discovery with prior knowledge an LLM derives from the metadata and a first SCD result.

Takayama et al. (arXiv:2402.01454) run in three steps:

1. a statistical causal discovery (SCD) algorithm runs on the data;
2. *statistical causal prompting*: for every ordered pair ``(x, y)`` the LLM is
   shown the metadata and the SCD result and asked whether ``x`` directly
   causes ``y``; ``n_samples`` answers (at ``temperature``) give a probability
   ``p(x -> y)``; ``paper`` asks once at temperature 0, as the MAC paper runs every LLM
   (``sampling="mac_paper"``), and ``sampling="takayama"`` is their own five answers at 0.7;
3. the probabilities become a prior-knowledge matrix (``x -> y`` required
   when ``p >= required_at``, forbidden when ``p <= forbidden_at``, else left
   to the data) and the SCD algorithm runs again under it.

Here the SCD algorithm is PC (one of the paper's; causal-learn's
``BackgroundKnowledge`` carries the prior), with the pool's data-type-aware
test. Settings the paper leaves to the user are documented fields.

The MAC paper (arXiv:2407.15073, §4.1) lists LLM-SCD among its LLM baselines but
cites it as Ban et al. (2023); the name is Takayama et al.'s method (their code:
github.com/mas-takayama/LLM-and-SCD), which this module implements (docs/baselines.md).

References
----------
Takayama et al. 2024. "Integrating Large Language Models in Causal Discovery: A Statistical Causal
Approach." arXiv:2402.01454.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.llm.baseline_prompts import (
    baseline_messages,
    edges_text,
    metadata_block,
    reasoned_answer_model,
    reasoned_answer_tokens,
)
from agentcausal.discovery.mac import prompts as P
from agentcausal.discovery.mac.calls import completion_cap
from agentcausal.discovery.mac.settings import BASELINE_STAGE
from agentcausal.discovery.statistical.algorithms import default_choice, run_algorithm
from agentcausal.llm import LLMCall

__all__ = ["LLMSCDSettings", "PRESETS", "SAMPLINGS", "LLMSCDResult", "llm_scd"]


class LLMSCDSettings(BaseModel):
    """Settings of LLM-SCD.

    Attributes
    ----------
    sampling : ``"mac_paper"`` or ``"takayama"``, the named sampling of the pair answers, which sets
        ``temperature`` and ``n_samples`` where they are not given. ``mac_paper`` (``paper``'s): the MAC
        paper runs every LLM at temperature 0 (arXiv:2407.15073 §4.1), so one greedy answer per pair
        (repeated greedy answers only repeat it: p is 0 or 1). ``takayama``: Takayama et al.'s own
        sampling, ``n_samples=5`` answers at temperature 0.7, p the share of "yes" (arXiv:2402.01454)
    n_samples : int, answers per ordered pair; ``p(x -> y)`` is the share of "yes" (default: the sampling's)
    temperature : float or None, sampling temperature of those answers (default: the sampling's;
        None = the profile's)
    required_at : float, ``p >= required_at`` makes ``x -> y`` required
    forbidden_at : float, ``p <= forbidden_at`` makes ``x -> y`` forbidden
    reason_chars : int or None, ``maxLength`` of the reason the LLM gives before its answer; None = unbounded,
        and the completion budget is the profile's (``small``: 80)
    algorithm_timeout_s : float, wall limit of each PC run
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    sampling: Literal["mac_paper", "takayama"] = "mac_paper"
    n_samples: int = Field(1, ge=1, le=20)
    temperature: float | None = Field(0.0, ge=0, le=2)
    required_at: float = Field(0.95, gt=0.5, le=1)
    forbidden_at: float = Field(0.05, ge=0, lt=0.5)
    reason_chars: int | None = Field(None, ge=20)
    algorithm_timeout_s: float = Field(120.0, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _sampling_defaults(cls, data: Any) -> Any:
        """``temperature`` and ``n_samples`` not given: the named ``sampling``'s (:data:`SAMPLINGS`)."""
        if isinstance(data, dict):
            named = SAMPLINGS.get(str(data.get("sampling", "mac_paper")), {})
            return {**named, **data}
        return data


#: the named samplings of :class:`LLMSCDSettings`: what each sets where not given
SAMPLINGS: dict[str, dict[str, Any]] = {
    "mac_paper": {"temperature": 0.0, "n_samples": 1},
    "takayama": {"temperature": 0.7, "n_samples": 5},
}


#: ``paper`` = the defaults; ``small``: one answer per pair, short reasons (sub-2B models on CPU)
PRESETS: dict[str, dict[str, Any]] = {"paper": {}, "small": {"reason_chars": 80}}

PAIR_TEMPLATE = (
    "{metadata}\nA statistical causal discovery algorithm (PC) found on the data:\n{scd}\n"
    "Question: does {x} directly cause {y} (a change in {x} changes {y} not only through other variables)? "
    "Give a short reason, then answer yes or no."
)


class LLMSCDResult(BaseModel):
    """The first SCD graph, the LLM probabilities, the prior, and the final graph."""

    model_config = ConfigDict(frozen=True)
    first: CausalGraph
    probabilities: dict[str, float]
    required: tuple[str, ...]
    forbidden: tuple[str, ...]
    graph: CausalGraph


def llm_scd(call: LLMCall, ds: Dataset, settings: LLMSCDSettings = LLMSCDSettings()) -> LLMSCDResult:
    """Run LLM-SCD on one dataset.

    Parameters
    ----------
    call : LLMCall, the run's call context (stage ``mac.baseline``); answer ``k`` of a pair is sent as
        sample ``call.sample * n_samples + k`` at ``settings.temperature`` (by design, whatever the call's)
    ds : Dataset
    settings : LLMSCDSettings

    Returns
    -------
    LLMSCDResult; ``graph`` is PC's CPDAG under the prior.

    Raises
    ------
    AlgorithmError if PC fails; StructuredOutputError, UnknownStageError, EndpointUnreachableError,
    LLMCallError from the gateway.

    References
    ----------
    Takayama et al., arXiv:2402.01454.
    """
    base = default_choice("pc", ds.data_type, ds.d)
    first = run_algorithm(ds.data, ds.variables, base, timeout_s=settings.algorithm_timeout_s).graph
    model = reasoned_answer_model("PairReply", "answer", ("yes", "no"), settings.reason_chars)
    cap = completion_cap(call, BASELINE_STAGE, reasoned_answer_tokens(settings.reason_chars))
    meta = metadata_block(ds)
    scd = P.delimit("scd_result", edges_text(first.edge_strings()))
    probs: dict[str, float] = {}
    required: list[tuple[int, int]] = []
    forbidden: list[tuple[int, int]] = []
    for i, x in enumerate(ds.variables):
        for j, y in enumerate(ds.variables):
            if i == j:
                continue
            msgs = baseline_messages(PAIR_TEMPLATE.format(metadata=meta, scd=scd, x=x, y=y))
            yes = 0
            for k in range(settings.n_samples):
                answer = replace(call, sample=call.sample * settings.n_samples + k, temperature=settings.temperature)
                reply: Any = answer.structured(BASELINE_STAGE, msgs, model, max_tokens=cap)
                yes += reply.answer == "yes"
            p = yes / settings.n_samples
            probs[f"{x} -> {y}"] = p
            if p >= settings.required_at:
                required.append((i, j))
            elif p <= settings.forbidden_at:
                forbidden.append((i, j))
    # a pair required both ways is left to the data
    both = {(i, j) for i, j in required if (j, i) in required}
    required = [e for e in required if e not in both]
    choice = base.model_copy(update={"required": tuple(required), "forbidden": tuple(forbidden)})
    graph = run_algorithm(ds.data, ds.variables, choice, timeout_s=settings.algorithm_timeout_s).graph
    name = ds.variables.__getitem__
    return LLMSCDResult(
        first=first,
        probabilities=probs,
        graph=graph,
        required=tuple(f"{name(i)} -> {name(j)}" for i, j in required),
        forbidden=tuple(f"{name(i)} -> {name(j)}" for i, j in forbidden),
    )
