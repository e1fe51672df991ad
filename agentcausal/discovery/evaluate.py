"""Scoring of discovery outcomes: one row per (dataset, seed, method) against the true graph.

:func:`outcomes_frame` is the scored frame of a run (``results.parquet``): SHD, NHD, precision /
recall / F1 (directed and skeleton) from :func:`agentcausal.discovery.graphs.metrics.evaluate_graph`, with
time, tokens, errors and what each outcome cost this run. Reports read it; they do not score.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4, app. B.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from agentcausal.discovery.graphs.metrics import evaluate_graph
from agentcausal.discovery.outcome import DiscoveryOutcome, load_outcomes
from agentcausal.runs.folder import atomic_path

__all__ = ["outcomes_frame", "run_notes", "score_run"]


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
    rows = []
    for o in outcomes:
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
        rows.append(row)
    return pd.DataFrame(rows)


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
    missing = list(dict.fromkeys(o.dataset for o in outcomes if o.true_graph is None))
    return [
        f'{name} has no true graph (no "true_edges" in its metadata): SHD, NHD and F1 are shown as -'
        for name in missing
    ]


def score_run(run_dir: str | Path, *, reversal_cost: Literal[1, 2] = 1) -> pd.DataFrame:
    """Score a discovery run folder's ``outcomes.jsonl`` into ``results.parquet`` (atomically); the frame.

    What ``discover --report RUN_DIR --shd-reversal 2`` runs before the report: the outcomes scored again
    under another SHD convention, against the true graphs they hold.

    Raises
    ------
    RunFileError
        If ``outcomes.jsonl`` is missing or torn.
    """
    run = Path(run_dir)
    df = outcomes_frame(load_outcomes(run), reversal_cost=reversal_cost)
    with atomic_path(run / "results.parquet") as tmp:
        df.to_parquet(tmp, index=False)
    return df
