"""What a discovery method is (:class:`DiscoverySpec`), and every discovery method's spec: each method module's
function adapted to one handler, ``(call, dataset, config, seed) -> (graph, details)``.

The specs are listed, and looked up by name, in :data:`agentcausal.registry.DISCOVERY_METHODS`.

==================  ===========================================================
spec                what runs
==================  ===========================================================
:data:`PC` ...      one pool algorithm with data-type-aware defaults (PC, FCI, GES, Exact Search, DirectLiNGAM)
:data:`MAC`         full MAC (DCM -> Meta Fusion -> MDM)
:data:`MAC_SINGLE`  MAC with a single agent per debate (§4.4)
:data:`DCM_ONLY`    DCM alone (§4.3)
:data:`MDM_ONLY`    MDM on the metadata alone (§4.3)
:data:`ZERO_SHOT`   one LLM call from the metadata (§4.1)
:data:`REACT`       ReAct agent with data tools (Yao et al., arXiv:2210.03629)
:data:`LLM_SCD`     PC with an LLM-derived prior (Takayama et al., arXiv:2402.01454)
:data:`ILS_CSL`     hill climbing with iterative LLM edge supervision (Ban et al., arXiv:2311.11689)
==================  ===========================================================

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1-§4.4.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.llm import ils_csl, llm_scd, react
from agentcausal.discovery.llm.zero_shot import llm_zero_shot
from agentcausal.discovery.mac import settings as mac_settings
from agentcausal.discovery.mac.pipeline import run_mac
from agentcausal.discovery.mac.prompts import PROMPT_VERSIONS
from agentcausal.discovery.statistical.algorithms import default_choice, run_algorithm
from agentcausal.llm import LLMCall
from agentcausal.methods import MethodSpec

__all__ = [
    "Handler",
    "DiscoverySpec",
    "PC",
    "FCI",
    "GES",
    "EXACT_SEARCH",
    "DIRECT_LINGAM",
    "MAC",
    "MAC_SINGLE",
    "DCM_ONLY",
    "MDM_ONLY",
    "ZERO_SHOT",
    "REACT",
    "LLM_SCD",
    "ILS_CSL",
]

#: a method's handler: ``(call, dataset, config, seed) -> (graph, details)``; ``call`` None for a statistical method
Handler = Callable[[LLMCall | None, Dataset, DiscoveryConfig, int], tuple[CausalGraph, dict[str, Any]]]


@dataclass(frozen=True, kw_only=True, eq=False)
class DiscoverySpec(MethodSpec):
    """One discovery method (:class:`~agentcausal.methods.MethodSpec`).

    Attributes
    ----------
    run : the handler ``(call, dataset, config, seed) -> (graph, details)``: ``call`` the run's
        :class:`~agentcausal.llm.call.LLMCall` (usage item, sample index, temperature), None for a statistical
        method
    settings_model : the model of the config part it reads (``config.mac`` or its own ``settings_field``)
    stages : the stages it may call: the coder stage only with the coding executor
        (:func:`~agentcausal.discovery.method_settings.method_stages`)
    family : ``statistical`` (data only, no LLM), ``mac`` (MAC and its ablations: debate stage, reads
        ``config.mac``) or ``baseline`` (an LLM baseline of MAC §4.1: the baseline stage)
    runs_dcm : it runs DCM, so an executor (``mac.executor``)
    has_rounds : its debates have Affirmative-Negative rounds (``mac_single``'s single agent has none)
    mac : the MAC settings the method fixes (``mac_single``: ``single_agent``; ``dcm_only``: ``stages``)
    settings_field : the config field holding its own settings (``react``, ``llm_scd``, ``ils_csl``),
        else None

    None needs the true graph (outcomes are scored outside the method).
    """

    run: Handler
    family: Literal["statistical", "mac", "baseline"]
    runs_dcm: bool = False
    has_rounds: bool = False
    mac: Mapping[str, Any] = field(default_factory=dict)
    settings_field: Literal["react", "llm_scd", "ils_csl"] | None = None

    @property
    def reads_mac(self) -> bool:
        """True when it runs with ``config.mac`` (MAC, its ablations, ``llm_zero_shot``)."""
        return self.family == "mac" or self.name == "llm_zero_shot"


#: the prompt version of every LLM method: MAC's prompt sets (the baselines' prompts follow ``mac.prompts``)
_PROMPTS = "+".join(PROMPT_VERSIONS[k] for k in sorted(PROMPT_VERSIONS))


def _statistical(method: str) -> DiscoverySpec:
    def run(call: LLMCall | None, ds: Dataset, config: DiscoveryConfig, seed: int):
        choice = default_choice(method, ds.data_type, ds.d)
        res = run_algorithm(ds.data, ds.variables, choice, timeout_s=config.algorithm_timeout_s)
        return res.graph, {"choice": choice.model_dump(mode="json")}

    return DiscoverySpec(
        name=method, run=run, settings_model=None, prompt_version="", stages=(), family="statistical", needs_data=True
    )


def _sampled(call: LLMCall | None) -> tuple[LLMCall, dict[str, Any]]:
    """An LLM method's call context, and the sample index and temperature its record keeps."""
    assert call is not None, "an LLM method runs with a call context"  # run_discovery builds one
    return call, {"sample": call.sample, "temperature": call.temperature}


def _mac(method: str, fixed: Mapping[str, Any] | None = None, **flags: Any) -> DiscoverySpec:
    """MAC or an ablation: ``fixed`` the MAC settings it fixes over ``config.mac`` (whose rounds a rounds variant
    has set already, :func:`~agentcausal.discovery.method_settings.method_handler`)."""
    fixed = dict(fixed or {})

    def run(call: LLMCall | None, ds: Dataset, config: DiscoveryConfig, seed: int):
        call, sampled = _sampled(call)
        res = run_mac(call, ds, config.mac.model_copy(update=fixed), seed=seed)
        return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), **sampled}

    mdm_only = fixed.get("stages") == "mdm_only"
    return DiscoverySpec(
        name=method,
        run=run,
        settings_model=mac_settings.MACSettings,
        prompt_version=_PROMPTS,
        stages=(mac_settings.DEBATE_STAGE,) if mdm_only else (mac_settings.DEBATE_STAGE, mac_settings.CODER_STAGE),
        presets=mac_settings.PRESETS,
        needs_data=not mdm_only,
        family="mac",
        mac=fixed,
        **flags,
    )


