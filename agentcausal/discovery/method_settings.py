"""What a discovery method variant runs with: its config, stages, settings, sampling temperature and handler.

Each function takes the variant checked against its method's spec (:class:`~agentcausal.discovery.variants.RunVariant`,
:func:`~agentcausal.discovery.variants.variant`) or the spec itself; none looks a method up by name.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1-§4.4.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.anonymise import anonymise, restore_names
from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.llm.react import PAPER_UNSPECIFIED as REACT_PAPER_UNSPECIFIED
from agentcausal.discovery.mac.settings import CODER_STAGE, MACSettings, unspecified_notes
from agentcausal.discovery.mac.settings import PAPER_UNSPECIFIED as MAC_PAPER_UNSPECIFIED
from agentcausal.discovery.spec import DiscoverySpec, Handler
from agentcausal.discovery.variants import RunVariant
from agentcausal.llm import LLMCall

__all__ = ["method_stages", "mac_settings", "method_settings", "llm_temperature", "method_handler"]


def _config(v: RunVariant, config: DiscoveryConfig) -> DiscoveryConfig:
    """``config`` resolved (the executor here, never ``auto``), a rounds variant's ``mac.rounds`` set."""
    config = config.resolved()
    if v.rounds is None:
        return config
    return config.model_copy(update={"mac": config.mac.model_copy(update={"rounds": v.rounds})})


def method_stages(spec: DiscoverySpec, config: DiscoveryConfig) -> tuple[str, ...]:
    """LLM stages a method calls under ``config`` (empty for statistical baselines): its spec's, the coder stage
    only with the coding executor (``auto`` resolved).

    >>> from agentcausal.discovery.spec import MAC
    >>> method_stages(MAC, DiscoveryConfig(mac=MACSettings(executor="typed")))
    ('mac.debate',)
    """
    if CODER_STAGE not in spec.stages or config.resolved().mac.executor == "coding":
        return spec.stages
    return tuple(s for s in spec.stages if s != CODER_STAGE)


def mac_settings(v: RunVariant, config: DiscoveryConfig) -> MACSettings:
    """The MAC settings a MAC method runs with: ``config.mac``, its ablation's fields and its rounds set."""
    mac = config.mac if v.rounds is None else config.mac.model_copy(update={"rounds": v.rounds})
    return mac.model_copy(update=dict(v.spec.mac))


def method_settings(v: RunVariant, config: DiscoveryConfig) -> dict[str, Any]:
    """The settings a method runs with, as the run applies them (JSON-able; for the run plan).

    MAC's ablations show their variant (``mac_single``: ``single_agent``; ``dcm_only``/``mdm_only``:
    ``stages``); ``react``, ``llm_scd`` and ``ils_csl`` their own settings; ``llm_zero_shot`` the MAC
    fields it reads (``max_tokens_scale``, ``sampling_temperature``); a statistical method its wall
    limit. An LLM method adds ``temperature_used``, what its calls use in this run
    (:func:`llm_temperature`; None = the profile's temperature). An anonymised method (``mac@names``)
    adds ``anonymise``; a rounds variant shows its ``mac.rounds``. ``mac.executor`` shows the executor
    that runs here (never ``auto``).
    """
    spec, config = v.spec, _config(v, config)
    out: dict[str, Any]
    if not spec.needs_llm:
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
    out["temperature_used"] = llm_temperature(spec, config)  # what this run's calls use (None = the profile's)
    return {**out, "anonymise": v.anonymise} if v.anonymise != "none" else out


def llm_temperature(spec: DiscoverySpec, config: DiscoveryConfig) -> float | None:
    """The sampling temperature a method's LLM calls use under ``config`` (None = the profile's).

    MAC, its ablations and ``llm_zero_shot`` read ``mac.sampling_temperature``, ``react`` and
    ``ils_csl`` their own, each only when the run asks for more than one sample
    (``config.samples > 1``); ``llm_scd`` samples each pair's answers at its ``temperature`` by
    design (Takayama et al., arXiv:2402.01454); statistical methods: None. Sample 0 (seed 0,
    repeat 0) goes out without a ``seed`` (the gateway sends ``seed = sample`` only above 0), so
    above temperature 0 its draw is the server's; it is cached like every other.

    >>> from agentcausal.discovery.spec import ZERO_SHOT
    >>> llm_temperature(ZERO_SHOT, DiscoveryConfig(mac=MACSettings(sampling_temperature=0.7), samples=2))
    0.7
    >>> llm_temperature(ZERO_SHOT, DiscoveryConfig(mac=MACSettings(sampling_temperature=0.7))) is None
    True
    """
    if not spec.needs_llm:
        return None
    if spec.name == "llm_scd":
        return config.llm_scd.temperature
    settings = config.mac if spec.reads_mac else getattr(config, spec.settings_field or "")
    return settings.sampling_temperature if config.samples > 1 else None


def method_handler(v: RunVariant, config: DiscoveryConfig) -> tuple[Handler, DiscoveryConfig]:
    """The handler of a method variant (``mac``, ``pc``, ``mac@names``, ``mac (rounds 2)`` ...) and the config it runs
    with (a rounds variant's ``mac.rounds`` applied, the executor resolved): ``(call, dataset, config, seed)
    -> (graph, details)``.

    The handler's LLM calls read and write the reply-cache namespace of the variant's display name
    (:meth:`agentcausal.llm.Gateway.namespaced`): each method (each rounds and anonymised variant too) reads
    only the replies it cached itself, so ``dcm_only`` never reads the algorithm debate ``mac`` sent first
    with the same prompt and its tokens and cost are those of a run of it alone, in one run and under
    ``--refresh`` alike (MAC arXiv:2407.15073 §4.3-§4.4 cost each method alone). An anonymised variant
    runs on neutral variable ids and gets its graph back under the dataset's names.
    """
    run, mode = v.spec.run, v.anonymise

    def handler(call: LLMCall | None, ds: Dataset, config: DiscoveryConfig, seed: int):
        call = replace(call, gateway=call.gateway.namespaced(v.name)) if call is not None else None
        if mode == "none":
            return run(call, ds, config, seed)
        anon, back = anonymise(ds, mode)
        graph, details = run(call, anon, config, seed)
        return restore_names(graph, back, ds.variables), {**details, "anonymise": {"mode": mode, "ids": back}}

    return handler, _config(v, config)
