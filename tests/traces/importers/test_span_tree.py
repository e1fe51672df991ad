"""A structurally broken span tree is named as invalid, never guessed at: a span whose parent is not in the trace
(the root left out of an export), two different spans under one span id, a cycle of parents. The valid traces
beside it are imported; a step no span names an agent for says so instead of passing for agent ``unknown``."""

from __future__ import annotations

import copy
import json

import pytest

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers import import_traces, scan_imports
from agentcausal.traces.importers._spans import SpanRecord, spans_to_traces
from agentcausal_fakes.spans import genai_spans, otlp_json


def _spans(doc: dict) -> list[dict]:
    return [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]


def _write(tmp_path, name: str, doc: dict):
    f = tmp_path / name
    f.write_text(json.dumps(doc))
    return f


@pytest.fixture
def good_and_rootless(tmp_path):
    """Two exports: one whole run, and one run whose root span was left out (its children name a parent not there)."""
    good = _write(tmp_path, "good.json", otlp_json(genai_spans()))
    doc = otlp_json(genai_spans())
    for ss in (ss for rs in doc["resourceSpans"] for ss in rs["scopeSpans"]):
        ss["spans"] = [sp for sp in ss["spans"] if sp.get("parentSpanId")]
    return good, _write(tmp_path, "rootless.json", doc), _spans(doc)[0]["traceId"]


def test_span_whose_parent_is_missing_names_the_trace_and_the_rest_import(good_and_rootless):
    good, rootless, tid = good_and_rootless
    scan = scan_imports([good, rootless])
    assert len(scan.traces) == 1 and scan.traces[0].id != tid
    (bad,) = scan.invalid
    assert bad.field == f"trace {tid}" and str(rootless) in bad.path
    assert "is not in the trace" in bad.detail
    with pytest.raises(TraceFormatError, match="is not in the trace"):
        import_traces([rootless])


def test_two_different_spans_under_one_id_are_named_not_merged(tmp_path):
    doc = otlp_json(genai_spans())
    a, b = _spans(doc)[1], _spans(doc)[2]
    b["spanId"] = a["spanId"]  # another span (other name, start) given the same id
    with pytest.raises(TraceFormatError, match=f"span id {a['spanId']} is given to two different spans"):
        import_traces([_write(tmp_path, "clash.json", doc)])


def test_the_same_span_in_two_exports_is_one_span_not_a_clash(tmp_path):
    doc = otlp_json(genai_spans())
    f1, f2 = _write(tmp_path, "a.json", doc), _write(tmp_path, "b.json", copy.deepcopy(doc))
    scan = scan_imports([f1, f2])
    assert not scan.invalid and len(scan.traces) == 1 and len(scan.traces[0]) == 5


def test_a_cycle_of_parents_is_named():
    spans = [
        SpanRecord("t1", "a", "b", "researcher", 1, "agent", agent="researcher"),
        SpanRecord("t1", "b", "a", "chat", 2, "llm", content="x"),
    ]
    bad: list[tuple[str, str]] = []
    assert spans_to_traces(spans, source="otel", invalid=bad) == []
    assert bad == [("t1", "spans a, b are each their own ancestor (a cycle of parents)")]


def test_a_step_without_any_agent_says_so():
    spans = [SpanRecord("t1", "a", None, "chat", 1, "llm", content="hello")]
    (trace,) = spans_to_traces(spans, source="otel")
    assert trace.steps[0].agent == "unknown" and trace.steps[0].metadata["agent_unknown"] is True
    assert trace.metadata["unknown_agent_steps"] == [0]
    named = [
        SpanRecord("t2", "r", None, "w", 1, "agent", agent="writer"),
        SpanRecord("t2", "c", "r", "c", 2, "llm", content="x"),
    ]
    (trace,) = spans_to_traces(named, source="otel")
    assert "agent_unknown" not in trace.steps[0].metadata and "unknown_agent_steps" not in trace.metadata


def test_import_says_which_traces_have_steps_without_an_agent(tmp_path, capsys):
    from agentcausal_cli import main

    doc = otlp_json(genai_spans())
    for sp in _spans(doc):  # the agent spans become plain structure: no span names an agent any more
        for a in sp.get("attributes", []):
            if a["key"] == "gen_ai.operation.name" and a["value"].get("stringValue") == "invoke_agent":
                a["value"]["stringValue"] = "workflow"
        sp["attributes"] = [a for a in sp.get("attributes", []) if a["key"] != "gen_ai.agent.name"]
        sp["name"] = "step"
    f = _write(tmp_path, "anonymous.json", doc)
    assert main(["import", str(f), "-o", str(tmp_path / "o.jsonl")]) == 0
    err = capsys.readouterr().err
    tid = _spans(doc)[0]["traceId"]
    assert "1 trace(s) have steps that no span names an agent for (agent 'unknown'" in err and tid in err
