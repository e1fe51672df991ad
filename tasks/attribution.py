"""Prefect tasks of the ``attribute`` flow: run a chunk of (trace, method) jobs; report the run folder."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from agentcausal.records import RunRecord
from agentcausal.registry import ATTRIBUTION
from agentcausal.report.attribution import RunReport, report_run
from agentcausal.runs.engine import run_chunk
from agentcausal.runs.half import Chunk
from tasks.chunks import CHUNK_TASK, chunk_run_name, retry_transport, unquoted

__all__ = ["attribute_chunk", "evaluate_run"]


@task(
    name="attribute-chunk",
    cache_policy=NO_CACHE,
    retry_condition_fn=retry_transport,
    task_run_name=chunk_run_name,
    **CHUNK_TASK,
)
def attribute_chunk(chunk: Chunk) -> list[RunRecord | None] | None:
    """One method on a chunk of traces, each record stored as it finishes (:func:`agentcausal.runs.engine.run_chunk`)."""
    return run_chunk(ATTRIBUTION, unquoted(chunk))


@task(name="evaluate-run")
def evaluate_run(run_dir: str, cache_dir: str | None = None) -> RunReport:
    """Accuracy tables and ``report.md`` of a run folder (figures of unchanged tables from ``cache_dir``)."""
    return report_run(run_dir, cache_dir=cache_dir)
