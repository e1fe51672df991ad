"""The run folder, one module for both halves: save, load, evaluate and report, ``run.json``.

A run folder holds ``run.json`` (the run's facts, with the plan under ``plan``;
:func:`write_run_meta`, :func:`load_run_meta`) and the records:

* attribution (``agentcausal attribute``): ``results.parquet``, one row per
  (trace, method, repeat) (:func:`save_attribution_run`, :func:`load_results`);
  the report step adds ``report.md``, ``report.html``, ``accuracy.csv`` and plots;
* discovery (``agentcausal discover``): ``outcomes.jsonl``, the full records
  (:func:`save_discovery_run`, :func:`load_discovery_outcomes`); the report step
  scores them into ``results.parquet``, ``summary.csv``, graphs and ``report.md``.

:func:`run_kind` tells the two apart, :func:`report_run_folder` evaluates and
reports either (what ``agentcausal evaluate`` and the flows' report steps call),
and :func:`read_attribution_summary` reads back what an attribution report step
wrote, so a caller that printed the flow's run does not evaluate it again.

Every file is written to a temporary file in the same folder and renamed
(:mod:`agentcausal.runfiles`); a torn or missing one is a one-line
:class:`~agentcausal.exceptions.RunFileError` naming it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import pandas as pd

from agentcausal.exceptions import RunFileError
from agentcausal.runfiles import atomic_write_text

if TYPE_CHECKING:
    from agentcausal.discovery.methods import DiscoveryOutcome
    from agentcausal.traces.model import Attribution, Trace

__all__ = ["write_run_meta", "load_run_meta", "save_attribution_run", "load_results", "save_discovery_run",
           "load_discovery_outcomes", "run_kind", "report_run_folder", "AttributionSummary",
           "read_attribution_summary"]


def write_run_meta(run_dir: str | Path, meta: Mapping[str, Any]) -> Path:
    """Write ``run.json`` (sorted keys, indented; values JSON can't hold as text) atomically; creates the folder.

    Returns
    -------
    Path of ``run.json``.
    """
    d = Path(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    p = d / "run.json"
    atomic_write_text(p, json.dumps(dict(meta), indent=2, sort_keys=True, default=str) + "\n")
    return p


def load_run_meta(run_dir: str | Path) -> dict[str, object]:
    """The ``run.json`` of a run folder, or an empty dict when absent.

    Parameters
    ----------
    run_dir : folder

    Returns
    -------
    dict

    Raises
    ------
    RunFileError
        If ``run.json`` exists but is not a JSON object (torn, empty).
    """
    p = Path(run_dir) / "run.json"
    if not p.is_file():
        return {}
    try:
        meta = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunFileError(f"not valid JSON (torn or empty?): {exc}", path=str(p)) from exc
    if not isinstance(meta, dict):
        raise RunFileError("not a JSON object", path=str(p))
    return meta
def save_attribution_run(attributions: Sequence[Attribution], traces: Sequence[Trace], run_dir: str | Path,
             meta: Mapping[str, object] | None = None) -> Path:
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
    from agentcausal.attribution.evaluate import results_frame, save_results

    d = Path(run_dir)
    p = save_results(results_frame(attributions, traces), d / "results.parquet")
    write_run_meta(d, meta or {})
    return p


def load_results(path: str | Path) -> pd.DataFrame:
    """Read a results frame from a Parquet file or a run folder holding ``results.parquet``.

    Parameters
    ----------
    path : file or run folder

    Returns
    -------
    DataFrame

    Raises
    ------
    RunFileError (a TraceFormatError)
        If no results file is found, it cannot be read as Parquet (empty, torn by a kill)
        or it lacks the result columns; the message names the file.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "results.parquet"
    if not p.is_file():
        raise RunFileError("no results.parquet here; is this a run folder from `agentcausal attribute`?",
                           path=str(p))
    try:
        df = pd.read_parquet(p)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a torn or empty file
        raise RunFileError(f"not a readable Parquet file ({p.stat().st_size} bytes; torn or empty?): "
                           f"{type(exc).__name__}: {str(exc)[:200]}", path=str(p)) from exc
    from agentcausal.attribution.evaluate import _CORE_COLUMNS

    missing = [c for c in _CORE_COLUMNS if c not in df.columns]
    if missing:
        raise RunFileError(f"results file lacks columns {', '.join(missing)}", path=str(p))
    if "status" not in df.columns:  # run folders written before the status columns existed
        df["status"] = ["complete" if pd.isna(e) else "content_failed" for e in df["error"]]
    for c, default in (("status_detail", None), ("reused", False), ("wait_seconds", 0.0)):
        if c not in df.columns:
            df[c] = default
    if "request_seconds" not in df.columns:
        df["request_seconds"] = [sum(float(u.get("seconds", 0.0)) for u in json.loads(b or "{}").values())
                                 for b in df["usage_json"]]
    for run_col, col in (("run_requests", "requests"), ("run_prompt_tokens", "prompt_tokens"),
                         ("run_completion_tokens", "completion_tokens"), ("run_request_seconds", "request_seconds"),
                         ("run_cost_usd", "cost_usd")):
        if run_col not in df.columns:
            df[run_col] = df[col]
    return df
def save_discovery_run(outcomes: Sequence[DiscoveryOutcome], run_dir: str | Path, meta: Mapping[str, Any]) -> Path:
    """Write ``outcomes.jsonl`` (full records) and ``run.json`` to the run folder.

    Returns
    -------
    Path of the run folder.
    """
    run = Path(run_dir)
    run.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run / "outcomes.jsonl", "".join(o.model_dump_json() + "\n" for o in outcomes))
    write_run_meta(run, meta)
    return run
