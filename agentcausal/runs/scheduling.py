"""Chunks of jobs and the thread pool that runs their items.

A chunk task does not run its items on threads of its own. Every
chunk of a process hands its items to one first-in, first-out thread pool of
the process (:func:`item_pool`) of a few items per slot of the routing's
largest LLM concurrency limit (:func:`item_workers`), so the limit's slots
stay busy until the last items, whatever the chunk boundaries (no last wave
of a few chunks), items whose requests chain (DCFA) share the slots with
enough others to hide the gaps between their requests, and the threads of a
process stay bounded however large the corpus (measured in
``bench/results/scale.json``).

The run engine (:mod:`agentcausal.runs.engine`) cuts each method's jobs into chunks
(:func:`chunk_length`) and runs a chunk's items with :func:`run_items`.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from agentcausal.exceptions import AgentCausalError
from agentcausal.records import RunRecord
from agentcausal.runs import stop
from agentcausal.runs.store import ResultStore, close_ended_connections

__all__ = [
    "MIN_CHUNKS",
    "MAX_CHUNKS",
    "REMOTE_CHUNKS_PER_WORKER",
    "remote_chunk_size",
    "chunk_lengths",
    "run_items",
    "chunked",
    "chunk_length",
    "item_pool",
    "item_pools_held",
    "item_workers",
    "routed_limits",
    "chunk_items",
]

R = TypeVar("R", bound=RunRecord)


#: a method's jobs are split into at least this many chunks (when it has as many jobs)
MIN_CHUNKS = 8

#: by default a method's jobs are split into at most this many chunks (larger chunks for a larger corpus):
#: the orchestrator keeps a little for every task run (measured: about 40 KB per Prefect task run in the
#: flow's process, so a corpus's memory would grow with its chunks), and thousands of task runs make no map
MAX_CHUNKS = 400


#: chunks per worker process a method's jobs are cut into where chunks run in other processes (Dask), within the
#: half's bounds (:func:`remote_chunk_size`): a worker rebuilds Prefect's context, and opens API clients with their
#: TLS contexts, for each task run (about 0.1 s of CPU), while the chunks of one worker share its item pool; four
#: keep every thread of a default worker (4) busy with a chunk of its own
REMOTE_CHUNKS_PER_WORKER = 4


def remote_chunk_size(n_jobs: int, workers: int | None, smallest: int, largest: int) -> int:
    """Jobs per chunk of a method's ``n_jobs`` where chunks run on ``workers`` other processes: about
    :data:`REMOTE_CHUNKS_PER_WORKER` chunks per worker, within ``[smallest, largest]`` (``largest`` keeps a progress
    step, which comes as a remote chunk ends, small on a large corpus); ``smallest`` when the count is unknown.

    >>> remote_chunk_size(2000, 2, 100, 400), remote_chunk_size(2000, 10, 100, 400), remote_chunk_size(50000, 2, 100, 400)
    (250, 100, 400)
    >>> remote_chunk_size(2000, None, 100, 400), remote_chunk_size(300, 2, 1, 1)
    (100, 1)
    """
    if not workers:
        return smallest
    return max(smallest, min(largest, -(-n_jobs // (REMOTE_CHUNKS_PER_WORKER * workers))))


def chunk_lengths(
    counts: Mapping[str, int],
    chunk_size: int | None,
    default: int,
    *,
    remote: tuple[int, int] | None = None,
    workers: int | None = None,
) -> dict[str, int]:
    """Jobs per chunk of each method of ``counts`` (method -> its jobs): ``chunk_size`` when given (0 or None: not
    given), else ``default`` or, with ``remote`` (where chunks run in other processes: the half's smallest and largest),
    :func:`remote_chunk_size` for ``workers``, made larger where a method would have over :data:`MAX_CHUNKS` chunks;
    then smaller where a method has under :data:`MIN_CHUNKS` chunks' worth (:func:`chunk_length`).

    >>> chunk_lengths({"a": 2000, "b": 60}, None, 100, remote=(100, 400), workers=2)
    {'a': 250, 'b': 8}
    >>> chunk_lengths({"a": 2000}, 25, 100), chunk_lengths({"a": 100_000}, 0, 100)
    ({'a': 25}, {'a': 250})
    """

    def size(n: int) -> int:
        if chunk_size:
            return chunk_size
        return max(remote_chunk_size(n, workers, *remote) if remote else default, -(-n // MAX_CHUNKS))

    return {m: chunk_length(n, size(n)) for m, n in counts.items()}


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
    return [list(positions[i : i + size]) for i in range(0, len(positions), size)]


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

#: seconds between two looks at the stop flag (:mod:`agentcausal.runs.stop`) while a chunk's items run
_STOP_POLL_S = 0.25


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


_LEASES = [0]  # runs of this process holding the item pools (:func:`item_pools_held`)


@contextlib.contextmanager
def item_pools_held() -> Iterator[None]:
    """Hold the process's item pools for one run; when the last run holding them ends, shut them down.

    An item thread keeps an SQLite connection to every store it used (the reply cache's, the results store's),
    with its page cache and statements, for as long as it lives: about 0.2 MB per thread and store, 50-60 MB
    per run at concurrency 64 that a pool outliving its run would leave for every later run of the process to
    carry (and its collector to walk). When the last holder ends normally, the pools' threads end, which closes
    their reply-cache connections, and the results stores close the connections of ended threads
    (:func:`~agentcausal.runs.store.close_ended_connections`); the next run starts threads afresh. A holder that
    ends by an exception, or once a stop was requested (:mod:`agentcausal.runs.stop`), does not wait for the
    items still in flight. Chunks run in other processes (Dask workers) keep their pools for the worker's life.
    """
    with _POOLS_LOCK:
        _LEASES[0] += 1
    ok = False
    try:
        yield
        ok = True
    finally:
        with _POOLS_LOCK:
            _LEASES[0] -= 1
            last = _LEASES[0] == 0
            pools = list(_POOLS.values()) if last else []
            if last:
                _POOLS.clear()
        wait = ok and not stop.stop_requested()  # a stop leaves the items in flight behind (run_items)
        for pool in pools:
            pool.shutdown(wait=wait, cancel_futures=not wait)
        if last and wait:
            close_ended_connections()


def _countdown(futures: Sequence[Future[Any]]) -> threading.Event:
    """An event set once every future is done (one callback each; waiting on it costs one lock, not a waiter
    installed on every future as ``concurrent.futures.wait`` does at each poll)."""
    done = threading.Event()
    left = [len(futures)]
    lock = threading.Lock()

    def one_more(_: Future[Any]) -> None:
        with lock:
            left[0] -= 1
            if left[0] == 0:
                done.set()

    if not futures:
        done.set()
    for f in futures:
        f.add_done_callback(one_more)
    return done


def run_items(
    jobs: Sequence[tuple[str, Callable[[], R]]],
    store: ResultStore,
    *,
    not_before: float | None = None,
    workers: int | None = None,
    store_if: Callable[[R], bool] | None = None,
) -> list[R | None]:
    """Run a chunk of jobs on the process's item pool, storing each record as it finishes.

    A job whose key holds a record stored at or after ``not_before`` is not run again (so a retried
    chunk repeats only its unfinished jobs). A job that raises a failure of the run (transport, 401,
    timeout: the job raises it itself) does not stop the others; the first such failure is raised after
    the last job, so the orchestrator retries the chunk and nothing of it is stored. The jobs go to
    :func:`item_pool` (``workers`` threads shared by every chunk of the process, first in, first out);
    the LLM gateway's limits bound the requests in flight. Each job's record is dropped once stored:
    the caller reads it back from the store.

    Parameters
    ----------
    jobs : (cache key, zero-argument callable returning the record) per item
    store : ResultStore where each returned record is stored (``failed`` ones are not)
    not_before : float or None, seconds since the epoch; None reuses any stored record
    workers : int or None, the item pool's size (:func:`item_workers` of the routing's limits);
        None: a pool as large as this chunk (its own items all at once)
    store_if : predicate on a returned record; False = return it but do not store it (a record
        the caller may not cache); default: store every returned record the store accepts

    Returns
    -------
    list, in job order: None for a record in the store (stored now, or found there), else the record
    that was not stored (``store_if`` refused it, or its status is ``failed``)

    Raises
    ------
    AgentCausalError
        The first failure of the run raised by a job, after every job was tried.
    RunStopped
        A stop was requested (:mod:`agentcausal.runs.stop`): raised within a quarter second, without waiting
        for the items in flight; the records they finish are still stored.
    """

    def one(job: tuple[str, Callable[[], R]]) -> R | BaseException | None:
        key, fn = job
        try:
            rec = fn()
        except AgentCausalError as exc:
            return exc
        if (store_if is None or store_if(rec)) and store.put(key, rec, cache_hits_only=rec.reused):
            return None
        return rec

    if not jobs:
        return []
    # the chunk's stored records in one query: a job with one stored at or after not_before is not run again
    stored = store.get_many([key for key, _ in jobs])
    done = [s is not None and (not_before is None or s.stored_at >= not_before) for s in stored]
    todo = [job for job, d in zip(jobs, done, strict=True) if not d]
    own = ThreadPoolExecutor(max_workers=max(1, len(todo)), thread_name_prefix="chunk") if workers is None else None
    pool = own or item_pool(workers or 1)
    futures = [pool.submit(one, job) for job in todo]
    all_done = _countdown(futures)
    try:
        while not all_done.wait(_STOP_POLL_S):  # every job tried before anything is raised
            if stop.stop_requested():  # SIGTERM, SIGINT, a cancellation: leave the items in flight behind
                for f in futures:
                    f.cancel()
                raise stop.RunStopped("chunk")
    finally:
        if own is not None:
            own.shutdown(wait=not stop.stop_requested(), cancel_futures=True)
    results = iter([f.result() for f in futures])
    out = [None if d else next(results) for d in done]
    failures = [r for r in out if isinstance(r, BaseException)]
    if failures:
        raise failures[0]
    return out  # type: ignore[return-value]  # no exception left in it
