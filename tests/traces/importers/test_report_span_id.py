"""results.parquet and report.md name the blamed step's span id for imported traces."""

from __future__ import annotations

import json

import pandas as pd

from agentcausal.attribution.results import load_results, save_run
from agentcausal.report.attribution import report_run
from agentcausal.traces.importers.otel import load_otel
from agentcausal.traces.model import Attribution
from agentcausal_fakes.spans import genai_spans, otlp_json


def test_span_id_in_results_and_report(tmp_path):
    f = tmp_path / "run.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    (t,) = load_otel(f)
    atts = [
        Attribution(trace_id=t.id, method="all_at_once", step=2, agent="researcher"),
        Attribution(trace_id=t.id, method="dcfa", step=None, error="boom"),
    ]
    run = tmp_path / "r"
    save_run(atts, [t], run)
    df = load_results(run).set_index("method")
    assert df.loc["all_at_once", "span_id"] == t.steps[2].metadata["span_id"]
    assert pd.isna(df.loc["dcfa", "span_id"])
    md = report_run(run).markdown
    assert "## Blamed steps" in md and t.steps[2].metadata["span_id"] in md


def test_mast_modes_beside_blamed_step(tmp_path):
    from agentcausal.traces.importers.mast import parse_mast_row

    t = parse_mast_row(
        {
            "mas_name": "AG2",
            "trace_id": 1,
            "trace": {"trajectory": "a (to b):\nhi\nb (to a):\nno"},
            "mast_annotation": {"3.2": 1, "1.1": 0},
        }
    )
    run = tmp_path / "r"
    save_run([Attribution(trace_id=t.id, method="all_at_once", step=1, agent="b")], [t], run)
    md = report_run(run).markdown
    row = next(line for line in md.splitlines() if line.startswith(f"| [{t.id}]("))  # linked to its section
    assert "3.2 No or incorrect verification" in row and "| 1 | b |" in row
