"""Per-trace parts of an attribution ``report.html``: the sortable per-trace table and one section per trace.

* :func:`per_trace_frame`: one row per (trace, method): blamed step and agent,
  annotated step and agent, verdict, reason, tokens and seconds.
* :func:`per_trace_html`: that table, sortable and filterable, trace ids linking to their sections.
* :func:`trace_sections_html`: per trace, its steps with the blamed ones
  highlighted per method (and the annotated decisive step marked), and each
  DCFA method's dependency graph with its LCE path as inline SVG.

Unlabelled traces show the blamed steps with verdict ``unlabelled``.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from agentcausal.report.blame_text import fix_text, one_line
from agentcausal.report.dcfa import dependency_graph_svg
from agentcausal.report.html import html_table
from agentcausal.traces.model import Attribution, Trace

__all__ = ["per_trace_frame", "per_trace_html", "trace_sections_html", "trace_anchor", "MAX_STEP_CHARS"]

#: characters of a step's content shown in full (longer contents are cut, with the length stated)
MAX_STEP_CHARS = 4000
_PREVIEW = 240


def trace_anchor(trace_id: str) -> str:
    """The HTML id of a trace's section (``t-`` + the id with other characters than ``[A-Za-z0-9_-]`` as ``-``)."""
    return "t-" + re.sub(r"[^A-Za-z0-9_-]", "-", str(trace_id))


