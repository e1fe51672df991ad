"""Every discovery method behind one call: statistical baselines, MAC and its ablations, the LLM baseline.

==================  ===========================================================
method              what runs
==================  ===========================================================
``pc`` ``fci``      one pool algorithm with data-type-aware defaults
``ges``
``exact_search``
``direct_lingam``
``mac``             full MAC (DCM -> Meta Fusion -> MDM)
``mac_single``      MAC with a single agent per debate (§4.4)
``dcm_only``        DCM alone (§4.3)
``mdm_only``        MDM on the metadata alone (§4.3)
``llm_zero_shot``   one LLM call from the metadata (§4.1)
``react``           ReAct agent with data tools (Yao et al., arXiv:2210.03629)
``llm_scd``         PC with an LLM-derived prior (Takayama et al., arXiv:2402.01454)
``ils_csl``         hill climbing with iterative LLM edge supervision (Ban et al., arXiv:2311.11689)
``m@names``         LLM method ``m`` with neutral variable ids (memorisation control,
``m@all``           :mod:`agentcausal.discovery.anonymise`); ``m@all`` also drops the metadata
==================  ===========================================================

:func:`run_discovery` never raises for a content failure (a reply still
invalid after all repairs, an algorithm failing on the data): the
:class:`DiscoveryOutcome` records the error with ``status="content_failed"``,
so one failure does not stop a benchmark. Failures of the run (transport,
401, rate limit, an algorithm timeout or dead worker) are re-raised when
``raise_transient`` is set, so an orchestrator retries them and never caches
them; otherwise they are recorded with ``status="failed"``. A MAC run that
fell back after a failed stage (coding executor to typed, an invalid
Negative or Judge reply) is ``status="degraded"``.

The outcome's ``true_graph`` is the truth when it ran; a report must score
against the current truth (the ``discover`` flow replaces it), so the cache
key holds no truth.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1-§4.4.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentcausal.discovery.algorithms import ALGORITHMS, default_choice, run_algorithm
from agentcausal.discovery.anonymise import ANONYMISE_MODES, anonymise, restore_names
from agentcausal.discovery.baselines import llm_zero_shot
from agentcausal.discovery.datasets import Dataset, metadata_text
from agentcausal.discovery.graph import CausalGraph
from agentcausal.discovery.ils_csl import ILSCSLSettings, ils_csl
from agentcausal.discovery.llm_scd import LLMSCDSettings, llm_scd
from agentcausal.discovery.react import ReActSettings, react_discovery
from agentcausal.discovery.rounds import apply_rounds, split_rounds
from agentcausal.discovery.mac.calls import sample_index
from agentcausal.discovery.mac.pipeline import run_mac
from agentcausal.discovery.mac.prompts import PROMPT_VERSIONS
from agentcausal.discovery.mac.settings import BASELINE_STAGE, CODER_STAGE, DEBATE_STAGE, MACSettings, unspecified_notes
from agentcausal.discovery.mac.settings import PAPER_UNSPECIFIED as MAC_PAPER_UNSPECIFIED
from agentcausal.discovery.react import PAPER_UNSPECIFIED as REACT_PAPER_UNSPECIFIED
from agentcausal.exceptions import AgentCausalError, ConfigError, is_content_failure

__all__ = [
    "STATISTICAL_METHODS",
    "LLM_METHODS",
    "BASELINE_METHODS",
    "DCM_METHODS",
    "METHODS",
    "DiscoveryConfig",
    "DiscoveryOutcome",
    "resolve_methods",
    "split_method",
    "with_anonymise",
    "method_stages",
    "method_settings",
    "llm_temperature",
    "run_discovery",
    "discovery_key",
    "degradation",
]

STATISTICAL_METHODS = ALGORITHMS
LLM_METHODS = ("mac", "mac_single", "dcm_only", "mdm_only", "llm_zero_shot", "react", "llm_scd", "ils_csl")
#: LLM baselines of the MAC paper's §4.1 that call only the baseline stage
BASELINE_METHODS = ("llm_zero_shot", "react", "llm_scd", "ils_csl")
#: methods that run DCM, so an executor (``mac.executor``)
DCM_METHODS = ("mac", "mac_single", "dcm_only")
METHODS = STATISTICAL_METHODS + LLM_METHODS


class DiscoveryConfig(BaseModel):
    """Settings of a discovery run shared by all methods.

    Attributes
    ----------
    mac : MACSettings, for ``mac`` (the ablations override ``single_agent`` or ``stages``)
    algorithm_timeout_s : float, wall limit of a statistical baseline
    react, llm_scd, ils_csl : settings of those LLM baselines
    repeat : int >= 0, the repeat index of ``--repeats K``: LLM methods ask for sample
        ``sample_index(seed, repeat)`` (the data seed itself for repeat 0), so each (seed, repeat)
        is an independent, separately cached answer (:mod:`agentcausal.discovery.mac.calls`)
    executor_fallback : str, why ``executor="auto"`` runs the typed executor
        (sandbox unavailable); recorded as ``details["executor_fallback"]`` of
        the methods that run DCM; not part of the cache key. Set by :meth:`resolved`.
    samples : int >= 1, LLM samples the run asks per (dataset, method): seeds x repeats (the
        ``discover`` flow and CLI set it). Above 1 the LLM methods call at their
        ``sampling_temperature`` (:func:`llm_temperature`), so std over seeds measures sampling
        variation; not itself in the cache key (the temperature it selects is)

    ``mac.executor`` defaults to ``"auto"`` (the coding agent, as the MAC paper runs DCM, where
    the sandbox works); :func:`run_discovery`, :func:`discovery_key`, :func:`method_stages` and
    :func:`method_settings` see it resolved (:meth:`resolved`), so a cache key and a plan name the
    executor that runs here.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    mac: MACSettings = Field(default_factory=MACSettings)
    algorithm_timeout_s: float = Field(300.0, gt=0)
    react: ReActSettings = Field(default_factory=ReActSettings)
    llm_scd: LLMSCDSettings = Field(default_factory=LLMSCDSettings)
    ils_csl: ILSCSLSettings = Field(default_factory=ILSCSLSettings)
    repeat: int = Field(0, ge=0)
    executor_fallback: str = ""
    samples: int = Field(1, ge=1)

    def resolved(self) -> DiscoveryConfig:
        """This config with ``mac.executor="auto"`` replaced by the executor that runs here.

        ``auto`` becomes ``coding`` where the sandbox works, else ``typed`` with
        ``executor_fallback`` saying why (:func:`~agentcausal.discovery.mac.executor.resolve_executor`);
        a config already resolved is returned as it is.
        """
        if self.mac.executor != "auto":
            return self
        from agentcausal.discovery.mac.executor import resolve_executor

        mode, note = resolve_executor("auto")
        return self.model_copy(update={"mac": self.mac.model_copy(update={"executor": mode}),
                                       "executor_fallback": note})


