"""Discovery jobs: one method on one dataset and seed, in the run envelope, as one :class:`DiscoveryOutcome`.

:func:`run_discovery` never raises for a content failure (a reply still
invalid after all repairs, an algorithm failing on the data): the
:class:`DiscoveryOutcome` records the error with ``status="content_failed"``,
so one failure does not stop a benchmark. Failures of the run (transport,
401, rate limit, an algorithm timeout or dead worker) are re-raised when
``raise_transient`` is set, so an orchestrator retries them and never caches
them; otherwise they are recorded with ``status="failed"``. A MAC run that
fell back after a failed stage (coding executor to typed, an invalid
Negative or Judge reply) is ``status="degraded"``.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1-§4.4.
"""

from __future__ import annotations

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.datasets import Dataset
from agentcausal.discovery.mac.prompts import PROMPT_VERSION
from agentcausal.discovery.outcome import DiscoveryOutcome, degradation
from agentcausal.discovery.registry import DCM_METHODS, method_handler, method_stages
from agentcausal.exceptions import ConfigError
from agentcausal.llm import Gateway
from agentcausal.records import failure_fields
from agentcausal.runs.envelope import run_enveloped

__all__ = ["run_discovery"]


def run_discovery(method: str, ds: Dataset, gw: Gateway | None = None, config: DiscoveryConfig = DiscoveryConfig(), *,
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
    handler = method_handler(method)  # an unknown method: ConfigError
    config = config.resolved()  # executor "auto": the one that runs here
    stages = method_stages(method, config)
    if stages and gw is None:
        raise ConfigError(f"method {method!r} calls an LLM; pass a gateway")
    item = f"{ds.name}:{seed}:{method}"
    env = run_enveloped(lambda: handler(gw, ds, config, seed, item), gw=gw, stages=stages,
                        usage_items=(item,), raise_transient=raise_transient)
    common = dict(dataset=ds.name, seed=seed, n=ds.n, method=method, true_graph=ds.true_graph,
                  prompt_version=PROMPT_VERSION if stages else "", data_hash=ds.content_hash(), **env.stamp())
    if env.error is not None:
        return DiscoveryOutcome(**common, **failure_fields(env.error, max_chars=2000))
    graph, details = env.result
    if config.executor_fallback and method.partition("@")[0] in DCM_METHODS:
        details = {**details, "executor_fallback": config.executor_fallback}
    detail = degradation(details)
    return DiscoveryOutcome(**common, graph=graph, details=details, status="degraded" if detail else "complete",
                            status_detail=detail)
