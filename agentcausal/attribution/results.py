"""The scored results of an attribution run: one row per (trace, method, repeat), and its file ``results.parquet``.

:func:`results_frame` scores attributions against their traces' current labels (the Parquet schema
of a run, :data:`RESULT_COLUMNS`); :class:`ResultsWriter` writes the file a batch of rows at a time
(what a run writes, so a corpus of any size is written in the memory of one batch); :func:`save_run`
writes a whole folder at once; :func:`load_results` reads it back (old files' missing columns
filled in), :func:`iter_results` the same a batch of rows at a time; :func:`read_attribution_summary` reads back
what a report step wrote.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated Failure Attribution of LLM
Multi-Agent Systems." ICML 2025. arXiv:2505.00212, section 3.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from agentcausal.attribution.evaluate import agent_match, length_bucket, step_match
from agentcausal.exceptions import RunFileError, TraceFormatError
from agentcausal.runs.folder import atomic_path, write_run_meta
from agentcausal.traces.model import Attribution, Trace, TraceFacts

__all__ = [
    "RESULT_COLUMNS",
    "OPTIONAL_COLUMNS",
    "results_frame",
    "save_results",
    "ResultsWriter",
    "save_run",
    "load_results",
    "iter_results",
    "AttributionSummary",
    "read_attribution_summary",
]


#: columns of a results frame, one row per (trace, method)
RESULT_COLUMNS = [
    "trace_id",
    "method",
    "subset",
    "n_steps",
    "length_bucket",
    "true_step",
    "true_agent",
    "pred_step",
    "pred_agent",
    "step_correct",
    "agent_correct",
    "both_correct",
    "abs_step_error",
    "undetermined",
    "error",
    "reason",
    "seconds",
    "calls",
    "requests",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "prompt_version",
    "settings_json",
    "models_json",
    "usage_json",
    "details_json",
    "trace_hash",
    "status",
    "status_detail",
    "reused",
    "request_seconds",
    "wait_seconds",
    "run_requests",
    "run_prompt_tokens",
    "run_completion_tokens",
    "run_request_seconds",
    "run_cost_usd",
]


#: columns every results file has had; the later ones are filled with defaults when an old file lacks them
_CORE_COLUMNS = RESULT_COLUMNS[: RESULT_COLUMNS.index("status")]


#: text columns that are never null: read into Arrow-backed strings (a large run's frame stays small)
_TEXT_COLUMNS = ("reason", "prompt_version", "settings_json", "models_json", "usage_json", "details_json", "trace_hash")

#: name columns that are never null (object columns of a frame built in memory)
_NAME_COLUMNS = ("trace_id", "method", "subset", "length_bucket")

#: columns older results files may lack: ``span_id`` of the blamed step (imported traces), the
#: trace-level ``failure_modes`` of corpora without step labels (MAST), and the richer result
#: (:class:`~agentcausal.traces.model.Attribution`): ``confidence`` (float or null), ``evidence`` and
#: ``evidence_note`` (text or null), ``candidates`` and ``corrected_action`` (JSON text or null)
OPTIONAL_COLUMNS = [
    "span_id",
    "failure_modes",
    "confidence",
    "evidence",
    "evidence_note",
    "candidates",
    "corrected_action",
]


#: ``json.dumps(value, sort_keys=True)`` and the same with ``default=str``, their encoders made once
_SORTED = json.JSONEncoder(sort_keys=True)
_SORTED_ANY = json.JSONEncoder(sort_keys=True, default=str)


def _row(a: Attribution, t: TraceFacts) -> dict[str, object]:
    true_step, true_agent = t.label_step, t.label_agent
    labelled = true_step is not None
    tot: dict[str, float] = {}
    for u in a.usage.values():
        for k, v in u.items():
            tot[k] = tot.get(k, 0) + v
    n = t.n_steps
    # seconds in requests vs waiting for an endpoint slot (StageUsage request_seconds / wait_seconds when
    # the gateway records them; before that, ``seconds`` is the time in calls, waiting included)
    request_s = sum(float(u.get("request_seconds", u.get("seconds", 0.0))) for u in a.usage.values())
    wait_s = sum(float(u.get("wait_seconds", 0.0)) for u in a.usage.values())
    spent = 0 if a.reused else 1  # a reused record cost this run nothing; its usage is the original cost
    step_ok = labelled and step_match(a.step, true_step)
    agent_ok = labelled and agent_match(a.agent, true_agent)
    return {
        "trace_id": a.trace_id,
        "method": a.method,
        "subset": t.source or a.trace_id.split("/", 1)[0],
        "n_steps": n,
        "length_bucket": length_bucket(n) if n else "",
        "true_step": true_step,
        "true_agent": true_agent,
        "pred_step": a.step,
        "pred_agent": a.agent,
        "step_correct": step_ok if labelled else None,
        "agent_correct": agent_ok if labelled else None,
        "both_correct": (step_ok and agent_ok) if labelled else None,
        "abs_step_error": abs(a.step - true_step) if true_step is not None and a.step is not None else None,
        "undetermined": a.error is None and a.step is None,
        "error": a.error,
        "reason": a.reason,
        "seconds": a.seconds,
        "calls": int(tot.get("calls", 0)),
        "requests": int(tot.get("requests", 0)),
        "cache_hits": int(tot.get("cache_hits", 0)),
        "prompt_tokens": int(tot.get("prompt_tokens", 0)),
        "completion_tokens": int(tot.get("completion_tokens", 0)),
        "cost_usd": float(tot.get("cost_usd", 0.0)),
        "prompt_version": a.prompt_version,
        "settings_json": _SORTED_ANY.encode(a.settings),
        "models_json": _SORTED.encode(a.models),
        "usage_json": _SORTED.encode(a.usage),
        "details_json": _SORTED_ANY.encode(a.details),
        "trace_hash": t.sha256,
        "status": "content_failed" if a.error and a.status == "complete" else a.status,  # a method-recorded error
        "status_detail": a.status_detail,
        "reused": a.reused,
        "request_seconds": request_s,
        "wait_seconds": wait_s,
        "run_requests": spent * int(tot.get("requests", 0)),
        "run_prompt_tokens": spent * int(tot.get("prompt_tokens", 0)),
        "run_completion_tokens": spent * int(tot.get("completion_tokens", 0)),
        "run_request_seconds": spent * request_s,
        "run_cost_usd": spent * float(tot.get("cost_usd", 0.0)),
        "span_id": t.span_ids[a.step] if a.step is not None and 0 <= a.step < len(t.span_ids) else None,
        "failure_modes": t.failure_modes,
        **_result_columns(a),
    }


def _result_columns(a: Attribution) -> dict[str, object]:
    """The richer-result columns of one row (:data:`OPTIONAL_COLUMNS`)."""
    return {
        "confidence": a.confidence,
        "evidence": a.evidence,
        "evidence_note": a.evidence_note,
        "candidates": None if a.candidates is None else json.dumps([c.model_dump() for c in a.candidates]),
        "corrected_action": None if a.corrected_action is None else a.corrected_action.model_dump_json(),
    }


def results_frame(attributions: Sequence[Attribution], traces: Sequence[Trace] | Mapping[str, Trace]) -> pd.DataFrame:
    """One row per attribution, scored against its trace's label.

    Parameters
    ----------
    attributions : sequence of Attribution (any methods)
    traces : the traces, as a sequence or a mapping id -> Trace

    Returns
    -------
    DataFrame with :data:`RESULT_COLUMNS`; nullable columns use pandas' nullable dtypes.

    Raises
    ------
    TraceFormatError
        If an attribution names a trace that is not given.
    """
    by_id = dict(traces) if isinstance(traces, Mapping) else {t.id: t for t in traces}
    rows = []
    for a in attributions:
        if a.trace_id not in by_id:
            raise TraceFormatError(f"attribution for unknown trace {a.trace_id!r}")
        rows.append(_row(a, by_id[a.trace_id].facts()))
    return _frame(rows)


def _frame(rows: Sequence[dict[str, object]]) -> pd.DataFrame:
    """Scored rows (:func:`_row`) as a results frame with the file's dtypes."""
    df = pd.DataFrame(rows, columns=RESULT_COLUMNS + OPTIONAL_COLUMNS)
    for c in ("true_step", "pred_step", "abs_step_error"):
        df[c] = df[c].astype("Int64")
    for c in ("step_correct", "agent_correct", "both_correct"):
        df[c] = df[c].astype("boolean")
    for c in ("error", "pred_agent", "true_agent", "status", "status_detail", *OPTIONAL_COLUMNS):
        if c != "confidence":
            df[c] = df[c].astype("string")
    df["confidence"] = df["confidence"].astype("Float64")
    df["reused"] = df["reused"].astype(bool)
    return df


