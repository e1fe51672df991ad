"""What a half (attribution, discovery) plugs into the run engine, and the units it runs.

A half (:class:`RunHalf`) names its jobs (:class:`Job`), their cache key, how to run one in the
envelope, the record of a failure, and the sink (:class:`RecordSink`) that scores its records into
the run folder. The engine (:mod:`agentcausal.runs.engine`) cuts the jobs the results store cannot
answer into chunks (:class:`Chunk`), one method each, that one task runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentcausal.records import RunRecord
from agentcausal.runs.plan import Plan, PlanItem
from agentcausal.settings import RunSettings

__all__ = ["Job", "Chunk", "RecordSink", "RunHalf"]


@dataclass(frozen=True)
class Job:
    """One unit of work: a method on a plan item (for discovery, with a seed), repeat ``repeat``.

    Attributes
    ----------
    item : PlanItem, the trace or dataset (id, path, hashes)
    method : str, the method's name in the plan
    seed : int, the data seed (discovery; 0 for attribution)
    repeat : int, the repeat index (``--repeats``; 0 = the run without repeats)
    """

    item: PlanItem
    method: str
    seed: int = 0
    repeat: int = 0


@dataclass(frozen=True)
class Chunk:
    """Jobs of one method that one task runs, each with its store key.

    Attributes
    ----------
    kind : str, the half (``attribute``, ``discover``)
    method : str
    jobs : tuple of Job
    keys : tuple of str, one cache key per job
    plan : Plan, the plan's header (methods with their settings, discover's config; no items)
    settings : RunSettings
    not_before : float, seconds since the epoch: a record stored earlier is computed again (a stored
        ``content_failed`` record under ``--retry-failed``, every record under ``--refresh``), a record
        stored since (by an earlier try of this chunk) is not
    """

    kind: str
    method: str
    jobs: tuple[Job, ...]
    keys: tuple[str, ...]
    plan: Plan
    settings: RunSettings
    not_before: float

    @property
    def name(self) -> str:
        """``<method>:<item>`` for one job, ``<method>:<first>..<last> (<n>)`` for more (a task run's name)."""
        ids = [j.item.id if self.kind == "attribute" else f"{j.item.id}:{j.seed}" for j in self.jobs]
        if len(ids) == 1:
            return f"{self.method}:{ids[0]}"
        return f"{self.method}:{ids[0]}..{ids[-1]} ({len(ids)})" if ids else f"{self.method}:empty"


class RecordSink(Protocol):
    """Where a half writes its records at the end of a run, one at a time, in the plan's order."""

    def add(self, job: Job, record: RunRecord) -> None:
        """Score and write one record (then let it go)."""

    def close(self) -> dict[str, Any]:
        """Finish the files; facts for ``run.json``."""


class RunHalf(Protocol):
    """What one half (attribution, discovery) plugs into the engine.

    Attributes
    ----------
    kind : str, ``attribute`` or ``discover`` (the results store's folder, the run's kind)
    record_type : the half's record class (a :class:`~agentcausal.records.RunRecord`)
    default_chunk_size : int, jobs per chunk task when the run names none
    remote_chunk_range : (int, int), jobs per chunk task where chunks run in other processes (Dask), where each
        task run costs Prefect about 0.1 s of CPU to rebuild its settings and context: at least the first, at most
        the second, about :data:`~agentcausal.runs.scheduling.REMOTE_CHUNKS_PER_WORKER` chunks per worker between
        (:func:`~agentcausal.runs.scheduling.remote_chunk_size`)
    """

    kind: str
    default_chunk_size: int
    remote_chunk_range: tuple[int, int]

    @property
    def record_type(self) -> type[RunRecord]:  # read-only, so a half may name a RunRecord subclass
        ...

    def job_counts(self, plan: Plan) -> dict[str, int]:
        """Jobs per method of the plan (for chunk sizes and progress), without reading items."""

    def jobs(self, plan: Plan) -> Iterator[Job]:
        """Every job of the plan, in the order of its results (streamed from the plan's items)."""

    def submission_order(self, plan: Plan) -> Iterator[Job]:
        """Every job, in the order to run them (discovery: LLM methods first)."""

    def keyer(self, plan: Plan, settings: RunSettings) -> Callable[[Job], str]:
        """The cache key of a job (computed in the orchestrating process)."""

    def run(self, job: Job, plan: Plan, settings: RunSettings) -> RunRecord:
        """Load the job's item and run its method in the envelope; raises a failure of the run."""

    def storable(self, record: RunRecord) -> bool:
        """Whether a returned record may be stored (False: a fallback after a failure of the run)."""

    def failed(self, job: Job, exc: BaseException) -> RunRecord:
        """The ``failed`` record of a job whose task failed after its retries."""

    def item_workers(self, settings: RunSettings) -> int:
        """Jobs of this half one process runs at once (the item pool's size)."""

    def sink(self, plan: Plan, run_dir: Path, meta: Mapping[str, Any]) -> RecordSink:
        """The writer of the run folder's records (``meta``: the run's facts so far, e.g. ``reversal_cost``)."""
