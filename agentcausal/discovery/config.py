"""The settings of a discovery run that every method shares (:class:`DiscoveryConfig`).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1-§4.4.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agentcausal.discovery.llm.ils_csl import ILSCSLSettings
from agentcausal.discovery.llm.llm_scd import LLMSCDSettings
from agentcausal.discovery.llm.react import ReActSettings
from agentcausal.discovery.mac.executor import resolve_executor
from agentcausal.discovery.mac.settings import MACSettings

__all__ = ["DiscoveryConfig"]


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
        mode, note = resolve_executor("auto")
        return self.model_copy(
            update={"mac": self.mac.model_copy(update={"executor": mode}), "executor_fallback": note}
        )