def save_results(df: pd.DataFrame, path: str | Path) -> Path:
    """Write a results frame to Parquet atomically (temporary file, then rename; creates parent folders).

    Parameters
    ----------
    df : results frame
    path : target ``.parquet`` file

    Returns
    -------
    Path
    """
    p = Path(path)
    with atomic_path(p) as tmp:
        df.to_parquet(tmp, index=False)
    return p


def save_run(
    attributions: Sequence[Attribution],
    traces: Sequence[Trace],
    run_dir: str | Path,
    meta: Mapping[str, object] | None = None,
) -> Path:
    """Write a run folder: ``results.parquet`` (one row per trace and method) and ``run.json`` (meta),
    each atomically (temporary file, then rename).

    Parameters
    ----------
    attributions : sequence of Attribution
    traces : the traces they refer to
    run_dir : folder (created)
    meta : JSON-serialisable facts about the run (corpus, methods, settings, routing ...)

    Returns
    -------
    Path of ``results.parquet``.

    Raises
    ------
    TraceFormatError
        If an attribution names a trace that is not given.
    """
    d = Path(run_dir)
    p = save_results(results_frame(attributions, traces), d / "results.parquet")
    write_run_meta(d, meta or {})
    return p


class ResultsWriter:
    """``results.parquet`` written a batch of rows at a time: each attribution scored against its trace's
    current label (:func:`results_frame`) as it comes, then let go, so a run of any size is written in
    the memory of one batch. The file appears (atomically) when :meth:`close` is called.

    Parameters
    ----------
    path : the ``results.parquet`` to write
    batch : rows per Parquet row group

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from agentcausal.traces.model import Label, Step
    >>> t = Trace(id="x/1", question="q", ground_truth="a", label=Label(agent="A", step=0),
    ...           steps=[Step(index=0, agent="A", content="")])
    >>> w = ResultsWriter(pathlib.Path(tempfile.mkdtemp()) / "results.parquet")
    >>> w.add(Attribution(trace_id="x/1", method="m", step=0, agent="A"), t.facts()); w.close().name
    'results.parquet'
    """

    def __init__(self, path: str | Path, *, batch: int = 1000) -> None:
        self.path = Path(path)
        self.batch = batch
        self.rows = 0
        self._pending: list[dict[str, object]] = []  # scored rows: the traces are not kept
        self._atomic = atomic_path(self.path)
        self._tmp = self._atomic.__enter__()
        self._writer: pq.ParquetWriter | None = None

    def add(self, attribution: Attribution, facts: TraceFacts) -> None:
        """Score one attribution against its trace's facts (:meth:`Trace.facts`, or a plan item's)."""
        self._pending.append(_row(attribution, facts))
        if len(self._pending) >= self.batch:
            self._flush()

    def _flush(self) -> None:
        if not self._pending and self._writer is not None:
            return
        table = pa.Table.from_pandas(_frame(self._pending), preserve_index=False)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._tmp, table.schema)
        self._writer.write_table(table.cast(self._writer.schema))
        self.rows += len(self._pending)
        self._pending = []

    def close(self) -> Path:
        """Write the last rows and move the file into place; its path."""
        self._flush()
        self._writer.close()  # type: ignore[union-attr]  # _flush opened it (an empty file too)
        self._atomic.__exit__(None, None, None)
        return self.path


