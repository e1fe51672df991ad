"""OpenInference spans (Arize Phoenix) → :class:`~agentcausal.traces.model.Trace`.

Two containers are read: OTLP JSON (as for :mod:`.otel`) and what the
OpenTelemetry Python ``ConsoleSpanExporter`` writes (``span.to_json()``): a
stream of concatenated, usually pretty-printed, JSON objects, one per span,
in the order spans *ended* (children before parents), with ``0x``-prefixed
ids and ISO start times.

Mapping (``openinference.span.kind``):

* ``LLM`` is a step: ``llm.output_messages.0.message.content`` (and its tool
  calls), else ``output.value``;
* ``TOOL`` is a tool step: ``output.value``;
* ``AGENT`` names the agent of everything below it: ``agent.name``, else
  ``graph.node.id``/``graph.node.name`` (the AutoGen-AgentChat and CrewAI
  instrumentors set only these), else the span-name prefix
  (``Researcher._execute_core`` gives ``Researcher``); an AGENT span with no
  step below it is the step itself (``output.value``);
* ``CHAIN`` is structure; a LangGraph node named in the span's ``metadata``
  JSON (``langgraph_node``) names the agent of the spans below it; a CrewAI
  kickoff's ``crew_inputs`` (else its first task's description) is a question;
* a JSON ``output.value`` gives its text field (``output``, ``answer``, ...,
  CrewAI's ``raw``);
* the root span's ``input.value`` is the question, else the first user
  message of an LLM span. ``llm.input_messages`` never makes steps (it repeats
  the history).

References
----------
OpenInference semantic conventions, https://github.com/Arize-ai/openinference/tree/main/spec
(constants in the ``openinference-semantic-conventions`` package).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers._otlp import OtlpSpan, is_otlp
from agentcausal.traces.importers._spans import (
    SpanKind,
    SpanRecord,
    iso_to_ns,
    iter_json_values,
    message_text,
    norm_id,
    read_json_records,
    spans_to_traces,
)
from agentcausal.traces.importers.otel import genai_record, otel_records
from agentcausal.traces.model import Trace

__all__ = ["read_console", "openinference_record", "span_record", "openinference_records", "load_openinference"]

#: what OpenInference writes in place of hidden content
REDACTED = "__REDACTED__"

_MSG = re.compile(r"(llm\.(?:input|output)_messages)\.(\d+)\.message\.(.+)")


def read_console(path: str | Path) -> list[OtlpSpan]:
    """Spans from a console-exporter stream (concatenated JSON objects, one per span).

    Raises
    ------
    TraceFormatError
        If the file is not such a stream.
    """
    p = Path(path)
    out = []
    for sp in read_json_records(p, "cannot read as a stream of JSON spans"):
        ctx = sp.get("context") if isinstance(sp, dict) else None
        if not isinstance(ctx, dict) or "span_id" not in ctx:
            raise TraceFormatError("expected console-exporter spans (objects with context.span_id)", path=str(p))
        parent = sp.get("parent_id")
        out.append(
            OtlpSpan(
                trace_id=norm_id(ctx.get("trace_id")),
                span_id=norm_id(ctx.get("span_id")),
                parent_id=norm_id(parent) if parent else None,
                name=str(sp.get("name", "")),
                start=iso_to_ns(sp.get("start_time")),
                attrs=dict(sp.get("attributes") or {}),
                events=[(str(e.get("name", "")), dict(e.get("attributes") or {})) for e in sp.get("events") or []],
                resource=dict((sp.get("resource") or {}).get("attributes") or {}),
            )
        )
    return out


def _messages(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened ``prefix.N.message.*`` attributes as message dicts (``role``, ``content``, ``tool_calls``)."""
    msgs: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        m = _MSG.fullmatch(k)
        if not m or m.group(1) != prefix:
            continue
        msg = msgs.setdefault(int(m.group(2)), {})
        rest = m.group(3)
        t = re.fullmatch(r"tool_calls\.(\d+)\.tool_call\.function\.(name|arguments)", rest)
        c = re.fullmatch(r"contents\.(\d+)\.message_content\.text", rest)
        if t:
            msg.setdefault("_calls", {}).setdefault(int(t.group(1)), {})[t.group(2)] = v
        elif c:
            msg.setdefault("_texts", {})[int(c.group(1))] = v
        elif rest in ("role", "content", "name"):
            msg[rest] = v
    out = []
    for i in sorted(msgs):
        msg = msgs[i]
        texts = msg.pop("_texts", None)
        if texts and not msg.get("content"):
            msg["content"] = "\n".join(str(texts[j]) for j in sorted(texts))
        calls = msg.pop("_calls", None)
        if calls:
            msg["tool_calls"] = [calls[j] for j in sorted(calls)]
        out.append(msg)
    return out


def _msg_text(m: dict[str, Any]) -> str:
    parts = [message_text(m.get("content"))]
    if m.get("tool_calls"):
        parts.append(message_text(m["tool_calls"]))
    return "\n".join(p for p in parts if p)


