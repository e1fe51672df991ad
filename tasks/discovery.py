"""Prefect tasks of the ``discover`` flow: run a chunk of (dataset, seed, method) jobs; report the run folder."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from agentcausal.records import RunRecord
from agentcausal.registry import DISCOVERY
from agentcausal.report.discovery import RunFiles, write_report
from agentcausal.runs.engine import run_chunk
from agentcausal.runs.half import Chunk
from tasks.chunks import CHUNK_TASK, chunk_run_name, retry_transport, unquoted

__all__ = ["discover_chunk", "report_discovery"]


@task(
    name="discover-chunk",
    cache_policy=NO_CACHE,
    retry_condition_fn=retry_transport,
    task_run_name=chunk_run_name,
    **CHUNK_TASK,
)
def discover_chunk(chunk: Chunk) -> list[RunRecord | None] | None:
    """One method on a chunk of (dataset, seed) jobs, each outcome stored as it finishes
    (:func:`agentcausal.runs.engine.run_chunk`)."""
    return run_chunk(DISCOVERY, unquoted(chunk))


@task(name="report-discovery")
def report_discovery(run_dir: str, reversal_cost: int = 1, cache_dir: str | None = None) -> RunFiles:
    """``summary.csv``, graphs and ``report.md`` of a scored run folder (graph PNGs kept under ``cache_dir``)."""
    return write_report(run_dir, reversal_cost=reversal_cost, cache_dir=cache_dir)  # type: ignore[arg-type]  # 1 or 2