def _results_file(path: str | Path) -> Path:
    p = Path(path)
    if p.is_dir():
        p = p / "results.parquet"
    if not p.is_file():
        raise RunFileError("no results.parquet here; is this a run folder from `agentcausal attribute`?", path=str(p))
    return p


def _unreadable(p: Path, exc: Exception) -> RunFileError:
    return RunFileError(
        f"not a readable Parquet file ({p.stat().st_size} bytes; torn or empty?): "
        f"{type(exc).__name__}: {str(exc)[:200]}",
        path=str(p),
    )


def load_results(path: str | Path, *, without: Sequence[str] = ()) -> pd.DataFrame:
    """Read a results frame from a Parquet file or a run folder holding ``results.parquet``.

    Parameters
    ----------
    path : file or run folder
    without : columns not to read (a report of a large run leaves out what it never shows, e.g.
        ``settings_json`` and ``models_json``)

    Returns
    -------
    DataFrame

    Raises
    ------
    RunFileError (a TraceFormatError)
        If no results file is found, it cannot be read as Parquet (empty, torn by a kill)
        or it lacks the result columns; the message names the file.
    """
    p = _results_file(path)
    try:
        names = pq.read_schema(p).names
        df = pd.read_parquet(p, columns=[c for c in names if c not in set(without)])
    except Exception as exc:  # pyarrow raises several types for a torn or empty file
        raise _unreadable(p, exc) from exc
    return _complete(df, p, without)


