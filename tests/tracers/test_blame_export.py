"""The blamed spans of a run folder, its Phoenix annotations and its OTLP JSON evaluation records (no server):
rows without a span are listed, confidence/evidence/candidates flow through once the results carry them, and the
OTLP file parses with the OpenTelemetry protobuf JSON format."""

from __future__ import annotations

import base64
import json

import pandas as pd
import pytest

from agentcausal.attribution.results import save_run as save_attribution_run
from agentcausal.tracers.blame import blamed_spans
from agentcausal.tracers.otlp_export import evaluation_logs
from agentcausal.tracers.phoenix import span_annotations
from agentcausal.traces.importers import import_traces
from agentcausal.traces.model import Attribution
from agentcausal_cli import main
from agentcausal_fakes.spans import genai_spans, otlp_json

REASON = "took the summit pressure for the boiling point"


@pytest.fixture()
def run(tmp_path):
    f = tmp_path / "spans.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    (trace,) = import_traces([f])
    atts = [
        Attribution(
            trace_id=trace.id,
            method="all_at_once",
            step=2,
            agent="researcher",
            reason=REASON,
            models={"all_at_once": "fake:fake-model"},
        ),
        Attribution(trace_id=trace.id, method="step_by_step", step=None, reason="no step found"),
        Attribution(trace_id=trace.id, method="binary_search", error="LLMCallError: boom", status="failed"),
    ]
    d = tmp_path / "run"
    save_attribution_run(atts, [trace], d, {"preset": "paper", "started": "2025-06-01T10:00:00", "wall_seconds": 2})
    return d, trace


def test_blamed_spans_and_annotations_without_confidence(run):
    d, trace = run
    blame = blamed_spans(d)
    (b,) = blame.blamed
    assert (b.span_id, b.step, b.agent, b.method) == (
        trace.steps[2].metadata["span_id"],
        2,
        "researcher",
        "all_at_once",
    )
    assert b.confidence is None and b.evidence is None and b.candidates is None
    assert {(u["method"], u["why"].split(" (")[0]) for u in blame.unplaced} == {
        ("step_by_step", "the method found no decisive step"),
        ("binary_search", "the method failed"),
    }
    (a,) = span_annotations(blame)
    assert a["result"] == {"label": "decisive error", "score": None, "explanation": REASON}
    assert a["metadata"]["preset"] == "paper" and a["metadata"]["model"] == "fake:fake-model"
    assert a["identifier"] == "run" and "candidates" not in a["metadata"]


def test_confidence_evidence_candidates_flow_through(run):
    """A later change adds these columns to results.parquet: read when present, nothing recomputed."""
    d, _ = run
    df = pd.read_parquet(d / "results.parquet")
    df["confidence"] = [0.8, None, None]
    df["evidence"] = ["About 34 kPa at the summit.", None, None]
    df["candidates"] = [json.dumps([{"step": 2, "score": 0.8}, {"step": 3, "score": 0.1}]), None, None]
    df.to_parquet(d / "results.parquet")
    (a,) = span_annotations(blamed_spans(d))
    assert a["result"]["score"] == 0.8
    assert a["result"]["explanation"] == f"{REASON}\n\nEvidence: \u201cAbout 34 kPa at the summit.\u201d"
    assert a["metadata"]["candidates"][0] == {"step": 2, "score": 0.8}
    doc, _ = evaluation_logs(blamed_spans(d), now_ns=1)
    (rec,) = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    attrs = {kv["key"]: kv["value"] for kv in rec["attributes"]}
    assert attrs["gen_ai.evaluation.score.value"] == {"doubleValue": 0.8}


