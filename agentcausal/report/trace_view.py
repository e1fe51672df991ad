"""One trace in the terminal: its steps, with each method's blame, evidence and fix beside the blamed step.

:func:`trace_view_text` is what ``agentcausal show RUN TRACE`` prints;
:func:`find_trace` resolves the TRACE argument (an exact id, else a unique part of one).
The trace's text is read the way the report reads it (the run plan's items, hash
checked, or the run's corpus); a trace whose file is gone or changed is shown
from the results alone, without step text.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence
from typing import Any

import pandas as pd

from agentcausal.exceptions import ConfigError
from agentcausal.report.blame_text import one_line
from agentcausal.report.blamed import blamed_frame
from agentcausal.traces.display import visible
from agentcausal.traces.model import Trace

__all__ = ["find_trace", "trace_view_text"]


def find_trace(trace_ids: Sequence[str], wanted: str) -> str:
    """The trace id ``wanted`` names: itself when it is an id, else the one id containing it.

    Raises
    ------
    ConfigError
        If no id, or more than one, contains it (the message lists up to 10 of them).

    Examples
    --------
    >>> find_trace(["otel/abc", "otel/abd", "ww/1"], "ww"), find_trace(["a/1", "a/10"], "a/1")
    ('ww/1', 'a/1')
    """
    ids = list(dict.fromkeys(str(t) for t in trace_ids))
    if wanted in ids:
        return wanted
    hits = [t for t in ids if wanted in t]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        shown = ", ".join(ids[:10]) + (f" … (+{len(ids) - 10})" if len(ids) > 10 else "")
        raise ConfigError(f"no trace {wanted!r} in this run; its traces: {shown}")
    raise ConfigError(
        f"{wanted!r} names {len(hits)} traces: {', '.join(hits[:10])}"
        + (" …" if len(hits) > 10 else "")
        + "; give more of the id"
    )


def _wrap(text: str, width: int, indent: str, max_lines: int | None) -> list[str]:
    lines: list[str] = []
    for para in visible(str(text)).splitlines() or [""]:  # before splitting: a \r is shown, not a line break
        lines += textwrap.wrap(para, width=max(width - len(indent), 20), replace_whitespace=False) or [""]
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = one_line(lines[-1], max(width - len(indent) - 1, 10)) + " …"
    return [indent + ln for ln in lines]


def _candidates_line(cands: Any, k: int = 5) -> str:
    if not isinstance(cands, list) or len(cands) < 2:
        return ""
    out = []
    for c in cands[:k]:
        bits = [str(c.get("role", ""))]
        if c.get("score") is not None:
            bits.append(
                f"ΔS {float(c['score']):+.3f}"
                if str(c.get("score_is", "")).startswith("ΔS")
                else f"score {float(c['score']):.3g}"
            )
        out.append(f"{c.get('step')} ({', '.join(b for b in bits if b)})")
    more = f" … (+{len(cands) - k})" if len(cands) > k else ""
    return ", ".join(out) + more


def _blame_lines(r: Any, width: int, indent: str) -> list[str]:
    head = f"{indent}└ {r.method}" + (f" (repeat {r.repeat})" if r.repeat else "") + f": step {r.step}"
    if r.agent:
        head += f", {r.agent}"
    if r.span_id:
        head += f", span {r.span_id}"
    if not pd.isna(r.confidence):
        head += f" · confidence {float(r.confidence):.2f}"
    if r.status and r.status != "complete":
        head += f" · {r.status}"
    out = [head]
    pad = indent + "    "

    def field(name: str, text: str, max_lines: int | None = 4) -> None:
        if not text:
            return
        body = _wrap(text, width, pad + " " * 10, max_lines)
        out.append(pad + f"{name + ':':<10}" + body[0].lstrip())
        out.extend(body[1:])

    field("reason", r.reason)
    if r.evidence:
        field("evidence", f"“{r.evidence}” (verbatim in step {r.step})")
    elif r.evidence_note:
        field("evidence", f"none ({r.evidence_note})")
    fix = r.corrected_action if isinstance(r.corrected_action, dict) else None
    if fix:
        field(
            "fix",
            f"“{fix.get('content', '')}”" if fix.get("changed", True) else "(the corrector left this step unchanged)",
            6,
        )
        if fix.get("outcome"):
            score = fix.get("outcome_score")
            field("outcome", f"“{fix['outcome']}”" + ("" if score is None else f" (S {float(score):.2f})"))
        if fix.get("source"):
            field("from", str(fix["source"]), 2)
    field("ranked", _candidates_line(r.candidates), 2)
    return out


def trace_view_text(
    results: pd.DataFrame,
    trace_id: str,
    trace: Trace | None = None,
    *,
    methods: Sequence[str] | None = None,
    width: int | None = None,
    full: bool = False,
) -> str:
    """One trace's steps with the blame, evidence and fix of each method beside the blamed step.

    Parameters
    ----------
    results : results frame of the run (``results.parquet``)
    trace_id : str, an id present in ``results``
    trace : Trace or None, for the step text (None: only the blamed and annotated steps are listed)
    methods : only these methods (default all)
    width : int or None, line width; None = the terminal's (100 without one)
    full : bool, every step's whole content (default: one line per step, a few lines for blamed steps)

    Returns
    -------
    str

    Raises
    ------
    ConfigError
        If the trace has no row (for ``methods``).
    """
    width = width or shutil.get_terminal_size((100, 24)).columns
    rows = blamed_frame(results[results["trace_id"].astype(str) == trace_id])
    if methods:
        rows = rows[rows["method"].isin(list(methods))]
    if rows.empty:
        raise ConfigError(
            f"no result for trace {trace_id!r}" + (f" and method(s) {', '.join(methods)}" if methods else "")
        )
    first = rows.iloc[0]
    true_step = first["true_step"]
    n = int(first["steps"] or (len(trace) if trace is not None else 0))
    label = "unlabelled" if true_step is None else f"annotated decisive step {true_step} ({first['true_agent']})"
    out = [f"trace {trace_id} · {n} steps · {label}"]
    if trace is not None:
        out.append(one_line(f"question: {trace.question}", width))
        if trace.ground_truth:
            out.append(one_line(f"correct answer: {trace.ground_truth}", width))
    by_step: dict[int, list[Any]] = {}
    unplaced: list[Any] = []
    r: Any  # a row of the frame
    for r in rows.itertuples(index=False):
        if r.step is not None and not pd.isna(r.step):
            by_step.setdefault(int(r.step), []).append(r)
        else:
            unplaced.append(r)
    if trace is not None:
        steps: list[tuple[int, str, str | None]] = [(s.index, s.agent, s.content) for s in trace.steps]
    else:
        out.append("(trace text not available: the run's corpus is gone or changed; blamed steps only)")
        shown = sorted(set(by_step) | ({int(true_step)} if true_step is not None else set()))
        steps = [(i, "", None) for i in shown]
    agent_w = min(max([len(a) for _, a, _ in steps] + [5]), 20)
    out += ["", f"  {'step':>4}  {'agent':<{agent_w}}  content"]
    for i, agent, content in steps:
        blamed = i in by_step
        mark = ("►" if blamed else " ") + ("✓" if true_step is not None and i == true_step else " ")
        prefix = f"{mark}{i:>4}  {one_line(agent, agent_w):<{agent_w}}  "
        if content is None:
            out.append(prefix.rstrip())
        elif full or blamed:
            body = _wrap(content, width, " " * len(prefix), None if full else 6)
            out.append(prefix + body[0].lstrip())
            out += body[1:]
        else:
            out.append(prefix + one_line(content, max(width - len(prefix), 10)))
        for r in by_step.get(i, []):
            out += _blame_lines(r, width, " " * 6)
    for r in unplaced:
        out.append(f"no step blamed by {r.method}" + (f": {one_line(r.reason, width - 30)}" if r.reason else ""))
    out += ["", "► blamed by a method" + ("   ✓ annotated decisive step" if true_step is not None else "")]
    return visible("\n".join(out))