class DiscoveryOutcome(BaseModel):
    """One method on one dataset and seed: the graph (or the error) and what it cost.

    Attributes
    ----------
    dataset, seed, n, method : what ran
    graph : CausalGraph or None (None on error)
    true_graph : CausalGraph or None
    error : str, empty on success
    seconds : float, wall time of the method
    details : JSON-able record (the algorithm parameters, or the MAC debates and fusion sentences)
    models : stage -> ``profile:model`` for LLM methods
    usage : stage -> token and call totals (:class:`agentcausal.llm.usage.StageUsage` as dict)
    prompt_version : str, for LLM methods
    data_hash : str, ``joblib.hash`` of the data and columns
    status : ``complete``, ``degraded`` (a fallback after a failed stage), ``content_failed``
        (cached) or ``failed`` (transport, timeout ...: never cached)
    status_detail : str or None, why degraded or failed
    reused : bool, the outcome came from a cache (Prefect's task cache, or every LLM call a
        cache hit): this run paid nothing for it; ``usage`` is what it cost when computed
    """

    model_config = ConfigDict(frozen=True)
    dataset: str
    seed: int
    n: int
    method: str
    graph: CausalGraph | None = None
    true_graph: CausalGraph | None = None
    error: str = ""
    seconds: float = 0.0
    details: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, str] = Field(default_factory=dict)
    usage: dict[str, dict[str, float]] = Field(default_factory=dict)
    prompt_version: str = ""
    data_hash: str = ""
    status: Literal["complete", "degraded", "content_failed", "failed"] = "complete"
    status_detail: str | None = None
    reused: bool = False


