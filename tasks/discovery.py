"""Prefect tasks of the ``discover`` flow: load a dataset, run one method on it, save and report.

``discover_one`` is cached across flow runs: its key
(:func:`agentcausal.discovery.cache_key.discovery_key`) is ``joblib.hash`` of the
data array and column names (never a pickled DataFrame), the dataset name and
seed, the method, the config, and for LLM methods the metadata that enters the
prompts, the prompt version and the ``profile:model`` of each stage. Results
persist under ``<cache_dir>/prefect``. The cached task returns the graph; the
flow scores it against the current true graph (the truth is not in the key).
Only content failures are returned and cached (``content_failed``); transport,
401, rate-limit, algorithm-timeout and dead-worker failures raise, so Prefect
never caches them and the next run tries again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefect import task
from prefect.context import TaskRunContext

from agentcausal.discovery.datasets import Dataset, load_spec
from agentcausal.discovery.cache_key import discovery_key
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.jobs import run_discovery
from agentcausal.discovery.outcome import DiscoveryOutcome
from agentcausal.discovery.registry import method_stages
from agentcausal.runs.plan import PlanItem
from agentcausal.runs.items import check_file_item
from agentcausal.report.discovery import RunFiles, write_report
from agentcausal.discovery.outcome import save_outcomes
from agentcausal.settings import RunSettings
from tasks.common import gateway_for, result_storage, retry_transport

__all__ = ["load_discovery_dataset", "discover_one", "discover_options", "discover_task_key", "save_discovery",
           "report_discovery"]


def _gw(method: str, config: DiscoveryConfig, settings: RunSettings):
    return gateway_for(settings) if method_stages(method, config) else None


def discover_task_key(dataset: Dataset, method: str, config: DiscoveryConfig, settings: RunSettings,
                      seed: int) -> str:
    """The Prefect cache key of :func:`discover_one` for these arguments."""
    return "discover-" + discovery_key(dataset, method, config, _gw(method, config, settings), seed=seed)


def _discover_key(context: TaskRunContext, p: dict[str, Any]) -> str:
    return discover_task_key(p["dataset"], p["method"], p["config"], p["settings"], p["seed"])


@task(name="load-dataset", retries=1, task_run_name="load:{spec}:{seed}")
def load_discovery_dataset(spec: str, n: int, seed: int, name: str | None = None,
                           item: PlanItem | None = None) -> Dataset:
    """A benchmark or user dataset (:func:`agentcausal.discovery.datasets.load_spec`); with its plan item, the
    file's sha256 is checked first (:func:`agentcausal.runs.items.check_file_item`)."""
    if item is not None:
        check_file_item(item)
    return load_spec(spec, n=n, seed=seed, name=name)


@task(name="discover", retries=2, retry_delay_seconds=2, retry_condition_fn=retry_transport,
      cache_key_fn=_discover_key, persist_result=True, task_run_name="{method}:{dataset.name}:{seed}")
def discover_one(dataset: Dataset, method: str, config: DiscoveryConfig, settings: RunSettings,
                 seed: int) -> DiscoveryOutcome:
    """One method on one dataset (:func:`agentcausal.discovery.jobs.run_discovery`)."""
    return run_discovery(method, dataset, _gw(method, config, settings), config, seed=seed, raise_transient=True)


def discover_options(settings: RunSettings, *, refresh: bool = False) -> dict[str, Any]:
    """``with_options`` for :func:`discover_one`: persisted result storage and refresh.

    ``refresh=True`` recomputes and overwrites the cached record under the same key
    (``--retry-failed`` on a content-failed or degraded record).
    """
    return {"result_storage": Path(result_storage(settings)), "refresh_cache": settings.refresh or refresh}


@task(name="save-discovery")
def save_discovery(outcomes: Sequence[DiscoveryOutcome], run_dir: str, meta: Mapping[str, Any]) -> str:
    """``outcomes.jsonl`` and ``run.json`` in the run folder."""
    return str(save_outcomes(outcomes, run_dir, meta))


@task(name="report-discovery")
def report_discovery(run_dir: str, reversal_cost: int = 1) -> RunFiles:
    """``results.parquet``, ``summary.csv``, graphs and ``report.md`` of a run folder."""
    return write_report(run_dir, reversal_cost=reversal_cost)  # type: ignore[arg-type]