def _value(v: Any) -> str | None:
    """``input.value``/``output.value``: text, or a question/answer field of a JSON object."""
    if v is None:
        return None
    if isinstance(v, str):
        try:
            parsed = json.loads(v)
        except json.JSONDecodeError:
            return v
    else:
        parsed = v
    if isinstance(parsed, dict):
        for k in ("question", "input", "query", "task", "content", "output", "answer", "result", "raw"):
            if isinstance(parsed.get(k), str):
                return parsed[k]
        msgs = parsed.get("messages")
        if isinstance(msgs, list) and msgs:
            return message_text(msgs[-1].get("content") if isinstance(msgs[-1], dict) else msgs[-1])
    return v if isinstance(v, str) else json.dumps(parsed, ensure_ascii=False, default=str)


def _graph_node(attrs: dict[str, Any]) -> str | None:
    meta = attrs.get("metadata")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except json.JSONDecodeError:
            return None
    node = meta.get("langgraph_node") if isinstance(meta, dict) else None
    return str(node) if node and not str(node).startswith("__") else None


def _crew_question(attrs: dict[str, Any]) -> str | None:
    """A CrewAI kickoff's question: its ``crew_inputs`` (when not empty), else the first task's description."""
    for key in ("crew_inputs", "crew_tasks"):
        v = attrs.get(key)
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except json.JSONDecodeError:
                continue
        if key == "crew_inputs" and isinstance(v, dict) and v:
            return json.dumps(v, ensure_ascii=False) if len(v) > 1 else str(next(iter(v.values())))
        if key == "crew_tasks" and isinstance(v, list) and v and isinstance(v[0], dict) and v[0].get("description"):
            return str(v[0]["description"])
    return None


def openinference_record(span: OtlpSpan) -> SpanRecord:
    """One span read with the OpenInference conventions."""
    a = span.attrs
    k = str(a.get("openinference.span.kind", "")).upper()
    meta: dict[str, Any] = {}
    agent = _graph_node(a)
    content = first_user = None
    if k == "LLM":
        kind: SpanKind = "llm"
        outs = _messages(a, "llm.output_messages")
        content = "\n".join(t for t in (_msg_text(m) for m in outs) if t) if outs else _value(a.get("output.value"))
        first_user = next((_msg_text(m) for m in _messages(a, "llm.input_messages") if m.get("role") == "user"), None)
        if a.get("llm.model_name"):
            meta["model"] = a["llm.model_name"]
    elif k == "TOOL":
        kind = "tool"
        ov = a.get("output.value")
        content = None if ov is None else ov if isinstance(ov, str) else json.dumps(ov, ensure_ascii=False)
        meta["tool_name"] = a.get("tool.name") or span.name
        if a.get("tool.id") or a.get("tool_call.id"):
            meta["tool_call_id"] = a.get("tool.id") or a.get("tool_call.id")
    elif k == "AGENT":
        kind = "agent"
        agent = (
            a.get("agent.name")
            or a.get("graph.node.id")
            or a.get("graph.node.name")
            or span.name.split(".", 1)[0]
            or agent
        )
        content = _value(a.get("output.value"))
    elif k == "CHAIN":
        kind = "chain"
        first_user = _crew_question(a)
    else:
        kind = "other"
    if content == REDACTED:
        content = None
    return SpanRecord(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_id=span.parent_id,
        name=span.name,
        start=span.start,
        kind=kind,
        agent=str(agent) if agent else None,
        content=content,
        question=_value(a.get("input.value")) or first_user,
        first_user=first_user,
        meta=meta,
    )


def span_record(span: OtlpSpan) -> SpanRecord:
    """One span read by its own convention: OpenInference when it has ``openinference.span.kind``, else GenAI."""
    if "openinference.span.kind" in span.attrs:
        return openinference_record(span)
    return genai_record(span)


def openinference_records(path: str | Path) -> list[SpanRecord]:
    """Span records of an OpenInference file: OTLP JSON or a console-exporter stream.

    Spans without ``openinference.span.kind`` are read with the GenAI rules (:mod:`.otel`).

    Raises
    ------
    TraceFormatError
        If the file is neither.
    """
    p = Path(path)
    try:
        first = next(iter_json_values(p.read_text(encoding="utf-8")), None)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TraceFormatError(f"not JSON: {exc}", path=str(p)) from exc
    if is_otlp(first):
        return otel_records(p, record=span_record)
    return [span_record(s) for s in read_console(p)]


def load_openinference(path: str | Path, *, tool_agent: str | None = None, skip_invalid: bool = False) -> list[Trace]:
    """Import OpenInference spans (OTLP JSON or the Python console exporter's stream).

    Parameters
    ----------
    path : the file
    tool_agent : agent name for tool steps (default: the calling agent)
    skip_invalid : drop traces without content instead of raising

    Returns
    -------
    list of Trace, one per trace id.

    Raises
    ------
    TraceFormatError
        If the file is neither format, or a trace has no steps or no content
        (``OPENINFERENCE_HIDE_OUTPUTS`` or similar: content capture off).
    """
    p = Path(path)
    return spans_to_traces(
        openinference_records(p), source="openinference", file=p.name, tool_agent=tool_agent, skip_invalid=skip_invalid
    )
