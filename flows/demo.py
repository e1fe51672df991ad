"""The ``demo`` flow: the main job of the README on real inputs, as two subflows.

1. ``attribute`` — All-at-Once, Step-by-Step, Binary-Search and DCFA over the
   demo trace selection (our example traces plus a fixed selection of real
   Who&When traces);
2. ``discover`` — the statistical baselines on Earthquake, Cancer, Survey, Asia,
   Child and Auto MPG, with MAC and the zero-shot LLM baseline on Earthquake and Asia.

Wiring only; the selection itself is :mod:`agentcausal.demo_selection`.
"""

from __future__ import annotations

from prefect import flow

from agentcausal.demo_selection import DemoSelection
from agentcausal.settings import RunSettings
from flows.attribute import attribute
from flows.discover import discover

__all__ = ["demo"]


@flow(name="demo", log_prints=True)
def demo(plan: DemoSelection, settings: RunSettings | None = None, progress: bool = False,
         preset: str | None = None) -> dict[str, str]:
    """Run the demo plan; return ``{"attribution": run folder, "discovery": run folder}``.

    Parameters
    ----------
    plan : DemoSelection, what to run and where to write it (see :func:`agentcausal.demo_selection.demo_selection`)
    settings : RunSettings; default from the environment
    progress : tqdm bars on stderr
    preset : method-settings preset (``paper``/``small``); None = the routing's (:mod:`agentcausal.settings`)
    """
    settings = settings or RunSettings.from_env()
    from agentcausal.discovery.mac import settings as mac_settings
    from agentcausal.discovery.config import DiscoveryConfig
    from agentcausal.settings import resolve, routing_preset

    preset = preset or routing_preset(settings.profiles_path, settings.routing)
    config = DiscoveryConfig(mac=resolve(mac_settings.MACSettings, getattr(mac_settings, "PRESETS", {}), preset))
    out: dict[str, str] = {}
    if plan.trace_paths:
        out["attribution"] = attribute(paths=list(plan.trace_paths), methods=list(plan.attribution_methods),
                                       settings=settings, out_dir=f"{plan.out_dir}/attribution", progress=progress,
                                       preset=preset)
    if plan.datasets:
        out["discovery"] = discover(datasets=list(plan.datasets),
                                    methods=[*plan.llm_methods, *plan.statistical_methods],
                                    llm_datasets=list(plan.llm_datasets), seeds=list(plan.seeds), n=plan.n,
                                    settings=settings, config=config, out_dir=f"{plan.out_dir}/discovery",
                                    progress=progress)
    return out
