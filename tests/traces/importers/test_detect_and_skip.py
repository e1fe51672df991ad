"""Format detection (an unrecognised file names every format tried and suggests --format; foreign JSON is never
read as Who&When) and --skip-invalid naming and recording every file and trace it leaves out, imported formats too."""

from __future__ import annotations

import json

import pytest

from agentcausal.exceptions import InvalidTracesError, TraceFormatError
from agentcausal.traces.importers import FORMATS, detect_format, import_traces, scan_imports
from agentcausal_cli import main
from agentcausal_fakes.spans import genai_spans, otlp_json


def test_unrecognised_json_names_formats_tried_and_suggests_format(tmp_path, capsys):
    f = tmp_path / "export.json"
    f.write_text(json.dumps({"spans": [{"id": 1}], "version": 2}))
    with pytest.raises(TraceFormatError) as e:
        detect_format(f)
    msg = str(e.value)
    assert str(f) in msg and "--format" in msg and "'history' must be" not in msg
    assert all(fmt in msg for fmt in FORMATS if fmt != "auto")
    assert main(["import", str(f), "-o", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "matches no trace format" in err and err.count("\n") == 1


def test_who_and_when_like_json_still_gets_the_field_message(tmp_path):
    f = tmp_path / "ww.json"
    f.write_text(json.dumps({"question": "q", "mistake_step": "1"}))
    assert detect_format(f) == "who-and-when"  # the Who&When loader names the missing field
    with pytest.raises(TraceFormatError, match="history"):
        import_traces([f])


def test_batch_wrapper_is_classified_by_its_records(tmp_path):
    f = tmp_path / "batch.json"
    f.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "object": "trace.span",
                        "id": "span_1",
                        "trace_id": "trace_1",
                        "span_data": {"type": "agent", "name": "a"},
                    }
                ]
            }
        )
    )
    assert detect_format(f) == "openai-agents"


@pytest.fixture()
def mixed(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(otlp_json(genai_spans())))
    off = tmp_path / "off.json"
    off.write_text(json.dumps(otlp_json(genai_spans(content=False))))
    alien = tmp_path / "alien.json"
    alien.write_text(json.dumps({"hello": "world"}))
    broken = tmp_path / "broken.log"
    broken.write_text("{not json")
    return good, off, alien, broken


def test_scan_imports_names_every_invalid_input(mixed):
    good, off, alien, broken = mixed
    scan = scan_imports([good, off, alien, broken])
    assert len(scan.traces) == 1 and scan.origins == [str(good)]
    paths = sorted(e.path for e in scan.invalid)
    assert paths == sorted([str(off), str(alien), str(broken)])
    content_off = next(e for e in scan.invalid if e.path == str(off))
    assert content_off.field.startswith("trace ") and "content capture was off" in content_off.detail
    with pytest.raises(InvalidTracesError) as e:
        import_traces([good, off, alien, broken])
    assert all(str(p) in str(e.value) for p in (off, alien, broken))
    assert [t.id for t in import_traces([good, off, alien, broken], skip_invalid=True)] == [scan.traces[0].id]


def test_import_skip_invalid_prints_each_skipped_input(mixed, tmp_path, capsys):
    good, off, alien, broken = mixed
    assert (
        main(
            ["import", str(good), str(off), str(alien), str(broken), "-o", str(tmp_path / "o.jsonl"), "--skip-invalid"]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "skipping 3 invalid trace input(s)" in err
    assert all(str(p) in err for p in (off, alien, broken))


def test_attribute_skip_invalid_records_imported_skips_in_run_json(mixed, tmp_path, monkeypatch):
    calls = {}

    def fake_run(plan, run, **kw):  # the plan.json, the run options
        calls.update(plan=plan, paths=run.meta["corpus"], **kw)
        return run.out_dir

    import flows.attribute

    monkeypatch.setattr(flows.attribute, "run_attribute", fake_run)
    monkeypatch.setattr("agentcausal_cli.attribute.print_attribution_run", lambda run_dir: 0)
    good, off, alien, broken = mixed
    run = tmp_path / "run"
    assert (
        main(
            [
                "attribute",
                str(good),
                str(off),
                str(alien),
                str(broken),
                "--no-ground-truth",
                "--skip-invalid",
                "--out",
                str(run),
            ]
        )
        == 0
    )
    from agentcausal.attribution.plan_model import AttributionPlan
    from agentcausal.runs.plan import read_plan

    plan = read_plan(calls["plan"], AttributionPlan)  # the plan.json the run reads: run.json takes "skipped" from it
    skipped = plan.skipped
    assert sorted(s["path"] for s in skipped) == sorted([str(off), str(alien), str(broken)])
    assert all(s["error"] for s in skipped)
    plan_sources = {s.path for s in plan.sources} if plan.sources else set()
    assert str(good.resolve()) in plan_sources
