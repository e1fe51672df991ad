"""What every task shares: one gateway per process and settings, the cache policy and its helpers.

Prefect caching: the default policy includes the run id, so nothing would be
reused across flow runs. Tasks here use explicit key functions over canonical
content hashes (trace id and content hash, ``joblib.hash`` of data) and
persist results under ``<cache_dir>/prefect``. LLM calls are also cached per
request by the gateway, so a task that crashed midway repeats no completed call
when retried.

Only results a later run may reuse are ever persisted: a task that fails for a
reason outside the content (transport, 401, rate limit, timeout, dead worker)
raises, so Prefect caches nothing for it. :func:`retry_transport` lets Prefect
retry only transport-level errors within a run. :func:`stored_status` reads the
status of a persisted result, so ``--retry-failed`` can recompute the
``content_failed`` and ``degraded`` ones under the same key.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentcausal.exceptions import EndpointUnreachableError, LLMCallError
from agentcausal.llm import Gateway
from agentcausal.runs.scheduling import chunk_items
from agentcausal.runs.store import RETRIED_STATUSES, ResultIndex, ResumePlan, plan_resume
from agentcausal.settings import RunSettings

__all__ = ["gateway_for", "result_index", "plan_task_resume", "result_storage", "retry_transport", "stored_status", "was_cached",
           "chunk_run_name", "RETRIED_STATUSES"]


@functools.lru_cache(maxsize=8)
def gateway_for(settings: RunSettings) -> Gateway:
    """One gateway per (process, settings): shares HTTP clients, semaphores and the disk cache handle."""
    return settings.gateway()


def result_index(settings: RunSettings, kind: str) -> ResultIndex:
    """The finished-results index of ``kind`` under ``<cache_dir>/results`` (one handle per process and folder;
    a new one when the folder was removed since)."""
    idx = _index(str(Path(settings.cache_dir).resolve()), kind)
    if not (idx.path / "cache.db").is_file():
        _index.cache_clear()
        idx = _index(str(Path(settings.cache_dir).resolve()), kind)
    return idx


@functools.lru_cache(maxsize=8)
def _index(cache_dir: str, kind: str) -> ResultIndex:
    if kind == "attribute":
        from agentcausal.traces.model import Attribution as model
    else:
        from agentcausal.discovery.outcome import DiscoveryOutcome as model
    return ResultIndex(cache_dir, kind, model)


def chunk_run_name() -> str:
    """Task-run name of a chunk task: ``<method>:<first id>..<last id> (<n>)``."""
    from prefect.runtime import task_run

    p = task_run.parameters
    items = p.get("items") or p.get("traces") or p.get("datasets") or []
    items = chunk_items(items)  # the flow passes the list quoted (Dask: a pickled quote, see chunk_items)
    ids = [getattr(x, "id", None) or getattr(x, "name", "?") for x in items]
    return f"{p.get('method')}:{ids[0]}..{ids[-1]} ({len(ids)})" if ids else f"{p.get('method')}:empty"


def result_storage(settings: RunSettings) -> str:
    """Folder for persisted Prefect task results (absolute, so Dask workers agree)."""
    path = Path(settings.cache_dir, "prefect").resolve()
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def retry_transport(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn``: retry within the run only what may pass in seconds.

    An unreachable endpoint (connection, timeout, 429, 5xx after the client's
    own retries) or an HTTP error without a status or with 408/409/429/5xx is
    retried; a 401/403/404, an algorithm timeout or a content failure is not
    (the row is recorded as failed and the next run tries again).
    """
    exc = getattr(state, "data", None)
    if isinstance(exc, EndpointUnreachableError):
        return True
    if isinstance(exc, LLMCallError):
        return exc.status is None or exc.status in (408, 409, 429) or exc.status >= 500
    return False


def plan_task_resume(keys: Sequence[str], index: ResultIndex, settings: RunSettings) -> ResumePlan:
    """:func:`~agentcausal.runs.store.plan_resume` under the run's ``refresh`` and ``retry_failed``, with
    ``retry_failed`` also rerunning the jobs whose record only Prefect's result storage holds
    (:func:`stored_status` in :data:`~agentcausal.runs.store.RETRIED_STATUSES`).

    Parameters
    ----------
    keys : one task cache key per job, in job order
    index : ResultIndex of the job's kind (:func:`result_index`)
    settings : RunSettings

    Returns
    -------
    ResumePlan; ``rerun`` sorted when records moved there from ``run``.
    """
    resume = plan_resume(keys, index, refresh=settings.refresh, retry_failed=settings.retry_failed)
    run, rerun = resume.run, list(resume.rerun)
    if settings.retry_failed and not settings.refresh:  # records Prefect holds that the index does not
        moved = {i for i in run if stored_status(settings, keys[i]) in RETRIED_STATUSES}
        run, rerun = [i for i in run if i not in moved], sorted(rerun + list(moved))
    return ResumePlan(resume.reused, run, rerun)


def stored_status(settings: RunSettings, key: str) -> str | None:
    """The ``status`` of the result persisted under a task cache key, or None (absent or unreadable).

    Parameters
    ----------
    settings : RunSettings (its ``cache_dir`` locates the result storage)
    key : the task's cache key

    Returns
    -------
    str or None
    """
    from prefect.filesystems import LocalFileSystem
    from prefect.results import ResultStore

    store = ResultStore(result_storage=LocalFileSystem(basepath=result_storage(settings)))
    try:
        if not store.exists(key):
            return None
        return getattr(store.read(key).result, "status", None)
    except Exception:  # noqa: BLE001 - a torn record counts as absent (Prefect recomputes it too)
        return None


def was_cached(future: Any) -> bool:
    """True when a finished Prefect future's result came from the task cache (state name ``Cached``)."""
    try:
        return future.state.name == "Cached"
    except Exception:  # noqa: BLE001 - a runner whose futures lack a state: assume computed
        return False
