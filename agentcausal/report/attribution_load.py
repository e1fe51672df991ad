"""What an attribution report reads: ``results.parquet`` once, a batch of rows at a time, and the text of the traces
it shows.

:class:`ResultsDigest` keeps of the results what the report needs, read in one pass
(:func:`~agentcausal.attribution.results.iter_results`), so that the report of a large corpus is written in
memory that does not grow with the rows' text:

* ``scores``: every row's scalars (the columns the evaluation and the DCFA paper's tables read, a few numbers
  and names per row), each row's candidate hits and repeat read from its JSON as it comes, and the
  ``details_json`` of the rows the paper's tables read it from (DCFA's); the ``usage_json`` of every row summed
  per (method, stage) as it comes (:class:`~agentcausal.attribution.costs.StageTotals`);
* ``shown``: every column of the rows of the first :data:`MAX_SHOWN_TRACES` traces (by id), the ones
  ``report.html`` shows row by row and step by step (and whose first rows ``report.md``'s blamed steps list);
* the first :data:`MAX_RANKED_ROWS` rows of ranked candidates and the first :data:`MAX_GRAPHS` DCFA dependency
  graphs ``report.md`` lists, each with how many there are in all.

Every row stays in ``results.parquet``. :func:`shown_traces` reads the shown traces' text from the run's plan items
(a trace whose file is unchanged since the plan keeps the plan's content hash, not hashed again) or its corpus;
:func:`run_traces` is the same for ``agentcausal show RUN TRACE``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from agentcausal.attribution.candidates import ranks, read_candidates, top_k_hit
from agentcausal.attribution.costs import StageTotals, traces_per_method
from agentcausal.attribution.evaluate import TOP_K, Evaluation, evaluate_frame
from agentcausal.attribution.plan_model import AttributionPlan
from agentcausal.attribution.results import iter_results
from agentcausal.exceptions import AgentCausalError, TraceFormatError
from agentcausal.repeats import repeat_of
from agentcausal.report.attribution_tables import SHOWN_CANDIDATES, ranked_row
from agentcausal.report.blamed import BlamedWhole
from agentcausal.runs.items import check_file, load_trace_item
from agentcausal.runs.plan import PLAN_FILE, PlanItem, read_plan
from agentcausal.traces.io import ScannedTrace, iter_traces
from agentcausal.traces.model import Trace

__all__ = [
    "MAX_SHOWN_TRACES",
    "MAX_RANKED_ROWS",
    "MAX_GRAPHS",
    "SCORE_COLUMNS",
    "ResultsDigest",
    "ShownTraces",
    "shown_rows",
    "shown_traces",
    "run_traces",
]

#: traces the HTML report shows row by row and step by step at most (a report of a large corpus stays readable
#: and its writing stays in bounded memory; every row is in results.parquet)
MAX_SHOWN_TRACES = 500
#: rows of ranked candidates ``report.md`` lists at most
MAX_RANKED_ROWS = 500
#: DCFA dependency graphs ``report.md`` draws at most
MAX_GRAPHS = 50

#: the results columns kept for every row: what the evaluation and the DCFA paper's tables read, less the JSON
#: columns (read as the rows come)
SCORE_COLUMNS = (
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
    "status",
    "reused",
    "seconds",
    "calls",
    "requests",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "request_seconds",
    "run_requests",
    "run_prompt_tokens",
    "run_completion_tokens",
    "run_request_seconds",
    "run_cost_usd",
)

#: the columns of a kept DCFA row (:func:`~agentcausal.report.attribution.dependency_graphs_markdown`)
_GRAPH_COLUMNS = ("trace_id", "method", "pred_step", "pred_agent", "true_step", "details_json")


def _repeat(blob: Any) -> int:
    """The repeat index of a ``details_json`` cell (:func:`~agentcausal.repeats.repeat_of`), parsed only when the
    text names one."""
    if not isinstance(blob, str) or '"repeat"' not in blob:
        return 0
    try:
        details = json.loads(blob)
    except ValueError:
        return 0
    return repeat_of(details if isinstance(details, dict) else {})


def _paper_details(method: Any, blob: Any) -> str | None:
    """The ``details_json`` the DCFA paper's tables read (:mod:`agentcausal.attribution.paper_tables`: the rows of
    method ``dcfa``, and graphs: details with ``edges``); None for the others."""
    if not isinstance(blob, str):
        return None
    return blob if method == "dcfa" or '"edges"' in blob else None


def _first_ids(ids: Any, n: int) -> tuple[set[str] | None, int]:
    """(the first ``n`` distinct ids in order, or None when there are no more than ``n``; the distinct ids)."""
    unique = pc.unique(ids)
    if len(unique) <= n:
        return None, len(unique)
    first = pc.take(unique, pc.sort_indices(unique)[:n])
    return {str(x) for x in first.to_pylist()}, len(unique)


class ResultsDigest:
    """A run's results as its report needs them, read one batch of rows at a time (:meth:`read`, :meth:`of_frame`).

    Attributes
    ----------
    scores : DataFrame, every row: :data:`SCORE_COLUMNS` present, ``ranks`` and ``top3_hit``
        (:func:`~agentcausal.attribution.evaluate.candidate_hits`), ``repeat``, and ``details_json`` where the
        paper's tables read it (None elsewhere)
    stage_totals : StageTotals, usage per (method, stage)
    shown : DataFrame, every column read of the rows of the first :data:`MAX_SHOWN_TRACES` traces (by id)
    shown_ids : set of str, their ids
    traces : int, distinct traces in all
    ranked : DataFrame, the first :data:`MAX_RANKED_ROWS` rows of
        :func:`~agentcausal.report.attribution_tables.ranked_candidates` over every row; ``ranked_total`` in all
    graphs : DataFrame, the first :data:`MAX_GRAPHS` DCFA rows with details (by trace and method)
    blamed : BlamedWhole
    """

    def __init__(self, shown_ids: set[str] | None, traces: int) -> None:
        self._limit = shown_ids  # None: every trace is shown
        self.traces = traces
        self.stage_totals = StageTotals()
        self.rows = 0
        self.ranked_total = 0
        self._scores: list[pd.DataFrame] = []
        self._shown: list[pd.DataFrame] = []
        self._ranked: list[tuple[str, str, int, dict[str, str]]] = []
        self._graphs: list[tuple[str, str, int, dict[str, Any]]] = []
        self._span = self._modes = False

    @classmethod
    def read(cls, run_dir: str | Path, *, rows: int = 1000) -> ResultsDigest:
        """Read a run folder's ``results.parquet`` (or the file) a batch of ``rows`` at a time, its trace ids first.

        Raises
        ------
        RunFileError
            As :func:`~agentcausal.attribution.results.load_results`.
        """
        batches = iter_results(run_dir, without=("settings_json", "models_json"), rows=rows)  # never shown
        first = next(batches)  # the file checked before its ids are read
        p = Path(run_dir)
        ids = pq.read_table(p / "results.parquet" if p.is_dir() else p, columns=["trace_id"]).column(0)
        digest = cls(*_first_ids(ids, MAX_SHOWN_TRACES))
        for batch in _chain(first, batches):
            digest.add(batch)
        return digest.close()

    @classmethod
    def of_frame(cls, results: pd.DataFrame, *, rows: int = 1000) -> ResultsDigest:
        """The digest of a results frame held already (as :meth:`read`, a slice of ``rows`` at a time)."""
        digest = cls(
            *_first_ids(pa.array(results["trace_id"].astype(str).tolist(), type=pa.string()), MAX_SHOWN_TRACES)
        )
        for start in range(0, max(len(results), 1), rows):
            digest.add(results.iloc[start : start + rows])
        return digest.close()

    def add(self, b: pd.DataFrame) -> None:
        """Take one batch of rows (in the file's order)."""
        seq = range(self.rows, self.rows + len(b))
        self.rows += len(b)
        part = b[[c for c in SCORE_COLUMNS if c in b.columns]].copy()
        methods = b["method"].tolist()
        details = b["details_json"].tolist() if "details_json" in b else [None] * len(b)
        part["repeat"] = [_repeat(d) for d in details]
        if "details_json" in b:
            part["details_json"] = [_paper_details(m, d) for m, d in zip(methods, details)]
        if "candidates" in b:
            self._candidates(b, part, seq, methods)
        self._scores.append(part)
        for m, blob in zip(methods, b["usage_json"] if "usage_json" in b else [None] * len(b)):
            self.stage_totals.add(m, blob)
        self._span = self._span or ("span_id" in b and bool(b["span_id"].notna().any()))
        self._modes = self._modes or ("failure_modes" in b and bool(b["failure_modes"].notna().any()))
        self._shown.append(b if self._limit is None else b[b["trace_id"].astype(str).isin(self._limit)])
        if "details_json" in b:
            rows = [
                i for i, (m, d) in enumerate(zip(methods, details)) if isinstance(d, str) and str(m).startswith("dcfa")
            ]
            if rows:  # a row's cells by column (a DataFrame row of mixed dtypes is built cell by cell: ~0.1 ms each)
                cols = b[list(_GRAPH_COLUMNS)].take(rows)
                for i, r in zip(rows, cols.to_dict("records")):
                    self._graphs.append(
                        (str(r["trace_id"]), str(methods[i]), seq[i], {str(c): v for c, v in r.items()})
                    )
            self._graphs = _first(self._graphs, 2 * MAX_GRAPHS, MAX_GRAPHS)

    def _candidates(self, b: pd.DataFrame, part: pd.DataFrame, seq: range, methods: list[Any]) -> None:
        """Each row's candidates read once: its hits (``ranks``, ``top3_hit``) and, when its method ranks, its
        ranked-candidates row."""
        ranked: list[bool] = []
        top3: list[bool] = []
        for i, (tid, m, step, raw, t) in enumerate(
            zip(b["trace_id"], methods, b["pred_step"], b["candidates"], b["true_step"])
        ):
            cands = read_candidates(raw)
            r = ranks(cands)
            ranked.append(r)
            top3.append(not pd.isna(t) and top_k_hit(cands, t, TOP_K))
            if r:
                self.ranked_total += 1
                self._ranked.append((str(tid), str(m), seq[i], ranked_row(tid, m, step, cands or [], SHOWN_CANDIDATES)))
        part["ranks"] = ranked
        part["top3_hit"] = top3
        self._ranked = _first(self._ranked, 2 * MAX_RANKED_ROWS, MAX_RANKED_ROWS)

    def close(self) -> ResultsDigest:
        """Join the batches (called by :meth:`read` and :meth:`of_frame`)."""
        self.scores = pd.concat(self._scores, ignore_index=True)
        self.shown = pd.concat(self._shown, ignore_index=True)
        self.shown_ids = set(self.shown["trace_id"].astype(str))
        self.ranked = pd.DataFrame(
            [r for *_, r in _first(self._ranked, 0, MAX_RANKED_ROWS)], columns=["trace", "method", "step", "candidates"]
        )
        self.graphs = pd.DataFrame([r for *_, r in _first(self._graphs, 0, MAX_GRAPHS)], columns=list(_GRAPH_COLUMNS))
        self.blamed = BlamedWhole(
            rows=self.rows,
            span=self._span,
            truth=bool(self.scores["true_step"].notna().any()),
            repeat=bool((self.scores["repeat"] > 0).any()),
            modes=self._modes,
        )
        self._scores, self._shown, self._ranked, self._graphs = [], [], [], []
        return self

    def evaluation(self) -> Evaluation:
        """Every evaluation table (:func:`~agentcausal.attribution.evaluate.evaluate_frame` of the scores)."""
        return evaluate_frame(self.scores, cost_by_stage=self.stage_totals.frame(traces_per_method(self.scores)))


def _chain(first: pd.DataFrame, rest: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    yield first
    yield from rest


def _first(rows: list[tuple[str, str, int, Any]], above: int, n: int) -> list[tuple[str, str, int, Any]]:
    """``rows`` sorted by (trace, method, order) and cut to the first ``n`` once they hold more than ``above``
    (``2 n`` as rows come: bounded, the sort amortised; 0 at the end)."""
    return sorted(rows, key=lambda r: r[:3])[:n] if len(rows) > above else rows


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


class ShownTraces(Mapping[str, Trace]):
    """The traces a report shows, each read when it is asked for and not kept (:func:`shown_traces`).

    A trace of the run's plan is read from its item (:func:`~agentcausal.runs.items.load_trace_item`: its file's
    sha256 or its content hash checked against the plan), so its content hash is the plan's (:attr:`hashes`),
    not computed again; one that cannot be read then is missing. A trace read from the corpus instead is held.

    Attributes
    ----------
    hashes : dict, trace id -> :meth:`~agentcausal.traces.model.Trace.content_hash` as the plan recorded it (the
        traces of plan items only)
    """

    def __init__(self, items: Mapping[str, PlanItem] | None = None, held: Mapping[str, Trace] | None = None) -> None:
        self._items = dict(items or {})
        self._held = dict(held or {})
        self.hashes = {i: item.sha256 for i, item in self._items.items()}

    def __getitem__(self, trace_id: str) -> Trace:
        if trace_id in self._held:
            return self._held[trace_id]
        item = self._items[trace_id]  # KeyError: not shown
        try:
            return load_trace_item(item)
        except (AgentCausalError, OSError, ValueError) as exc:  # changed since the plan's files were checked
            raise KeyError(trace_id) from exc

    def __iter__(self) -> Iterator[str]:
        return iter([*self._items, *self._held])

    def __len__(self) -> int:
        return len(self._items) + len(self._held)


def _plan_items(plan: AttributionPlan, wanted: set[str]) -> dict[str, PlanItem]:
    """The plan's items whose id is in ``wanted`` (a line of the items file is validated only when it is one), each
    item's file checked against the plan (:func:`~agentcausal.runs.items.check_file`).

    Raises
    ------
    AgentCausalError, OSError, ValueError
        If the items file cannot be read, or a file changed since the plan.
    """
    if plan.items_file is None:
        found = {i.id: i for i in plan.items if i.id in wanted}
    else:
        found = {}
        with Path(plan.items_file).open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip() and json.loads(line).get("id") in wanted:
                    item = PlanItem.model_validate_json(line)
                    found[item.id] = item
                    if len(found) == len(wanted):
                        break
    for item in found.values():
        if item.file_sha256 is not None:
            check_file(item.id, str(item.path), item.file_sha256)
    return found


def shown_traces(run_dir: Path, meta: Mapping[str, object], ids: Iterable[str]) -> ShownTraces:
    """The traces ``ids`` (the ones a report shows), read from the run's plan items when asked for, or from its
    corpus.

    Parameters
    ----------
    run_dir : run folder; its plan's items are read by path and offset, hashes checked
        (:mod:`agentcausal.runs.items`)
    meta : the run's ``run.json``; its ``corpus`` paths are read instead when the folder has no plan or the
        plan's files changed since the run
    ids : trace ids

    Returns
    -------
    ShownTraces; best effort: none when the corpus is gone or unreadable.
    """
    wanted = {str(i) for i in ids}
    plan_file = run_dir / PLAN_FILE
    if plan_file.is_file():
        try:
            return ShownTraces(items=_plan_items(read_plan(plan_file, AttributionPlan), wanted))
        except (AgentCausalError, OSError, ValueError):
            pass  # changed since the run: the corpus as it is now, below
    corpus = meta.get("corpus")
    paths = [corpus] if isinstance(corpus, str) else list(corpus) if isinstance(corpus, (list, tuple)) else []
    held: dict[str, Trace] = {}
    try:  # one trace at a time, the shown ones kept; an invalid input or a duplicate id: none, as load_traces
        for x in iter_traces([str(p) for p in paths]):
            if isinstance(x, TraceFormatError):
                return ShownTraces()
            if isinstance(x, ScannedTrace) and x.trace.id in wanted:
                held[x.trace.id] = x.trace
    except (AgentCausalError, OSError, ValueError):
        return ShownTraces()
    return ShownTraces(held=held)


def run_traces(run_dir: Path, meta: Mapping[str, object], results: pd.DataFrame) -> dict[str, Trace]:
    """The traces of :func:`shown_rows` (``results``), read as :func:`shown_traces` reads them.

    Parameters
    ----------
    run_dir : run folder
    meta : the run's ``run.json``
    results : results frame, column ``trace_id``

    Returns
    -------
    dict, trace id -> Trace; best effort: {} when the corpus is gone or unreadable.
    """
    shown = shown_traces(run_dir, meta, shown_rows(results)["trace_id"].astype(str))
    return {i: t for i in shown if (t := shown.get(i)) is not None}
