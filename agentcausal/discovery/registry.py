"""Discovery methods by name: one dispatch table, checked up front, and the settings each method runs with.

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
``m@all``           :mod:`agentcausal.discovery.data.anonymise`); ``m@all`` also drops the metadata
==================  ===========================================================

:func:`method_handler` gives the function behind a name; :func:`resolve_methods`,
:func:`with_anonymise`, :func:`method_stages`, :func:`method_settings` and :func:`llm_temperature` check
names and say what a method calls and with which settings.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1-§4.4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.anonymise import ANONYMISE_MODES, anonymise, restore_names
from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.llm.ils_csl import ils_csl
from agentcausal.discovery.llm.llm_scd import llm_scd
from agentcausal.discovery.llm.react import PAPER_UNSPECIFIED as REACT_PAPER_UNSPECIFIED
from agentcausal.discovery.llm.react import react_discovery
from agentcausal.discovery.llm.zero_shot import llm_zero_shot
from agentcausal.discovery.mac.calls import sample_index
from agentcausal.discovery.mac.pipeline import run_mac
from agentcausal.discovery.mac.settings import BASELINE_STAGE, CODER_STAGE, DEBATE_STAGE, MACSettings, unspecified_notes
from agentcausal.discovery.mac.settings import PAPER_UNSPECIFIED as MAC_PAPER_UNSPECIFIED
from agentcausal.discovery.rounds import apply_rounds, split_rounds
from agentcausal.discovery.statistical.algorithms import ALGORITHMS, default_choice, run_algorithm
from agentcausal.exceptions import ConfigError
from agentcausal.llm import Gateway

__all__ = [
    "STATISTICAL_METHODS",
    "LLM_METHODS",
    "BASELINE_METHODS",
    "DCM_METHODS",
    "METHODS",
    "resolve_methods",
    "split_method",
    "with_anonymise",
    "method_stages",
    "method_settings",
    "llm_temperature",
    "mac_settings",
    "method_handler",
    "cache_namespace",
]


STATISTICAL_METHODS = ALGORITHMS


LLM_METHODS = ("mac", "mac_single", "dcm_only", "mdm_only", "llm_zero_shot", "react", "llm_scd", "ils_csl")


#: LLM baselines of the MAC paper's §4.1 that call only the baseline stage
BASELINE_METHODS = ("llm_zero_shot", "react", "llm_scd", "ils_csl")


#: methods that run DCM, so an executor (``mac.executor``)
DCM_METHODS = ("mac", "mac_single", "dcm_only")


METHODS = STATISTICAL_METHODS + LLM_METHODS


def split_method(method: str) -> tuple[str, str]:
    """``"mac@names"`` -> ``("mac", "names")``; a plain name has mode ``"none"``.

    Raises
    ------
    ConfigError on an unknown base method or mode, or a mode on a statistical method.
    """
    base, _, mode = split_rounds(method)[0].partition("@")  # "mac (rounds 2)": a rounds variant of mac
    mode = mode or "none"
    if base not in METHODS:
        raise ConfigError(f"unknown discovery method {method!r}; choose from {', '.join(METHODS)} or 'statistical'")
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
        for mode in modes if base in LLM_METHODS else ["none"]:
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


def mac_settings(method: str, config: DiscoveryConfig) -> MACSettings:
    upd: dict[str, dict[str, Any]] = {
        "mac_single": {"single_agent": True},
        "dcm_only": {"stages": "dcm_only"},
        "mdm_only": {"stages": "mdm_only"},
    }
    return config.mac.model_copy(update=upd.get(method, {}))


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
        out = mac_settings(base, config).model_dump(mode="json")
        out["paper_unspecified"] = unspecified_notes(config.mac, MAC_PAPER_UNSPECIFIED)
    elif base == "llm_zero_shot":
        out = {
            "max_tokens_scale": config.mac.max_tokens_scale,
            "edges_per_variable": config.mac.edges_per_variable,
            "sampling_temperature": config.mac.sampling_temperature,
        }
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
    settings = (
        config.mac if base in ("mac", "mac_single", "dcm_only", "mdm_only", "llm_zero_shot") else getattr(config, base)
    )
    return settings.sampling_temperature if config.samples > 1 else None


def _statistical(method: str) -> Callable[..., tuple[CausalGraph, dict[str, Any]]]:
    def run(gw: Gateway | None, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
        choice = default_choice(method, ds.data_type, ds.d)
        res = run_algorithm(ds.data, ds.variables, choice, timeout_s=config.algorithm_timeout_s)
        return res.graph, {"choice": choice.model_dump(mode="json")}

    return run


def _mac(method: str) -> Callable[..., tuple[CausalGraph, dict[str, Any]]]:
    def run(gw: Gateway, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
        sample = sample_index(seed, config.repeat)
        t = llm_temperature(method, config)
        res = run_mac(gw, ds, mac_settings(method, config), seed=seed, item=item, sample=sample, temperature=t)
        return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), "sample": sample, "temperature": t}

    return run


def _zero_shot(gw: Gateway, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
    sample = sample_index(seed, config.repeat)
    t = llm_temperature("llm_zero_shot", config)
    res = llm_zero_shot(
        gw,
        ds,
        item=item,
        max_tokens_scale=config.mac.max_tokens_scale,
        edges_per_variable=config.mac.edges_per_variable,
        sample=sample,
        temperature=t,
    )
    return res.graph, {"dropped": list(res.dropped), "sample": sample, "temperature": t}


def _react(gw: Gateway, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
    sample = sample_index(seed, config.repeat)
    t = llm_temperature("react", config)
    res = react_discovery(gw, ds, config.react, item=item, sample=sample, temperature=t)
    return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), "sample": sample, "temperature": t}


def _llm_scd(gw: Gateway, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
    sample = sample_index(seed, config.repeat)
    res = llm_scd(gw, ds, config.llm_scd, item=item, sample=sample)
    return res.graph, {
        **res.model_dump(mode="json", exclude={"graph"}),
        "sample": sample,
        "temperature": config.llm_scd.temperature,
    }


def _ils_csl(gw: Gateway, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
    sample = sample_index(seed, config.repeat)
    t = llm_temperature("ils_csl", config)
    res = ils_csl(gw, ds, config.ils_csl, item=item, sample=sample, temperature=t)
    return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), "sample": sample, "temperature": t}


#: method name -> handler ``(gw, dataset, config, seed, item) -> (graph, details)``
_HANDLERS: dict[str, Callable[..., tuple[CausalGraph, dict[str, Any]]]] = {
    **{m: _statistical(m) for m in STATISTICAL_METHODS},
    **{m: _mac(m) for m in ("mac", "mac_single", "dcm_only", "mdm_only")},
    "llm_zero_shot": _zero_shot,
    "react": _react,
    "llm_scd": _llm_scd,
    "ils_csl": _ils_csl,
}


def _anonymised(method: str, mode: str) -> Callable[..., tuple[CausalGraph, dict[str, Any]]]:
    def run(gw: Gateway | None, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
        anon, back = anonymise(ds, mode)
        graph, details = _HANDLERS[method](gw, anon, config, seed, item)
        return restore_names(graph, back, ds.variables), {**details, "anonymise": {"mode": mode, "ids": back}}

    return run


_HANDLERS.update(
    {f"{m}@{mode}": _anonymised(m, mode) for m in LLM_METHODS for mode in ANONYMISE_MODES if mode != "none"}
)


def method_handler(
    method: str, config: DiscoveryConfig
) -> tuple[Callable[..., tuple[CausalGraph, dict[str, Any]]], DiscoveryConfig]:
    """The handler of a method name (``mac``, ``pc``, ``mac@names``, ``mac (rounds 2)`` ...) and the config it runs
    with (a rounds variant's ``mac.rounds`` applied, the executor resolved): ``(gw, dataset, config, seed, item)
    -> (graph, details)``.

    Raises
    ------
    ConfigError on an unknown method (the message lists the valid ones).
    """
    handler, config = apply_rounds(method, config.resolved())
    if handler not in _HANDLERS:
        raise ConfigError(f"unknown discovery method {method!r}; choose from {', '.join(METHODS)}")
    run = _HANDLERS[handler]
    space = cache_namespace(method)

    def isolated(gw: Gateway | None, ds: Dataset, config: DiscoveryConfig, seed: int, item: str):
        return run(gw.namespaced(space) if gw is not None else None, ds, config, seed, item)

    return isolated, config


def cache_namespace(method: str) -> str:
    """The LLM reply-cache namespace of a method's calls: its full name (``"dcm_only"``, ``"mac (rounds 2)"``).

    Each method (each rounds and anonymised variant too) reads only the replies it cached itself
    (:meth:`agentcausal.llm.Gateway.namespaced`): ``dcm_only`` never reads the algorithm debate
    ``mac`` sent first with the same prompt, so its tokens and cost are those of a run of it alone,
    in one run and under ``--refresh`` alike (MAC arXiv:2407.15073 §4.3-§4.4 cost each method alone).

    >>> cache_namespace("DCM-only")
    'dcm_only'
    """
    return method.strip().lower().replace("-", "_")