def split_method(method: str) -> tuple[str, str]:
    """``"mac@names"`` -> ``("mac", "names")``; a plain name has mode ``"none"``.

    Raises
    ------
    ConfigError on an unknown base method or mode, or a mode on a statistical method.
    """
    base, _, mode = split_rounds(method)[0].partition("@")  # "mac (rounds 2)": a rounds variant of mac
    mode = mode or "none"
    if base not in METHODS:
        raise ConfigError(f"unknown discovery method {method!r}; choose from {', '.join(METHODS)} "
                          "or 'statistical'")
    if mode not in ANONYMISE_MODES:
        raise ConfigError(f"unknown anonymise mode in {method!r}; choose from {', '.join(ANONYMISE_MODES)}")
    if mode != "none" and base not in LLM_METHODS:
        raise ConfigError(f"{method!r}: anonymising only applies to LLM methods ({', '.join(LLM_METHODS)})")
    return base, mode


def with_anonymise(methods: Sequence[str], modes: Sequence[str]) -> list[str]:
    """Each LLM method once per memorisation-control mode (``mac``, ``mac@names``, ``mac@all``...).

    Statistical methods are kept once; mode ``none`` keeps the plain name.

    >>> with_anonymise(["mac", "pc"], ["none", "names"])
    ['mac', 'mac@names', 'pc']
    """
    out: list[str] = []
    for m in methods:
        base, _ = split_method(m)
        for mode in (modes if base in LLM_METHODS else ["none"]):
            split_method(f"{base}@{mode}")
            name = base if mode == "none" else f"{base}@{mode}"
            if name not in out:
                out.append(name)
    return out


def resolve_methods(names: Sequence[str]) -> list[str]:
    """Check method names up front; ``"statistical"`` expands to the five pool algorithms.

    Raises
    ------
    ConfigError on an unknown name (the message lists the valid ones).
    """
    out: list[str] = []
    for name in names:
        key = name.lower().replace("-", "_")
        expanded = list(STATISTICAL_METHODS) if key in ("statistical", "stat") else [key]
        for k in expanded:
            base, mode = split_method(k)
            rounds = split_rounds(k)[1]
            k = base if mode == "none" else f"{base}@{mode}"
            k = k if rounds is None else f"{k} (rounds {rounds})"
            if k not in out:
                out.append(k)
    return out


def method_stages(method: str, config: DiscoveryConfig) -> tuple[str, ...]:
    """LLM stages a method calls (empty for statistical baselines)."""
    method = split_method(method)[0]
    if method in STATISTICAL_METHODS:
        return ()
    if method in BASELINE_METHODS:
        return (BASELINE_STAGE,)
    coder = (CODER_STAGE,) if config.resolved().mac.executor == "coding" and method != "mdm_only" else ()
    return (DEBATE_STAGE,) + coder


def _mac_settings(method: str, config: DiscoveryConfig) -> MACSettings:
    upd = {"mac_single": {"single_agent": True}, "dcm_only": {"stages": "dcm_only"},
           "mdm_only": {"stages": "mdm_only"}}.get(method, {})
    return config.mac.model_copy(update=upd)


