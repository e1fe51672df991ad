"""Discovery methods by name: one explicit table of typed specs, checked up front, and the settings each runs with.

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
``m (rounds r)``    MAC method ``m`` with ``r`` debate rounds (the rounds sweep, §4.3, Fig. 4)
==================  ===========================================================

:data:`METHODS` lists every method's :class:`DiscoverySpec` (its handler and family flags);
:func:`variant` checks a name (``mac@names (rounds 2)``) and gives its :class:`~agentcausal.discovery.variants.MethodVariant`;
:func:`resolve_methods`, :func:`with_anonymise` and :func:`expand_rounds` build a run's variants;
:func:`method_handler`, :func:`method_stages`, :func:`method_settings` and :func:`llm_temperature` say what a
variant runs, calls and with which settings.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1-§4.4.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.anonymise import ANONYMISE_MODES, anonymise, restore_names
from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.llm.ils_csl import ils_csl
from agentcausal.discovery.llm.llm_scd import llm_scd
from agentcausal.discovery.llm.react import PAPER_UNSPECIFIED as REACT_PAPER_UNSPECIFIED
from agentcausal.discovery.llm.react import react_discovery
from agentcausal.discovery.llm.zero_shot import llm_zero_shot
from agentcausal.discovery.mac.pipeline import run_mac
from agentcausal.discovery.mac.settings import BASELINE_STAGE, CODER_STAGE, DEBATE_STAGE, MACSettings, unspecified_notes
from agentcausal.discovery.mac.settings import PAPER_UNSPECIFIED as MAC_PAPER_UNSPECIFIED
from agentcausal.discovery.statistical.algorithms import ALGORITHMS, default_choice, run_algorithm
from agentcausal.discovery.variants import ROUNDS_RANGE, MethodVariant
from agentcausal.exceptions import ConfigError
from agentcausal.llm import LLMCall
from agentcausal.methods import MethodTable

__all__ = [
    "DiscoverySpec",
    "METHODS",
    "MethodVariant",
    "variant",
    "resolve_methods",
    "with_anonymise",
    "expand_rounds",
    "method_stages",
    "method_settings",
    "llm_temperature",
    "mac_settings",
    "method_handler",
]

#: a method's handler: ``(call, dataset, config, seed) -> (graph, details)``; ``call`` None for a statistical method
Handler = Callable[[LLMCall | None, Dataset, DiscoveryConfig, int], tuple[CausalGraph, dict[str, Any]]]


@dataclass(frozen=True)
class DiscoverySpec:
    """One discovery method.

    Attributes
    ----------
    name : str, the CLI and results name (``pc``, ``mac``, ``react`` ...)
    run : the handler ``(call, dataset, config, seed) -> (graph, details)``: ``call`` the run's
        :class:`~agentcausal.llm.call.LLMCall` (usage item, sample index, temperature), None for a statistical
        method
    family : ``statistical`` (data only, no LLM), ``mac`` (MAC and its ablations: debate stage, reads
        ``config.mac``) or ``baseline`` (an LLM baseline of MAC §4.1: the baseline stage)
    runs_dcm : it runs DCM, so an executor (``mac.executor``)
    has_rounds : its debates have Affirmative-Negative rounds (``mac_single``'s single agent has none)
    mac : the MAC settings the method fixes (``mac_single``: ``single_agent``; ``dcm_only``: ``stages``)
    settings_field : the config field holding its own settings (``react``, ``llm_scd``, ``ils_csl``),
        else None

    Every method needs the dataset; only ``family != "statistical"`` needs an LLM; none needs the true graph
    (outcomes are scored outside the method).
    """

    name: str
    run: Handler
    family: Literal["statistical", "mac", "baseline"]
    runs_dcm: bool = False
    has_rounds: bool = False
    mac: Mapping[str, Any] = field(default_factory=dict)
    settings_field: Literal["react", "llm_scd", "ils_csl"] | None = None

    @property
    def llm(self) -> bool:
        """True when the method calls an LLM."""
        return self.family != "statistical"

    @property
    def reads_mac(self) -> bool:
        """True when it runs with ``config.mac`` (MAC, its ablations, ``llm_zero_shot``)."""
        return self.family == "mac" or self.name == "llm_zero_shot"


def _statistical(method: str) -> Handler:
    def run(call: LLMCall | None, ds: Dataset, config: DiscoveryConfig, seed: int):
        choice = default_choice(method, ds.data_type, ds.d)
        res = run_algorithm(ds.data, ds.variables, choice, timeout_s=config.algorithm_timeout_s)
        return res.graph, {"choice": choice.model_dump(mode="json")}

    return run


def _sampled(call: LLMCall | None) -> tuple[LLMCall, dict[str, Any]]:
    """An LLM method's call context, and the sample index and temperature its record keeps."""
    assert call is not None, "an LLM method runs with a call context"  # run_discovery builds one
    return call, {"sample": call.sample, "temperature": call.temperature}


def _mac(method: str) -> Handler:
    def run(call: LLMCall | None, ds: Dataset, config: DiscoveryConfig, seed: int):
        call, sampled = _sampled(call)
        res = run_mac(call, ds, mac_settings(method, config), seed=seed)
        return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), **sampled}

    return run


