"""The run plan of ``agentcausal discover``: the datasets by name, path and hash, the methods as they will run.

The schema is :mod:`agentcausal.runs.plan`'s (one for both verbs); this module builds a discovery plan.
A discovery method's ``temperature_used`` holds the profile's temperature when its stages agree on
one, with ``temperature_from`` (``setting``, ``profile``, ``not sent`` or ``profile (per stage)``;
``setting (not sent: …)`` when the profile takes no temperature) saying where it comes from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.data.datasets import BENCHMARKS, data_dir, load_dataset, load_spec
from agentcausal.discovery.data.user_data import unique_dataset_names
from agentcausal.discovery.estimate import estimate_discovery
from agentcausal.discovery.method_settings import method_settings, method_stages
from agentcausal.discovery.plan_model import DiscoveryPlan, DiscoveryRequest
from agentcausal.discovery.spec import DiscoverySpec
from agentcausal.discovery.variants import RunVariant, resolve_methods
from agentcausal.methods import MethodTable
from agentcausal.runs.plan import (
    MethodPlan,
    PlanItem,
    absolute_path,
    missing_keys,
    profile_params,
    routed_profiles,
    sha256_file,
    stage_models,
)
from agentcausal.settings import RunSettings, routing_preset

__all__ = ["discover_plan", "plan_discovery"]


def _with_temperature(settings: dict[str, Any], params: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A discovery method's ``temperature_used`` as its calls apply it, with ``temperature_from``."""
    if "temperature_used" not in settings:
        return settings
    if settings["temperature_used"] is not None:
        unsent = bool(params) and all(p["temperature"] is None for p in params.values())
        return {**settings, "temperature_from": "setting (not sent: the profile takes none)" if unsent else "setting"}
    temps = {p["temperature"] for p in params.values()}
    if len(temps) != 1:  # no routed stage, or stages that disagree: see profile_params
        return {**settings, "temperature_from": "profile (per stage)"}
    (t,) = temps
    return {**settings, "temperature_used": t, "temperature_from": "profile" if t is not None else "not sent"}


def _dataset_item(spec: str, n: int, name: str, seeds: Sequence[int], loaded: Dataset | None = None) -> PlanItem:
    """n, d, a file hash of a dataset and the content hash of each seed's rows (a network sampled once per
    seed, here only); ``loaded``: the user dataset as the CLI's check already read it (not read again)."""
    key = spec.lower().replace("-", "_")
    if key in ("auto", "autompg"):
        key = "auto_mpg"
    if key in BENCHMARKS:
        root = data_dir()
        desc_path = root / "descriptions" / f"{key}.json"
        d = len(json.loads(desc_path.read_text()).get("variables", {}))
        bif = root / "bnlearn" / f"{key}.bif.gz"
        if bif.is_file():
            hashes = tuple((s, load_dataset(key, n=n, seed=s).content_hash()) for s in dict.fromkeys(seeds))
            return PlanItem(
                id=key, path=absolute_path(bif), sha256=sha256_file(bif), spec=key, n=n, d=d, data_hashes=hashes
            )
        ds = load_dataset(key, n=n)  # auto_mpg: a small CSV, every row
        return PlanItem(
            id=key,
            path=absolute_path(desc_path),
            sha256=sha256_file(desc_path),
            spec=key,
            n=int(ds.data.shape[0]),
            d=d,
            data_hashes=_same_rows(ds, seeds),
        )
    data_path = spec.split("::", 1)[0]
    ds = loaded if loaded is not None else load_spec(spec, name=name)
    return PlanItem(
        id=ds.name,
        path=absolute_path(data_path),
        sha256=sha256_file(Path(data_path)),
        spec=spec,
        n=int(ds.data.shape[0]),
        d=len(ds.variables),
        data_hashes=_same_rows(ds, seeds),
    )


def _same_rows(ds: Dataset, seeds: Sequence[int]) -> tuple[tuple[int, str], ...]:
    """A dataset whose rows no seed changes (Auto MPG, a user table): one content hash for every seed."""
    h = ds.content_hash()
    return tuple((s, h) for s in dict.fromkeys(seeds))


