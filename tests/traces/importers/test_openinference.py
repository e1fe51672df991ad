"""OpenInference import: OTLP JSON and the console exporter's stream, through the real SDK and the
openinference-semantic-conventions constants."""

from __future__ import annotations

import io
import json
import random

import pytest

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers import detect_format, import_traces
from agentcausal.traces.importers.openinference import load_openinference
from agentcausal_fakes.spans import EXPECTED, QUESTION, openinference_spans, otlp_json
from tests.traces.importers.conftest import check_run


def _console(spans) -> list[str]:
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    buf = io.StringIO()
    ConsoleSpanExporter(out=buf).export(spans)
    text = buf.getvalue()
    objs = []
    dec = json.JSONDecoder()
    i = 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        _, j = dec.raw_decode(text, i)
        objs.append(text[i:j])
        i = j
    return objs


def test_console_stream_out_of_order_graph_node_id(tmp_path):
    spans = openinference_spans(node_id_only="researcher")
    objs = _console(spans)
    assert "\n    " in objs[0]  # pretty-printed, as span.to_json() writes it
    random.Random(3).shuffle(objs)
    f = tmp_path / "spans.txt"
    f.write_text("\n".join(objs))
    assert detect_format(f) == "openinference"
    traces = load_openinference(f)
    assert len(traces) == 1
    check_run(traces[0])
    assert traces[0].source == "openinference"
    assert traces[0].steps[1].content == 'tool call web_search({"q": "air pressure Everest summit"})'


def test_otlp_json(tmp_path):
    f = tmp_path / "oi.json"
    f.write_text(json.dumps(otlp_json(openinference_spans())))
    assert detect_format(f) == "openinference"
    (t,) = import_traces([f])
    check_run(t)


def test_hidden_outputs_refused(tmp_path):
    objs = []
    for k, name in (("AGENT", "A"), ("LLM", "chat")):
        objs.append(
            json.dumps(
                {
                    "name": name,
                    "context": {"trace_id": "0x" + "1" * 32, "span_id": f"0x{len(objs) + 1:016x}"},
                    "parent_id": "0x0000000000000001" if objs else None,
                    "start_time": "2024-05-08T21:46:11.480777Z",
                    "attributes": {"openinference.span.kind": k, "input.value": QUESTION},
                },
                indent=4,
            )
        )
    f = tmp_path / "hidden.txt"
    f.write_text("".join(objs))
    with pytest.raises(TraceFormatError, match="content capture was off"):
        load_openinference(f)


def test_langgraph_node_names_agent(tmp_path):
    span = {
        "name": "ChatOpenAI",
        "context": {"trace_id": "0x" + "2" * 32, "span_id": "0x" + "3" * 16},
        "parent_id": None,
        "start_time": "2024-05-08T21:46:11Z",
        "attributes": {
            "openinference.span.kind": "LLM",
            "metadata": json.dumps({"langgraph_node": "critic"}),
            "output.value": "looks wrong",
            "input.value": QUESTION,
        },
    }
    f = tmp_path / "lg.txt"
    f.write_text(json.dumps(span))
    (t,) = load_openinference(f)
    assert [(s.agent, s.content) for s in t.steps] == [("critic", "looks wrong")]
    assert t.question == QUESTION and len(EXPECTED) == 5