def method_settings(method: str, config: DiscoveryConfig) -> dict[str, Any]:
    """The settings a method runs with, as the run applies them (JSON-able; for the run plan).

    MAC's ablations show their variant (``mac_single``: ``single_agent``; ``dcm_only``/``mdm_only``:
    ``stages``); ``react``, ``llm_scd`` and ``ils_csl`` their own settings; ``llm_zero_shot`` the MAC
    fields it reads (``max_tokens_scale``, ``sampling_temperature``); a statistical method its wall
    limit. An LLM method adds ``temperature_used``, what its calls use in this run
    (:func:`llm_temperature`; None = the profile's temperature). An anonymised method (``mac@names``)
    adds ``anonymise``. ``mac.executor`` shows the executor that runs here (never ``auto``).

    Raises
    ------
    ConfigError on an unknown method.
    """
    base, mode = split_method(method)
    config = apply_rounds(method, config.resolved())[1]  # a rounds variant shows its mac.rounds
    out: dict[str, Any]
    if base in STATISTICAL_METHODS:
        out = {"algorithm_timeout_s": config.algorithm_timeout_s}
    elif base in ("mac", "mac_single", "dcm_only", "mdm_only"):
        out = _mac_settings(base, config).model_dump(mode="json")
        out["paper_unspecified"] = unspecified_notes(config.mac, MAC_PAPER_UNSPECIFIED)
    elif base == "llm_zero_shot":
        out = {"max_tokens_scale": config.mac.max_tokens_scale, "edges_per_variable": config.mac.edges_per_variable,
               "sampling_temperature": config.mac.sampling_temperature}
    else:
        out = getattr(config, base).model_dump(mode="json")
        if base == "react":
            out["paper_unspecified"] = unspecified_notes(config.react, REACT_PAPER_UNSPECIFIED)
    if base not in STATISTICAL_METHODS:  # what this run's calls use (None = the profile's temperature)
        out["temperature_used"] = llm_temperature(base, config)
    return {**out, "anonymise": mode} if mode != "none" else out


def llm_temperature(method: str, config: DiscoveryConfig) -> float | None:
    """The sampling temperature a method's LLM calls use under ``config`` (None = the profile's).

    MAC, its ablations and ``llm_zero_shot`` read ``mac.sampling_temperature``, ``react`` and
    ``ils_csl`` their own, each only when the run asks for more than one sample
    (``config.samples > 1``); ``llm_scd`` samples each pair's answers at its ``temperature`` by
    design (Takayama et al., arXiv:2402.01454); statistical methods: None. Sample 0 (seed 0,
    repeat 0) goes out without a ``seed`` (the gateway sends ``seed = sample`` only above 0), so
    above temperature 0 its draw is the server's; it is cached like every other.

    Raises
    ------
    ConfigError on an unknown method.

    >>> llm_temperature("llm_zero_shot", DiscoveryConfig(mac=MACSettings(sampling_temperature=0.7), samples=2))
    0.7
    >>> llm_temperature("llm_zero_shot", DiscoveryConfig(mac=MACSettings(sampling_temperature=0.7))) is None
    True
    """
    base, _ = split_method(method)
    if base in STATISTICAL_METHODS:
        return None
    if base == "llm_scd":
        return config.llm_scd.temperature
    settings = config.mac if base in ("mac", "mac_single", "dcm_only", "mdm_only", "llm_zero_shot") \
        else getattr(config, base)
    return settings.sampling_temperature if config.samples > 1 else None


def _statistical(method: str) -> Callable[..., tuple[CausalGraph, dict[str, Any]]]:
    def run(gw, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
        choice = default_choice(method, ds.data_type, ds.d)
        res = run_algorithm(ds.data, ds.variables, choice, timeout_s=config.algorithm_timeout_s)
        return res.graph, {"choice": choice.model_dump(mode="json")}

    return run


def _mac(method: str) -> Callable[..., tuple[CausalGraph, dict[str, Any]]]:
    def run(gw, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
        sample = sample_index(seed, config.repeat)
        t = llm_temperature(method, config)
        res = run_mac(gw, ds, _mac_settings(method, config), seed=seed, item=item, sample=sample, temperature=t)
        return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), "sample": sample, "temperature": t}

    return run


