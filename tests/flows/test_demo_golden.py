"""The ``demo`` flow on the fake server (test double) equals a golden copy of its results.

The golden copy pins every stored record and Parquet column of the demo: a change of the run path must
leave them as they are. Both halves run through :func:`flows.demo.demo` with a small
fixed :class:`~agentcausal.demo_selection.DemoSelection`: the four demo attribution methods on
two example traces of ``data/examples``, and PC, GES, MAC and the zero-shot
LLM baseline on Earthquake (n = 300, seed 0). Replies are deterministic and
schema-valid (:class:`agentcausal_fakes.responders.BenchResponder` for attribution, the
MAC test responder for discovery); embeddings are the fake server's
deterministic vectors.

The run's ``attribution/results.parquet`` and ``discovery/results.parquet``
are compared row by row (rows sorted, columns compared by name) with
``tests/golden/demo_attribution.json`` and ``tests/golden/demo_discovery.json``,
after dropping only the columns listed in :data:`VOLATILE` (each with why).

Regenerate the golden files (only when a change of results is intended, and
say so in the commit message)::

    AGENTCAUSAL_REGEN_GOLDEN=1 python -m pytest tests/flows/test_demo_golden.py

The test fails whenever the output differs from the golden copy; with the
variable set it rewrites the files and is skipped.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.settings import RunSettings
from tests.discovery.conftest import mac_responder

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
EXAMPLES = REPO / "data" / "examples"

#: columns that cannot be deterministic, dropped before the comparison (all others are compared)
VOLATILE = {
    "seconds": "wall time of the method run (clock)",
    "request_seconds": "summed wall time of the LLM requests (clock)",
    "run_request_seconds": "summed wall time of this run's LLM requests (clock)",
    "wait_seconds": "time spent waiting for a concurrency slot (clock)",
    "llm_seconds": "summed wall time of the LLM requests (clock)",
    "started": "timestamp",
    "finished": "timestamp",
    "timestamp": "timestamp",
    "run_dir": "the run folder is a temporary path",
    "path": "absolute path of the input on this machine",
    "source_path": "absolute path of the input on this machine",
}
#: keys dropped at any depth inside the JSON-text columns (``*_json``: usage per stage holds clock times)
VOLATILE_KEYS = {"seconds", "request_seconds", "wait_seconds"}
#: rows are sorted by these (those present)
SORT = ["dataset", "trace_id", "method", "seed", "repeat"]

EDGES = (("Burglary", "Alarm"), ("Earthquake", "Alarm"), ("Alarm", "JohnCalls"), ("Alarm", "MaryCalls"))
MAC_SCHEMAS = {"AlgorithmProposalReply", "AlgorithmVerdictReply", "GraphProposal", "GraphVerdictReply", "CodeReply"}


def _responder():
    from agentcausal_fakes.responders import BenchResponder, schema_name

    bench, mac = BenchResponder(), mac_responder(affirmative_edges=EDGES, negative_edges=EDGES[:2])

    def respond(body):
        return mac(body) if schema_name(body) in MAC_SCHEMAS else bench(body)

    return respond


def _value(v):
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
        v = v.item()
    if isinstance(v, float):
        return None if math.isnan(v) else round(v, 9)
    if isinstance(v, (list, tuple)) or hasattr(v, "tolist"):
        return [_value(x) for x in (v.tolist() if hasattr(v, "tolist") else v)]
    return v


def _drop_keys(v):
    if isinstance(v, dict):
        return {k: _drop_keys(x) for k, x in v.items() if k not in VOLATILE_KEYS}
    if isinstance(v, list):
        return [_drop_keys(x) for x in v]
    return v


def canonical(df: pd.DataFrame) -> dict:
    """Columns (sorted names, volatile ones dropped) and rows (sorted) as plain JSON values."""
    df = df.drop(columns=[c for c in VOLATILE if c in df.columns])
    df = df.copy()
    for c in [c for c in df.columns if c.endswith("_json")]:  # parsed, clock times dropped, written back canonical
        df[c] = [v if v is None else json.dumps(_drop_keys(json.loads(v)), sort_keys=True) for v in df[c]]
    cols = sorted(df.columns)
    rows = [{c: _value(r[c]) for c in cols} for _, r in df.iterrows()]
    keys = [k for k in SORT if k in cols]
    rows.sort(key=lambda r: json.dumps([r[k] for k in keys] + [r], sort_keys=True, default=str))
    return {"columns": cols, "rows": rows}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_demo_results_equal_the_golden_copy(fake_server, tmp_path):
    from agentcausal.demo_selection import DemoSelection
    from flows.demo import demo

    fake_server.responder = _responder()
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        "max_concurrency = 4\ntimeout_s = 10\ncontext_window = 8192\n\n"
        f'[profiles.fake-embed]\nkind = "embedding"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-embed"\n\n'
        '[routings.default]\ndefault = "fake"\nembed = "fake-embed"\n'
    )
    settings = RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / "cache"))
    plan = DemoSelection(
        trace_paths=(str(EXAMPLES / "wrong_unit_at_step_2.json"), str(EXAMPLES / "misread_tool_output_at_step_4.json")),
        datasets=("earthquake",),
        statistical_methods=("pc", "ges"),
        llm_methods=("mac", "llm_zero_shot"),
        llm_datasets=("earthquake",),
        seeds=(0,),
        n=300,
        out_dir=str(tmp_path / "demo"),
    )
    dirs = demo(selection=plan, settings=settings, preset="small")
    got = {
        half: canonical(pd.read_parquet(Path(dirs[half]) / "results.parquet")) for half in ("attribution", "discovery")
    }
    assert len(got["attribution"]["rows"]) == 8 and len(got["discovery"]["rows"]) == 4
    if os.environ.get("AGENTCAUSAL_REGEN_GOLDEN") == "1":
        for half, table in got.items():
            (GOLDEN / f"demo_{half}.json").write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
        pytest.skip("golden files rewritten (AGENTCAUSAL_REGEN_GOLDEN=1)")
    for half, table in got.items():
        want = json.loads((GOLDEN / f"demo_{half}.json").read_text())
        assert table["columns"] == want["columns"], f"{half}: columns differ from the golden copy"
        for i, (g, w) in enumerate(zip(table["rows"], want["rows"])):
            diff = {c: (g.get(c), w.get(c)) for c in want["columns"] if g.get(c) != w.get(c)}
            assert not diff, f"{half} row {i} differs from the golden copy (got, golden): {diff}"
        assert len(table["rows"]) == len(want["rows"])
