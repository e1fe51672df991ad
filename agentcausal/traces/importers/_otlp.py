"""OTLP JSON, the container: spans and log records with their ``AnyValue`` attributes decoded.

This module reads the encoding only; what a span *means* is the business of the
convention modules that read the :class:`OtlpSpan` records it returns
(:mod:`.otel` for the GenAI conventions, :mod:`.openinference` for OpenInference).
Ids in hex (the OTLP JSON rule) and base64 (``protobuf.json_format`` output) are
both read, as are camelCase and snake_case keys.

References
----------
OTLP/JSON encoding: https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers._spans import iter_json_values, norm_id

__all__ = ["OtlpSpan", "any_value", "otlp_attributes", "is_otlp", "read_otlp", "read_otlp_logs"]


@dataclass
class OtlpSpan:
    """One OTLP span with its attribute values decoded to Python values.

    Attributes
    ----------
    trace_id, span_id, parent_id : hex ids (parent ``None`` for a root)
    name : str
    start : int, ``startTimeUnixNano``
    attrs : dict key -> value
    events : list of (event name, attributes dict)
    resource : dict, resource attributes (``service.name`` ...)
    logs : list of (event name, body) from a separate logs file (v1.28–v1.36 content)
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    attrs: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    logs: list[tuple[str, Any]] = field(default_factory=list)


def _g(d: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for k in keys:
        if k in d:
            return d[k]
    return default


def any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": ...}``, ``arrayValue``, ``kvlistValue`` ...) as a Python value.

    >>> any_value({"intValue": "3"}), any_value({"arrayValue": {"values": [{"stringValue": "a"}]}})
    (3, ['a'])
    """
    if not isinstance(v, dict):
        return v
    for k in ("stringValue", "string_value"):
        if k in v:
            return v[k]
    for k in ("intValue", "int_value"):
        if k in v:
            return int(v[k])
    for k in ("doubleValue", "double_value"):
        if k in v:
            return float(v[k])
    for k in ("boolValue", "bool_value"):
        if k in v:
            return bool(v[k])
    for k in ("bytesValue", "bytes_value"):
        if k in v:
            return v[k]
    for k in ("arrayValue", "array_value"):
        if k in v:
            return [any_value(x) for x in (v[k] or {}).get("values", [])]
    for k in ("kvlistValue", "kvlist_value"):
        if k in v:
            return otlp_attributes((v[k] or {}).get("values", []))
    return None


def otlp_attributes(items: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` list (or an already plain dict) as ``{key: Python value}``."""
    if isinstance(items, dict):  # already plain (console exporter, some SDK dumps)
        return dict(items)
    return {kv.get("key", ""): any_value(kv.get("value")) for kv in items or [] if isinstance(kv, dict)}


def is_otlp(value: Any) -> bool:
    """Whether a parsed JSON value is an OTLP traces document."""
    return isinstance(value, dict) and ("resourceSpans" in value or "resource_spans" in value)


def _iter_values(path: Path) -> Iterator[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"cannot read: {exc}", path=str(path)) from exc
    try:
        yield from iter_json_values(text)
    except ValueError as exc:
        raise TraceFormatError(f"not JSON: {exc}", path=str(path)) from exc


def read_otlp(path: str | Path) -> list[OtlpSpan]:
    """All spans of an OTLP JSON traces file (one document, or one ``TracesData`` per line).

    Raises
    ------
    TraceFormatError
        If the file is not JSON or holds no ``resourceSpans``.
    """
    p = Path(path)
    out: list[OtlpSpan] = []
    found = False
    for doc in _iter_values(p):
        if not is_otlp(doc):
            continue
        found = True
        for rs in _g(doc, "resourceSpans", "resource_spans", default=[]) or []:
            resource = otlp_attributes((_g(rs, "resource", default={}) or {}).get("attributes", []))
            for ss in _g(rs, "scopeSpans", "scope_spans", "instrumentationLibrarySpans", default=[]) or []:
                for sp in ss.get("spans", []) or []:
                    parent = _g(sp, "parentSpanId", "parent_span_id", default="")
                    out.append(
                        OtlpSpan(
                            trace_id=norm_id(_g(sp, "traceId", "trace_id")),
                            span_id=norm_id(_g(sp, "spanId", "span_id")),
                            parent_id=norm_id(parent) if parent else None,
                            name=str(sp.get("name", "")),
                            start=int(_g(sp, "startTimeUnixNano", "start_time_unix_nano", default=0) or 0),
                            attrs=otlp_attributes(sp.get("attributes", [])),
                            events=[
                                (str(e.get("name", "")), otlp_attributes(e.get("attributes", [])))
                                for e in sp.get("events", []) or []
                            ],
                            resource=resource,
                        )
                    )
    if not found:
        raise TraceFormatError("expected OTLP JSON traces (objects with 'resourceSpans')", path=str(p))
    return out


def read_otlp_logs(path: str | Path) -> dict[str, list[tuple[str, Any]]]:
    """GenAI log events of an OTLP JSON logs file, by span id: ``{span_id: [(event name, body), ...]}``.

    The event name is the record's ``eventName`` or its ``event.name`` attribute (v1.28–v1.36).

    Raises
    ------
    TraceFormatError
        If the file is not JSON or holds no ``resourceLogs``.
    """
    p = Path(path)
    out: dict[str, list[tuple[str, Any]]] = {}
    found = False
    for doc in _iter_values(p):
        if not isinstance(doc, dict) or not ("resourceLogs" in doc or "resource_logs" in doc):
            continue
        found = True
        for rl in _g(doc, "resourceLogs", "resource_logs", default=[]) or []:
            for sl in _g(rl, "scopeLogs", "scope_logs", default=[]) or []:
                records = _g(sl, "logRecords", "log_records", default=[]) or []
                for r in sorted(records, key=lambda r: int(_g(r, "timeUnixNano", "time_unix_nano", default=0) or 0)):
                    attrs = otlp_attributes(r.get("attributes", []))
                    name = _g(r, "eventName", "event_name", default="") or attrs.get("event.name", "")
                    sid = _g(r, "spanId", "span_id", default="")
                    if sid:
                        out.setdefault(norm_id(sid), []).append((str(name), any_value(r.get("body"))))
    if not found:
        raise TraceFormatError("expected OTLP JSON logs (objects with 'resourceLogs')", path=str(p))
    return out
