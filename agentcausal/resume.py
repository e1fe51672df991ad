"""Finished results by cache key: what a rerun reuses without scheduling any work.

A flow asks the index, before it submits anything, which of its (item,
method) results already exist under the task's own cache key (the key holds
the item's id and content hash, the method, its settings, the prompt version
and the model per stage, and the repeat where a method has one), and maps
only the missing ones. A finished corpus therefore reruns without a task run
per item, and adding one method to a finished corpus runs only that method.

Storage: one :class:`diskcache.Cache` (SQLite in WAL mode, every write a
transaction, safe for several processes) per kind under
``<cache_dir>/results/<kind>``, beside Prefect's persisted task results
(``<cache_dir>/prefect``, which still serve a task run whose record is not in
the index). Each entry is the record (pickled by diskcache, as Prefect
pickles its results: a JSON round trip would turn the usage counts into
floats) and the time it was stored.

What is stored follows the cache rules: only results a later run may reuse
(``complete``, ``degraded``, ``content_failed``); a ``failed`` record (a
transport, 401, rate-limit or timeout failure) is refused. ``refresh``
recomputes everything; ``retry_failed`` recomputes the ``content_failed`` and
``degraded`` records (the new record replaces the old under the same key).

Scheduling: a chunk task does not run its items on threads of its own. Every
chunk of a process hands its items to one first-in, first-out thread pool of
the process (:func:`item_pool`) of a few items per slot of the routing's
largest LLM concurrency limit (:func:`item_workers`), so the limit's slots
stay busy until the last items, whatever the chunk boundaries (no last wave
of a few chunks), items whose requests chain (DCFA) share the slots with
enough others to hide the gaps between their requests, and the threads of a
process stay bounded however large the corpus (measured in
``bench/results/scale.json``).

This module never imports Prefect: the flows call it before submitting and
after each result; the chunk tasks call :func:`run_chunk`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from pydantic import BaseModel

from agentcausal.exceptions import AgentCausalError

__all__ = ["RETRIED_STATUSES", "MIN_CHUNKS", "ResultIndex", "ResumePlan", "plan_resume", "run_chunk", "chunked",
           "chunk_length", "item_pool", "item_workers", "routed_limits", "chunk_items"]

#: a method's jobs are split into at least this many chunks (when it has as many jobs)
MIN_CHUNKS = 8

#: statuses of stored results that ``retry_failed`` recomputes
RETRIED_STATUSES = ("content_failed", "degraded")

R = TypeVar("R", bound=BaseModel)


class ResultIndex(Generic[R]):
    """Finished records of one kind (``attribute`` or ``discover``) by task cache key.

    Parameters
    ----------
    cache_dir : str or Path, the run settings' cache root (the index lives in ``<cache_dir>/results/<kind>``)
    kind : str, the record kind (one folder each)
    model : the record's pydantic model (``Attribution``, ``DiscoveryOutcome``)

    Examples
    --------
    >>> import tempfile
    >>> from agentcausal.traces.model import Attribution
    >>> idx = ResultIndex(tempfile.mkdtemp(), "attribute", Attribution)
    >>> idx.put("k1", Attribution(trace_id="t", method="m", step=2, agent="A"))
    True
    >>> idx.get("k1").step, idx.get("nope")
    (2, None)
    """

    def __init__(self, cache_dir: str | Path, kind: str, model: type[R]) -> None:
        import diskcache

        self.path = Path(cache_dir, "results", kind).resolve()
        self.path.mkdir(parents=True, exist_ok=True)
        self.model = model
        # every thread that reads or writes holds its own SQLite connection (diskcache): without a memory map
        # and with a small page cache each costs a fraction of the defaults (64 MiB map, 32 MiB cache), which
        # matters with a pool of hundreds of item threads (bench/README.md, "Scale: where the time goes")
        self._cache = diskcache.Cache(str(self.path), size_limit=2**34, sqlite_mmap_size=0, sqlite_cache_size=256)

    def put(self, key: str, record: R) -> bool:
        """Store ``record`` under ``key`` unless its status is ``failed``; True when stored.

        The ``reused`` mark is dropped: a stored record is what was computed.
        """
        if getattr(record, "status", "complete") == "failed":
            return False
        if getattr(record, "reused", False):
            record = record.model_copy(update={"reused": False})
        self._cache.set(key, (time.time(), record))
        return True

    def get(self, key: str, *, not_before: float | None = None) -> R | None:
        """The record stored under ``key`` (stored at or after ``not_before`` when given), or None.

        An entry that no longer loads as the model (the class changed since) counts as absent.
        """
        try:
            stored, record = self._cache.get(key) or (0.0, None)
        except Exception:  # noqa: BLE001 - unpickling a record of an older class: recompute it
            return None
        if not isinstance(record, self.model) or (not_before is not None and stored < not_before):
            return None
        return record

    def get_many(self, keys: Sequence[str]) -> list[R | None]:
        """The records stored under ``keys`` (None where absent), read in one SQLite transaction.

        One transaction instead of one per key: a rerun of a finished corpus reads the whole
        index at once (measured in ``bench/results/scale.json``).
        """
        with self._cache.transact():
            return [self.get(key) for key in keys]

    def close(self) -> None:
        self._cache.close()

    def __enter__(self) -> "ResultIndex[R]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ResumePlan(NamedTuple):
    """Which positions of a job list to reuse, run, or rerun.

    Attributes
    ----------
    reused : dict position -> stored record (marked ``reused=True``)
    run : positions to compute (a task's own cache may still answer them)
    rerun : positions to recompute, replacing the stored record (``retry_failed``)
    """

    reused: dict[int, BaseModel]
    run: list[int]
    rerun: list[int]


def plan_resume(keys: Sequence[str], index: ResultIndex, *, refresh: bool = False,
                retry_failed: bool = False) -> ResumePlan:
    """Split jobs by cache key into reused, to run, and to rerun.

    Parameters
    ----------
    keys : one task cache key per job, in job order
    index : ResultIndex of the job's kind
    refresh : bool, recompute everything (nothing reused; every job in ``run``, whose
        tasks the flow maps with a cache refresh)
    retry_failed : bool, stored ``content_failed`` and ``degraded`` records go to ``rerun``

    Returns
    -------
    ResumePlan
    """
    if refresh:
        return ResumePlan({}, list(range(len(keys))), [])
    reused: dict[int, BaseModel] = {}
    run: list[int] = []
    rerun: list[int] = []
    for i, rec in enumerate(index.get_many(keys)):
        if rec is None:
            run.append(i)
        elif retry_failed and getattr(rec, "status", "complete") in RETRIED_STATUSES:
            rerun.append(i)
        else:
            reused[i] = rec.model_copy(update={"reused": True})
    return ResumePlan(reused, run, rerun)


def chunk_length(n_jobs: int, chunk_size: int, min_chunks: int = MIN_CHUNKS) -> int:
    """Jobs per chunk: at most ``chunk_size``, and small enough for ``min_chunks`` chunks.

    Enough chunks keep several workers (Dask processes, threads) busy; a small
    job list gets chunks of one (one task per item).

    >>> chunk_length(2000, 25), chunk_length(60, 25), chunk_length(12, 25), chunk_length(300, 1)
    (25, 8, 2, 1)
    """
    return max(1, min(int(chunk_size), -(-n_jobs // min_chunks)))


def chunked(positions: Sequence[int], size: int) -> list[list[int]]:
    """``positions`` in consecutive chunks of at most ``size`` (``size`` >= 1).

    >>> chunked([0, 1, 2, 3, 4], 2)
    [[0, 1], [2, 3], [4]]
    """
    size = max(1, int(size))
    return [list(positions[i:i + size]) for i in range(0, len(positions), size)]


def chunk_items(items: Any) -> Sequence[Any]:
    """A chunk task's item list as the flow passed it, whatever the task runner made of the wrapper.

    The flow wraps a chunk's items in Prefect's ``quote`` (so Prefect does not walk every record);
    the thread runner unwraps it; on Dask it arrives pickled, where a ``quote`` comes back holding a
    one-element tuple of the list (``quote`` is a tuple subclass), and tuples nested in plain
    sequences (items are records, never sequences themselves, so unwrapping them is safe).

    >>> chunk_items(([1, 2],)), chunk_items([[1, 2]]), chunk_items([3]), chunk_items((4, 5))
    ([1, 2], [1, 2], [3], (4, 5))
    """
    while True:
        if hasattr(items, "unquote"):
            items = items.unquote()
        elif isinstance(items, (list, tuple)) and len(items) == 1 and isinstance(items[0], (list, tuple)):
            items = items[0]
        else:
            return items


def routed_limits(profiles: Any) -> list[int]:
    """The concurrency limit of every profile the active routing uses (its ``limit_group``'s size where it
    names one).

    Parameters
    ----------
    profiles : agentcausal.llm.ProfileSet

    Returns
    -------
    list of int, one per routed profile (empty when the routing names none)
    """
    out = []
    for name in set(profiles.routings.get(profiles.routing, {}).values()):
        prof = profiles.profiles.get(name)
        if prof is None:
            continue
        group = getattr(prof, "limit_group", None)
        out.append(profiles.limit_group_size(group) if group else prof.max_concurrency)
    return out


#: item threads per slot of the largest limit. Items whose requests chain (DCFA: about 7 per trace, each
#: waiting on the one before, with the client's own work between them) leave a slot idle whenever too few
#: items are active, so more than one item per slot; every thread costs memory (its stack, its SQLite
#: connections, about 0.5 MB) and, where the client's CPU is the bottleneck, contention. Measured under load
#: on 2 cores: 150 DCFA traces at concurrency 16 ran 1.28 x the bound at 1.25 items per slot and 1.22 x with
#: every item at once; 3,000 All-at-Once traces at concurrency 64 held 417 MB at 1.25 per slot and 509 MB at 4
ITEM_SLACK = 2.0


def item_workers(limits: Iterable[int], *, slack: float = ITEM_SLACK, minimum: int = 4) -> int:
    """Items at a time in one process: ``ceil(slack x largest limit) + 2``, at least ``minimum``.

    >>> item_workers([16]), item_workers([64, 8]), item_workers([])
    (34, 130, 4)
    """
    top = max(list(limits) or [0])
    return max(minimum, math.ceil(slack * top) + 2 if top else minimum)


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def item_pool(workers: int) -> ThreadPoolExecutor:
    """The process-wide first-in, first-out thread pool of ``workers`` threads that runs chunk items.

    Every :func:`run_chunk` of the process with the same ``workers`` shares it, so items of
    all chunks queue in one line (threads start as needed, up to ``workers``).
    """
    workers = max(1, int(workers))
    with _POOLS_LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            pool = _POOLS[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"items{workers}")
        return pool


def run_chunk(jobs: Sequence[tuple[str, Callable[[], R]]], index: ResultIndex, *,
              not_before: float | None = None, workers: int | None = None,
              store_if: Callable[[R], bool] | None = None) -> list[R]:
    """Run a chunk of jobs on the process's item pool, storing each record as it finishes.

    A job whose key holds a record stored at or after ``not_before`` is not run
    again (so a retried chunk repeats only its unfinished jobs). A job that
    raises a failure of the run (transport, 401, timeout: the job raises it
    itself) does not stop the others; the first such failure is raised after
    the last job, so the orchestrator retries the chunk and caches nothing of it.
    The jobs go to :func:`item_pool` (``workers`` threads shared by every chunk of
    the process, first in, first out); the LLM gateway's limits bound the requests in flight.

    Parameters
    ----------
    jobs : (cache key, zero-argument callable returning the record) per item
    index : ResultIndex where each returned record is stored (``failed`` ones are not)
    not_before : float or None, seconds since the epoch; None reuses any stored record
    workers : int or None, the item pool's size (:func:`item_workers` of the routing's limits);
        None: a pool as large as this chunk (its own items all at once)
    store_if : predicate on a returned record; False = return it but do not store it (a record
        the caller may not cache); default: store every returned record the index accepts

    Returns
    -------
    list of records, in job order

    Raises
    ------
    AgentCausalError
        The first failure of the run raised by a job, after every job was tried.
    """
    def one(job: tuple[str, Callable[[], R]]) -> R | BaseException:
        key, fn = job
        rec = index.get(key, not_before=not_before)
        if rec is not None:
            return rec
        try:
            rec = fn()
        except AgentCausalError as exc:
            return exc
        if store_if is None or store_if(rec):
            index.put(key, rec)
        return rec

    if not jobs:
        return []
    if workers is None:
        with ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="chunk") as pool:
            out = list(pool.map(one, jobs))
    else:
        futures = [item_pool(workers).submit(one, job) for job in jobs]
        wait(futures)  # every job tried before anything is raised
        out = [f.result() for f in futures]
    failures = [r for r in out if isinstance(r, BaseException)]
    if failures:
        raise failures[0]
    return out  # type: ignore[return-value]
