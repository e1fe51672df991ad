"""What every task shares: one gateway per process and settings, and the cache policy.

Prefect caching: the default policy includes the run id, so nothing would be
reused across flow runs. Tasks here use explicit key functions over canonical
content hashes (trace content hash, ``joblib.hash`` of data) plus the task's
source, and persist results under ``<cache_dir>/prefect``. LLM calls are also
cached per request by the gateway, so a task that crashed midway repeats no
completed call when retried.
"""

from __future__ import annotations

import functools
from pathlib import Path

from agentcausal.llm import Gateway
from agentcausal.settings import RunSettings

__all__ = ["gateway_for", "result_storage"]


@functools.lru_cache(maxsize=8)
def gateway_for(settings: RunSettings) -> Gateway:
    """One gateway per (process, settings): shares HTTP clients, semaphores and the disk cache handle."""
    return settings.gateway()


def result_storage(settings: RunSettings) -> str:
    """Folder for persisted Prefect task results (absolute, so Dask workers agree)."""
    path = Path(settings.cache_dir, "prefect").resolve()
    path.mkdir(parents=True, exist_ok=True)
    return str(path)