def _zero_shot(gw, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
    sample = sample_index(seed, config.repeat)
    t = llm_temperature("llm_zero_shot", config)
    res = llm_zero_shot(gw, ds, item=item, max_tokens_scale=config.mac.max_tokens_scale,
                        edges_per_variable=config.mac.edges_per_variable, sample=sample, temperature=t)
    return res.graph, {"dropped": list(res.dropped), "sample": sample, "temperature": t}


def _react(gw, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
    sample = sample_index(seed, config.repeat)
    t = llm_temperature("react", config)
    res = react_discovery(gw, ds, config.react, item=item, sample=sample, temperature=t)
    return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), "sample": sample, "temperature": t}


def _llm_scd(gw, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
    sample = sample_index(seed, config.repeat)
    res = llm_scd(gw, ds, config.llm_scd, item=item, sample=sample)
    return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), "sample": sample,
                       "temperature": config.llm_scd.temperature}


def _ils_csl(gw, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
    sample = sample_index(seed, config.repeat)
    t = llm_temperature("ils_csl", config)
    res = ils_csl(gw, ds, config.ils_csl, item=item, sample=sample, temperature=t)
    return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), "sample": sample, "temperature": t}


_HANDLERS: dict[str, Callable[..., tuple[CausalGraph, dict[str, Any]]]] = {
    **{m: _statistical(m) for m in STATISTICAL_METHODS},
    **{m: _mac(m) for m in ("mac", "mac_single", "dcm_only", "mdm_only")},
    "llm_zero_shot": _zero_shot,
    "react": _react,
    "llm_scd": _llm_scd,
    "ils_csl": _ils_csl,
}


