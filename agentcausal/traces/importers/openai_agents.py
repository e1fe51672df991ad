"""OpenAI Agents SDK trace export (``trace.span`` records) → :class:`~agentcausal.traces.model.Trace`.

What the SDK's tracing exports: ``Trace.export()`` and ``Span.export()`` objects,
``{"object": "trace.span", "id", "trace_id", "parent_id", "started_at",
"ended_at", "span_data": {"type": ...}, "error"}``, as the SDK's own exporter
posts them (``{"data": [...]}``), a JSON list, or one object per line.

Mapping (``span_data.type``):

* ``agent`` names the agent of everything below it (``name``); with no step
  below it, it is a step of its own (without content: the agent span records
  none);
* ``generation`` (Chat Completions models) is a step: the text and tool calls of
  its ``output`` messages; its ``input``'s first user message is the question;
* ``function`` is a tool step: its ``output``;
* ``response`` (Responses API models, the SDK's default) is a step that carries
  **no content** (only ``response_id``): a trace of such spans is refused with
  the advice to record it with the OpenInference instrumentation instead;
* ``handoff``, ``guardrail``, ``custom`` and the rest are structure.

Ids are kept as the SDK writes them (``trace_…``, ``span_…``).

References
----------
OpenAI Agents SDK tracing, https://openai.github.io/openai-agents-python/tracing/
(``agents.tracing.span_data``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers._spans import (
    SpanKind,
    SpanRecord,
    iso_to_ns,
    message_text,
    read_json_records,
    spans_to_traces,
)
from agentcausal.traces.model import Trace

__all__ = ["is_agents_record", "agents_records", "load_openai_agents", "RESPONSE_HINT"]

#: why a trace of Responses API spans has nothing to attribute, and what to do
RESPONSE_HINT = (
    "the OpenAI Agents SDK's own export keeps no text for Responses API calls ('response' spans hold "
    "only a response id); record the run with openinference-instrumentation-openai-agents "
    "(OpenInference spans) and import those"
)


def is_agents_record(value: Any) -> bool:
    """Whether a parsed JSON value is an exported Agents SDK trace or span."""
    return isinstance(value, dict) and (
        value.get("object") in ("trace", "trace.span")
        or (isinstance(value.get("span_data"), dict) and "trace_id" in value)
    )


def _records(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for v in read_json_records(path, "cannot read as an OpenAI Agents SDK export"):
        items = v["data"] if isinstance(v, dict) and isinstance(v.get("data"), list) else [v]
        out.extend(x for x in items if is_agents_record(x))
    if not out:
        raise TraceFormatError("expected OpenAI Agents SDK trace records (objects with 'span_data')", path=str(path))
    return out


def _text(v: Any) -> str | None:
    """Message text of a generation's ``output`` / a function's ``output``: a string, messages or JSON."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        parts = []
        for m in v:
            if isinstance(m, dict):
                parts += [message_text(m.get("content")), message_text(m["tool_calls"]) if m.get("tool_calls") else ""]
            else:
                parts.append(message_text(m))
        return "\n".join(p for p in parts if p)
    return message_text(v)


def _first_user(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    for m in v if isinstance(v, list) else []:
        if isinstance(m, dict) and m.get("role") == "user":
            return message_text(m.get("content")) or None
    return None


def _record(r: dict[str, Any]) -> SpanRecord:
    d = r.get("span_data") or {}
    typ = str(d.get("type", ""))
    meta: dict[str, Any] = {"span_type": typ}
    kind: SpanKind = "other"
    agent, content, first_user = None, None, None
    if typ == "agent":
        kind, agent = "agent", d.get("name")
    elif typ == "generation":
        kind, content, first_user = "llm", _text(d.get("output")), _first_user(d.get("input"))
        if d.get("model"):
            meta["model"] = d["model"]
    elif typ == "response":
        kind = "llm"
        if d.get("response_id"):
            meta["response_id"] = d["response_id"]
    elif typ == "function":
        kind, content = "tool", _text(d.get("output"))
        meta["tool_name"] = d.get("name")
        if d.get("input") is not None:
            meta["tool_arguments"] = d["input"] if isinstance(d["input"], str) else json.dumps(d["input"])
    if r.get("error"):
        meta["error"] = r["error"]
    return SpanRecord(
        trace_id=str(r.get("trace_id", "")),
        span_id=str(r.get("id", "")),
        parent_id=r.get("parent_id") or None,
        name=str(d.get("name") or typ),
        start=iso_to_ns(r.get("started_at")),
        kind=kind,
        agent=str(agent) if agent else None,
        content=content,
        question=None,
        first_user=first_user,
        meta=meta,
    )


def agents_records(path: str | Path) -> list[SpanRecord]:
    """The span records of an Agents SDK export, before building traces.

    Raises
    ------
    TraceFormatError
        If the file holds no Agents SDK trace record.
    """
    return [_record(r) for r in _records(Path(path)) if r.get("object") != "trace"]


def load_openai_agents(path: str | Path, *, tool_agent: str | None = None, skip_invalid: bool = False) -> list[Trace]:
    """Import an OpenAI Agents SDK trace export.

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
        If the file holds no Agents SDK record, or a trace has no step with content (Responses API
        spans carry none: the message says to record with the OpenInference instrumentation).
    """
    p = Path(path)
    return spans_to_traces(
        agents_records(p),
        source="openai-agents",
        file=p.name,
        tool_agent=tool_agent,
        skip_invalid=skip_invalid,
        content_hint=RESPONSE_HINT,
    )
