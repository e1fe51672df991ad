"""The ``attribute-phoenix`` flow: the traces of an Arize Phoenix project attributed into one run folder.

For scheduled runs (the ``my-phoenix-nightly`` template of ``deploy/prefect.yaml``): the project's traces
(in a time window, through Phoenix's own span filter) are read from the running Phoenix server
(:func:`agentcausal.tracers.phoenix.load_phoenix`), written to ``<out_dir>/traces.jsonl`` and run by the
``attribute`` flow into the same run folder every time, so the results store answers every trace it has
seen with the same content and only new or changed traces are computed. Wiring only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from agentcausal.runs.lock import run_folder_lock
from agentcausal.settings import RunSettings
from agentcausal.tracers.phoenix import PhoenixQuery, load_phoenix, parse_when
from agentcausal.traces.jsonl import write_jsonl
from flows.attribute import attribute

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
    """Attribute the traces a Phoenix query selects; the run folder.

    Parameters
    ----------
    url, project : the Phoenix server and project (name or id)
    since, until : the window on span start times: ISO-8601 or a duration back from now (``24h``); None = open
    span_filter : Phoenix's span filter condition, passed through (a trace is read whole when a span matches)
    methods, settings, with_ground_truth, preset, meta, chunk_size : as the ``attribute`` flow's
    out_dir : the run folder, the same for every run (so finished traces are reused)

    Raises
    ------
    TraceStoreError
        If the server cannot be read, has no such project or refuses the filter.
    """
    q = PhoenixQuery(
        url=url,
        project=project,
        start=parse_when(since) if since else None,
        end=parse_when(until) if until else None,
        filter=span_filter,
    )
    bad: list[tuple[str, str]] = []
    traces = load_phoenix(q, skip_invalid=True, invalid=bad)
    for tid, why in bad:
        print(f"skipped Phoenix trace {tid}: {why}")
    if not traces:  # a quiet night: nothing to attribute, the run folder keeps the last results
        print(f"no trace in Phoenix project {project!r} at {url} for this window; nothing to do")
        return out_dir
    with run_folder_lock(out_dir):  # the traces file and the run, one run at a time
        corpus = write_jsonl(traces, Path(out_dir) / "traces.jsonl")
        return attribute(
            paths=[str(corpus)],
            methods=list(methods),
            settings=settings,
            out_dir=out_dir,
            with_ground_truth=with_ground_truth,
            preset=preset,
            chunk_size=chunk_size,
            meta={"phoenix": q.describe(), **(meta or {})},
        )
