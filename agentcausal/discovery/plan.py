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

from agentcausal.discovery.datasets import BENCHMARKS, data_dir, load_dataset, load_user_dataset
from agentcausal.discovery.registry import method_settings, method_stages
from agentcausal.runs.plan import MethodPlan, Plan, PlanItem, absolute_path, missing_keys, profile_params, \
    routed_profiles, sha256_file, stage_models

__all__ = ["discover_plan"]


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


def _dataset_item(spec: str, n: int, loaded: Any = None) -> PlanItem:
    """n, d and a file hash of a dataset, from metadata where that is cheap (bnlearn: the descriptions);
    ``loaded``: the user dataset as the CLI's check already read it (not read again)."""
    key = spec.lower().replace("-", "_")
    if key in ("auto", "autompg"):
        key = "auto_mpg"
    if key in BENCHMARKS:
        root = data_dir()
        desc_path = root / "descriptions" / f"{key}.json"
        d = len(json.loads(desc_path.read_text()).get("variables", {}))
        bif = root / "bnlearn" / f"{key}.bif.gz"
        if bif.is_file():
            return PlanItem(id=key, path=absolute_path(bif), sha256=sha256_file(bif), n=n, d=d)
        ds = load_dataset(key, n=n)  # auto_mpg: a small CSV, every row
        return PlanItem(id=key, path=absolute_path(desc_path), sha256=sha256_file(desc_path), n=int(ds.data.shape[0]), d=d)
    data_path, meta_path = spec.split("::", 1) if "::" in spec else (spec, str(Path(spec).with_suffix(".json")))
    ds = loaded if loaded is not None else load_user_dataset(data_path, meta_path)
    return PlanItem(id=ds.name, path=absolute_path(data_path), sha256=sha256_file(Path(data_path)), n=int(ds.data.shape[0]),
                    d=len(ds.variables))


def discover_plan(datasets: Sequence[str], methods: Sequence[str], *, config: Any, preset: str, routing: str,
                  profiles_path: str | None = None, n: int = 1000, repeats: int = 1,
                  anonymise: Sequence[str] = (), seeds: Sequence[int] = (0,),
                  loaded: Mapping[str, Any] | None = None) -> Plan:
    """The plan of ``agentcausal discover``.

    Parameters
    ----------
    datasets : dataset names or paths (expanded)
    methods : discovery method names (resolved)
    config : DiscoveryConfig
    preset : str, the preset MAC's settings were resolved with
    routing, profiles_path : the routing and profiles file
    n : int, rows sampled from a bnlearn network
    repeats : int, runs per (dataset, seed, method)
    anonymise : variable-anonymisation choices (``--anonymise``; empty = not asked, shown as ``["none"]``)
    seeds : the run seeds
    loaded : spec -> Dataset, user datasets already read and checked (the CLI's check); not read again

    Returns
    -------
    Plan with items carrying ``n`` and ``d``.

    Raises
    ------
    DatasetError, ConfigError
    """
    profiles = routed_profiles(profiles_path, routing)
    all_stages: list[str] = []
    mplans = {}
    for m in methods:
        stages = list(method_stages(m, config))
        all_stages += stages
        params = profile_params(profiles, stages)
        mplans[m] = MethodPlan(preset=preset, variant="default",
                               settings=_with_temperature(method_settings(m, config), params),
                               stages=stage_models(profiles, stages), profile_params=params)
    items = [_dataset_item(d, n, (loaded or {}).get(d)) for d in datasets]
    return Plan(kind="discover", routing=routing, preset=preset, items=items, methods=mplans, repeats=repeats,
                seeds=list(seeds), n=n, missing_keys=missing_keys(profiles, all_stages), anonymise=list(anonymise))


