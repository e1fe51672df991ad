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

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.demo_selection import DemoSelection
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.mac.settings import PRESETS as MAC_PRESETS
from agentcausal.discovery.mac.settings import MACSettings
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.runs.options import RunOptions
from agentcausal.settings import RunSettings, resolve, routing_preset
from flows.attribute import attribute
from flows.discover import discover
from flows.engine import run_dir_of

__all__ = ["demo"]


@flow(name="demo", log_prints=True)
def demo(
    selection: DemoSelection, settings: RunSettings | None = None, progress: bool = False, preset: str | None = None
) -> dict[str, str]:
    """Run the demo's selection; return ``{"attribution": run folder, "discovery": run folder}``.

    Parameters
    ----------
    selection : DemoSelection, what to run and where to write it (see :func:`agentcausal.demo_selection.demo_selection`)
    settings : RunSettings; default from the environment
    progress : tqdm bars on stderr
    preset : method-settings preset (``paper``/``small``); None = the routing's (:mod:`agentcausal.settings`)
    """
    settings = settings or RunSettings.from_env()
    preset = preset or routing_preset(settings.profiles_path, settings.routing)
    config = DiscoveryConfig(mac=resolve(MACSettings, MAC_PRESETS, preset))
    out: dict[str, str] = {}
    if selection.trace_paths:
        out["attribution"] = run_dir_of(  # its rows not computed: the subflow run Failed, the demo goes on
            lambda: attribute(
                plan=AttributionRequest(
                    paths=list(selection.trace_paths), methods=list(selection.attribution_methods), preset=preset
                ),
                run=RunOptions(out_dir=f"{selection.out_dir}/attribution", progress=progress),
                settings=settings,
            )
        )
    if selection.datasets:
        out["discovery"] = run_dir_of(
            lambda: discover(
                plan=DiscoveryRequest(
                    datasets=list(selection.datasets),
                    methods=[*selection.llm_methods, *selection.statistical_methods],
                    llm_datasets=list(selection.llm_datasets),
                    seeds=list(selection.seeds),
                    n=selection.n,
                    config=config,
                ),
                run=RunOptions(out_dir=f"{selection.out_dir}/discovery", progress=progress),
                settings=settings,
            )
        )
    return out
