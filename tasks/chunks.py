"""What every chunk task shares: the retry rule, the task-run name, and the chunk as the runner delivers it.

A chunk task (one per half: :mod:`tasks.attribution`, :mod:`tasks.discovery`) runs the jobs of one
:class:`~agentcausal.runs.half.Chunk` and stores each record in the results store as it finishes
(:func:`agentcausal.runs.engine.run_chunk`). Prefect's own result persistence and task cache are off
(``NO_CACHE``, ``persist_result=False``): the results store is the one store of finished records, read
before anything is submitted (ARCHITECTURE.md, "Caching"). Within a run Prefect retries a chunk only
for transport-level errors (:func:`retry_transport`); the retry repeats only the chunk's unfinished jobs.
"""

from __future__ import annotations

from typing import Any

from prefect.runtime import task_run

from agentcausal.exceptions import EndpointUnreachableError, LLMCallError
from agentcausal.runs.half import Chunk

__all__ = ["retry_transport", "chunk_run_name", "unquoted", "CHUNK_TASK"]

#: options of every chunk task
CHUNK_TASK: dict[str, Any] = {"retries": 2, "retry_delay_seconds": 2, "persist_result": False}


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


def unquoted(chunk: Any) -> Chunk:
    """A chunk task's argument as the flow passed it, whatever the task runner made of Prefect's ``quote``
    (the thread runner unwraps it; on Dask it arrives pickled, holding a one-element tuple of the chunk).
    """
    while not isinstance(chunk, Chunk):
        if hasattr(chunk, "unquote"):
            chunk = chunk.unquote()
        elif isinstance(chunk, (list, tuple)) and len(chunk) == 1:
            chunk = chunk[0]
        else:
            raise TypeError(f"not a chunk: {type(chunk).__name__}")
    return chunk


def chunk_run_name() -> str:
    """Task-run name of a chunk task: ``<method>:<item>`` or ``<method>:<first>..<last> (<n>)``."""
    return unquoted(task_run.parameters["chunk"]).name