def load_discovery_outcomes(run_dir: str | Path) -> list[DiscoveryOutcome]:
    """Read ``outcomes.jsonl`` back.

    Raises
    ------
    RunFileError
        If the file is missing or a line is not a valid outcome (torn by a kill); names the file and line.
    """
    path = Path(run_dir) / "outcomes.jsonl"
    if not path.is_file():
        raise RunFileError("no outcomes.jsonl here; is this a run folder from `agentcausal discover`?",
                           path=str(path))
    from agentcausal.discovery.methods import DiscoveryOutcome

    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if line.strip():
            try:
                out.append(DiscoveryOutcome.model_validate_json(line))
            except ValueError as exc:
                raise RunFileError(f"line {i} is not a valid outcome (torn?): {str(exc)[:200]}",
                                   path=str(path)) from exc
    return out
def run_kind(run_dir: str | Path) -> Literal["attribute", "discover"]:
    """``discover`` for a folder holding ``outcomes.jsonl`` (written by ``discover`` only), else ``attribute``."""
    return "discover" if (Path(run_dir) / "outcomes.jsonl").is_file() else "attribute"


def report_run_folder(run_dir: str | Path, *, reversal_cost: Literal[1, 2] = 1) -> Any:
    """Evaluate a run folder of either kind and write its report.

    Parameters
    ----------
    run_dir : run folder
    reversal_cost : 1 or 2, how SHD counts a reversed edge (discovery only)

    Returns
    -------
    RunReport (:func:`agentcausal.report.attribution.report_run`) or RunFiles
    (:func:`agentcausal.report.discovery.write_report`).

    Raises
    ------
    RunFileError
        If a run file is missing, torn or malformed.
    """
    if run_kind(run_dir) == "discover":
        from agentcausal.report.discovery import write_report

        return write_report(run_dir, reversal_cost=reversal_cost)
    from agentcausal.report.attribution import report_run

    return report_run(run_dir)


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
        raise RunFileError("no accuracy.csv here; was the run evaluated? (`agentcausal evaluate` writes it)",
                           path=str(acc))
    try:
        overall = pd.read_csv(acc)
        rows = pd.read_parquet(d / "results.parquet", columns=["trace_id", "method", "status", "error"])
    except Exception as exc:  # noqa: BLE001 - pandas/pyarrow raise several types for a torn file
        raise RunFileError(f"unreadable run file: {type(exc).__name__}: {str(exc)[:200]}", path=str(d)) from exc
    return AttributionSummary(overall, rows[rows["error"].notna()].reset_index(drop=True))
