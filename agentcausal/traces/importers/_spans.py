"""Span trees to :class:`~agentcausal.traces.model.Trace`: the rules every span format shares.

Each format module turns its records into :class:`SpanRecord` (what kind of
span, which agent it names, what it said) and calls :func:`spans_to_traces`,
which applies the common rules:

1. one trace per trace id;
2. steps in execution order: start time, then parent before child on a tie
   (depth in the span tree), then span id;
3. a step is an LLM output (``llm``) or a tool result (``tool``, its own step
   with ``role="tool"``); agent and chain spans are structure, except an agent
   span with no step below it, which is the step itself;
4. each step's agent is the name of its nearest ancestor (itself included)
   that names an agent; tool steps get the calling agent's name, or
   ``tool_agent`` when given (Who&When's ``Computer_terminal`` convention);
5. the question is the root span's input, else the first user message;
6. each step keeps ``span_id``, ``trace_id`` and ``span_name`` in its metadata.

A trace whose step spans carry no content at all (content capture off) is
invalid: :class:`~agentcausal.exceptions.TraceFormatError` says so, or the
trace is dropped with ``skip_invalid=True``. So is a structurally broken span
tree (:func:`tree_defect`), which is named, never guessed at: a span whose
parent is not in the trace (an incomplete export, a trace still running),
two different spans under one span id, a cycle of parents. A step no span
above it names an agent for keeps agent ``unknown`` and says so in its
metadata (``agent_unknown``) and in the trace's (``unknown_agent_steps``).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.model import Step, Trace

__all__ = [
    "SpanRecord",
    "spans_to_traces",
    "iter_json_values",
    "read_json_records",
    "norm_id",
    "iso_to_ns",
    "message_text",
    "CONTENT_OFF_HINT",
    "tree_defect",
]

log = logging.getLogger(__name__)

SpanKind = Literal["agent", "llm", "tool", "chain", "other"]

#: appended to the "content capture was off" message
CONTENT_OFF_HINT = (
    "content capture was off when it was recorded (OpenTelemetry GenAI: set "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; OpenInference: unset "
    "OPENINFERENCE_HIDE_INPUTS/OUTPUTS); there is nothing to attribute"
)


@dataclass
class SpanRecord:
    """One span (or run) reduced to what the trace rules need.

    Attributes
    ----------
    trace_id, span_id : str, hex ids (lower case, no ``0x``)
    parent_id : str or None
    name : str, the span name
    start : int, start time in nanoseconds since the epoch (or any increasing rank)
    kind : ``"agent"``, ``"llm"``, ``"tool"``, ``"chain"`` or ``"other"``
    agent : str or None, the agent this span names (agent spans; also any span that names one)
    content : str or None, the step text (LLM output, tool result, agent output); None when absent
    question : str or None, this span's input as a question (used for the root span)
    first_user : str or None, the first user message among this span's inputs
    meta : dict, extra facts kept in the step metadata (model, tool name, tool call id ...)
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    kind: SpanKind
    agent: str | None = None
    content: str | None = None
    question: str | None = None
    first_user: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def norm_id(value: Any) -> str:
    """An OTLP id as lower-case hex: accepts hex (``0x`` prefix optional) and base64 (protobuf JSON).

    >>> norm_id("0xABCDEF0123456789")
    'abcdef0123456789'
    >>> norm_id("q83vASNFZ4k=")
    'abcdef0123456789'
    >>> norm_id("0XmPtb2Rh3ilN23oGOClrw==")  # base64 that begins like a hex prefix
    'd1798fb5bd918778a5376de818e0a5af'
    """
    s = str(value or "").strip()
    bare = s[2:] if s.lower().startswith("0x") else s  # a base64 id may begin with "0X" too: hex only if hex after it
    if re.fullmatch(r"[0-9a-fA-F]+", bare) and len(bare) in (16, 32):
        return bare.lower()
    try:
        raw = base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return s.lower()
    return raw.hex() if len(raw) in (8, 16) else s.lower()


def iso_to_ns(value: Any) -> int:
    """An ISO-8601 time (``Z`` or offset; naive means UTC) or a number of ns as integer nanoseconds.

    >>> iso_to_ns("1970-01-01T00:00:01.000002Z")
    1000002000
    """
    if value is None or value == "":
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    s = str(value).strip()
    if s.isdigit():
        return int(s)
    try:
        t = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    delta = t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def iter_json_values(text: str) -> Iterator[Any]:
    """Every JSON value in ``text``: one document, JSON Lines, or concatenated (pretty-printed) objects.

    Raises
    ------
    ValueError
        If something that is not JSON sits between the values.

    >>> list(iter_json_values('{"a": 1}\\n{\\n  "b": 2\\n}'))
    [{'a': 1}, {'b': 2}]
    """
    dec = json.JSONDecoder()
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n:
            return
        value, i = dec.raw_decode(text, i)
        yield value


