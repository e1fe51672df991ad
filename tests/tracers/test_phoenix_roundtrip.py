"""The Phoenix round trip against a real Arize Phoenix server (pinned, in .venv-phoenix; SQLite in a temp folder;
HTTP and gRPC on free loopback ports): spans in (the OpenTelemetry SDK with GenAI and OpenInference attributes, and
a real OpenAI Agents SDK run with its OpenInference instrumentation), ``attribute --from-phoenix`` on the fake
OpenAI server (a test double) and Prefect's ephemeral API, ``annotate --phoenix --otlp``, annotations read back
through Phoenix's API equal to the run's results, and the OTLP JSON file parsed with opentelemetry-proto."""

from __future__ import annotations

import base64
import json

import pandas as pd
import pytest

from agentcausal.tracers.phoenix import PhoenixQuery, load_phoenix, read_annotations
from agentcausal_cli import main
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from agentcausal_fakes.spans import QUESTION, genai_spans, openinference_spans
from tests.tracers.conftest import run_sdk
from tests.traces.importers.conftest import check_run

#: the importer conftest's runs start at this time (its fixed clock), 2024-05-29
WINDOW = ["--since", "2024-05-29T00:00:00Z", "--until", "2024-05-30T00:00:00Z"]


def _send(url: str, spans: list) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    assert OTLPSpanExporter(endpoint=f"{url}/v1/traces").export(spans) == SpanExportResult.SUCCESS


def _wait_traces(q: PhoenixQuery, n: int) -> list:
    import time

    deadline = time.monotonic() + 30
    while True:  # Phoenix inserts spans in the background
        traces = load_phoenix(q, skip_invalid=True)
        if len(traces) >= n or time.monotonic() > deadline:
            return traces
        time.sleep(0.5)


