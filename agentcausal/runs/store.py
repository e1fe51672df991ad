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
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

import diskcache
from pydantic import BaseModel

__all__ = ["RETRIED_STATUSES", "ResultIndex", "ResumePlan", "plan_resume"]


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