def _zero_shot(call: LLMCall | None, ds: Dataset, config: DiscoveryConfig, seed: int):
    call, sampled = _sampled(call)
    mac = config.mac
    res = llm_zero_shot(call, ds, max_tokens_scale=mac.max_tokens_scale, edges_per_variable=mac.edges_per_variable)
    return res.graph, {"dropped": list(res.dropped), **sampled}


def _baseline(fn: Callable[[LLMCall, Dataset, Any], Any], field: Literal["react", "llm_scd", "ils_csl"]) -> Handler:
    """The handler of a baseline with settings of its own (``config.<field>``); ``llm_scd`` samples at its
    own ``temperature`` by design (the call's, :func:`llm_temperature`, is that one)."""

    def run(call: LLMCall | None, ds: Dataset, config: DiscoveryConfig, seed: int):
        call, sampled = _sampled(call)
        res = fn(call, ds, getattr(config, field))
        return res.graph, {**res.model_dump(mode="json", exclude={"graph"}), **sampled}

    return run


#: every discovery method, in the order ``discover --help`` lists them
METHODS: MethodTable[DiscoverySpec] = MethodTable(
    "discovery",
    (
        *(DiscoverySpec(m, _statistical(m), "statistical") for m in ALGORITHMS),
        DiscoverySpec("mac", _mac("mac"), "mac", runs_dcm=True, has_rounds=True),
        DiscoverySpec("mac_single", _mac("mac_single"), "mac", runs_dcm=True, mac={"single_agent": True}),
        DiscoverySpec("dcm_only", _mac("dcm_only"), "mac", runs_dcm=True, has_rounds=True, mac={"stages": "dcm_only"}),
        DiscoverySpec("mdm_only", _mac("mdm_only"), "mac", has_rounds=True, mac={"stages": "mdm_only"}),
        DiscoverySpec("llm_zero_shot", _zero_shot, "baseline"),
        DiscoverySpec("react", _baseline(react_discovery, "react"), "baseline", settings_field="react"),
        DiscoverySpec("llm_scd", _baseline(llm_scd, "llm_scd"), "baseline", settings_field="llm_scd"),
        DiscoverySpec("ils_csl", _baseline(ils_csl, "ils_csl"), "baseline", settings_field="ils_csl"),
    ),
)


@lru_cache(maxsize=256)
def _checked(name: str) -> MethodVariant:
    v = MethodVariant.parse(name.strip().lower().replace("-", "_"))
    spec = METHODS[v.base]  # an unknown method: ConfigError naming the known ones
    if v.anonymise not in ANONYMISE_MODES:
        raise ConfigError(f"unknown anonymise mode in {name!r}; choose from {', '.join(ANONYMISE_MODES)}")
    if v.anonymise != "none" and not spec.llm:
        llm = ", ".join(m for m in METHODS if METHODS[m].llm)
        raise ConfigError(f"{name!r}: anonymising only applies to LLM methods ({llm})")
    if v.rounds is not None and not spec.has_rounds:
        rounds = ", ".join(m for m in METHODS if METHODS[m].has_rounds)
        raise ConfigError(f"{name!r}: only {rounds} have debate rounds")
    return v


