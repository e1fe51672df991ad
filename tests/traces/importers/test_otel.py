"""OpenTelemetry GenAI OTLP JSON import: round trip through the real SDK and OTLP encoder, and each
content layout (v1.27 span events, v1.28-1.36 log events, v1.37 attributes, OpenLLMetry flattened)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers import scan_imports
from agentcausal.traces.importers.otel import load_otel
from agentcausal_fakes.spans import ANSWER, QUESTION, genai_spans, otlp_json
from tests.traces.importers.conftest import check_run


@pytest.mark.parametrize("layout", ["v1.37", "v1.27"])
def test_sdk_round_trip(tmp_path, layout):
    f = tmp_path / "run.json"
    f.write_text(json.dumps(otlp_json(genai_spans(layout=layout))))
    traces = load_otel(f)
    assert len(traces) == 1
    check_run(traces[0])
    assert traces[0].source == "otel"
    tool = traces[0].steps[2]
    assert tool.metadata["tool_name"] == "web_search" and tool.metadata["tool_call_id"] == "call_1"


def test_collector_lines_and_base64_ids(tmp_path):
    """The file exporter writes one TracesData per line; protobuf JSON ids (base64) are read too."""
    a = otlp_json(genai_spans(), hex_ids=False)
    b = otlp_json(genai_spans(), hex_ids=True)
    f = tmp_path / "traces.jsonl"
    f.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")
    traces = load_otel(f)
    assert len(traces) == 2
    for t in traces:
        check_run(t)


@pytest.mark.parametrize("size", [8, 16])
def test_base64_ids_that_begin_like_a_hex_prefix_decode(size):
    """Base64 of random bytes begins with ``0x``/``0X`` about once in 2,000 ids: decoded, never cut as hex."""
    import base64

    from agentcausal.traces.importers._spans import norm_id

    ids = [bytes([b0, b1]) + bytes(range(size - 2)) for b0 in range(256) for b1 in range(256)]
    prefixed = [raw for raw in ids if base64.b64encode(raw)[:2].lower() == b"0x"]
    assert prefixed  # the case exists at this size
    for raw in prefixed:
        assert norm_id(base64.b64encode(raw).decode()) == raw.hex()
        assert norm_id("0x" + raw.hex()) == raw.hex()


def test_tool_agent_option(tmp_path):
    f = tmp_path / "run.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    t = load_otel(f, tool_agent="Computer_terminal")[0]
    assert [s.agent for s in t.steps if s.role == "tool"] == ["Computer_terminal"]


def test_content_capture_off_is_refused(tmp_path):
    f = tmp_path / "run.json"
    f.write_text(json.dumps(otlp_json(genai_spans(content=False))))
    with pytest.raises(TraceFormatError, match="content capture was off"):
        load_otel(f)
    assert load_otel(f, skip_invalid=True) == []


def _kv(d):
    out = []
    for k, v in d.items():
        val = {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}
        out.append({"key": k, "value": val})
    return out


def _doc(spans):
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _kv({"service.name": "mas"})},
                "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}],
            }
        ]
    }


def _span(sid, parent, name, start, attrs, events=()):
    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": sid,
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 10),
        "attributes": _kv(attrs),
        "events": list(events),
        "status": {"code": 0},
    }


def test_log_events_layout(tmp_path):
    """v1.28-1.36: content sits in log records of a separate logs file, joined by span id."""
    spans = [
        _span(
            "aa00000000000001",
            "",
            "invoke_agent Coder",
            100,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Coder"},
        ),
        _span("aa00000000000002", "aa00000000000001", "chat m", 101, {"gen_ai.operation.name": "chat"}),
    ]
    (tmp_path / "t.json").write_text(json.dumps(_doc(spans)))
    body_user = {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": QUESTION}}]}}
    body_choice = {
        "kvlistValue": {
            "values": [
                {"key": "index", "value": {"intValue": "0"}},
                {
                    "key": "message",
                    "value": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": ANSWER}}]}},
                },
            ]
        }
    }
    logs = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "timeUnixNano": "101",
                                "spanId": "aa00000000000002",
                                "eventName": "gen_ai.user.message",
                                "body": body_user,
                            },
                            {
                                "timeUnixNano": "102",
                                "spanId": "aa00000000000002",
                                "body": body_choice,
                                "attributes": _kv({"event.name": "gen_ai.choice"}),
                            },
                        ]
                    }
                ]
            }
        ]
    }
    (tmp_path / "l.json").write_text(json.dumps(logs))
    with pytest.raises(TraceFormatError, match="content capture"):
        load_otel(tmp_path / "t.json")
    t = load_otel(tmp_path / "t.json", logs=tmp_path / "l.json")[0]
    assert [(s.agent, s.content) for s in t.steps] == [("Coder", ANSWER)]
    assert t.question == QUESTION


def test_openllmetry_flattened(tmp_path):
    spans = [
        _span("bb00000000000001", "", "team.workflow", 100, {"traceloop.span.kind": "workflow"}),
        _span(
            "bb00000000000002",
            "bb00000000000001",
            "Planner.agent",
            101,
            {"traceloop.span.kind": "agent", "traceloop.entity.name": "Planner"},
        ),
        _span(
            "bb00000000000003",
            "bb00000000000002",
            "openai.chat",
            102,
            {
                "llm.request.type": "chat",
                "gen_ai.prompt.0.role": "system",
                "gen_ai.prompt.0.content": "be brief",
                "gen_ai.prompt.1.role": "user",
                "gen_ai.prompt.1.content": QUESTION,
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": "",
                "gen_ai.completion.0.tool_calls.0.name": "calc",
                "gen_ai.completion.0.tool_calls.0.arguments": "{}",
            },
        ),
        _span(
            "bb00000000000004",
            "bb00000000000002",
            "calc.tool",
            103,
            {"traceloop.span.kind": "tool", "traceloop.entity.output": "42"},
        ),
        # an agent span with no LLM below it is the step itself, named by the span-name suffix
        _span(
            "bb00000000000005",
            "bb00000000000001",
            "invoke_agent Checker",
            104,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]
                ),
            },
        ),
    ]
    (tmp_path / "t.json").write_text(json.dumps(_doc(spans)))
    t = load_otel(tmp_path / "t.json")[0]
    assert [(s.agent, s.role, s.content) for s in t.steps] == [
        ("Planner", "assistant", "tool call calc({})"),
        ("Planner", "tool", "42"),
        ("Checker", "assistant", "ok"),
    ]
    assert t.question == QUESTION


def test_ties_parent_first_then_span_id(tmp_path):
    spans = [
        _span(
            "cc00000000000003",
            "cc00000000000001",
            "chat",
            100,
            {"gen_ai.operation.name": "chat", "gen_ai.output.messages": '[{"role":"assistant","content":"b"}]'},
        ),
        _span(
            "cc00000000000002",
            "cc00000000000001",
            "chat",
            100,
            {"gen_ai.operation.name": "chat", "gen_ai.output.messages": '[{"role":"assistant","content":"a"}]'},
        ),
        _span("cc00000000000001", "", "invoke_agent A", 100, {"gen_ai.operation.name": "invoke_agent"}),
    ]
    (tmp_path / "t.json").write_text(json.dumps(_doc(spans)))
    t = load_otel(tmp_path / "t.json")[0]
    assert [(s.agent, s.content) for s in t.steps] == [("A", "a"), ("A", "b")]


def test_not_otlp(tmp_path):
    (tmp_path / "x.json").write_text('{"a": 1}')
    with pytest.raises(TraceFormatError, match="resourceSpans"):
        load_otel(tmp_path / "x.json")


def test_inference_details_event_and_response_key(tmp_path):
    """v1.37+ content on the event gen_ai.client.inference.operation.details; a tool result spelled
    `response` as in the docs example."""
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}])
    inp = json.dumps([{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}])
    ev = {
        "name": "gen_ai.client.inference.operation.details",
        "timeUnixNano": "101",
        "attributes": _kv({"gen_ai.output.messages": out, "gen_ai.input.messages": inp}),
    }
    spans = [
        _span(
            "dd00000000000001",
            "",
            "invoke_agent Writer",
            100,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Writer"},
        ),
        _span("dd00000000000002", "dd00000000000001", "chat m", 101, {"gen_ai.operation.name": "chat"}, [ev]),
        _span(
            "dd00000000000003",
            "dd00000000000001",
            "execute_tool calc",
            102,
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.response": "4"},
        ),
    ]
    (tmp_path / "t.json").write_text(json.dumps(_doc(spans)))
    t = load_otel(tmp_path / "t.json")[0]
    assert [(s.agent, s.role, s.content) for s in t.steps] == [("Writer", "assistant", ANSWER), ("Writer", "tool", "4")]
    assert t.question == QUESTION and t.steps[1].metadata["tool_name"] == "calc"


def test_files_sharing_a_trace_id_merge_without_repeating_spans(tmp_path):
    """Two exports of one trace (overlapping: the same spans in both) give one trace, each span once."""
    from agentcausal.traces.importers import import_traces

    doc = otlp_json(genai_spans())
    single = tmp_path / "one.json"
    single.write_text(json.dumps(doc))
    once = import_traces([single], "otel")
    (tmp_path / "a.json").write_text(json.dumps(doc))
    (tmp_path / "b.json").write_text(json.dumps(doc))
    merged = import_traces([tmp_path / "a.json", tmp_path / "b.json"], "otel")
    assert len(merged) == 1 and len(merged[0].steps) == len(once[0].steps)
    ids = [s.metadata["span_id"] for s in merged[0].steps]
    assert len(ids) == len(set(ids))
    check_run(merged[0])


def test_the_shipped_example_reads_as_the_readme_says():
    """data/otel/failed_run.json (the README's file for a first run): one unlabelled trace, id starting 5b8e,
    the planner, the researcher's tool result and reply, and the writer, each with its span id."""
    path = Path(__file__).resolve().parents[3] / "data" / "otel" / "failed_run.json"
    scan = scan_imports([path])
    assert not scan.invalid and len(scan.traces) == 1
    t = scan.traces[0]
    assert "5b8e" in t.id and t.label is None
    assert [s.agent for s in t.steps] == ["planner", "researcher", "researcher", "writer"]
    assert all(s.metadata.get("span_id") for s in t.steps) and "54" in t.steps[2].content
