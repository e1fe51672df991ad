"""`agentcausal import` and the import options of `agentcausal attribute` (no flow is run here)."""

from __future__ import annotations

import json

import pytest

from agentcausal.traces.jsonl import read_jsonl
from agentcausal_cli import main
from agentcausal_fakes.spans import QUESTION, genai_spans, otlp_json
from tests.traces.importers.conftest import check_run


@pytest.fixture()
def otel_file(tmp_path):
    f = tmp_path / "run.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    return f


def test_import_writes_jsonl_and_prints_table(otel_file, tmp_path, capsys):
    out = tmp_path / "traces.jsonl"
    assert main(["import", str(otel_file), "-o", str(out)]) == 0
    (t,) = read_jsonl(out)
    check_run(t)
    printed = capsys.readouterr().out
    assert t.id in printed and "planner, researcher, writer" in printed and "    5  " in printed


def test_import_unknown_format_is_one_line(tmp_path, capsys):
    f = tmp_path / "x.log"
    f.write_text('{"hello": 1}')
    assert main(["import", str(f), "-o", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and "expected" in err and "resourceSpans" in err and err.count("\n") == 1


def test_import_content_off_refused_or_skipped(tmp_path, capsys):
    f = tmp_path / "off.json"
    f.write_text(json.dumps(otlp_json(genai_spans(content=False))))
    assert main(["import", str(f), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "content capture was off" in capsys.readouterr().err
    assert main(["import", str(f), "-o", str(tmp_path / "o.jsonl"), "--skip-invalid"]) == 0


def _no_flow(monkeypatch):
    calls = {}

    def fake_run(plan, run, **kw):  # the plan.json, the run options
        calls["paths"], calls["kw"] = run.meta["corpus"], {"plan": plan, **kw}
        return run.out_dir

    import flows.attribute

    monkeypatch.setattr(flows.attribute, "run_attribute", fake_run)
    monkeypatch.setattr("agentcausal_cli.attribute.print_attribution_run", lambda run_dir: 0)
    return calls


def test_attribute_refuses_truthless_traces_listing_all(otel_file, tmp_path, capsys, monkeypatch):
    calls = _no_flow(monkeypatch)
    other = tmp_path / "run2.json"
    other.write_text(json.dumps(otlp_json(genai_spans())))
    assert main(["attribute", str(otel_file), str(other)]) == 2
    err = capsys.readouterr().err
    ids = [read_jsonl_one(f) for f in (otel_file, other)]
    assert "2 trace(s) have no ground truth" in err and all(i in err for i in ids) and "--no-ground-truth" in err
    assert not calls


def read_jsonl_one(f):
    from agentcausal.traces.importers import import_traces

    return import_traces([f])[0].id


def test_attribute_imports_into_run_folder(otel_file, tmp_path, monkeypatch):
    calls = _no_flow(monkeypatch)
    run = tmp_path / "run"
    assert main(["attribute", str(otel_file), "--no-ground-truth", "--out", str(run)]) == 0
    assert calls["paths"] == [str(run / "traces.jsonl")]
    check_run(read_jsonl(run / "traces.jsonl")[0])


def test_attribute_with_labels(otel_file, tmp_path, monkeypatch):
    calls = _no_flow(monkeypatch)
    tid = read_jsonl_one(otel_file)
    from agentcausal.traces.importers import import_traces

    span = import_traces([otel_file])[0].steps[2].metadata["span_id"]
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"trace_id": tid, "ground_truth": "71 C", "mistake_span_id": span}) + "\n")
    run = tmp_path / "run"
    assert main(["attribute", str(otel_file), "--labels", str(labels), "--out", str(run)]) == 0
    (t,) = read_jsonl(calls["paths"][0])
    assert t.ground_truth == "71 C" and t.label.step == 2 and t.label.agent == "researcher"
    assert t.question == QUESTION


def test_folders_detected_per_file(otel_file, tmp_path):
    from agentcausal.demo_selection import examples_dir
    from agentcausal.traces.importers import detect_formats, import_traces

    assert {f for _, f in detect_formats([examples_dir()])} == {"who-and-when"}  # README.md is not read
    assert [t.id for t in import_traces([examples_dir()])][0].startswith("examples/")
    assert detect_formats([tmp_path]) == [(otel_file, "otel")]
