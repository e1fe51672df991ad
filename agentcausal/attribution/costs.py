"""What an attribution run cost: tokens, calls and seconds per (method, stage), and what this run spent beside
what its records cost when computed.

:func:`usage_by_stage` sums every row's ``usage_json`` (:class:`StageTotals`, which a report reading
``results.parquet`` a batch at a time feeds as rows come); :func:`cost_this_run` compares the ``run_*`` columns
(0 for a reused row) with the original usage. Both are tables of
:class:`~agentcausal.attribution.evaluate.Evaluation`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import cast

import pandas as pd

__all__ = ["StageTotals", "usage_by_stage", "traces_per_method", "cost_this_run"]


class StageTotals:
    """Calls, tokens and seconds per (method, stage), summed over ``usage_json`` cells as they come (:meth:`add`):
    :func:`usage_by_stage` over a frame, or a report reading ``results.parquet`` a batch at a time."""

    _KEYS = ("calls", "requests", "cache_hits", "prompt_tokens", "completion_tokens", "seconds")

    def __init__(self) -> None:
        self._acc: dict[tuple[str, str], dict[str, float]] = {}

    def add(self, method: str, blob: str | None) -> None:
        """Count one row's usage (its ``usage_json``: stage -> usage record)."""
        for stage, u in json.loads(blob or "{}").items():
            d = self._acc.setdefault((method, stage), {})
            for k in self._KEYS:
                d[k] = d.get(k, 0) + float(u.get(k, 0))
            # time inside requests vs waiting for an endpoint slot (time in calls where the gateway does not split)
            d["request_seconds"] = d.get("request_seconds", 0) + float(u.get("request_seconds", u.get("seconds", 0)))
            d["wait_seconds"] = d.get("wait_seconds", 0) + float(u.get("wait_seconds", 0))

    def frame(self, n_traces: Mapping[str, int]) -> pd.DataFrame:
        """The totals and per-trace means (``n_traces``: method -> its distinct traces), as :func:`usage_by_stage`."""
        rows = []
        for (method, stage), d in sorted(self._acc.items()):
            n = n_traces.get(method, 1) or 1
            rows.append(
                {
                    "method": method,
                    "stage": stage,
                    "traces": n,
                    **{k: d[k] for k in d},
                    "prompt_tokens_per_trace": d["prompt_tokens"] / n,
                    "completion_tokens_per_trace": d["completion_tokens"] / n,
                    "seconds_per_trace": d["seconds"] / n,
                }
            )
        return pd.DataFrame(rows, columns=_STAGE_COLUMNS)


_STAGE_COLUMNS = [
    "method",
    "stage",
    "traces",
    "calls",
    "requests",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "prompt_tokens_per_trace",
    "completion_tokens_per_trace",
    "seconds_per_trace",
    "request_seconds",
    "wait_seconds",
]


def traces_per_method(df: pd.DataFrame) -> dict[str, int]:
    """Distinct trace ids per method."""
    return cast(dict[str, int], df.groupby("method")["trace_id"].nunique().to_dict())


def usage_by_stage(df: pd.DataFrame) -> pd.DataFrame:
    """Tokens, calls and seconds per (method, stage), as totals and per-trace means.

    Parameters
    ----------
    df : results frame (reads ``usage_json``)

    Returns
    -------
    DataFrame with columns method, stage, traces, calls, requests, cache_hits, prompt_tokens,
    completion_tokens, seconds, prompt_tokens_per_trace, completion_tokens_per_trace, seconds_per_trace,
    request_seconds (time inside requests; the time in calls where the gateway does not split it
    off) and wait_seconds (time waiting for an endpoint slot, 0 where not recorded).
    """
    totals = StageTotals()
    for method, blob in zip(df["method"], df["usage_json"]):
        totals.add(method, blob)
    return totals.frame(traces_per_method(df))


def cost_this_run(df: pd.DataFrame) -> pd.DataFrame:
    """What this run spent beside what its records cost when computed, per method (totals).

    A reused row (read from the results store, or every LLM call a cache hit) cost
    this run nothing: its ``run_*`` columns are 0 and its original usage is
    what the first run paid. Request seconds are time inside HTTP requests
    (``request_seconds`` of the gateway's usage, or the time in calls where
    the gateway does not split off the wait for an endpoint slot).

    Parameters
    ----------
    df : results frame

    Returns
    -------
    DataFrame with columns method, rows, reused, degraded, requests_this_run, requests_original,
    prompt_tokens_this_run, prompt_tokens_original, completion_tokens_this_run,
    completion_tokens_original, request_s_this_run, request_s_original, cost_usd_this_run, cost_usd_original.
    """
    rows = []
    for method, g in df.groupby("method", sort=True):
        rows.append(
            {
                "method": method,
                "rows": len(g),
                "reused": int(g["reused"].astype(bool).sum()),
                "degraded": int((g["status"] == "degraded").sum()),
                "requests_this_run": int(g["run_requests"].sum()),
                "requests_original": int(g["requests"].sum()),
                "prompt_tokens_this_run": int(g["run_prompt_tokens"].sum()),
                "prompt_tokens_original": int(g["prompt_tokens"].sum()),
                "completion_tokens_this_run": int(g["run_completion_tokens"].sum()),
                "completion_tokens_original": int(g["completion_tokens"].sum()),
                "request_s_this_run": float(g["run_request_seconds"].sum()),
                "request_s_original": float(g["request_seconds"].sum()),
                "cost_usd_this_run": float(g["run_cost_usd"].sum()),
                "cost_usd_original": float(g["cost_usd"].sum()),
            }
        )
    cols = [
        "method",
        "rows",
        "reused",
        "degraded",
        "requests_this_run",
        "requests_original",
        "prompt_tokens_this_run",
        "prompt_tokens_original",
        "completion_tokens_this_run",
        "completion_tokens_original",
        "request_s_this_run",
        "request_s_original",
        "cost_usd_this_run",
        "cost_usd_original",
    ]
    return pd.DataFrame(rows, columns=cols)
