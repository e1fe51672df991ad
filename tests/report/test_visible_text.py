"""Trace text in every view shows its control and bidi characters escaped (``\\x1b``, ``\\u202e``); the stored
trace keeps them: `show` (one trace and the list), report.md, report.html, the Phoenix explanation and the
prompt preview."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from agentcausal.attribution.results import save_run
from agentcausal.report.attribution import report_run
from agentcausal.tracers.blame import blamed_spans
from agentcausal.tracers.phoenix import span_annotations
from agentcausal.traces.display import BIDI_CONTROLS, visible, visible_html
from agentcausal.traces.io import load_traces
from agentcausal.traces.jsonl import write_jsonl
from agentcausal.traces.model import Attribution, Step, Trace
from agentcausal_cli import main

#: ESC sequences (clear screen, an OSC 8 link), NUL, a carriage return overwriting the line, a right-to-left override
HOSTILE = "ok\x1b[2J\x1b]8;;http://evil\x07link\x1b]8;;\x07 NUL\x00 back\rover \u202eevil"
ESCAPED = "ok\\x1b[2J\\x1b]8;;http://evil\\x07link\\x1b]8;;\\x07 NUL\\x00 back\\x0dover \\u202eevil"


def _raw_controls(text: str) -> set[str]:
    """Characters of ``text`` no view may print raw."""
    return {c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c in BIDI_CONTROLS}


@pytest.mark.parametrize(
    "char, shown",
    [
        ("\x00", "\\x00"),
        ("\x08", "\\x08"),
        ("\x0b", "\\x0b"),
        ("\r", "\\x0d"),
        ("\x1b", "\\x1b"),
        ("\x7f", "\\x7f"),
        ("\x85", "\\x85"),
        ("\x9b", "\\x9b"),
        ("\u061c", "\\u061c"),
        ("\u200e", "\\u200e"),
        ("\u200f", "\\u200f"),
        ("\u202a", "\\u202a"),
        ("\u202e", "\\u202e"),
        ("\u2066", "\\u2066"),
        ("\u2069", "\\u2069"),
    ],
)
def test_each_control_and_bidi_character_is_written_out(char, shown):
    assert visible(f"a{char}b") == f"a{shown}b"


def test_newlines_tabs_and_other_text_are_kept_and_escaping_is_idempotent():
    text = "line 1\n\tindented é 中文 \u200b \\x1b typed"  # a zero-width space is no control; a typed \x1b stays
    assert visible(text) is text
    assert visible(HOSTILE) == ESCAPED and visible(ESCAPED) == ESCAPED
    assert not _raw_controls(visible(HOSTILE))
    assert visible_html("<b>\x1b</b> & \u202e") == "&lt;b&gt;\\x1b&lt;/b&gt; &amp; \\u202e"


def _hostile_run(tmp_path):
    trace = Trace(
        id="ww/1",
        question=f"question {HOSTILE}",
        ground_truth="",
        steps=[
            Step(index=k, agent="A\x1b[31m" if k == 1 else f"A{k}", content=f"step {k} {HOSTILE}") for k in range(3)
        ],
    )
    corpus = write_jsonl([trace], tmp_path / "corpus.jsonl")
    att = Attribution(
        trace_id="ww/1", method="all_at_once", step=1, agent="A\x1b[31m", reason=f"reason {HOSTILE}", evidence=HOSTILE
    )
    save_run([att], [trace], tmp_path / "run", {"corpus": [str(corpus)]})
    return tmp_path / "run", corpus


def test_show_prints_esc_nul_and_rlo_escaped_while_the_stored_trace_keeps_them(tmp_path, capsys):
    run, corpus = _hostile_run(tmp_path)
    assert main(["show", str(run), "ww/1", "--full", "--width", "400"]) == 0
    out = capsys.readouterr().out
    assert not _raw_controls(out), _raw_controls(out)
    assert f"step 2 {ESCAPED}" in out and f"reason {ESCAPED}" in out and "A\\x1b[31m" in out
    assert "trace text not available" not in out  # the hash check saw the original text
    assert main(["show", str(run)]) == 0  # the list of blamed steps
    listed = capsys.readouterr().out
    assert not _raw_controls(listed) and "reason ok\\x1b[2J" in listed
    (stored,) = load_traces([str(corpus)])
    assert stored.steps[2].content == f"step 2 {HOSTILE}"  # the trace on disk is unchanged
    assert pd.read_parquet(run / "results.parquet")["reason"].iloc[0] == f"reason {HOSTILE}"


def test_report_md_and_html_show_trace_text_escaped(tmp_path):
    run, _ = _hostile_run(tmp_path)
    report_run(run)
    md = (run / "report.md").read_text(encoding="utf-8")
    page = (run / "report.html").read_text(encoding="utf-8")
    assert not _raw_controls(md) and "\\x1b[2J" in md
    assert not _raw_controls(page) and f"step 2 {visible_html(HOSTILE)}" in page  # step text in the trace section


def test_phoenix_explanation_is_escaped(tmp_path):
    from agentcausal.traces.importers import import_traces
    from agentcausal_fakes.spans import genai_spans, otlp_json

    f = tmp_path / "spans.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    (trace,) = import_traces([f])
    att = Attribution(trace_id=trace.id, method="all_at_once", step=2, agent="researcher", reason=HOSTILE)
    save_run([att], [trace], tmp_path / "run", {"preset": "paper"})
    (a,) = span_annotations(blamed_spans(tmp_path / "run"))
    assert a["result"]["explanation"] == ESCAPED


def test_prompt_preview_is_escaped(tmp_path, capsys):
    _, corpus = _hostile_run(tmp_path)
    code = main(["attribute", str(corpus), "--method", "all_at_once", "--dry-run", "--show-prompts"])
    out = capsys.readouterr().out
    assert code == 0 and "step 2 ok\\x1b[2J" in out and not _raw_controls(out)
