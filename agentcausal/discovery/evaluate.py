"""Scoring of discovery outcomes: one row per (dataset, seed, method) against the true graph.

:func:`outcomes_frame` is the scored frame of a run (``results.parquet``): SHD, NHD, precision /
recall / F1 (directed and skeleton) from :func:`agentcausal.discovery.graphs.metrics.evaluate_graph`, with
time, tokens, errors and what each outcome cost this run. A run writes it with :class:`ScoredWriter`,
one outcome scored at a time, a batch of rows in memory. Reports read it; they do not score.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4, app. B.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from agentcausal.discovery.graphs.metrics import GraphMetrics, evaluate_graph
from agentcausal.discovery.outcome import DiscoveryOutcome, iter_outcomes
from agentcausal.runs.folder import atomic_path

__all__ = ["outcomes_frame", "outcome_row", "ScoredWriter", "run_notes", "truth_notes", "score_run"]


def outcomes_frame(outcomes: Sequence[DiscoveryOutcome], *, reversal_cost: Literal[1, 2] = 1) -> pd.DataFrame:
    """One row per outcome with its metrics against the true graph.

    Parameters
    ----------
    outcomes : sequence of DiscoveryOutcome
    reversal_cost : 1 or 2, how SHD counts a reversed edge

    Returns
    -------
    DataFrame with columns dataset, seed, n, method, shd, shd_reversal_cost,
    shd2, nhd, precision, recall, f1, skeleton_precision, skeleton_recall,
    skeleton_f1, n_pred_edges, n_true_edges, seconds, prompt_tokens,
    completion_tokens, llm_requests, error, edges (JSON), algorithm (the
    algorithm MAC's DCM ran, if any), models (JSON), prompt_version, data_hash,
    status, status_detail, reused, temperature (the sampling temperature an LLM method's calls used;
    NaN = the profile's, or not an LLM method), executor (``coding`` or ``typed``: how DCM ran its
    algorithm, empty without DCM), executor_fallback (why DCM ran typed instead of the coding agent:
    the sandbox unavailable under ``executor="auto"``, or the scripts failed), request_seconds (time
    inside HTTP requests, or in calls where the gateway does not split off the wait for a slot), and the "this run"
    cost run_llm_requests, run_prompt_tokens, run_completion_tokens, run_request_seconds
    (0 for a reused outcome; the unprefixed columns are the original cost).
    Metric cells are NaN when the method failed or there is no true graph.
    """
    return pd.DataFrame([outcome_row(o, reversal_cost=reversal_cost) for o in outcomes])


def outcome_row(o: DiscoveryOutcome, *, reversal_cost: Literal[1, 2] = 1) -> dict[str, Any]:
    """One outcome as a row of :func:`outcomes_frame` (its metrics against ``o.true_graph``)."""
    row: dict[str, Any] = {"dataset": o.dataset, "seed": o.seed, "n": o.n, "method": o.method}
    if o.graph is not None and o.true_graph is not None:
        m = evaluate_graph(o.true_graph, o.graph, reversal_cost=reversal_cost)
        row.update(m.model_dump())
        row["shd_reversal_cost"] = row.pop("reversal_cost")
    else:
        row.update(
            {
                k: float("nan")
                for k in (
                    "shd",
                    "shd2",
                    "nhd",
                    "precision",
                    "recall",
                    "f1",
                    "skeleton_precision",
                    "skeleton_recall",
                    "skeleton_f1",
                )
            }
        )
        row.update(
            shd_reversal_cost=reversal_cost,
            n_true_edges=len(o.true_graph.edges) if o.true_graph else 0,
            n_pred_edges=len(o.graph.edges) if o.graph else 0,
        )
    row.update(
        seconds=round(o.seconds, 3),
        prompt_tokens=int(sum(u.get("prompt_tokens", 0) for u in o.usage.values())),
        completion_tokens=int(sum(u.get("completion_tokens", 0) for u in o.usage.values())),
        llm_requests=int(sum(u.get("requests", 0) for u in o.usage.values())),
        error=o.error or "",  # the frame's convention: "" when the method did not fail
        edges=json.dumps(o.graph.edge_strings() if o.graph else []),
        algorithm=_dcm_algorithm(o),
        models=json.dumps(o.models, sort_keys=True),
        prompt_version=o.prompt_version,
        data_hash=o.data_hash,
        status="content_failed" if o.error and o.status == "complete" else o.status,  # pre-status records
        status_detail=o.status_detail or "",
        reused=o.reused,
        temperature=_temperature(o),
        executor=_executor(o)[0],
        executor_fallback=_executor(o)[1],
        request_seconds=float(sum(u.get("request_seconds", u.get("seconds", 0.0)) for u in o.usage.values())),
    )
    spent = 0 if o.reused else 1  # a reused outcome cost this run nothing
    row.update(
        run_llm_requests=spent * row["llm_requests"],
        run_prompt_tokens=spent * row["prompt_tokens"],
        run_completion_tokens=spent * row["completion_tokens"],
        run_request_seconds=spent * row["request_seconds"],
    )
    return row


def _temperature(o: DiscoveryOutcome) -> float:
    t = o.details.get("temperature") if isinstance(o.details, dict) else None
    return float(t) if isinstance(t, (int, float)) else float("nan")


def _executor(o: DiscoveryOutcome) -> tuple[str, str]:
    """(mode DCM ran, why it is not the coding agent it was meant to be) from an outcome's details."""
    d = o.details if isinstance(o.details, dict) else {}
    exe = (d.get("dcm") or {}).get("execution") if isinstance(d.get("dcm"), dict) else None
    if not isinstance(exe, dict):
        return "", ""
    reason = exe.get("fallback_reason") or d.get("executor_fallback") or ""
    return str(exe.get("mode", "")), str(reason)


def _dcm_algorithm(o: DiscoveryOutcome) -> str:
    try:
        return o.details["dcm"]["execution"]["choice"]["algorithm"]
    except (KeyError, TypeError):
        return o.details.get("choice", {}).get("algorithm", "") if isinstance(o.details, dict) else ""


def run_notes(outcomes: Sequence[DiscoveryOutcome]) -> list[str]:
    """Notes a reader of the run needs before its tables: each dataset without a true graph.

    The run engine writes them into ``run.json`` (``notes``); :func:`markdown_report` shows them.

    Parameters
    ----------
    outcomes : the run's outcomes

    Returns
    -------
    list of str, one line per note (empty when there is nothing to say).
    """
    return truth_notes(o.dataset for o in outcomes if o.true_graph is None)


def truth_notes(untrue: Iterable[str]) -> list[str]:
    """:func:`run_notes` from the names of the datasets without a true graph (repeats dropped, order kept)."""
    return [
        f'{name} has no true graph (no "true_edges" in its metadata): SHD, NHD and F1 are shown as -'
        for name in dict.fromkeys(untrue)
    ]


#: Arrow types of the integer and text columns of ``results.parquet`` (every other column is float64); an
#: integer column with a null reads back as float64 with NaN, as :func:`outcomes_frame` builds it
_INT_COLUMNS = frozenset(
    {"seed", "n", "shd_reversal_cost", "prompt_tokens", "completion_tokens", "llm_requests"}
    | {"run_llm_requests", "run_prompt_tokens", "run_completion_tokens"}
    | {k for k, f in GraphMetrics.model_fields.items() if f.annotation is int}
)
_TEXT_COLUMNS = frozenset(
    {"dataset", "method", "error", "edges", "algorithm", "models", "prompt_version", "data_hash", "status"}
    | {"status_detail", "executor", "executor_fallback"}
)


def _arrow_type(column: str) -> pa.DataType:
    if column in _INT_COLUMNS:
        return pa.int64()
    if column in _TEXT_COLUMNS:
        return pa.string()
    return pa.bool_() if column == "reused" else pa.float64()


class ScoredWriter:
    """``results.parquet`` of a discovery run written a batch of rows at a time: each outcome scored
    (:func:`outcome_row`) as it comes, then let go. Read back with pandas it is :func:`outcomes_frame` of
    the same outcomes (columns in the first row's order; an integer column with a NaN cell is float64).
    The file appears (atomically) when :meth:`close` is called.

    Parameters
    ----------
    path : the ``results.parquet`` to write
    reversal_cost : 1 or 2, how SHD counts a reversed edge
    batch : rows per Parquet row group
    """

    def __init__(self, path: str | Path, *, reversal_cost: Literal[1, 2] = 1, batch: int = 500) -> None:
        self.path, self.reversal_cost, self.batch = Path(path), reversal_cost, batch
        self.rows = 0
        self._pending: list[dict[str, Any]] = []
        self._atomic = atomic_path(self.path)
        self._tmp = self._atomic.__enter__()
        self._writer: pq.ParquetWriter | None = None

    def add(self, outcome: DiscoveryOutcome) -> None:
        """Score one outcome against its ``true_graph``."""
        self._pending.append(outcome_row(outcome, reversal_cost=self.reversal_cost))
        if len(self._pending) >= self.batch:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        if self._writer is None:
            schema = pa.schema([(c, _arrow_type(c)) for c in self._pending[0]])
            self._writer = pq.ParquetWriter(self._tmp, schema)
        frame = pd.DataFrame(self._pending, columns=self._writer.schema.names)
        self._writer.write_table(pa.Table.from_pandas(frame, schema=self._writer.schema, preserve_index=False))
        self.rows += len(self._pending)
        self._pending = []

    def close(self) -> Path:
        """Write the last rows and move the file into place (no outcome: a file of no columns); its path."""
        self._flush()
        if self._writer is None:
            pd.DataFrame([]).to_parquet(self._tmp, index=False)
        else:
            self._writer.close()
        self._atomic.__exit__(None, None, None)
        return self.path

    def abort(self) -> None:
        """Stop without a file (the temporary one removed; an earlier ``results.parquet`` stays)."""
        if self._writer is not None:
            self._writer.close()
        stop = RuntimeError("scoring stopped")
        self._atomic.__exit__(RuntimeError, stop, None)


def score_run(run_dir: str | Path, *, reversal_cost: Literal[1, 2] = 1) -> Path:
    """Score a discovery run folder's ``outcomes.jsonl`` into ``results.parquet`` (atomically, one outcome
    at a time); the file's path.

    What ``discover --report RUN_DIR --shd-reversal 2`` runs before the report: the outcomes scored again
    under another SHD convention, against the true graphs they hold.

    Raises
    ------
    RunFileError
        If ``outcomes.jsonl`` is missing or torn.
    """
    run = Path(run_dir)
    writer = ScoredWriter(run / "results.parquet", reversal_cost=reversal_cost)
    try:
        for o in iter_outcomes(run):
            writer.add(o)
    except BaseException:
        writer.abort()
        raise
    return writer.close()
