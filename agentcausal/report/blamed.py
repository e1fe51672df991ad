"""The blamed steps of a run, first in every view: console table, report.md and report.html sections.

Unlabelled traces are the common case, so every view leads with what each method
blamed, why, and what to do about it:

* :func:`blamed_frame`: one row per (trace, method, repeat): the blamed step, its
  agent and span id, the confidence (only where the method defines one), the
  reason, the verbatim evidence and the corrected action, read from ``results.parquet``.
* :func:`blamed_text`: that table for a terminal (``agentcausal attribute`` on
  unlabelled traces; ``agentcausal show RUN``): trace, blamed step, agent, span
  id, confidence and a one-line reason, cut with "…" to the terminal's width.
* :func:`blamed_markdown` and :func:`blamed_html`: the first section of
  ``report.md`` and ``report.html``.
* :func:`console_summary`: what the CLI prints after a run: the blamed table
  for unlabelled rows, then the accuracy table when some row is labelled.
"""

from __future__ import annotations

import html
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from agentcausal.repeats import repeat_of
from agentcausal.report.blame_text import fix_text, one_line
from agentcausal.report.html import html_table
from agentcausal.report.traces_html import trace_anchor
from agentcausal.traces.display import visible

__all__ = [
    "blamed_frame",
    "BlamedWhole",
    "blamed_text",
    "blamed_markdown",
    "blamed_html",
    "console_summary",
    "REASON_CHARS",
]

#: characters of a reason shown in a report table (longer ones cut with "…")
REASON_CHARS = 160