def _zero_shot(call: LLMCall | None, ds: Dataset, config: DiscoveryConfig, seed: int):
    call, sampled = _sampled(call)
    m = config.mac
    res = llm_zero_shot(call, ds, max_tokens_scale=m.max_tokens_scale, edges_per_variable=m.edges_per_variable)
    return res.graph, {"dropped": list(res.dropped), **sampled}


def _llm(
    name: str,
    run: Handler,
    settings_model: type[BaseModel],
    presets: Mapping[str, Mapping[str, Any]],
    settings_field: Literal["react", "llm_scd", "ils_csl"] | None = None,
    *,
    needs_data: bool = True,
) -> DiscoverySpec:
    """An LLM baseline of MAC §4.1: the baseline stage."""
    return DiscoverySpec(
        name=name,
        run=run,
        settings_model=settings_model,
        prompt_version=_PROMPTS,
        stages=(mac_settings.BASELINE_STAGE,),
        presets=presets,
        needs_data=needs_data,
        family="baseline",
        settings_field=settings_field,
    )


def _baseline(fn: Callable[[LLMCall, Dataset, Any], Any], name: Literal["react", "llm_scd", "ils_csl"]) -> Handler:
    """The handler of a baseline with settings of its own (``config.<name>``); ``llm_scd`` samples at its
    own ``temperature`` by design (the call's, :func:`~agentcausal.discovery.method_settings.llm_temperature`)."""

    def run(call: LLMCall | None, ds: Dataset, config: DiscoveryConfig, seed: int):
        call, sampled = _sampled(call)
        res = fn(call, ds, getattr(config, name))
        return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), **sampled}

    return run


#: the statistical pool (:data:`~agentcausal.discovery.statistical.algorithms.ALGORITHMS`)
PC, FCI, GES = _statistical("pc"), _statistical("fci"), _statistical("ges")
EXACT_SEARCH, DIRECT_LINGAM = _statistical("exact_search"), _statistical("direct_lingam")
#: MAC and its ablations
MAC = _mac("mac", runs_dcm=True, has_rounds=True)
MAC_SINGLE = _mac("mac_single", {"single_agent": True}, runs_dcm=True)
DCM_ONLY = _mac("dcm_only", {"stages": "dcm_only"}, runs_dcm=True, has_rounds=True)
MDM_ONLY = _mac("mdm_only", {"stages": "mdm_only"}, has_rounds=True)
#: the LLM baselines of MAC §4.1
ZERO_SHOT = _llm("llm_zero_shot", _zero_shot, mac_settings.MACSettings, mac_settings.PRESETS, needs_data=False)
REACT = _llm("react", _baseline(react.react_discovery, "react"), react.ReActSettings, react.PRESETS, "react")
LLM_SCD = _llm("llm_scd", _baseline(llm_scd.llm_scd, "llm_scd"), llm_scd.LLMSCDSettings, llm_scd.PRESETS, "llm_scd")
ILS_CSL = _llm("ils_csl", _baseline(ils_csl.ils_csl, "ils_csl"), ils_csl.ILSCSLSettings, ils_csl.PRESETS, "ils_csl")
