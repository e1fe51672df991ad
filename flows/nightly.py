"""The ``nightly`` flow: read tonight's traces, attribute the new ones, write the blame back, in one flow run.

What the ``my-traces-nightly`` (a folder of any supported format) and ``my-phoenix-nightly`` (a Phoenix
project and window) deployments of ``deploy/prefect.yaml`` run. Unattended by default: every unreadable file
and invalid trace is skipped and named (one line each, counted, listed in the artifact), and a night with
nothing new sends nothing. Wiring only: the loop's library half is :mod:`agentcausal.tracers.nightly`,
the run is the ``attribute`` flow (a subflow), the write-back :func:`agentcausal.tracers.phoenix.annotate_phoenix`
or :func:`agentcausal.tracers.otlp_export.write_evaluation_logs`.

Artifacts (key ``nightly-<deployment or out_dir>``): a table with what was read, skipped, new, attributed, not
run, blamed, written and spent tonight, and a markdown list of the inputs skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Failed

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.exceptions import ConfigError
from agentcausal.runs.lock import run_folder_lock
from agentcausal.runs.options import RunOptions
from agentcausal.settings import RunSettings
from agentcausal.tracers.nightly import CORPUS_FILE, merge_corpus, night_summary, read_tonight
from agentcausal.tracers.otlp_export import write_evaluation_logs
from agentcausal.tracers.phoenix import PhoenixQuery, annotate_phoenix, parse_when
from agentcausal.traces.jsonl import write_jsonl
from flows import naming
from flows.attribute import attribute
from flows.engine import FailedRows, run_dir_of

__all__ = ["nightly", "OTLP_FILE"]

#: the OTLP JSON logs file ``write_back="otlp"`` writes into the run folder
OTLP_FILE = "blame.otlp.json"

WriteBack = Literal["auto", "phoenix", "otlp", "none"]


def _skipped_line(s: dict[str, Any]) -> str:
    return f"skipped {s['path']}{' ' + s['field'] if s.get('field') else ''}: {s['error']}"


@flow(name="nightly", log_prints=True)
def nightly(
    paths: list[str] | None = None,
    url: str | None = None,
    project: str = "default",
    since: str | None = None,
    until: str | None = None,
    span_filter: str | None = None,
    methods: list[str] = ["all_at_once"],  # noqa: B006 (Prefect copies parameters)
    out_dir: str = "runs/nightly",
    max_cost: float | None = None,
    write_back: WriteBack = "auto",
    annotate_url: str | None = None,
    settings: RunSettings | None = None,
    with_ground_truth: bool | None = False,
    preset: str | None = None,
    meta: dict[str, Any] | None = None,
    chunk_size: int | None = None,
    format: str = "auto",
    tool_agent: str | None = None,
) -> dict[str, Any]:
    """One night: read, attribute what is new or left over, write the blame back; the night's summary.

    Parameters
    ----------
    paths : trace files or folders, any supported format (OTLP JSON, OpenInference, Who&When, Trace JSONL ...)
    url, project : a Phoenix server and project to read (besides or instead of ``paths``)
    since, until : the Phoenix window on span start times: ISO-8601 or a duration back from now (``24h``)
    span_filter : Phoenix's span filter condition, passed through
    methods, settings, with_ground_truth, preset, chunk_size : as the ``attribute`` flow's
    out_dir : the run folder, the same every night (its ``traces.jsonl`` keeps every trace it has seen)
    max_cost : USD tonight may spend (this invocation's actual spend; None = no cap); rows held back are
        ``not_run``, never stored, and the next night computes them without paying again for the rest
    write_back : ``phoenix`` (span annotations to ``annotate_url`` or ``url``), ``otlp`` (OTLP JSON logs,
        ``<out_dir>/blame.otlp.json``), ``none``; ``auto``: ``phoenix`` when there is a Phoenix URL, else ``otlp``
    meta : extra ``run.json`` fields (``name`` names the run)
    format, tool_agent : the import options (``agentcausal import --help``)

    Returns
    -------
    dict, :func:`agentcausal.tracers.nightly.night_summary` with ``run_dir``; a night with failed rows
    (transport, key, timeout) ends its flow run Failed instead (:class:`flows.engine.FailedRows`, after the
    write-back and the artifacts), so an automation on failed flow runs alerts. Rows held back by ``max_cost``
    (``not_run``) leave the night Completed: the cap is the night's budget, and the next night computes them.

    Raises
    ------
    ConfigError
        If neither ``paths`` nor ``url`` is given, or ``write_back="phoenix"`` has no Phoenix URL.
    TraceStoreError
        If Phoenix cannot be read, or refuses the annotations.
    """
    target = annotate_url or url
    mode = ("phoenix" if target else "otlp") if write_back == "auto" else write_back
    if not paths and not url:
        raise ConfigError("the nightly flow needs paths (a trace folder) or url (a Phoenix server)")
    if mode == "phoenix" and not target:
        raise ConfigError("write_back='phoenix' needs annotate_url or url (the Phoenix server)")
    q = None
    if url:
        q = PhoenixQuery(
            url=url,
            project=project,
            start=parse_when(since) if since else None,
            end=parse_when(until) if until else None,
            filter=span_filter,
        )
    tonight = read_tonight(list(paths or []), phoenix=q, format=format, tool_agent=tool_agent)
    log = get_run_logger()
    for s in tonight.skipped:  # a warning: an input left out is something to look at, not progress
        log.warning(_skipped_line(s))
    written: int | None = None
    written_to: str | None = None
    left_out = 0
    with run_folder_lock(out_dir):  # the corpus file, the run and the write-back: one night at a time
        corpus = merge_corpus(out_dir, tonight.traces)
        ran = bool(corpus.traces) and not corpus.nothing_to_do
        if not corpus.traces:
            print(f"nothing to attribute: no valid trace in {tonight.source}")
        elif not ran:
            print(
                f"nothing new since {corpus.last_started or 'the last night'}: {len(corpus.traces)} trace(s), "
                f"every one attributed; nothing sent"
            )
        else:
            corpus_file = write_jsonl(corpus.traces, Path(out_dir) / CORPUS_FILE)
            request = AttributionRequest(
                paths=[str(corpus_file)], methods=list(methods), with_ground_truth=with_ground_truth, preset=preset
            )
            options = RunOptions(
                out_dir=out_dir,
                chunk_size=chunk_size,
                max_cost=max_cost,
                meta={**({"phoenix": q.describe()} if q else {}), "skipped_tonight": tonight.skipped, **(meta or {})},
            )
            # rows not computed end the subflow Failed; the night still writes back what it has
            run_dir_of(lambda: attribute(plan=request, run=options, settings=settings))
            if mode == "phoenix" and target:
                res = annotate_phoenix(out_dir, target)
                written, written_to, left_out = res.written, target, len(res.unplaced)
            elif mode == "otlp":
                exp = write_evaluation_logs(out_dir, Path(out_dir) / OTLP_FILE)
                written, written_to, left_out = exp.written, str(exp.path), len(exp.left_out)
    summary = night_summary(
        out_dir, tonight, corpus, ran=ran, written=written, written_to=written_to, left_out=left_out
    )
    _publish(out_dir, summary, tonight.skipped)
    print(
        "night: "
        + ", ".join(f"{k} {v}" for k, v in summary.items() if v is not None and k not in ("written_to",))
        + (f" (written to {written_to})" if written_to else "")
    )
    if summary.get("failed"):  # the UI tells the truth: an automation on failed flow runs alerts
        message = f"{summary['failed']} row(s) failed tonight; run folder {out_dir}; the next night computes them"
        return Failed(message=message, data=FailedRows(message, out_dir))  # type: ignore[return-value]
    return {**summary, "run_dir": out_dir}


def _publish(out_dir: str, summary: dict[str, Any], skipped: list[dict[str, Any]]) -> None:
    """The night's table and the skipped inputs as Prefect artifacts."""
    subject = naming.subject(Path(out_dir).name)
    how = {
        "read": "valid traces read tonight",
        "skipped": "inputs left out tonight (unreadable file, invalid trace), each named below",
        "new": "traces not in the run folder before",
        "changed": "traces whose content changed",
        "attributed": "rows computed tonight (not answered by the results store)",
        "not_run": "rows held back (spend cap, breaker): computed next night",
        "failed": "rows failed (transport, key, timeout): computed next night",
        "blamed": "rows with a blamed span in the run folder",
        "written": "annotations / OTLP records written back",
        "written_to": "where they went",
        "left_out": "blamed rows not written (no span id)",
        "spent_usd": "USD tonight (endpoint-reported tokens at the profiles' prices)",
        "run_total_usd": "USD of the run folder, every night",
    }
    create_table_artifact(
        [{"what": k, "value": "–" if v is None else v, "how": how[k]} for k, v in summary.items()],
        key=naming.key("nightly", subject),
        description="One night: read, skipped, attributed, blamed, written back, spent",
    )
    lines = [f"- {_skipped_line(s)}" for s in skipped] or ["- none"]
    create_markdown_artifact(
        "# Inputs skipped tonight\n\n" + "\n".join(lines),
        key=naming.key("nightly-skipped", subject),
        description="Every file or trace left out tonight, and why",
    )