def _na(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def _json(v: Any) -> Any:
    if _na(v):
        return None
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return None
    return v


#: the results columns :func:`blamed_frame` reads
_READ_COLUMNS = (
    "trace_id",
    "method",
    "details_json",
    "n_steps",
    "pred_step",
    "pred_agent",
    "span_id",
    "confidence",
    "error",
    "reason",
    "evidence",
    "evidence_note",
    "corrected_action",
    "candidates",
    "true_step",
    "true_agent",
    "status",
    "failure_modes",
)


def blamed_frame(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (trace, method, repeat), sorted by trace, method and repeat.

    Parameters
    ----------
    results : results frame (``results.parquet``); the richer-result columns may be absent (older runs)

    Returns
    -------
    DataFrame with columns trace, method, repeat, steps, step (Int64, the 0-based blamed step), agent,
    span_id, confidence (float, NaN where the method has none), reason (the method's reason, or
    ``error: …``), evidence, evidence_note, corrected_action (dict or None), candidates (list or None),
    true_step, true_agent, status, failure_modes (a corpus's trace-level labels, MAST).
    """
    cols = [
        "trace",
        "method",
        "repeat",
        "steps",
        "step",
        "agent",
        "span_id",
        "confidence",
        "reason",
        "evidence",
        "evidence_note",
        "corrected_action",
        "candidates",
        "true_step",
        "true_agent",
        "status",
        "failure_modes",
    ]
    data: dict[str, list[Any]] = {c: [] for c in cols}
    # only the columns read here, a row at a time, into one list per column (a dict per row of every column
    # held hundreds of MB for a large run)
    names = [c for c in _READ_COLUMNS if c in results.columns]
    for values in zip(*(results[c].tolist() for c in names)):
        r = dict(zip(names, values))
        err = None if _na(r.get("error")) else r.get("error")
        details = _json(r.get("details_json")) or {}
        row = {
            "trace": str(r["trace_id"]),
            "method": str(r["method"]),
            "repeat": repeat_of(details if isinstance(details, dict) else {}),
            "steps": int(r.get("n_steps") or 0),
            "step": None if _na(r.get("pred_step")) else int(r["pred_step"]),
            "agent": None if _na(r.get("pred_agent")) else str(r["pred_agent"]),
            "span_id": None if _na(r.get("span_id")) else str(r["span_id"]),
            "confidence": float("nan") if _na(r.get("confidence")) else float(r["confidence"]),
            "reason": f"error: {err}" if err else ("" if _na(r.get("reason")) else str(r["reason"])),
            "evidence": None if _na(r.get("evidence")) else str(r["evidence"]),
            "evidence_note": None if _na(r.get("evidence_note")) else str(r["evidence_note"]),
            "corrected_action": _json(r.get("corrected_action")),
            "candidates": _json(r.get("candidates")),
            "true_step": None if _na(r.get("true_step")) else int(r["true_step"]),
            "true_agent": None if _na(r.get("true_agent")) else str(r["true_agent"]),
            "status": "" if _na(r.get("status")) else str(r["status"]),
            "failure_modes": None if _na(r.get("failure_modes")) else str(r["failure_modes"]),
        }
        for c in cols:
            data[c].append(row[c])
    df = pd.DataFrame(data if data["trace"] else [], columns=cols)
    if not df.empty:
        df = df.sort_values(["trace", "method", "repeat"], kind="stable").reset_index(drop=True)
    df["step"] = df["step"].astype("Int64")
    # None, never NaN, where a value is absent
    for c in ("agent", "span_id", "evidence", "evidence_note", "true_agent", "failure_modes"):
        df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df


class BlamedWhole(NamedTuple):
    """What ``report.md``'s blamed-steps section says of every row of a run, not only of the rows it lists.

    Attributes
    ----------
    rows : int, rows in all
    span : bool, some row has a span id
    truth : bool, some row has an annotated step
    repeat : bool, some row is a repeat above 0
    modes : bool, some row has failure modes (MAST)
    """

    rows: int
    span: bool
    truth: bool
    repeat: bool
    modes: bool

    @classmethod
    def of(cls, df: pd.DataFrame) -> BlamedWhole:
        """The facts of a :func:`blamed_frame` of every row."""
        return cls(
            rows=len(df),
            span=bool(df["span_id"].notna().any()),
            truth=bool(df["true_step"].notna().any()),
            repeat=bool((df["repeat"] > 0).any()),
            modes=bool(df["failure_modes"].notna().any()),
        )


def _conf(v: Any) -> str:
    return "–" if _na(v) else f"{float(v):.2f}"


def _step(v: Any) -> str:
    return "–" if _na(v) else str(int(v))


def blamed_text(
    results: pd.DataFrame, *, width: int | None = None, max_rows: int = 50, only_unlabelled: bool = False
) -> str:
    """The blamed steps as a plain-text table for a terminal.

    Columns: trace, method (when the run has several), blamed step, agent, span id (when any step has one),
    confidence (– where the method defines none), and the reason on one line, cut with "…" so that each
    line fits ``width`` (on a line of its own under the row when fewer than 40 characters are left).

    Parameters
    ----------
    results : results frame
    width : int or None, line width; None = the terminal's (100 without one)
    max_rows : int, at most this many rows, then one line counting the rest
    only_unlabelled : bool, only rows whose trace has no label

    Returns
    -------
    str, ``""`` when there is no row.
    """
    df = blamed_frame(results)
    if only_unlabelled:
        df = df[df["true_step"].isna()]
    if df.empty:
        return ""
    width = width or shutil.get_terminal_size((100, 24)).columns
    show_method = df["method"].nunique() > 1
    show_repeat = bool((df["repeat"] > 0).any())
    show_span = bool(df["span_id"].notna().any())
    shown = df.head(max_rows)
    table: list[list[str]] = []
    r: Any  # a row of the frame
    head = [
        "trace",
        *(["method"] if show_method else []),
        *(["repeat"] if show_repeat else []),
        "step",
        "agent",
        *(["span id"] if show_span else []),
        "confidence",
    ]
    for r in shown.itertuples(index=False):
        table.append(
            [
                r.trace,
                *([r.method] if show_method else []),
                *([str(r.repeat)] if show_repeat else []),
                _step(r.step),
                r.agent or "–",
                *([r.span_id or "–"] if show_span else []),
                _conf(r.confidence),
            ]
        )
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(head)]
    limit = {"trace": 36, "agent": 24, "method": 20, "span id": 32}
    widths = [min(w, limit.get(h, w)) for w, h in zip(widths, head)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(one_line(c, w).ljust(w) for c, w in zip(cells, widths))

    room = width - len(fmt(head)) - 2
    below = room < 40  # too narrow for the reason beside the columns: on its own line, indented
    lines = [fmt(head) + ("" if below else "  reason")]
    for cells, r in zip(table, shown.itertuples(index=False)):
        if below:
            lines += [fmt(cells).rstrip(), "    " + one_line(r.reason, max(width - 4, 20))]
        else:
            lines.append(fmt(cells) + "  " + one_line(r.reason, room))
    if len(df) > len(shown):
        lines.append(f"… {len(df) - len(shown)} more row(s): see the report, or `agentcausal show RUN`")
    return visible("\n".join(lines))  # trace and LLM text: control and bidi characters shown, never sent raw


def console_summary(results: pd.DataFrame, accuracy: str, run_dir: str | Path = "RUN") -> str:
    """What ``agentcausal attribute`` prints after a run: the blamed steps of unlabelled traces (when there are
    any), then ``accuracy`` (the accuracy table's text) when some trace is labelled.

    Parameters
    ----------
    results : the run's results frame (``results.parquet``)
    accuracy : the accuracy table as text (:func:`~agentcausal.report.attribution_tables.accuracy_text`)
    run_dir : the run folder, named in the hint to ``agentcausal show``

    Returns
    -------
    str
    """
    parts = []
    unlabelled = results["true_step"].isna()
    if unlabelled.any():
        n = int(unlabelled.sum())
        traces = int(results.loc[unlabelled, "trace_id"].nunique()) if "trace_id" in results else n
        methods = int(results.loc[unlabelled, "method"].nunique()) if "method" in results else 1
        count = f"{traces} unlabelled trace{'s' if traces != 1 else ''} x {methods} method{'s' if methods != 1 else ''}"
        parts += [
            f"Blamed steps ({count}; `agentcausal show {run_dir} TRACE` for one trace's steps, evidence and fix):",
            blamed_text(results, only_unlabelled=True),
        ]
    if (~unlabelled).any():
        parts += (["", "Accuracy on the labelled traces:"] if parts else []) + [accuracy]
    return "\n".join(parts)


def _md(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def blamed_markdown(
    results: pd.DataFrame,
    *,
    max_rows: int = 500,
    report_html: str | None = "report.html",
    blamed: pd.DataFrame | None = None,
    whole: BlamedWhole | None = None,
) -> str:
    """The "Blamed steps" section of ``report.md``: per trace and method the blamed step, agent, span id,
    confidence, reason (cut with "…"), evidence and fix; trace ids link to their sections in ``report_html``.

    Parameters
    ----------
    results : results frame
    max_rows : rows listed at most (the rest counted)
    report_html : the HTML report the trace ids link into, or None
    blamed : :func:`blamed_frame` of ``results`` when already made (not made again)
    whole : the facts of every row of the run when ``results`` holds only its first rows (a report reading
        ``results.parquet`` a batch at a time passes the rows of its first traces, which hold the first
        ``max_rows``); None: ``results`` is every row

    Returns
    -------
    str, ``""`` for an empty frame.
    """
    df = blamed_frame(results) if blamed is None else blamed
    whole = BlamedWhole.of(df) if whole is None else whole
    if df.empty or not whole.rows:
        return ""
    show_span, show_true, show_repeat, show_modes = whole.span, whole.truth, whole.repeat, whole.modes
    head = [
        "trace",
        "method",
        *(["repeat"] if show_repeat else []),
        "step",
        "agent",
        *(["span id"] if show_span else []),
        "confidence",
        "reason",
        "evidence",
        "fix",
        *(["annotated step"] if show_true else []),
        *(["failure modes"] if show_modes else []),
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    r: Any  # a row of the frame
    for r in df.head(max_rows).itertuples(index=False):
        trace = f"[{_md(r.trace)}]({report_html}#{trace_anchor(r.trace)})" if report_html else _md(r.trace)
        ev = f"“{_md(one_line(r.evidence, 120))}”" if r.evidence else (_md(r.evidence_note) if r.evidence_note else "")
        cells = [
            trace,
            _md(r.method),
            *([str(r.repeat)] if show_repeat else []),
            _step(r.step),
            _md(r.agent or "–"),
            *([f"`{r.span_id}`" if r.span_id else "–"] if show_span else []),
            _conf(r.confidence),
            _md(one_line(r.reason, REASON_CHARS)),
            ev,
            _md(fix_text(r.corrected_action, 160)),
            *([_step(r.true_step)] if show_true else []),
            *([_md(r.failure_modes or "")] if show_modes else []),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    more = ["", f"… {whole.rows - max_rows} more row(s) in `results.parquet`."] if whole.rows > max_rows else []
    return "\n".join(
        [
            "## Blamed steps",
            "",
            "The decisive step (0-based) each method blamed, first: its agent"
            + (", the span id that finds it in the tracing UI the trace came from" if show_span else "")
            + ", the confidence (only where the method defines one: DCFA's S of the trace corrected "
            "through the step, ECHO's consensus support; – for the others), the reason, the evidence "
            "(a verbatim quote from the step, where one was asked for and checked) and the fix "
            "(the corrected step and the outcome with it)"
            + ("; failure modes are the corpus's trace-level labels (MAST)" if show_modes else "")
            + ". `agentcausal show RUN TRACE` prints a trace with them.",
            "",
            *lines,
            *more,
            "",
        ]
    )


def blamed_html(results: pd.DataFrame, *, note: str = "", blamed: pd.DataFrame | None = None) -> str:
    """The "Blamed steps" section at the top of ``report.html``: a sortable, filterable table whose trace ids link
    to the traces' sections.

    Parameters
    ----------
    results : results frame, the rows to list (``report.html`` passes the traces it shows)
    note : str, a sentence appended to the section's note (e.g. how many traces are left out)
    blamed : :func:`blamed_frame` of ``results`` when already made (not made again)

    Returns
    -------
    str, HTML (``""`` for an empty frame).
    """
    df = blamed_frame(results) if blamed is None else blamed
    if df.empty:
        return ""
    e = html.escape
    show_span = bool(df["span_id"].notna().any())
    show_true = bool(df["true_step"].notna().any())
    show_repeat = bool((df["repeat"] > 0).any())
    view = pd.DataFrame(
        {
            "trace": df["trace"],
            "method": df["method"],
            **({"repeat": df["repeat"]} if show_repeat else {}),
            "step": df["step"].astype(object).where(df["step"].notna(), None),
            "agent": df["agent"],
            **({"span id": df["span_id"]} if show_span else {}),
            "confidence": [None if _na(c) else round(float(c), 3) for c in df["confidence"]],
            "reason": df["reason"],
            "evidence": [(x, n) for x, n in zip(df["evidence"], df["evidence_note"])],
            "fix": df["corrected_action"],
            **({"annotated step": df["true_step"]} if show_true else {}),
            **({"failure modes": df["failure_modes"]} if df["failure_modes"].notna().any() else {}),
        }
    )

    def trace_cell(v: Any, _r: Mapping[str, Any]) -> tuple[str, str]:
        return f'<a href="#{trace_anchor(str(v))}">{e(str(v))}</a>', "id"

    def span_cell(v: Any, _r: Mapping[str, Any]) -> tuple[str, str]:
        return ("–" if _na(v) else f"<code>{e(str(v))}</code>"), "id"

    def reason_cell(v: Any, _r: Mapping[str, Any]) -> tuple[str, str]:
        text = one_line(v)
        if len(text) <= REASON_CHARS:
            return e(text), "text"
        return (
            f"<details><summary>{e(text[: REASON_CHARS - 1])}…</summary>{e(text[REASON_CHARS - 1 :])}</details>",
            "text",
        )

    def evidence_cell(v: Any, _r: Mapping[str, Any]) -> tuple[str, str]:
        quote, note = (None if _na(x) else str(x) for x in v)
        if quote:
            return f"<q>{e(one_line(quote, 200))}</q>", "text"
        return (f"<span class='note'>{e(note)}</span>" if note else ""), "text"

    def fix_cell(v: Any, _r: Mapping[str, Any]) -> tuple[str, str]:
        return (e(fix_text(v, 240)) if isinstance(v, Mapping) else ""), "text"

    def conf_cell(v: Any, _r: Mapping[str, Any]) -> tuple[str, str]:
        return ("–" if _na(v) else f"{float(v):.2f}"), "num"

    table = html_table(
        view,
        table_id="blamed",
        sortable=True,
        filterable=len(view) > 10,
        cell_html={
            "trace": trace_cell,
            "span id": span_cell,
            "reason": reason_cell,
            "evidence": evidence_cell,
            "fix": fix_cell,
            "confidence": conf_cell,
        },
    )
    return (
        "<h2>Blamed steps</h2><p class='note'>The decisive step (0-based) each method blamed, its agent"
        + (" and span id" if show_span else "")
        + ", the confidence (only where the method defines one: "
        "DCFA's S of the trace corrected through the step, ECHO's consensus support), the reason, the verbatim "
        "evidence and the fix. Click a trace for its steps." + html.escape(note) + "</p>" + table
    )