def test_otlp_file_parses_as_opentelemetry_logs(run, tmp_path, capsys):
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.logs.v1.logs_pb2 import LogsData
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as G

    d, trace = run
    out = tmp_path / "evals.json"
    assert main(["annotate", str(d), "--otlp", str(out)]) == 0
    printed = capsys.readouterr()
    assert "1 gen_ai.evaluation.result log record(s)" in printed.out and "not annotated: " in printed.err
    logs = Parse(out.read_text(), LogsData())  # unknown or mistyped fields raise
    (r,) = [r for rl in logs.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    assert base64.b64encode(r.trace_id).decode() == trace.id  # hex ids, read by protobuf as base64
    assert base64.b64encode(r.span_id).decode() == trace.steps[2].metadata["span_id"]
    attrs = {kv.key: kv.value for kv in r.attributes}
    assert attrs[G.GEN_AI_EVALUATION_NAME].string_value == "decisive_error.all_at_once"
    assert attrs[G.GEN_AI_EVALUATION_SCORE_LABEL].string_value == "decisive error"
    assert G.GEN_AI_EVALUATION_SCORE_VALUE not in attrs  # no confidence: no score
    assert attrs[G.GEN_AI_EVALUATION_EXPLANATION].string_value == REASON
    assert r.event_name == "gen_ai.evaluation.result" and r.severity_number == 9
    assert r.time_unix_nano > 0 and attrs["agentcausal.preset"].string_value == "paper"


def test_non_otel_ids_are_left_out_and_listed(run):
    d, _ = run
    blame = blamed_spans(d)
    other = blame._replace(blamed=[blame.blamed[0]._replace(trace_id="trace_abc", span_id="span_1")])
    doc, left = evaluation_logs(other)
    assert doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"] == []
    assert any("not an OpenTelemetry id" in u["why"] for u in left)


def test_annotate_errors_are_one_line(tmp_path, capsys):
    assert main(["annotate", str(tmp_path)]) == 2
    assert "--phoenix URL and/or --otlp FILE" in capsys.readouterr().err
    assert main(["annotate", str(tmp_path), "--otlp", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "results.parquet" in err and err.count("\n") == 1
    assert main(["import", "--since", "24h", "-o", str(tmp_path / "o.jsonl"), str(tmp_path)]) == 2
    assert "only apply with --from-phoenix" in capsys.readouterr().err
    assert main(["import", "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "--from-phoenix URL" in capsys.readouterr().err
    assert (
        main(
            ["import", "--from-phoenix", "http://127.0.0.1:9", "--since", "yesterday", "-o", str(tmp_path / "o.jsonl")]
        )
        == 2
    )
    assert "not a time: 'yesterday'" in capsys.readouterr().err


def test_unreachable_phoenix_is_one_line(tmp_path, capsys):
    from tests.tracers.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    assert main(["import", "--from-phoenix", url, "-o", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert url in err and "cannot reach Phoenix" in err and err.count("\n") == 1


def _dcfa_run(tmp_path, trace, **kw):
    a = Attribution(
        trace_id=trace.id,
        method="dcfa",
        step=2,
        agent="researcher",
        reason=REASON,
        details={"lce": {"corrected_steps": kw.pop("corrected", [2])}},
        **kw,
    )
    d = tmp_path / "dcfa-run"
    save_attribution_run([a], [trace], d, {"preset": "paper"})
    return d


def test_fix_flows_into_explanation_metadata_and_otlp(run, tmp_path):
    from agentcausal.traces.model import CorrectedAction

    _, trace = run
    fix = CorrectedAction(step=2, content="use  71 C\nat 34 kPa", outcome="71 C", outcome_score=0.9, source="dcfa")
    (b,) = blamed_spans(_dcfa_run(tmp_path, trace, corrected_action=fix, confidence=0.9)).blamed
    assert b.explanation == (
        f"{REASON}\n\nFix: step 2 \u2192 \u201cuse 71 C at 34 kPa\u201d; simulated outcome with it: \u201c71 C\u201d"
    )
    assert b.metadata()["fix"]["content"] == "use  71 C\nat 34 kPa" and b.fix_note is None  # whole in the metadata
    doc, _ = evaluation_logs(blamed_spans(tmp_path / "dcfa-run"), now_ns=1)
    (rec,) = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    attrs = {kv["key"]: kv["value"] for kv in rec["attributes"]}
    assert attrs["agentcausal.fix.outcome_score"] == {"doubleValue": 0.9} and "agentcausal.fix_note" not in attrs


def test_a_step_the_corrector_left_as_it_was_is_no_correction_proposed(run, tmp_path):
    _, trace = run
    (b,) = blamed_spans(_dcfa_run(tmp_path, trace, corrected=[3])).blamed
    assert b.fix is None and b.fix_note == "no correction proposed"
    assert b.explanation.endswith("Fix: no correction proposed.")
    (a,) = span_annotations(blamed_spans(tmp_path / "dcfa-run"))
    assert a["metadata"]["fix_note"] == "no correction proposed" and "fix" not in a["metadata"]


class _Store:
    """A Phoenix client's ``spans`` (test double) that holds some span ids and answers 404 for a batch naming any
    other one, with or without naming it (older servers name none)."""

    def __init__(self, held, names_missing):
        self.held, self.names_missing, self.batches = set(held), names_missing, []

    def log_span_annotations(self, *, span_annotations, sync):
        import httpx

        self.batches.append([a["span_id"] for a in span_annotations])
        missing = [a["span_id"] for a in span_annotations if a["span_id"] not in self.held]
        if missing:
            detail = f"Spans with IDs {', '.join(missing)} do not exist." if self.names_missing else "Span not found"
            req = httpx.Request("POST", "http://phoenix/v1/span_annotations")
            resp = httpx.Response(404, json={"detail": detail}, request=req)
            raise httpx.HTTPStatusError("404", request=req, response=resp)
        return [{"id": a["span_id"]} for a in span_annotations]


@pytest.mark.parametrize("names_missing", [True, False], ids=["named", "unnamed"])
def test_spans_the_store_lacks_are_skipped_and_the_rest_written(names_missing):
    from types import SimpleNamespace

    from agentcausal.tracers.phoenix import _log_batch

    store = _Store({"a", "c"}, names_missing)
    anns = [{"span_id": s} for s in "abcd"]
    written, missing = _log_batch(SimpleNamespace(spans=store), "http://phoenix", anns)
    assert (written, missing) == (2, {"b", "d"})
    # named: the batch again without them; unnamed: one annotation at a time
    again = [["a", "c"]] if names_missing else [[s] for s in "abcd"]
    assert store.batches == [list("abcd"), *again]


def test_other_store_errors_still_stop_the_write():
    from types import SimpleNamespace

    import httpx

    from agentcausal.exceptions import TraceStoreError
    from agentcausal.tracers.phoenix import _log_batch

    class Refusing:
        def log_span_annotations(self, **_):
            req = httpx.Request("POST", "http://phoenix/v1/span_annotations")
            raise httpx.HTTPStatusError("401", request=req, response=httpx.Response(401, text="no", request=req))

    with pytest.raises(TraceStoreError, match="HTTP 401"):
        _log_batch(SimpleNamespace(spans=Refusing()), "http://phoenix", [{"span_id": "a"}])
