"""OpenTelemetry GenAI spans as OTLP JSON → :class:`~agentcausal.traces.model.Trace`.

Reads what the Collector's file exporter writes (one ``TracesData`` object per
line) and a single ``TracesData``/``ExportTraceServiceRequest`` document, with
ids in hex (the OTLP JSON rule) or base64 (``protobuf.json_format`` output) and
camelCase or snake_case keys. All content layouts of the GenAI semantic
conventions are read:

* up to v1.27: span events ``gen_ai.content.prompt``/``gen_ai.content.completion``
  with attributes ``gen_ai.prompt``/``gen_ai.completion`` (JSON strings);
* v1.28–v1.36: log events (``gen_ai.user.message``, ``gen_ai.choice`` ...) in a
  separate OTLP logs file (``logs=``), joined to spans by span id;
* v1.37 and later: attributes ``gen_ai.input.messages``/``gen_ai.output.messages``
  on the span or on the event ``gen_ai.client.inference.operation.details``;
* OpenLLMetry's flattened ``gen_ai.prompt.N.*``/``gen_ai.completion.N.*`` and
  ``traceloop.span.kind``/``traceloop.entity.*``.

Steps: each ``chat``/``text_completion``/``generate_content`` span (its output
messages), each ``execute_tool`` span (``gen_ai.tool.call.result``, or
``response`` as the docs example writes it), and each ``invoke_agent`` span
without a step below it. The agent is the nearest ``invoke_agent`` ancestor's
``gen_ai.agent.name``, else that span name's suffix. ``gen_ai.input.messages``
never makes steps (it repeats the history); it gives the question.

References
----------
OpenTelemetry semantic conventions for generative AI systems (Development),
https://opentelemetry.io/docs/specs/semconv/gen-ai/ (v1.27–v1.41) and
github.com/open-telemetry/semantic-conventions-genai (v1.42+).
OTLP/JSON encoding: https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentcausal.traces.importers._otlp import OtlpSpan, read_otlp, read_otlp_logs
from agentcausal.traces.importers._spans import SpanKind, SpanRecord, message_text, spans_to_traces
from agentcausal.traces.model import Trace

__all__ = ["genai_record", "otel_records", "load_otel", "LLM_OPS"]

LLM_OPS = ("chat", "text_completion", "generate_content")


def _json(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return v


def _messages(v: Any) -> list[dict[str, Any]] | None:
    """A messages attribute (JSON string or list) as a list of dicts; None when absent."""
    if v is None:
        return None
    v = _json(v)
    if isinstance(v, dict):
        v = [v]
    if isinstance(v, str):
        return [{"role": "assistant", "content": v}]
    return [m for m in v if isinstance(m, dict)] if isinstance(v, list) else None


def _msg_text(m: dict[str, Any]) -> str:
    parts = [message_text(m.get("parts", m.get("content")))]
    if m.get("tool_calls"):
        parts.append(message_text(m["tool_calls"]))
    if isinstance(m.get("message"), dict):  # gen_ai.choice body
        parts.append(_msg_text(m["message"]))
    return "\n".join(p for p in parts if p)


def _flattened(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenLLMetry's ``prefix.N.role/content/tool_calls.K.name/arguments`` as message dicts."""
    msgs: dict[int, dict[str, Any]] = {}
    pat = re.compile(re.escape(prefix) + r"\.(\d+)\.(.+)")
    for k, v in attrs.items():
        m = pat.fullmatch(k)
        if not m:
            continue
        i, rest = int(m.group(1)), m.group(2)
        msg = msgs.setdefault(i, {})
        t = re.fullmatch(r"tool_calls\.(\d+)\.(name|arguments)", rest)
        if t:
            calls = msg.setdefault("_calls", {})
            calls.setdefault(int(t.group(1)), {})[t.group(2)] = v
        else:
            msg[rest] = v
    out = []
    for i in sorted(msgs):
        msg = msgs[i]
        calls = msg.pop("_calls", None)
        if calls:
            msg["tool_calls"] = [calls[j] for j in sorted(calls)]
        out.append(msg)
    return out


def _event_attr(span: OtlpSpan, event: str, key: str) -> Any:
    return next((a[key] for n, a in span.events if n == event and key in a), None)


def _output_text(span: OtlpSpan) -> str | None:
    a = span.attrs
    for msgs in (
        _messages(a.get("gen_ai.output.messages")),
        _messages(_event_attr(span, "gen_ai.client.inference.operation.details", "gen_ai.output.messages")),
        _messages(_event_attr(span, "gen_ai.content.completion", "gen_ai.completion")),
        _flattened(a, "gen_ai.completion") or None,
        [b if isinstance(b, dict) else {"content": b} for n, b in span.logs if n == "gen_ai.choice"] or None,
    ):
        if msgs:
            return "\n".join(t for t in (_msg_text(m) for m in msgs) if t)
    return None


