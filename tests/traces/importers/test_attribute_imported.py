"""`agentcausal attribute` on an imported OTLP file, end to end on the fake server (test double) and
Prefect's ephemeral API: results.parquet and report.md name the blamed step's span id."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.traces.importers import import_traces
from agentcausal_cli import main
from agentcausal_fakes.spans import genai_spans, otlp_json


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_attribute_imported_otel_no_ground_truth(fake_server, tmp_path):
    fake_server.responder = lambda body: json.dumps(
        {"reason": "misread the tool result", "agent": "researcher", "step": 3}
    )
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        'max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
    )
    f = tmp_path / "run.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    (trace,) = import_traces([f])
    run = tmp_path / "run"
    rc = main(
        [
            "attribute",
            str(f),
            "--method",
            "all_at_once",
            "--no-ground-truth",
            "--profiles",
            str(toml),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--out",
            str(run),
            "--no-progress",
        ]
    )
    assert rc == 0
    df = pd.read_parquet(run / "results.parquet")
    (row,) = df.itertuples()
    span = trace.steps[3].metadata["span_id"]
    assert row.trace_id == trace.id and row.pred_step == 3 and row.span_id == span
    assert span in Path(run / "report.md").read_text()
    assert (run / "traces.jsonl").is_file()