def _anonymised(method: str, mode: str) -> Callable[..., tuple[CausalGraph, dict[str, Any]]]:
    def run(gw, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
        anon, back = anonymise(ds, mode)
        graph, details = _HANDLERS[method](gw, anon, config, seed, item)
        return restore_names(graph, back, ds.variables), {**details, "anonymise": {"mode": mode, "ids": back}}

    return run


_HANDLERS.update({f"{m}@{mode}": _anonymised(m, mode) for m in LLM_METHODS for mode in ANONYMISE_MODES
                  if mode != "none"})


def run_discovery(method: str, ds: Dataset, gw=None, config: DiscoveryConfig = DiscoveryConfig(), *,
                  seed: int = 0, raise_transient: bool = False) -> DiscoveryOutcome:
    """Run one method on one dataset.

    Parameters
    ----------
    method : one of :data:`METHODS`
    ds : Dataset
    gw : Gateway, required for LLM methods (None is fine for statistical ones)
    config : DiscoveryConfig
    seed : int, the dataset seed (also draws MAC's subset S)
    raise_transient : re-raise a failure that is not a content failure
        (:func:`~agentcausal.exceptions.is_content_failure`) instead of recording it

    Returns
    -------
    DiscoveryOutcome, with ``error`` and ``status`` set when the method failed, ``status="degraded"``
    and ``status_detail`` after a fallback, ``reused`` when every LLM call was a cache hit.

    Raises
    ------
    ConfigError on an unknown method, or an LLM method without a gateway.
    AgentCausalError when ``raise_transient`` is set and the failure is not a content failure
    (EndpointUnreachableError, LLMCallError, an AlgorithmError timeout ...).
    """
    handler, config = apply_rounds(method, config.resolved())  # executor "auto": the one that runs here
    if handler not in _HANDLERS:
        raise ConfigError(f"unknown discovery method {method!r}; choose from {', '.join(METHODS)}")
    stages = method_stages(method, config)
    if stages and gw is None:
        raise ConfigError(f"method {method!r} calls an LLM; pass a gateway")
    from agentcausal.runs.envelope import run_enveloped

    item = f"{ds.name}:{seed}:{method}"
    env = run_enveloped(lambda: _HANDLERS[handler](gw, ds, config, seed, item), gw=gw, stages=stages,
                        usage_items=(item,), raise_transient=raise_transient)
    common = dict(dataset=ds.name, seed=seed, n=ds.n, method=method, true_graph=ds.true_graph, models=env.models,
                  prompt_version=PROMPT_VERSIONS[config.mac.prompts] if stages else "", data_hash=ds.content_hash())
    if env.error is None:
        graph, details = env.result
        if config.executor_fallback and handler.partition("@")[0] in ("mac", "mac_single", "dcm_only"):
            details = {**details, "executor_fallback": config.executor_fallback}
        err, detail = "", degradation(details)
        status = "degraded" if detail else "complete"
    else:
        exc = env.error
        graph, details, err = None, {}, f"{type(exc).__name__}: {exc}"[:2000]
        status, detail = ("content_failed" if is_content_failure(exc) else "failed"), type(exc).__name__
    usage = {s: u.model_dump() for s, u in env.usage.items()}
    return DiscoveryOutcome(graph=graph, error=err, seconds=env.seconds, details=details, usage=usage, status=status,
                            status_detail=detail, reused=env.reused, **common)


def degradation(details: dict[str, Any]) -> str | None:
    """Why a MAC record is degraded (a fallback after a failed stage), or None.

    Reads ``details["degraded"]`` when a method sets it, the executor's
    ``fallback_reason`` (coding executor fell back to the typed one) and the
    debate notes (an invalid Negative or Judge reply made the Affirmative win).

    Parameters
    ----------
    details : the outcome's ``details`` (``MACResult`` as JSON, or a baseline's record)

    Returns
    -------
    str or None, ``"; "``-joined reasons.

    >>> degradation({"dcm": {"execution": {"fallback_reason": "sandbox unavailable"}, "debate": {"notes": []}}})
    'DCM executor: sandbox unavailable'
    >>> degradation({"choice": {}}) is None
    True
    """
    reasons: list[str] = []
    if not isinstance(details, dict):
        return None
    if details.get("degraded"):
        reasons.append(str(details["degraded"]))
    dcm = details.get("dcm") if isinstance(details.get("dcm"), dict) else {}
    fb = (dcm.get("execution") or {}).get("fallback_reason") if isinstance(dcm.get("execution"), dict) else None
    if fb:
        reasons.append(f"DCM executor: {fb}")
    for stage in ("dcm", "mdm"):
        part = details.get(stage) if isinstance(details.get(stage), dict) else {}
        for note in (part.get("debate") or {}).get("notes", []) if isinstance(part.get("debate"), dict) else []:
            reasons.append(f"{stage.upper()}: {note}")
    return "; ".join(reasons)[:1000] if reasons else None


def discovery_key(ds: Dataset, method: str, config: DiscoveryConfig, gw=None, *, seed: int = 0) -> str:
    """Cache key of one outcome: what determines it and nothing else.

    sha256 of (``joblib.hash`` of the data array, column names and data type;
    dataset name and the run seed; method; the config, its executor resolved
    (never ``auto``); for LLM methods the sampling temperature the run uses
    when it is not the profile's (:func:`llm_temperature`), the metadata and
    its prompt text (variable descriptions enter MAC's prompts), the prompt
    version and the ``profile:model`` of each stage). Statistical
    methods ignore the LLM parts. The true graph is not in the key: the
    outcome is scored outside the cached step, against the current truth.

    Raises
    ------
    ConfigError on an unknown method.
    """
    handler, config = apply_rounds(method, config.resolved())  # the executor that runs here, never "auto"
    if handler not in _HANDLERS:
        raise ConfigError(f"unknown discovery method {method!r}; choose from {', '.join(METHODS)}")
    stages = method_stages(method, config)
    models = {}
    for s in stages:
        try:
            models[s] = [gw.model_for(s), gw.profile_for(s).context_window] if gw is not None else ["none", 0]
        except AgentCausalError:
            models[s] = ["unrouted", 0]
    blob = json.dumps({
        "data": ds.content_hash(), "dataset": ds.name, "seed": seed, "method": method,
        "config": config.model_dump(mode="json", exclude={"executor_fallback", "samples"}) if stages
        else {"timeout": config.algorithm_timeout_s},
        **({"temperature": t} if (t := llm_temperature(method, config)) is not None else {}),
        "prompt_version": PROMPT_VERSIONS[config.mac.prompts] if stages else "", "models": models,
        "metadata": [ds.metadata.model_dump(mode="json"), metadata_text(ds)] if stages else None,
    }, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