def _first_user(span: OtlpSpan) -> str | None:
    a = span.attrs
    for msgs in (
        _messages(a.get("gen_ai.input.messages")),
        _messages(_event_attr(span, "gen_ai.client.inference.operation.details", "gen_ai.input.messages")),
        _messages(_event_attr(span, "gen_ai.content.prompt", "gen_ai.prompt")),
        _flattened(a, "gen_ai.prompt") or None,
        [
            {"role": "user", **(b if isinstance(b, dict) else {"content": b})}
            for n, b in span.logs
            if n == "gen_ai.user.message"
        ]
        or None,
    ):
        for m in msgs or []:
            if m.get("role") == "user":
                text = _msg_text(m)
                if text:
                    return text
    entity = a.get("traceloop.entity.input")
    if entity:
        v = _json(entity)
        if isinstance(v, dict):
            v = next((v[k] for k in ("question", "input", "query", "task") if isinstance(v.get(k), str)), v)
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return None


def _op(span: OtlpSpan) -> str:
    op = span.attrs.get("gen_ai.operation.name")
    if op:
        return str(op)
    head = span.name.split(" ", 1)[0]
    return head if head in (*LLM_OPS, "invoke_agent", "execute_tool", "invoke_workflow", "create_agent") else ""


def genai_record(span: OtlpSpan) -> SpanRecord:
    """One OTLP span read with the GenAI (and OpenLLMetry) conventions."""
    a = span.attrs
    op = _op(span)
    tl = str(a.get("traceloop.span.kind", "") or "")
    meta: dict[str, Any] = {}
    agent = content = None
    if op == "invoke_agent" or tl == "agent" or a.get("ag2.span.type") == "agent":
        kind: SpanKind = "agent"
        agent = (
            a.get("gen_ai.agent.name")
            or a.get("traceloop.entity.name")
            or (span.name.split(" ", 1)[1].strip() if " " in span.name else span.name)
        )
        content = _output_text(span)
        if content is None and a.get("traceloop.entity.output") is not None:
            content = message_text(_json(a["traceloop.entity.output"]))
    elif op == "execute_tool" or tl == "tool":
        kind = "tool"
        res = next(
            (
                a[k]
                for k in ("gen_ai.tool.call.result", "gen_ai.tool.call.response", "traceloop.entity.output")
                if a.get(k) is not None
            ),
            None,
        )
        content = None if res is None else message_text(_json(res)) if not isinstance(res, str) else res
        for k, mk in (
            ("gen_ai.tool.name", "tool_name"),
            ("gen_ai.tool.call.id", "tool_call_id"),
            ("gen_ai.tool.call.arguments", "tool_arguments"),
        ):
            if a.get(k) is not None:
                meta[mk] = a[k]
        if "tool_name" not in meta and " " in span.name:
            meta["tool_name"] = span.name.split(" ", 1)[1]
    elif op in LLM_OPS or a.get("llm.request.type") or any(k.startswith("gen_ai.completion.") for k in a):
        kind = "llm"
        content = _output_text(span)
        agent = a.get("gen_ai.agent.name")
        for k, mk in (("gen_ai.request.model", "model"), ("gen_ai.response.model", "model")):
            if a.get(k):
                meta[mk] = a[k]
    elif op in ("invoke_workflow", "create_agent", "plan") or tl in ("workflow", "task"):
        kind = "chain"
    else:
        kind = "other"
    return SpanRecord(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_id=span.parent_id,
        name=span.name,
        start=span.start,
        kind=kind,
        agent=str(agent) if agent else None,
        content=content,
        question=_first_user(span),
        first_user=_first_user(span) if kind == "llm" else None,
        meta=meta,
    )


def otel_records(
    path: str | Path, *, logs: str | Path | None = None, record: Callable[[OtlpSpan], SpanRecord] = genai_record
) -> list[SpanRecord]:
    """The span records of an OTLP JSON traces file (and its GenAI logs file), before building traces.

    ``record`` reads one span (default the GenAI rules; :func:`agentcausal.traces.importers.openinference.span_record`
    reads each span by its own convention).

    Raises
    ------
    TraceFormatError
        If a file is not OTLP JSON.
    """
    spans = read_otlp(path)
    if logs is not None:
        by_span = read_otlp_logs(logs)
        for s in spans:
            s.logs = by_span.get(s.span_id, [])
    return [record(s) for s in spans]


def load_otel(
    path: str | Path, *, logs: str | Path | None = None, tool_agent: str | None = None, skip_invalid: bool = False
) -> list[Trace]:
    """Import an OTLP JSON file of OpenTelemetry GenAI spans.

    Parameters
    ----------
    path : OTLP JSON traces file
    logs : OTLP JSON logs file holding the v1.28–v1.36 content events, optional
    tool_agent : agent name for tool steps (default: the calling agent)
    skip_invalid : drop traces without content instead of raising

    Returns
    -------
    list of Trace, one per trace id (see :func:`agentcausal.traces.importers._spans.spans_to_traces`),
    every span read with the GenAI rules; :func:`agentcausal.traces.importers.import_traces` reads a
    file that mixes in OpenInference spans each by its own convention.

    Raises
    ------
    TraceFormatError
        If the file is not OTLP JSON, or a trace has no steps or no content (content capture off).
    """
    p = Path(path)
    return spans_to_traces(
        otel_records(p, logs=logs), source="otel", file=p.name, tool_agent=tool_agent, skip_invalid=skip_invalid
    )