def variant(method: str | MethodVariant) -> MethodVariant:
    """The checked variant of a method name (``"DCM-only"``, ``"mac@names (rounds 2)"``) or of a variant.

    Raises
    ------
    ConfigError on an unknown method (the message lists the known ones) or anonymise mode, a mode on a
    statistical method, or rounds on a method without debate rounds or outside 1-5.

    >>> variant("DCM-only@names")
    MethodVariant(base='dcm_only', anonymise='names', rounds=None)
    """
    return _checked(method.name if isinstance(method, MethodVariant) else method)


def resolve_methods(names: Sequence[str]) -> list[MethodVariant]:
    """Check method names up front; ``"statistical"`` expands to the five pool algorithms.

    Raises
    ------
    ConfigError on an unknown name (the message lists the valid ones).
    """
    out: list[MethodVariant] = []
    for name in names:
        key = name.lower().replace("-", "_")
        for k in list(ALGORITHMS) if key in ("statistical", "stat") else [key]:
            if (v := variant(k)) not in out:
                out.append(v)
    return out


def with_anonymise(methods: Sequence[str | MethodVariant], modes: Sequence[str]) -> list[MethodVariant]:
    """Each LLM method once per memorisation-control mode (``mac``, ``mac@names``, ``mac@all``...).

    Statistical methods are kept once; mode ``none`` keeps the plain name.

    >>> [v.name for v in with_anonymise(["mac", "pc"], ["none", "names"])]
    ['mac', 'mac@names', 'pc']
    """
    out: list[MethodVariant] = []
    for m in map(variant, methods):
        for mode in modes if METHODS[m.base].llm else ["none"]:
            v = variant(MethodVariant(m.base, mode))
            if v not in out:
                out.append(v)
    return out


def expand_rounds(methods: Sequence[str | MethodVariant], rounds: Sequence[int]) -> list[MethodVariant]:
    """Each method with debate rounds once per ``--rounds`` value (in the order given), the others once; one
    value (or none) names no variant (it sets ``mac.rounds``).

    Raises
    ------
    ConfigError on a value outside 1-5.

    >>> [v.name for v in expand_rounds(["mac", "pc", "mac_single"], [1, 3])]
    ['mac (rounds 1)', 'mac (rounds 3)', 'pc', 'mac_single']
    """
    for r in rounds:
        if int(r) not in ROUNDS_RANGE:
            raise ConfigError(f"rounds must be in 1-5 (MAC §4.3 varies 1 to 5), got {r}")
    values = list(dict.fromkeys(int(r) for r in rounds))
    if len(values) < 2:
        return list(map(variant, methods))
    out: list[MethodVariant] = []
    for m in map(variant, methods):
        names = [m.with_rounds(r) for r in values] if METHODS[m.base].has_rounds else [m]
        out += [n for n in names if n not in out]
    return out


def _config(v: MethodVariant, config: DiscoveryConfig) -> DiscoveryConfig:
    """``config`` resolved (the executor here, never ``auto``), a rounds variant's ``mac.rounds`` set."""
    config = config.resolved()
    if v.rounds is None:
        return config
    return config.model_copy(update={"mac": config.mac.model_copy(update={"rounds": v.rounds})})


def method_stages(method: str | MethodVariant, config: DiscoveryConfig) -> tuple[str, ...]:
    """LLM stages a method calls (empty for statistical baselines)."""
    spec = METHODS[variant(method).base]
    if not spec.llm:
        return ()
    if spec.family == "baseline":
        return (BASELINE_STAGE,)
    coder = (CODER_STAGE,) if config.resolved().mac.executor == "coding" and spec.name != "mdm_only" else ()
    return (DEBATE_STAGE,) + coder


def mac_settings(method: str | MethodVariant, config: DiscoveryConfig) -> MACSettings:
    """The MAC settings a MAC method runs with: ``config.mac``, its ablation's fields and its rounds set."""
    v = variant(method)
    mac = config.mac if v.rounds is None else config.mac.model_copy(update={"rounds": v.rounds})
    return mac.model_copy(update=dict(METHODS[v.base].mac))