def iter_results(path: str | Path, *, without: Sequence[str] = (), rows: int = 1000) -> Iterator[pd.DataFrame]:
    """A results frame a batch of rows at a time (what :func:`load_results` reads whole), so a report of a run of
    any size reads it in the memory of one batch.

    Parameters
    ----------
    path : file or run folder
    without : columns not to read
    rows : rows per batch at most

    Yields
    ------
    DataFrame, each with :func:`load_results`' columns and dtypes, in the file's row order.

    Raises
    ------
    RunFileError
        As :func:`load_results` (on the first batch, or on the batch where the file turns out torn).
    """
    p = _results_file(path)
    try:
        pf = pq.ParquetFile(p)
        columns = [c for c in pf.schema_arrow.names if c not in set(without)]
        empty = True
        for batch in pf.iter_batches(batch_size=rows, columns=columns):
            empty = False
            yield _complete(batch.to_pandas(), p, without)
        if empty:  # no row: the file's columns all the same
            yield _complete(pf.schema_arrow.empty_table().select(columns).to_pandas(), p, without)
    except RunFileError:
        raise
    except Exception as exc:  # pyarrow raises several types for a torn or empty file
        raise _unreadable(p, exc) from exc


def _complete(df: pd.DataFrame, p: Path, without: Sequence[str]) -> pd.DataFrame:
    """A frame read from a results file with the columns older files lack filled in and text in Arrow strings."""
    missing = [c for c in _CORE_COLUMNS if c not in df.columns and c not in without]
    if missing:
        raise RunFileError(f"results file lacks columns {', '.join(missing)}", path=str(p))
    if "status" not in df.columns:  # run folders written before the status columns existed
        df["status"] = ["complete" if pd.isna(e) else "content_failed" for e in df["error"]]
    for c, default in (("status_detail", None), ("reused", False), ("wait_seconds", 0.0)):
        if c not in df.columns:
            df[c] = default
    if "request_seconds" not in df.columns:
        df["request_seconds"] = [
            sum(float(u.get("seconds", 0.0)) for u in json.loads(b or "{}").values()) for b in df["usage_json"]
        ]
    for c in df.columns:  # text in Arrow's buffers, not one Python object per cell (missing cells stay pd.NA)
        if c in _TEXT_COLUMNS or isinstance(df[c].dtype, pd.StringDtype) or c in _NAME_COLUMNS:
            df[c] = df[c].astype("string[pyarrow]")
    for run_col, col in (
        ("run_requests", "requests"),
        ("run_prompt_tokens", "prompt_tokens"),
        ("run_completion_tokens", "completion_tokens"),
        ("run_request_seconds", "request_seconds"),
        ("run_cost_usd", "cost_usd"),
    ):
        if run_col not in df.columns:
            df[run_col] = df[col]
    return df


class AttributionSummary(NamedTuple):
    """What the ``attribute`` flow's report step wrote, read back without evaluating again.

    Attributes
    ----------
    overall : DataFrame, the overall accuracy table (``accuracy.csv``)
    failures : DataFrame, rows with an error: trace_id, method, status, error
    """

    overall: pd.DataFrame
    failures: pd.DataFrame


def read_attribution_summary(run_dir: str | Path) -> AttributionSummary:
    """The accuracy table and the failed rows of an evaluated attribution run folder (no re-evaluation).

    Parameters
    ----------
    run_dir : folder written and evaluated by the ``attribute`` flow (``accuracy.csv``, ``results.parquet``)

    Returns
    -------
    AttributionSummary

    Raises
    ------
    RunFileError
        If ``accuracy.csv`` or ``results.parquet`` is missing or unreadable.
    """
    d = Path(run_dir)
    acc = d / "accuracy.csv"
    if not acc.is_file():
        raise RunFileError(
            "no accuracy.csv here; was the run evaluated? (`agentcausal evaluate` writes it)", path=str(acc)
        )
    try:
        overall = pd.read_csv(acc)
        rows = pd.read_parquet(d / "results.parquet", columns=["trace_id", "method", "status", "error"])
    except Exception as exc:  # pandas/pyarrow raise several types for a torn file
        raise RunFileError(f"unreadable run file: {type(exc).__name__}: {str(exc)[:200]}", path=str(d)) from exc
    return AttributionSummary(overall, rows[rows["error"].notna()].reset_index(drop=True))