def read_json_records(path: Path, error: str) -> list[Any]:
    """The records of a file of JSON values (:func:`iter_json_values`), top-level arrays flattened.

    Parameters
    ----------
    path : the file (UTF-8)
    error : str, the start of the message when the file cannot be read or parsed

    Returns
    -------
    list, each value of the file, or each element of a value that is an array

    Raises
    ------
    TraceFormatError
        ``"<error>: <reason>"`` naming ``path``, if the file cannot be read as UTF-8 or is not JSON.
    """
    try:
        values = list(iter_json_values(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TraceFormatError(f"{error}: {exc}", path=str(path)) from exc
    return [r for v in values for r in (v if isinstance(v, list) else [v])]


def message_text(content: Any) -> str:
    """Plain text of a message ``content``: a string, a list of parts (``text``/``content`` keys,
    tool calls), or anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_part_text(p) for p in content) if t)
    if isinstance(content, dict):
        return _part_text(content)
    return json.dumps(content, ensure_ascii=False, default=str)


def _part_text(p: Any) -> str:
    if isinstance(p, str):
        return p
    if not isinstance(p, dict):
        return json.dumps(p, ensure_ascii=False, default=str)
    typ = p.get("type")
    if (
        typ in ("tool_call", "function_call")
        or ("name" in p and "arguments" in p)
        or isinstance(p.get("function"), dict)
    ):
        fn = p["function"] if isinstance(p.get("function"), dict) else p
        args = fn.get("arguments", "")
        args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
        return f"tool call {fn.get('name', '')}({args})"
    if typ == "tool_call_response":
        return message_text(p.get("response", p.get("result", "")))
    for key in ("content", "text"):
        if key in p:
            return message_text(p[key])
    return json.dumps(p, ensure_ascii=False, default=str)


def _same_span(a: SpanRecord, b: SpanRecord) -> bool:
    """Whether two records under one (trace id, span id) are copies of one span (two exports holding it)."""
    return (a.name, a.start, a.parent_id, a.kind) == (b.name, b.start, b.parent_id, b.kind)


def tree_defect(spans: Iterable[SpanRecord], *, clashes: Iterable[str] = ()) -> str | None:
    """Why one trace's span tree cannot be read as a tree, or None when it can.

    Parameters
    ----------
    spans : the trace's span records, one per span id
    clashes : span ids that two different spans (other name, start, parent or kind) were given

    Returns
    -------
    str or None: the first defect found, naming the span ids: two different spans under one id, a
    span whose parent is not in the trace, or a cycle of parents.

    Examples
    --------
    >>> a = SpanRecord("t", "a", None, "root", 1, "agent")
    >>> b = SpanRecord("t", "b", "gone", "llm", 2, "llm")
    >>> tree_defect([a, b])
    "span b's parent gone is not in the trace (an incomplete export, or the trace was still running)"
    >>> tree_defect([SpanRecord("t", "a", "b", "x", 1, "llm"), SpanRecord("t", "b", "a", "y", 2, "llm")])
    'spans a, b are each their own ancestor (a cycle of parents)'
    """
    clash = sorted(set(clashes))
    if clash:
        return f"span id {', '.join(clash[:5])} is given to two different spans"
    by_id = {s.span_id: s for s in spans}
    for s in by_id.values():
        if s.parent_id and s.parent_id not in by_id:
            return (
                f"span {s.span_id}'s parent {s.parent_id} is not in the trace (an incomplete export, "
                "or the trace was still running)"
            )
    in_cycle: list[str] = []
    for s in by_id.values():
        seen: set[str] = set()
        cur: SpanRecord | None = s
        while cur is not None and cur.span_id not in seen:
            seen.add(cur.span_id)
            cur = by_id.get(cur.parent_id) if cur.parent_id else None
        if cur is not None and cur.span_id == s.span_id:
            in_cycle.append(s.span_id)
    if in_cycle:
        return f"spans {', '.join(sorted(in_cycle)[:5])} are each their own ancestor (a cycle of parents)"
    return None


def _order(spans: list[SpanRecord]) -> list[SpanRecord]:
    by_id = {s.span_id: s for s in spans}
    depth: dict[str, int] = {}

    def d(s: SpanRecord) -> int:
        seen = set()
        cur, k = s, 0
        while cur.parent_id and cur.parent_id in by_id and cur.span_id not in seen:
            seen.add(cur.span_id)
            cur, k = by_id[cur.parent_id], k + 1
        return k

    for s in spans:
        depth[s.span_id] = d(s)
    return sorted(spans, key=lambda s: (s.start, depth[s.span_id], s.span_id))


def _ancestors(s: SpanRecord, by_id: dict[str, SpanRecord]) -> Iterator[SpanRecord]:
    """``s`` itself, then its parent, grandparent ... (cycle-safe)."""
    seen: set[str] = set()
    cur: SpanRecord | None = s
    while cur is not None and cur.span_id not in seen:
        seen.add(cur.span_id)
        yield cur
        cur = by_id.get(cur.parent_id) if cur.parent_id else None


def spans_to_traces(
    spans: Iterable[SpanRecord],
    *,
    source: str,
    file: str | None = None,
    tool_agent: str | None = None,
    skip_invalid: bool = False,
    content_hint: str = CONTENT_OFF_HINT,
    invalid: list[tuple[str, str]] | None = None,
) -> list[Trace]:
    """Build one :class:`Trace` per trace id from span records (rules in the module docstring).

    Parameters
    ----------
    spans : span records of any number of traces, in any order; a span given more than once
        (same trace id and span id, e.g. from two files) is kept once (the copy with content)
    source : str, the format name, stored as ``Trace.source``
    file : str, optional; the file name, kept in ``Trace.metadata["file"]``
    tool_agent : str, optional; agent name for tool steps (default: the calling agent's name)
    skip_invalid : bool, drop traces without steps or content (logged) instead of raising
    content_hint : str, why a trace without content has none and what to do (default: capture was off)
    invalid : list, optional; each dropped trace's ``(trace id, why)`` is appended to it (and not logged)

    Returns
    -------
    list of Trace, ordered by their first span's start time. ``Trace.id`` is the trace id,
    ``ground_truth`` is empty (it comes only from outside the trace, see
    :mod:`agentcausal.traces.importers.labels`).

    Raises
    ------
    TraceFormatError
        If a trace has no LLM/tool/agent span, none of its steps carries content (content
        capture off), or its span tree is broken (:func:`tree_defect`); all such traces are
        named in one message (not with ``skip_invalid`` or ``invalid``).
    """
    groups: dict[str, dict[str, SpanRecord]] = {}
    clashes: dict[str, list[str]] = {}
    dropped = 0
    for s in spans:
        group = groups.setdefault(s.trace_id, {})
        kept = group.get(s.span_id)
        if kept is None:
            group[s.span_id] = s
            continue
        if not _same_span(kept, s):
            clashes.setdefault(s.trace_id, []).append(s.span_id)
            continue
        dropped += 1  # the same span twice (e.g. two exports holding it): keep one
        if kept.content is None and s.content is not None:
            group[s.span_id] = s  # the copy that carries the content
    if dropped:
        log.info("dropped %d duplicate span(s) (same trace id and span id)", dropped)
    out: list[tuple[int, Trace]] = []
    bad: list[tuple[str, str]] = []
    for tid, by_span in groups.items():
        defect = tree_defect(by_span.values(), clashes=clashes.get(tid, ()))
        if defect:
            bad.append((tid, defect))
            continue
        ordered = _order(list(by_span.values()))
        by_id = {s.span_id: s for s in ordered}
        has_step_below: set[str] = set()
        for s in ordered:
            if s.kind in ("llm", "tool"):
                for a in list(_ancestors(s, by_id))[1:]:
                    has_step_below.add(a.span_id)
        step_spans = [
            s for s in ordered if s.kind in ("llm", "tool") or (s.kind == "agent" and s.span_id not in has_step_below)
        ]
        if not step_spans:
            bad.append((tid, "no LLM, tool or agent span"))
            continue
        if all(s.content is None for s in step_spans):
            bad.append((tid, f"no step carries message content; {content_hint}"))
            continue
        steps = []
        for i, s in enumerate(step_spans):
            agent = next((a.agent for a in _ancestors(s, by_id) if a.agent), None)
            if s.kind == "tool" and tool_agent:
                agent = tool_agent
            step_meta = {"span_id": s.span_id, "trace_id": s.trace_id, "span_name": s.name, **s.meta}
            if s.content is None:
                step_meta["content_missing"] = True
            if not agent:
                step_meta["agent_unknown"] = True  # no span above it names an agent: said, not hidden
            steps.append(
                Step(
                    index=i,
                    agent=agent or "unknown",
                    role="tool" if s.kind == "tool" else "assistant",
                    content=s.content or "",
                    metadata=step_meta,
                )
            )
        roots = [s for s in ordered if not s.parent_id or s.parent_id not in by_id]
        question = next((r.question for r in roots if r.question), None)
        if not question:
            question = next((s.first_user for s in ordered if s.first_user), "")
        meta: dict[str, Any] = {"format": source, "trace_id": tid, "root_span_id": roots[0].span_id if roots else ""}
        if file:
            meta["file"] = file
        unknown = [st.index for st in steps if st.metadata.get("agent_unknown")]
        if unknown:
            meta["unknown_agent_steps"] = unknown
        out.append(
            (
                ordered[0].start,
                Trace(id=tid, source=source, question=question, ground_truth="", steps=steps, metadata=meta),
            )
        )
    if bad and invalid is not None:  # the caller reports them
        invalid.extend(bad)
    elif bad:
        msg = f"{len(bad)} trace(s) cannot be imported: " + "; ".join(f"{tid}: {why}" for tid, why in bad[:20])
        if not skip_invalid:
            raise TraceFormatError(msg, path=file)
        log.warning("skipped %s", msg)
    return [t for _, t in sorted(out, key=lambda x: x[0])]