def _profiles(tmp_path, base_url: str):
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{base_url}"\nmodel = "fake-model"\n'
        'max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
    )
    return toml


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_phoenix_round_trip(phoenix, tmp_path, capsys):
    _send(phoenix.url, genai_spans() + openinference_spans())
    window = PhoenixQuery(
        phoenix.url,
        start=pd.Timestamp("2024-05-29", tz="UTC").to_pydatetime(),
        end=pd.Timestamp("2024-05-30", tz="UTC").to_pydatetime(),
    )
    traces = _wait_traces(window, 2)
    assert len(traces) == 2
    for t in traces:
        check_run(t)  # both conventions, read back from Phoenix, give the same five steps
    assert {t.source for t in traces} == {"phoenix"}
    # the window and Phoenix's own filter are applied; a trace is read whole when one of its spans matches
    assert load_phoenix(PhoenixQuery(phoenix.url, end=window.start)) == []
    (only,) = load_phoenix(PhoenixQuery(phoenix.url, filter="span_kind == 'TOOL' and name == 'web_search'"))
    assert len(only.steps) == 5 and only.steps[2].metadata["span_name"] == "web_search"

    # attribute straight from Phoenix, blaming the researcher's tool result
    with FakeOpenAIServer(
        responder=lambda body: json.dumps(
            {"reason": "took the summit pressure as the boiling point", "agent": "researcher", "step": 2}
        )
    ) as srv:
        run = tmp_path / "run"
        rc = main(
            [
                "attribute",
                "--from-phoenix",
                phoenix.url,
                *WINDOW,
                "--method",
                "all_at_once",
                "--no-ground-truth",
                "--profiles",
                str(_profiles(tmp_path, srv.base_url)),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--out",
                str(run),
                "--no-progress",
            ]
        )
        assert rc == 0, capsys.readouterr().err
    results = pd.read_parquet(run / "results.parquet")
    assert len(results) == 2 and set(results["pred_step"]) == {2}
    plan_sources = json.loads((run / "run.json").read_text())["plan"]["sources"]
    assert any(s["format"] == "phoenix" and s["path"].startswith(phoenix.url) for s in plan_sources)

    otlp = tmp_path / "evaluations.otlp.json"
    assert main(["annotate", str(run), "--phoenix", phoenix.url, "--otlp", str(otlp)]) == 0
    assert "2 span annotation(s) written" in capsys.readouterr().out

    # read back through Phoenix's API: one annotation per blamed span, equal to the results
    meta = json.loads((run / "run.json").read_text())
    got = read_annotations(phoenix.url, "default", results["span_id"], names=["decisive_error.all_at_once"])
    assert len(got) == 2
    by_span = {a["span_id"]: a for a in got}
    for row in results.itertuples():
        a = by_span[row.span_id]
        assert a["name"] == "decisive_error.all_at_once" and a["annotator_kind"] == "LLM"
        assert a["result"]["label"] == "decisive error"
        assert a["result"]["score"] is None  # all_at_once has no confidence: none is invented
        assert a["result"]["explanation"] == row.reason
        assert a["identifier"] == run.name
        m = a["metadata"]
        models = json.loads(row.models_json)  # stage -> the model label the run recorded ("fake:fake-model")
        assert (m["method"], m["run"], m["preset"], m["model"], m["models"]) == (
            "all_at_once",
            run.name,
            meta["preset"],
            ", ".join(sorted(set(models.values()))),
            models,
        )
        assert "fake-model" in m["model"]
        assert (m["step"], m["agent"], m["trace_id"]) == (2, "researcher", row.trace_id)
    # annotating the same run again replaces its annotations (same identifier), it does not add more
    assert main(["annotate", str(run), "--phoenix", phoenix.url]) == 0
    assert len(read_annotations(phoenix.url, "default", results["span_id"])) == 2

    # the OTLP file parses with the OpenTelemetry protobuf JSON format; ids are hex (OTLP JSON), which protobuf's
    # own JSON reader takes for base64, so they are compared re-encoded
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.logs.v1.logs_pb2 import LogsData

    logs = Parse(otlp.read_text(), LogsData())
    records = [r for rl in logs.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    assert len(records) == 2
    for r in records:
        trace_hex, span_hex = (base64.b64encode(x).decode() for x in (r.trace_id, r.span_id))
        row = results[results["span_id"] == span_hex].iloc[0]
        assert trace_hex == row["trace_id"] and r.event_name == "gen_ai.evaluation.result"
        attrs = {kv.key: kv.value for kv in r.attributes}
        assert attrs["gen_ai.evaluation.name"].string_value == "decisive_error.all_at_once"
        assert attrs["gen_ai.evaluation.score.label"].string_value == "decisive error"
        assert "gen_ai.evaluation.score.value" not in attrs
        assert attrs["gen_ai.evaluation.explanation"].string_value == row["reason"]
        assert attrs["agentcausal.step"].int_value == 2


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_phoenix_project_holds_an_openai_agents_run(phoenix, tmp_path):
    """A real OpenAI Agents SDK run, instrumented with OpenInference and exported to Phoenix over OTLP/HTTP into
    its own project, comes back as a trace with the agents' steps and their span ids."""
    from tests.tracers.test_sdk_traces import ANSWER, PLAN, _agents_responder

    with FakeOpenAIServer(responder=_agents_responder) as srv:
        run_sdk("openai_agents_run.py", srv.base_url, tmp_path / "spans.txt", f"{phoenix.url}/v1/traces", "agents")
    (t,) = _wait_traces(PhoenixQuery(phoenix.url, project="agents"), 1)
    assert [(s.agent, s.content) for s in t.steps] == [("planner", PLAN), ("writer", ANSWER)]
    assert "1992" in t.question and QUESTION not in t.question
    from agentcausal.traces.importers import import_traces

    (from_file,) = import_traces([tmp_path / "spans.txt"])  # the same spans, from the console exporter's file
    assert [s.metadata["span_id"] for s in from_file.steps] == [s.metadata["span_id"] for s in t.steps]
    with pytest.raises(Exception, match="no project 'nope'"):
        load_phoenix(PhoenixQuery(phoenix.url, project="nope"))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_write_back_carries_the_fix_and_evidence_and_skips_spans_phoenix_lacks(phoenix, tmp_path, capsys):
    """#28 item 3: per span the label, the confidence as score, the reason, the evidence, the fix (the corrected
    content of the blamed step and the outcome simulated with it, or "no correction proposed") and the ranked
    candidates; a blamed span Phoenix does not hold is skipped and counted, and the others are written."""
    from agentcausal.attribution.results import save_run
    from agentcausal.traces.model import Attribution, Candidate, CorrectedAction

    spans = genai_spans() + openinference_spans()
    sent = {f"{s.context.trace_id:032x}" for s in spans}  # new ids each call: other tests' traces are left alone
    _send(phoenix.url, spans)
    window = PhoenixQuery(
        phoenix.url,
        start=pd.Timestamp("2024-05-29", tz="UTC").to_pydatetime(),
        end=pd.Timestamp("2024-05-30", tz="UTC").to_pydatetime(),
    )
    import time

    deadline = time.monotonic() + 30
    while len(mine := [t for t in load_phoenix(window, skip_invalid=True) if t.id in sent]) < 2:
        assert time.monotonic() < deadline, "Phoenix did not store the spans"
        time.sleep(0.5)
    fixed, unfixed = sorted(mine, key=lambda t: t.id)
    gone = fixed.model_copy(
        update={
            "id": "f" * 32,
            "steps": [
                s.model_copy(update={"metadata": {**s.metadata, "span_id": f"{i:016x}"}})
                for i, s in enumerate(fixed.steps)
            ],
        }
    )  # a trace whose spans Phoenix never held (deleted since the run, say)
    quote = fixed.steps[2].content[:20]
    fix = CorrectedAction(
        step=2, content="look up the boiling point at 34 kPa", outcome="71 C", outcome_score=0.8, source="dcfa"
    )
    cands = [Candidate(step=2, role="decision", score=0.6, score_is="ΔS"), Candidate(step=1, role="hypothesis")]

    def dcfa(t, step, corrected, **kw):
        return Attribution(
            trace_id=t.id,
            method="dcfa",
            step=step,
            agent=t.steps[step].agent,
            reason=f"step {step} is the decisive error",
            models={"dcfa.lce": "fake:fake-model"},
            details={"lce": {"corrected_steps": corrected}, "confidence_is": "S of T~(2)"},
            **kw,
        )

    atts = [
        dcfa(fixed, 2, [2], confidence=0.8, evidence=quote, corrected_action=fix, candidates=cands),
        dcfa(unfixed, 1, [3], candidates=cands[1:]),  # the corrector left step 1 as it was: no fix
        dcfa(gone, 2, [2], confidence=0.8, corrected_action=fix),
    ]
    run = tmp_path / "night"
    save_run(atts, [fixed, unfixed, gone], run, {"preset": "paper", "started": "2025-06-01T10:00:00"})

    otlp = tmp_path / "evaluations.otlp.json"
    assert main(["annotate", str(run), "--phoenix", phoenix.url, "--otlp", str(otlp)]) == 0
    printed = capsys.readouterr()
    assert "2 span annotation(s) written" in printed.out
    assert "1 blamed span(s) skipped: Phoenix holds no span with that id" in printed.err

    got = read_annotations(
        phoenix.url, "default", [t.steps[s].metadata["span_id"] for t, s in ((fixed, 2), (unfixed, 1))]
    )
    by_trace = {a["metadata"]["trace_id"]: a for a in got if a["name"] == "decisive_error.dcfa"}
    assert set(by_trace) == {fixed.id, unfixed.id}
    a = by_trace[fixed.id]
    assert a["result"]["score"] == pytest.approx(0.8) and a["result"]["label"] == "decisive error"
    assert a["result"]["explanation"] == (
        f"step 2 is the decisive error\n\nEvidence: \u201c{quote}\u201d\n\n"
        "Fix: step 2 \u2192 \u201clook up the boiling point at 34 kPa\u201d; simulated outcome with it: \u201c71 C\u201d"
    )
    m = a["metadata"]
    assert m["evidence"] == quote and m["confidence_is"] == "S of T~(2)"
    assert (m["fix"]["step"], m["fix"]["content"], m["fix"]["outcome"]) == (2, fix.content, "71 C")
    assert [c["step"] for c in m["candidates"]] == [2, 1]
    b = by_trace[unfixed.id]
    assert b["result"]["score"] is None and b["result"]["explanation"].endswith("Fix: no correction proposed.")
    assert b["metadata"]["fix_note"] == "no correction proposed" and "fix" not in b["metadata"]

    # the OTLP file carries the same fields (the collector has no store to check the spans against: all three)
    doc = json.loads(otlp.read_text())
    records = {r["traceId"]: r for r in doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]}
    assert len(records) == 3
    attrs = {kv["key"]: kv["value"] for kv in records[fixed.id]["attributes"]}
    assert attrs["agentcausal.fix.content"] == {"stringValue": fix.content}
    assert attrs["agentcausal.fix.outcome"] == {"stringValue": "71 C"}
    assert attrs["agentcausal.evidence"] == {"stringValue": quote}
    assert [c["step"] for c in json.loads(attrs["agentcausal.candidates"]["stringValue"])] == [2, 1]
    assert {kv["key"]: kv["value"] for kv in records[unfixed.id]["attributes"]}["agentcausal.fix_note"] == {
        "stringValue": "no correction proposed"
    }
