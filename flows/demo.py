"""The ``demo`` flow: the main job of the README on real inputs, as two subflows.

1. ``attribute`` — All-at-Once, Step-by-Step, Binary-Search and DCFA over the
   demo trace selection (our example traces plus a fixed selection of real
   Who&When traces);
2. ``discover`` — MAC beside the statistical baselines on Earthquake and Asia,
   and the statistical baselines alone on Cancer, Survey, Child and Auto MPG.

Wiring only; the selection itself is :mod:`agentcausal.demo`.
"""

from __future__ import annotations

from prefect import flow

from agentcausal.demo import DemoPlan
from agentcausal.settings import RunSettings
from flows.attribute import attribute
from flows.discover import discover

__all__ = ["demo"]


@flow(name="demo", log_prints=True)
def demo(plan: DemoPlan, settings: RunSettings | None = None, progress: bool = False) -> dict[str, str]:
    """Run the demo plan; return ``{"attribution": dir, "discovery-mac": dir, "discovery-statistical": dir}``.

    Parameters
    ----------
    plan : DemoPlan, what to run and where to write it (see :func:`agentcausal.demo.demo_plan`)
    settings : RunSettings; default from the environment
    progress : tqdm bars on stderr
    """
    settings = settings or RunSettings.from_env()
    out: dict[str, str] = {}
    if plan.trace_paths:
        out["attribution"] = attribute(paths=list(plan.trace_paths), methods=list(plan.attribution_methods),
                                       settings=settings, out_dir=f"{plan.out_dir}/attribution", progress=progress)
    if plan.mac_datasets:
        out["discovery-mac"] = discover(datasets=list(plan.mac_datasets), methods=list(plan.mac_methods),
                                        seeds=list(plan.seeds), n=plan.n, settings=settings,
                                        out_dir=f"{plan.out_dir}/discovery-mac", progress=progress)
    if plan.statistical_datasets:
        out["discovery-statistical"] = discover(
            datasets=list(plan.statistical_datasets), methods=list(plan.statistical_methods),
            seeds=list(plan.seeds), n=plan.n, settings=settings,
            out_dir=f"{plan.out_dir}/discovery-statistical", progress=progress)
    return out