def discover_plan(
    datasets: Sequence[str],
    methods: Sequence[RunVariant],
    *,
    config: DiscoveryConfig,
    preset: str,
    routing: str,
    profiles_path: str | None = None,
    n: int = 1000,
    repeats: int = 1,
    anonymise: Sequence[str] = (),
    seeds: Sequence[int] = (0,),
    llm_datasets: Sequence[str] | None = None,
    skipped: Sequence[dict[str, Any]] | None = None,
    loaded: Mapping[str, Dataset] | None = None,
) -> DiscoveryPlan:
    """The plan of ``agentcausal discover``.

    Parameters
    ----------
    datasets : dataset names or paths (expanded)
    methods : the method variants (:func:`~agentcausal.discovery.variants.resolve_methods`); the plan names
        each by its display name
    config : DiscoveryConfig, stored in the plan as the run's config, its executor resolved and
        ``samples`` = seeds x repeats (above 1 the LLM methods sample at their ``sampling_temperature``)
    preset : str, the preset MAC's settings were resolved with
    routing, profiles_path : the routing and profiles file
    n : int, rows sampled from a bnlearn network
    repeats : int, runs per (dataset, seed, LLM method); statistical methods run once
    anonymise : variable-anonymisation choices (``--anonymise``; empty = not asked, shown as ``["none"]``)
    seeds : the run seeds
    llm_datasets : run LLM methods only on these datasets (names or specs; None: on every one)
    skipped : the invalid datasets ``--skip-invalid`` left out
    loaded : spec -> Dataset, user datasets already read and checked (the CLI's check); not read again

    Returns
    -------
    DiscoveryPlan with items carrying ``spec``, ``n`` and ``d``; ``llm_datasets`` as item ids.

    Raises
    ------
    DatasetError, ConfigError
    """
    config = config.resolved().model_copy(update={"samples": len(seeds) * max(1, repeats)})
    profiles = routed_profiles(profiles_path, routing)
    all_stages: list[str] = []
    mplans = {}
    for m in methods:
        stages = list(method_stages(m.spec, config))
        all_stages += stages
        params = profile_params(profiles, stages)
        mplans[m.name] = MethodPlan(
            preset=preset,
            variant="default",
            settings=_with_temperature(method_settings(m, config), params),
            stages=stage_models(profiles, stages),
            profile_params=params,
        )
    names = unique_dataset_names(list(datasets))  # two <folder>/data.csv get distinct names
    items = [_dataset_item(d, n, names[d], seeds, (loaded or {}).get(d)) for d in datasets]
    llm = None
    if llm_datasets is not None:
        wanted = {d.lower() for d in llm_datasets}
        llm = [i.id for i in items if i.id.lower() in wanted or (i.spec or "").lower() in wanted]
    estimate = estimate_discovery(
        items, list(methods), config, profiles, seeds=list(seeds), repeats=repeats, n=n, llm_datasets=llm, loaded=loaded
    )
    return DiscoveryPlan(
        routing=routing,
        preset=preset,
        items=items,
        item_count=len(items),
        methods=mplans,
        repeats=repeats,
        seeds=list(seeds),
        n=n,
        config=DiscoveryConfig.model_validate(config.model_dump(mode="json")),  # as plan.json reads it back
        llm_datasets=llm,
        missing_keys=missing_keys(profiles, all_stages),
        anonymise=list(anonymise),
        skipped=list(skipped) if skipped is not None else None,
        estimate=estimate,
    )


def plan_discovery(
    request: DiscoveryRequest, settings: RunSettings, methods: MethodTable[DiscoverySpec]
) -> DiscoveryPlan:
    """The plan of a discovery request (what a scheduled ``discover`` flow run is given): the methods resolved
    in ``methods`` (:data:`agentcausal.registry.DISCOVERY_METHODS`), the config's executor resolved (``auto``:
    the coding agent where the sandbox works, else typed, said in one line), MAC's settings under the routing's
    preset.

    Raises
    ------
    ConfigError, DatasetError
        On an unknown method or dataset.
    """
    config = request.config or DiscoveryConfig()
    names = resolve_methods(methods, request.methods)
    if config.mac.executor == "auto":  # a Python caller's default (the CLI resolves and says it itself)
        config = config.resolved()
        if config.executor_fallback and any(m.spec.runs_dcm for m in names):
            print(config.executor_fallback)
    return discover_plan(
        list(request.datasets),
        names,
        config=config,
        routing=settings.routing,
        preset=routing_preset(settings.profiles_path, settings.routing),
        profiles_path=settings.profiles_path,
        n=request.n,
        repeats=request.repeats,
        seeds=list(request.seeds),
        llm_datasets=request.llm_datasets,
    )
