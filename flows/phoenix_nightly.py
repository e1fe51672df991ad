"""The ``attribute-phoenix`` flow: the traces of an Arize Phoenix project attributed into one run folder.

Kept for deployments registered before the ``nightly`` flow (:mod:`flows.nightly`), which the shipped
``my-phoenix-nightly`` template now runs: this is that flow with no write-back (``write_back="none"``) and
no spend cap, so the run folder keeps every trace it has seen and only new or changed traces are computed.
Wiring only.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from agentcausal.settings import RunSettings
from flows.nightly import nightly

__all__ = ["attribute_phoenix"]


@flow(name="attribute-phoenix", log_prints=True)
def attribute_phoenix(
    url: str,
    project: str = "default",
    since: str | None = None,
    until: str | None = None,
    span_filter: str | None = None,
    methods: list[str] = ["all_at_once"],  # noqa: B006
    out_dir: str = "runs/phoenix-nightly",
    settings: RunSettings | None = None,
    with_ground_truth: bool | None = False,
    preset: str | None = None,
    meta: dict[str, Any] | None = None,
    chunk_size: int | None = None,
) -> str:
    """Attribute the traces a Phoenix query selects (:func:`flows.nightly.nightly` without write-back); the run folder.

    Parameters
    ----------
    url, project, since, until, span_filter : the Phoenix query (as :func:`flows.nightly.nightly`'s)
    methods, settings, with_ground_truth, preset, meta, chunk_size : as the ``attribute`` flow's
    out_dir : the run folder, the same for every run (so finished traces are reused)

    Raises
    ------
    TraceStoreError
        If the server cannot be read, has no such project or refuses the filter.
    """
    nightly(
        url=url,
        project=project,
        since=since,
        until=until,
        span_filter=span_filter,
        methods=list(methods),
        out_dir=out_dir,
        write_back="none",
        settings=settings,
        with_ground_truth=with_ground_truth,
        preset=preset,
        meta=meta,
        chunk_size=chunk_size,
    )
    return out_dir
