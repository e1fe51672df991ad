"""Text of one blame for people: a reason on one line, a corrected action on one line (cut with "…").

Shared by the blamed-steps views (:mod:`agentcausal.report.blamed`), the trace sections of
``report.html`` (:mod:`agentcausal.report.traces_html`) and ``agentcausal show``
(:mod:`agentcausal.report.trace_view`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentcausal.traces.display import visible

__all__ = ["one_line", "fix_text"]


def _na(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v) or type(v).__name__ == "NAType"


def one_line(text: Any, width: int | None = None) -> str:
    """``text`` on one line (runs of whitespace as one space), cut to ``width`` characters with "…"; control and
    bidi characters shown escaped first (:func:`agentcausal.traces.display.visible`: ``\\x1b``, ``\\u202e``).

    >>> one_line("a\\n  b c", 4), one_line("short", 10), one_line(None), one_line("a\\x1b[2J\\rb")
    ('a b…', 'short', '', 'a\\\\x1b[2J\\\\x0db')
    """
    s = "" if _na(text) else " ".join(visible(str(text)).split())
    if width is not None and len(s) > width:
        return s[: max(width - 1, 0)] + "…"
    return s


def fix_text(corrected: Mapping[str, Any] | None, width: int | None = None) -> str:
    """A corrected action (``CorrectedAction`` as a dict) on one line: ``step N → "content" ⇒ outcome "…"``.

    Returns ``""`` when there is none.

    >>> fix_text({"step": 3, "content": "34 kPa", "changed": True, "outcome": "71 C"})
    'step 3 → "34 kPa" ⇒ outcome "71 C"'
    """
    if not corrected:
        return ""
    head = (
        f'"{one_line(corrected.get("content"), None)}"'
        if corrected.get("changed", True)
        else "(left unchanged by the corrector)"
    )
    out = f"step {corrected.get('step')} → {head}"
    if corrected.get("outcome"):
        out += f' ⇒ outcome "{one_line(corrected["outcome"])}"'
    return one_line(out, width)
