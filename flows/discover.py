"""The ``discover`` flow: datasets x seeds x methods as mapped, cached, retried tasks; then the report.

Wiring only: load each (dataset, seed), check the methods up front, map
``discover_one`` over every (dataset, seed, method) missing from the results
index (:mod:`agentcausal.resume`; the others are reused without a task run) (LLM methods first, so
the long debates start while the statistical baselines run; with
``--retry-failed`` the runs whose cached outcome is ``content_failed`` or
``degraded`` are mapped with a cache refresh), record failures that survive
the retries as ``status="failed"`` outcomes (never cached), put the current
true graph into every outcome (scoring happens outside the cached step), mark
outcomes served by Prefect's cache ``reused``, save, evaluate, and publish a
Prefect table artifact and the markdown report.

Run it from Python::

    from flows.discover import run_discover
    run_dir = run_discover(["earthquake", "asia"], ["mac", "pc"], seeds=[0], n=1000)
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow, unmapped
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from agentcausal.discovery.methods import DCM_METHODS, LLM_METHODS, DiscoveryConfig, DiscoveryOutcome, \
    method_stages, resolve_methods
from agentcausal.discovery.rounds import base_method
from agentcausal.discovery.user_data import unique_dataset_names
from agentcausal.exceptions import ConfigError
from agentcausal.plan import Plan, discover_plan
from agentcausal.report.artifacts import self_contained_markdown
from agentcausal.report.discovery import run_notes, table_records
from agentcausal.settings import RunSettings
from flows import naming
from flows.progress import RunProgress
from flows.runners import RunnerChoice, with_runner
from tasks.common import gateway_for, plan_task_resume, result_index, was_cached
from tasks.discovery import discover_one, discover_options, discover_task_key, load_discovery_dataset, \
    report_discovery, save_discovery

__all__ = ["discover", "run_discover", "default_run_dir"]


def default_run_dir(out_root: str = "runs") -> str:
    """``runs/discover-YYYYmmdd-HHMMSS``."""
    return str(Path(out_root) / f"discover-{dt.datetime.now():%Y%m%d-%H%M%S}")


@flow(name="discover", log_prints=True, flow_run_name=naming.discover_run_name,
      task_runner=ThreadPoolTaskRunner(max_workers=3))
def discover(
    datasets: list[str],
    methods: list[str] = ["mac"],  # noqa: B006 (Prefect parameters are copied)
    seeds: list[int] = [0],  # noqa: B006
    n: int = 1000,
    config: DiscoveryConfig | None = None,
    settings: RunSettings | None = None,
    out_dir: str | None = None,
    reversal_cost: int = 1,
    progress: bool = False,
    llm_datasets: list[str] | None = None,
    meta: dict[str, Any] | None = None,
    plan: Plan | dict[str, Any] | None = None,
    repeats: int = 1,
) -> str:
    """Run every method on every dataset and seed; write a run folder; return its path.

    Parameters
    ----------
    datasets : benchmark names or ``.csv``/``.parquet`` paths (metadata beside them as ``.json``)
    methods : method names (see :data:`agentcausal.discovery.methods.METHODS`; ``statistical`` = the pool)
    seeds : sampling seeds (bnlearn networks) and MAC subset seeds
    n : rows sampled from a bnlearn network
    config : DiscoveryConfig (MAC settings, timeouts)
    settings : RunSettings (routing, cache folder, refresh); default from the environment
    out_dir : the run folder; default ``runs/discover-<timestamp>``
    reversal_cost : 1 or 2, how SHD counts a reversed edge
    progress : show a tqdm bar on stderr
    llm_datasets : run LLM methods (MAC, its ablations, zero-shot) only on these datasets
        (default: on all); statistical methods run on every dataset
    meta : extra entries for ``run.json`` (the CLI passes ``{"skipped": [...]}``, the datasets it left out)
    plan : the run plan (:class:`agentcausal.plan.Plan` or its JSON dict; the CLI builds it once). Its dataset
        items (id, path, sha256; in ``datasets`` order) are checked by the load task: a dataset file changed
        since the plan is an :class:`~agentcausal.exceptions.ItemChangedError` naming it. None: the flow builds
        it (:func:`agentcausal.plan.discover_plan`). Stored in ``run.json`` as ``plan``.
    repeats : runs per (dataset, seed, LLM method), repeat r in the config (``DiscoveryConfig.repeat``,
        so in the cache key and MAC's samples); statistical methods run once

    Returns
    -------
    str, the run folder holding ``results.parquet``, ``outcomes.jsonl``, ``summary.csv``,
    ``run.json``, ``graphs/`` and ``report.md``.
    """
    settings = settings or RunSettings.from_env()
    config = config or DiscoveryConfig()
    if config.mac.executor == "auto":  # a Python caller's default (the CLI resolves and says it itself)
        config = config.resolved()
        if config.executor_fallback and any(base_method(m) in DCM_METHODS for m in resolve_methods(methods)):
            print(config.executor_fallback)
    reps = max(1, repeats)
    config = config.model_copy(update={"samples": len(seeds) * reps})  # > 1: methods' sampling_temperature
    if reps > 1 and "repeat" not in DiscoveryConfig.model_fields:
        raise ConfigError("--repeats > 1 needs DiscoveryConfig.repeat (the repeat index in MAC's key and samples)")
    configs = [config if r == 0 else config.model_copy(update={"repeat": r}) for r in range(reps)]
    names = resolve_methods(methods)
    if plan is None:
        from agentcausal.presets import routing_preset

        plan = discover_plan(list(datasets), names, config=config, routing=settings.routing,
                             preset=routing_preset(settings.profiles_path, settings.routing),
                             profiles_path=settings.profiles_path, n=n, repeats=reps, seeds=list(seeds))
    plan = plan if isinstance(plan, Plan) else Plan.model_validate(plan)
    item_of = dict(zip(datasets, plan.items)) if len(plan.items) == len(datasets) else {}
    naming.add_run_tags(names, settings, preset=getattr(settings, "preset", None))
    subject = "+".join(datasets)
    llm = {m for m in names if base_method(m) in LLM_METHODS}  # "mac@names", "mac (rounds 2)": LLM methods
    ordered = [m for m in names if m in llm] + [m for m in names if m not in llm]
    pairs = [(spec, s) for spec in datasets for s in seeds]
    names_of = unique_dataset_names(list(datasets))  # two <folder>/data.csv get distinct names
    loaded = load_discovery_dataset.map(spec=[p for p, _ in pairs], n=unmapped(n), seed=[s for _, s in pairs],
                                        name=[names_of[p] for p, _ in pairs],
                                        item=[item_of.get(p) for p, _ in pairs])
    data = [f.result() for f in loaded]
    llm_only = None if llm_datasets is None else {d.lower() for d in llm_datasets}
    jobs = [(m, i, r) for m in ordered for i in range(len(pairs))
            if m not in llm or llm_only is None or pairs[i][0].lower() in llm_only
            or data[i].name in llm_only
            for r in (range(reps) if m in llm else (0,))]  # repeats: LLM methods only
    started = time.time()
    keys = [discover_task_key(data[i], m, configs[r], settings, pairs[i][1]) for m, i, r in jobs]
    index = result_index(settings, "discover")
    resume = plan_task_resume(keys, index, settings)
    run, rerun = resume.run, resume.rerun
    futures: dict[int, Any] = {}
    for idx, refresh in ((run, settings.refresh), (rerun, True)):
        if idx:
            mapped = discover_one.with_options(**discover_options(settings, refresh=refresh)).map(
                dataset=[data[jobs[k][1]] for k in idx], method=[jobs[k][0] for k in idx],
                config=[configs[jobs[k][2]] for k in idx],
                settings=unmapped(settings), seed=[pairs[jobs[k][1]][1] for k in idx])
            futures.update(zip(idx, mapped))
    results: dict[int, Any] = dict(resume.reused)
    if resume.reused:
        print(f"discover: {len(resume.reused)} of {len(jobs)} runs reused from the results index (no task run)")
        create_table_artifact(
            [{"dataset": r.dataset, "seed": r.seed, "method": r.method, "status": r.status}
             for r in list(resume.reused.values())[:1000]],
            key=naming.key("discover-reused", subject),
            description=f"{len(resume.reused)} of {len(jobs)} (dataset, seed, method) runs reused from the results "
                        "index (no task run)")
    shown = RunProgress(len(jobs), len(results), desc="discover", unit="run", bar=progress,
                        key=naming.key("discover-progress", subject),
                        description=f"{len(jobs)} (dataset, seed, method) runs, {len(results)} reused")
    position = {id(f): k for k, f in futures.items()}
    for f in as_completed(list(futures.values())):
        k = position[id(f)]
        res = f.result(raise_on_failure=False)
        if isinstance(res, DiscoveryOutcome):
            res = res.model_copy(update={"reused": res.reused or was_cached(f)})
            index.put(keys[k], res)
        results[k] = res
        shown.advance()
    shown.close()
    outcomes = []
    for k, (m, i, _r) in enumerate(jobs):
        res = results.get(k)
        ds = data[i]
        if isinstance(res, DiscoveryOutcome):  # scored against the truth of now, not of when it was cached
            outcomes.append(res.model_copy(update={"true_graph": ds.true_graph, "dataset": ds.name}))
        else:  # raised: a failure of the run (transport, timeout ...), not cached, retried by the next run
            outcomes.append(DiscoveryOutcome(dataset=ds.name, seed=pairs[i][1], n=ds.n, method=m,
                                             true_graph=ds.true_graph, error=f"task failed: {res!r}"[:2000],
                                             status="failed", status_detail=type(res).__name__))
    order = sorted(range(len(jobs)), key=lambda k: (datasets.index(pairs[jobs[k][1]][0]), names.index(jobs[k][0]),
                                                     pairs[jobs[k][1]][1], jobs[k][2]))
    outcomes = [outcomes[k] for k in order]  # dataset-major, methods in the order asked
    stages = sorted({s for m in names for s in method_stages(m, config)})
    gw = gateway_for(settings) if stages else None
    meta = {**(meta or {}), "datasets": list(datasets), "methods": names, "llm_datasets": llm_datasets, "seeds": list(seeds),
            "n": n,
            "routing": settings.routing, "config": config.model_dump(mode="json"),
            "models": {s: gw.model_for(s) for s in stages} if gw else {},
            "started": dt.datetime.fromtimestamp(started).isoformat(timespec="seconds"),
            "wall_seconds": round(time.time() - started, 2), "reversal_cost": reversal_cost,
            "retry_failed": settings.retry_failed, "refresh": settings.refresh,
            "preset": plan.preset,  # top level, as attribute's run.json has it
            "plan": plan.to_json_dict(), "repeats": reps,  # the run plan (agentcausal.plan), as --dry-run prints it
            "notes": run_notes(outcomes)}  # e.g. a dataset without a true graph (metrics shown as -)
    run_dir = out_dir or default_run_dir()
    save_discovery(outcomes, run_dir, meta)
    files = report_discovery(run_dir, reversal_cost)
    create_table_artifact(table_records(files.frame), key=naming.key("discovery-metrics", subject),
                          description=f"SHD / NHD / F1 per dataset and method (SHD reversal cost {reversal_cost})")
    create_markdown_artifact(self_contained_markdown(files.report.read_text(), run_dir),
                             key=naming.key("discovery-report", subject), description=f"run folder {run_dir}")
    return run_dir


def run_discover(datasets: Sequence[str], methods: Sequence[str], *, seeds: Sequence[int] = (0,), n: int = 1000,
                 config: DiscoveryConfig | None = None, settings: RunSettings | None = None,
                 runner: RunnerChoice | None = None, **kw: Any) -> str:
    """Plain-Python entry point (CLI, demo): :func:`discover` with list arguments, on ``runner``'s task runner.

    The default runner is a pool of 3 threads (algorithm runs are worker
    processes; the gateway limits concurrent LLM calls per endpoint).
    """
    fl = with_runner(discover, runner) if runner is not None else discover
    return fl(datasets=list(datasets), methods=list(methods), seeds=[int(s) for s in seeds], n=n, config=config,
              settings=settings, **kw)
