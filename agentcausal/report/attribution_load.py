"""What an attribution report reads besides ``results.parquet``: the traces it shows, at most
:data:`MAX_SHOWN_TRACES` of them.

``report.html`` shows the first :data:`MAX_SHOWN_TRACES` traces (by id) row by row and step by step, so a
report of a large corpus stays readable and is written in bounded memory; every row stays in
``results.parquet``. :func:`shown_rows` picks their rows, :func:`run_traces` reads their text
(``agentcausal show RUN TRACE`` reads one trace's the same way).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from agentcausal.attribution.plan_model import AttributionPlan
from agentcausal.exceptions import AgentCausalError
from agentcausal.runs.items import load_trace_item
from agentcausal.runs.plan import PLAN_FILE, read_plan
from agentcausal.traces.io import load_traces
from agentcausal.traces.model import Trace

__all__ = ["MAX_SHOWN_TRACES", "shown_rows", "run_traces"]

#: traces the HTML report shows row by row and step by step at most (a report of a large corpus stays readable
#: and its writing stays in bounded memory; every row is in results.parquet)
MAX_SHOWN_TRACES = 500


def shown_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of the first :data:`MAX_SHOWN_TRACES` traces (by id), every method's.

    Parameters
    ----------
    results : results frame (``results.parquet``), column ``trace_id``

    Returns
    -------
    DataFrame, ``results`` itself when it holds no more traces than that.
    """
    ids = results["trace_id"].drop_duplicates()
    if len(ids) <= MAX_SHOWN_TRACES:
        return results
    return results[results["trace_id"].isin(set(ids.sort_values().head(MAX_SHOWN_TRACES)))]


def run_traces(run_dir: Path, meta: Mapping[str, object], results: pd.DataFrame) -> dict[str, Trace]:
    """The traces of :func:`shown_rows` (``results``), read from the run's plan items or its corpus.

    Parameters
    ----------
    run_dir : run folder; its plan's items are read by path and offset, hashes checked
        (:mod:`agentcausal.runs.items`)
    meta : the run's ``run.json``; its ``corpus`` paths are read instead when the folder has no plan or the
        plan's files changed since the run
    results : results frame, column ``trace_id``

    Returns
    -------
    dict, trace id -> Trace; best effort: {} when the corpus is gone or unreadable.
    """
    wanted = set(shown_rows(results)["trace_id"].astype(str))  # only the traces the report shows
    plan_file = run_dir / PLAN_FILE
    if plan_file.is_file():
        try:
            return {
                i.id: load_trace_item(i) for i in read_plan(plan_file, AttributionPlan).iter_items() if i.id in wanted
            }
        except (AgentCausalError, OSError, ValueError):
            pass  # changed since the run: the corpus as it is now, below
    corpus = meta.get("corpus")
    paths = [corpus] if isinstance(corpus, str) else list(corpus) if isinstance(corpus, (list, tuple)) else []
    try:
        return {t.id: t for t in load_traces([str(p) for p in paths]) if t.id in wanted}
    except (AgentCausalError, OSError, ValueError):
        return {}