def method_settings(method: str | MethodVariant, config: DiscoveryConfig) -> dict[str, Any]:
    """The settings a method runs with, as the run applies them (JSON-able; for the run plan).

    MAC's ablations show their variant (``mac_single``: ``single_agent``; ``dcm_only``/``mdm_only``:
    ``stages``); ``react``, ``llm_scd`` and ``ils_csl`` their own settings; ``llm_zero_shot`` the MAC
    fields it reads (``max_tokens_scale``, ``sampling_temperature``); a statistical method its wall
    limit. An LLM method adds ``temperature_used``, what its calls use in this run
    (:func:`llm_temperature`; None = the profile's temperature). An anonymised method (``mac@names``)
    adds ``anonymise``; a rounds variant shows its ``mac.rounds``. ``mac.executor`` shows the executor
    that runs here (never ``auto``).

    Raises
    ------
    ConfigError on an unknown method.
    """
    v = variant(method)
    spec, config = METHODS[v.base], _config(v, config)
    out: dict[str, Any]
    if not spec.llm:
        return {"algorithm_timeout_s": config.algorithm_timeout_s}
    if spec.family == "mac":
        out = mac_settings(v, config).model_dump(mode="json")
        out["paper_unspecified"] = unspecified_notes(config.mac, MAC_PAPER_UNSPECIFIED)
    elif spec.settings_field is None:  # llm_zero_shot reads MAC's fields
        out = {
            "max_tokens_scale": config.mac.max_tokens_scale,
            "edges_per_variable": config.mac.edges_per_variable,
            "sampling_temperature": config.mac.sampling_temperature,
        }
    else:
        out = getattr(config, spec.settings_field).model_dump(mode="json")
        if spec.name == "react":
            out["paper_unspecified"] = unspecified_notes(config.react, REACT_PAPER_UNSPECIFIED)
    out["temperature_used"] = llm_temperature(v, config)  # what this run's calls use (None = the profile's)
    return {**out, "anonymise": v.anonymise} if v.anonymise != "none" else out


def llm_temperature(method: str | MethodVariant, config: DiscoveryConfig) -> float | None:
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
    spec = METHODS[variant(method).base]
    if not spec.llm:
        return None
    if spec.name == "llm_scd":
        return config.llm_scd.temperature
    settings = config.mac if spec.reads_mac else getattr(config, spec.settings_field or "")
    return settings.sampling_temperature if config.samples > 1 else None


def method_handler(method: str | MethodVariant, config: DiscoveryConfig) -> tuple[Handler, DiscoveryConfig]:
    """The handler of a method (``mac``, ``pc``, ``mac@names``, ``mac (rounds 2)`` ...) and the config it runs
    with (a rounds variant's ``mac.rounds`` applied, the executor resolved): ``(call, dataset, config, seed)
    -> (graph, details)``.

    The handler's LLM calls read and write the reply-cache namespace of the variant's display name
    (:meth:`agentcausal.llm.Gateway.namespaced`): each method (each rounds and anonymised variant too) reads
    only the replies it cached itself, so ``dcm_only`` never reads the algorithm debate ``mac`` sent first
    with the same prompt and its tokens and cost are those of a run of it alone, in one run and under
    ``--refresh`` alike (MAC arXiv:2407.15073 §4.3-§4.4 cost each method alone). An anonymised variant
    runs on neutral variable ids and gets its graph back under the dataset's names.

    Raises
    ------
    ConfigError on an unknown method (the message lists the valid ones).
    """
    v = variant(method)
    run, mode = METHODS[v.base].run, v.anonymise

    def handler(call: LLMCall | None, ds: Dataset, config: DiscoveryConfig, seed: int):
        call = replace(call, gateway=call.gateway.namespaced(v.name)) if call is not None else None
        if mode == "none":
            return run(call, ds, config, seed)
        anon, back = anonymise(ds, mode)
        graph, details = run(call, anon, config, seed)
        return restore_names(graph, back, ds.variables), {**details, "anonymise": {"mode": mode, "ids": back}}

    return handler, _config(v, config)
