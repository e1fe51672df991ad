"""The nightly loop's library half: tonight's inputs read with every bad one named (a non-UTF-8 file, a trace whose
root span is missing), the run folder's corpus kept across nights with new and changed traces told apart, and
"nothing to do" only when nothing is new and the last night computed every row."""

from __future__ import annotations

import json

from agentcausal.tracers.nightly import CORPUS_FILE, merge_corpus, night_summary, read_tonight
from agentcausal.traces.jsonl import write_jsonl
from agentcausal_fakes.spans import genai_spans, otlp_json


def _folder(tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "good.json").write_text(json.dumps(otlp_json(genai_spans())))
    (folder / "latin1.json").write_bytes('{"note": "caf\xe9"}'.encode("latin-1"))
    rootless = otlp_json(genai_spans())
    for ss in (ss for rs in rootless["resourceSpans"] for ss in rs["scopeSpans"]):
        ss["spans"] = [sp for sp in ss["spans"] if sp.get("parentSpanId")]
    (folder / "rootless.json").write_text(json.dumps(rootless))
    return folder


def test_tonight_names_each_bad_input_and_reads_the_rest(tmp_path):
    folder = _folder(tmp_path)
    got = read_tonight([str(folder)])
    assert len(got.traces) == 1 and got.source == str(folder)
    why = {s["path"].rsplit("/", 1)[-1]: s["error"] for s in got.skipped}
    assert set(why) == {"latin1.json", "rootless.json"}
    assert why["latin1.json"].startswith("not UTF-8") and "is not in the trace" in why["rootless.json"]


def test_corpus_keeps_every_night_and_tells_new_from_changed(tmp_path):
    run_dir = tmp_path / "run"
    a, b = read_tonight([str(_folder(tmp_path))]).traces[0], None
    first = merge_corpus(run_dir, [a])
    assert first.new == [a.id] and not first.changed and not first.nothing_to_do
    write_jsonl(first.traces, run_dir / CORPUS_FILE)
    (run_dir / "results.parquet").write_bytes(b"")  # a finished night (only its presence is read here)
    (run_dir / "run.json").write_text(json.dumps({"started": "2026-12-01T01:30:00", "rows": {"total": 1}}))
    again = merge_corpus(run_dir, [a])
    assert again.nothing_to_do and again.last_started == "2026-12-01T01:30:00"
    assert merge_corpus(run_dir, []).nothing_to_do  # a window without traces: the corpus is still held
    b = a.model_copy(update={"question": a.question + " (asked again)"})
    changed = merge_corpus(run_dir, [b])
    assert changed.changed == [a.id] and len(changed.traces) == 1 and changed.traces[0].question == b.question
    (run_dir / "run.json").write_text(json.dumps({"rows": {"total": 1, "not_run": 1}}))  # the cap held one back
    assert merge_corpus(run_dir, [a]).left_over == 1 and not merge_corpus(run_dir, [a]).nothing_to_do


def test_a_quiet_night_sums_to_nothing_attributed_or_spent(tmp_path):
    tonight = read_tonight([str(_folder(tmp_path))])
    s = night_summary(tmp_path / "run", tonight, merge_corpus(tmp_path / "run", []), ran=False)
    assert (s["read"], s["skipped"], s["attributed"], s["spent_usd"], s["blamed"], s["written"]) == (
        1,
        2,
        0,
        0.0,
        None,
        None,
    )