def _records(df: pd.DataFrame, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rows of ``df`` sorted by trace and method, as dicts of the ``columns`` it has (``to_dict``; the columns
    are str)."""
    rows = df[[c for c in columns if c in df.columns]].sort_values(["trace_id", "method"])
    names = [str(c) for c in rows.columns]  # a column at a time (to_dict boxes every cell on its own)
    return [dict(zip(names, values)) for values in zip(*(rows[c].tolist() for c in rows.columns))]


#: the results columns :func:`per_trace_frame` reads
_TABLE_COLUMNS = (
    "trace_id",
    "subset",
    "n_steps",
    "method",
    "pred_step",
    "pred_agent",
    "true_step",
    "true_agent",
    "error",
    "step_correct",
    "agent_correct",
    "confidence",
    "reason",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "cost_usd",
)
#: the results columns :func:`trace_sections_html` reads
_SECTION_COLUMNS = (
    "trace_id",
    "method",
    "trace_hash",
    "subset",
    "n_steps",
    "true_step",
    "true_agent",
    "pred_step",
    "pred_agent",
    "error",
    "confidence",
    "reason",
    "evidence",
    "evidence_note",
    "corrected_action",
    "details_json",
)


def _na(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def _verdict(r: Mapping[str, Any]) -> str:
    if not _na(r.get("error")) and r.get("error"):
        return "failed"
    if _na(r.get("true_step")):
        return "unlabelled"
    if _na(r.get("pred_step")):
        return "undetermined"
    s, a = bool(r.get("step_correct")), bool(r.get("agent_correct"))
    return "right" if s and a else "step right" if s else "agent right" if a else "wrong"


def per_trace_frame(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (trace, method) for people to read.

    Parameters
    ----------
    results : results frame (``results.parquet``; ``agentcausal.attribution.results.RESULT_COLUMNS``)

    Returns
    -------
    DataFrame with columns trace, subset, steps, method, blamed step, blamed agent, true step,
    true agent, verdict (``right``: step and agent; ``step right``; ``agent right``; ``wrong``;
    ``undetermined``; ``failed``; ``unlabelled``), confidence (when some method defines one),
    reason (the method's reason, or its error),
    tokens (prompt + completion), seconds, and cost (USD) when a profile has prices.
    """
    rows = []
    for r in _records(results, _TABLE_COLUMNS):
        err = None if _na(r.get("error")) else r.get("error")
        rows.append(
            {
                "trace": r["trace_id"],
                "subset": r.get("subset", ""),
                "steps": int(r.get("n_steps") or 0),
                "method": r["method"],
                "blamed step": None if _na(r["pred_step"]) else int(r["pred_step"]),
                "blamed agent": None if _na(r["pred_agent"]) else str(r["pred_agent"]),
                "true step": None if _na(r["true_step"]) else int(r["true_step"]),
                "true agent": None if _na(r["true_agent"]) else str(r["true_agent"]),
                "verdict": _verdict(r),
                "confidence": None if _na(r.get("confidence")) else round(float(r["confidence"]), 3),
                "reason": f"error: {err}" if err else ("" if _na(r.get("reason")) else str(r.get("reason"))),
                "tokens": int((r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)),
                "seconds": float(r.get("seconds") or 0.0),
                "cost (USD)": float(r.get("cost_usd") or 0.0),
            }
        )
    cols = [
        "trace",
        "subset",
        "steps",
        "method",
        "blamed step",
        "blamed agent",
        "true step",
        "true agent",
        "verdict",
        "confidence",
        "reason",
        "tokens",
        "seconds",
        "cost (USD)",
    ]
    df = pd.DataFrame(rows, columns=cols)
    if not df["confidence"].notna().any():
        df = df.drop(columns=["confidence"])  # no method of the run defines one
    return df if df["cost (USD)"].any() else df.drop(columns=["cost (USD)"])  # priced profiles only


def _verdict_cell(v: Any, _row: Mapping[str, Any]) -> tuple[str, str]:
    cls = {
        "right": "right",
        "wrong": "wrong",
        "failed": "failed",
        "undetermined": "wrong",
        "step right": "wrong",
        "agent right": "wrong",
    }.get(str(v), "")
    return html.escape(str(v)), cls


def _trace_cell(v: Any, _row: Mapping[str, Any]) -> tuple[str, str]:
    return f'<a href="#{trace_anchor(str(v))}">{html.escape(str(v))}</a>', ""


def _reason_cell(v: Any, _row: Mapping[str, Any]) -> tuple[str, str]:
    text = str(v or "")
    if len(text) <= _PREVIEW:
        return html.escape(text), "text"
    return (
        f"<details><summary>{html.escape(text[:_PREVIEW])}…</summary>{html.escape(text[_PREVIEW:])}</details>",
        "text",
    )


def per_trace_html(results: pd.DataFrame) -> str:
    """The per-trace table (:func:`per_trace_frame`) as sortable, filterable HTML.

    Parameters
    ----------
    results : results frame

    Returns
    -------
    str, HTML with the table id ``per-trace``.
    """
    return html_table(
        per_trace_frame(results),
        table_id="per-trace",
        sortable=True,
        filterable=True,
        cell_html={"trace": _trace_cell, "verdict": _verdict_cell, "reason": _reason_cell},
    )


def _content(text: str, marks: tuple[str, ...] = ()) -> str:
    """A step's content, escaped, cut after :data:`MAX_STEP_CHARS`, folded after a preview; each quote of
    ``marks`` (verbatim evidence) highlighted where it lies whole in one part."""
    e = html.escape
    cut = ""
    if len(text) > MAX_STEP_CHARS:
        cut = f"\n[… {len(text) - MAX_STEP_CHARS:,} more characters not shown]"
        text = text[:MAX_STEP_CHARS]

    def esc(part: str) -> str:
        out = e(part)
        for m in marks:
            if m and e(m) in out:
                out = out.replace(e(m), f"<mark>{e(m)}</mark>", 1)
        return out

    if len(text) <= _PREVIEW:
        return esc(text + cut)
    if any(m and m in text and m not in text[:_PREVIEW] and m not in text[_PREVIEW:] for m in marks):
        # the quote crosses the preview's end: the whole text, open, so that it can be marked whole
        return f"<details open><summary>{len(text):,} characters</summary>{esc(text + cut)}</details>"
    return f"<details><summary>{esc(text[:_PREVIEW])}…</summary>{esc(text[_PREVIEW:] + cut)}</details>"


def _blame_row(r: Mapping[str, Any]) -> str:
    """The row under a blamed step: one method's reason, confidence, evidence and fix."""
    e = html.escape
    bits = [f"<b>{e(str(r['method']))}</b>"]
    conf: Any = r.get("confidence")
    if not _na(conf):
        bits.append(f"confidence {float(conf):.2f}")
    reason = "" if _na(r.get("reason")) else str(r.get("reason"))
    if reason:
        bits.append(e(one_line(reason, 600)))
    ev = None if _na(r.get("evidence")) else str(r.get("evidence"))
    note = None if _na(r.get("evidence_note")) else str(r.get("evidence_note"))
    if ev:
        bits.append(f"evidence: <q>{e(one_line(ev, 300))}</q>")
    elif note:
        bits.append(f"<span class='note'>evidence {e(note)}</span>")
    fix = r.get("corrected_action")
    if isinstance(fix, str):
        try:
            fix = json.loads(fix)
        except ValueError:
            fix = None
    if isinstance(fix, dict):
        bits.append("fix: " + e(fix_text(fix, 600)))
    return "<tr class='blame'><td></td><td colspan='3'>" + " · ".join(bits) + "</td></tr>"


def _dcfa_attribution(r: Mapping[str, Any]) -> Attribution | None:
    try:
        details = json.loads(r.get("details_json") or "{}")
    except ValueError:
        return None
    if not isinstance(details, dict) or "n_steps" not in details:
        return None
    return Attribution(
        trace_id=str(r["trace_id"]),
        method=str(r["method"]),
        step=None if _na(r["pred_step"]) else int(r["pred_step"]),
        agent=None if _na(r["pred_agent"]) else str(r["pred_agent"]),
        error=None if _na(r.get("error")) else r.get("error"),
        details=details,
    )


def trace_sections_html(
    results: pd.DataFrame, traces: Mapping[str, Trace] | None = None, *, hashes: Mapping[str, str] | None = None
) -> str:
    """One ``<section>`` per trace: its steps with the blamed ones highlighted, then DCFA's graphs.

    Parameters
    ----------
    results : results frame (``results.parquet``)
    traces : trace id -> Trace, for the step text; a trace not given (or whose content hash differs
        from the one recorded in ``results``) shows only the blamed and annotated steps, without text
    hashes : trace id -> the content hash of the trace given, where known without hashing it (read from its
        plan item, :class:`~agentcausal.report.attribution_load.ShownTraces`); the others are hashed

    Returns
    -------
    str, HTML. Rows of blamed steps have class ``blamed`` and one red badge per method that blamed
    them, each followed by a row of class ``blame`` with that method's reason, confidence, evidence
    (also highlighted in the step) and fix; the annotated decisive step has class ``truth`` and a
    green badge.
    """
    e = html.escape
    traces = traces or {}
    out = [
        "<h2>Traces</h2>",
        "<p class='note'>Per trace: the steps (red badge: the method that blamed the step; "
        "green: the annotated decisive step), then each DCFA method's dependency graph (yellow: minor deviation; "
        "orange: GCA hypothesis; red: final decisive step; dashed orange: accepted LCE moves with ΔS).</p>",
    ]
    hashes = hashes or {}
    by_trace: dict[str, list[dict[str, Any]]] = {}  # one to_dict for the frame: per-group pandas calls cost ~10 ms each
    for r in _records(results, _SECTION_COLUMNS):
        by_trace.setdefault(r["trace_id"], []).append(r)
    for tid, recs in by_trace.items():
        first = recs[0]
        t = traces.get(str(tid))
        if t is not None and first.get("trace_hash"):
            known = hashes.get(str(tid))
            if (known if known is not None else t.content_hash()) != first.get("trace_hash"):
                t = None
        blamed: dict[int, list[str]] = {}
        blame_rows: dict[int, list[Mapping[str, Any]]] = {}
        for r in recs:
            if not _na(r["pred_step"]):
                blamed.setdefault(int(r["pred_step"]), []).append(str(r["method"]))
                blame_rows.setdefault(int(r["pred_step"]), []).append(r)
        true_step = None if _na(first.get("true_step")) else int(first["true_step"])
        head = [
            f"<section id='{trace_anchor(str(tid))}'><h3>{e(str(tid))}</h3><p class='note'>"
            f"{e(str(first.get('subset') or ''))} · {int(first.get('n_steps') or 0)} steps · "
            + (
                f"annotated decisive step {true_step} ({e(str(first.get('true_agent')))})"
                if true_step is not None
                else "unlabelled"
            )
            + "</p>"
        ]
        if t is not None:
            head.append(f"<p class='note'><b>Question:</b> {e(t.question[:500])}</p>")
            steps: list[tuple[int, str, str | None]] = [(s.index, s.agent, s.content) for s in t.steps]
        else:
            shown = sorted(set(blamed) | ({true_step} if true_step is not None else set()))
            steps = [(i, "", None) for i in shown]
            head.append(
                "<p class='note'>Trace text not available (corpus not found or changed); "
                "only the blamed and annotated steps are listed.</p>"
            )
        rows = []
        for i, agent, content in steps:
            cls = " ".join(c for c, on in (("blamed", i in blamed), ("truth", i == true_step)) if on)
            badges = "".join(f"<span class='badge'>{e(m)}</span>" for m in blamed.get(i, []))
            if i == true_step:
                badges += "<span class='badge true'>annotated</span>"
            marks = tuple(str(r["evidence"]) for r in blame_rows.get(i, []) if not _na(r.get("evidence")))
            rows.append(
                f"<tr class='{cls}'><td class='num'>{i}</td><td>{e(agent)}</td><td>{badges}</td>"
                f"<td class='content'>{'' if content is None else _content(content, marks)}</td></tr>"
            )
            rows += [_blame_row(r) for r in blame_rows.get(i, [])]
        body = (
            "<div class='scroll'><table class='steps'><thead><tr><th>step</th><th>agent</th><th>blamed by</th>"
            "<th>content</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
        )
        graphs = []
        for r in recs:
            a = _dcfa_attribution(r)
            if a is not None:
                graphs.append(
                    f"<figure><figcaption>{e(a.method)}: dependency graph and LCE path</figcaption>"
                    f"{dependency_graph_svg(a)}</figure>"
                )
        out.append(
            "".join(head)
            + body
            + ("<div class='graphs'>" + "".join(graphs) + "</div>" if graphs else "")
            + "</section>"
        )
    return "\n".join(out)
