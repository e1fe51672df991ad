"""Both halves through the one run engine, on the fake server (test double) and Prefect's ephemeral API.

The ``attribute`` and ``discover`` flows hand the engine's chunks to their chunk tasks, which run
:func:`agentcausal.runs.engine.run_chunk` with their half; every job comes back once, in the plan's
order, under its own key; a rerun runs no task and sends no request; and a chunked discover over
every built-in dataset with two seeds gives one scored row per (dataset, seed, method).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import tasks.attribution
import tasks.discovery
from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.discovery.data.datasets import BENCHMARKS
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.plans import read_any_plan
from agentcausal.runs import engine
from agentcausal.runs.options import RunOptions
from agentcausal.settings import RunSettings
from agentcausal_fakes.responders import BenchResponder, schema_name

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"


def _graph(body):
    """A zero-shot graph of the dataset's own variables: its first variable causes its second."""
    names = re.search(r'"enum": \[([^\]]+)\]', json.dumps(body["response_format"]["json_schema"]["schema"]))
    first, second = json.loads(f"[{names.group(1)}]")[:2]
    return json.dumps({"edges": [{"cause": first, "effect": second}]})


def _responder():
    """The zero-shot graph for discovery; the bench's schema-valid answers for attribution."""
    bench = BenchResponder()
    return lambda body: _graph(body) if schema_name(body) == "GraphProposal" else bench(body)


@pytest.fixture
def settings(fake_server, tmp_path):
    fake_server.responder = _responder()
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        'max_concurrency = 4\ntimeout_s = 10\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
    )
    return RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / "cache"))


@pytest.fixture
def chunks(monkeypatch):
    """Every chunk the flows' tasks run: (half, method, jobs), on the way into the engine's run_chunk."""
    seen = []

    def recording(half, chunk):
        seen.append((half.kind, chunk.method, len(chunk.jobs)))
        return engine.run_chunk(half, chunk)

    monkeypatch.setattr(tasks.attribution, "run_chunk", recording)
    monkeypatch.setattr(tasks.discovery, "run_chunk", recording)
    return seen


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_both_halves_run_through_one_engine_and_rerun_for_nothing(settings, fake_server, chunks, tmp_path):
    from flows.attribute import attribute
    from flows.discover import discover

    att = attribute(
        AttributionRequest(paths=[str(EXAMPLES)], methods=["all_at_once"]),
        RunOptions(out_dir=str(tmp_path / "a1"), chunk_size=2),
        settings=settings,
    )
    disc = discover(
        DiscoveryRequest(datasets=list(BENCHMARKS), methods=["pc", "llm_zero_shot"], seeds=[0, 1], n=200),
        RunOptions(out_dir=str(tmp_path / "d1"), chunk_size=4),
        settings=settings,
    )
    assert {k for k, _, _ in chunks} == {"attribute", "discover"}
    assert max(n for k, _, n in chunks if k == "discover") > 1  # discover ran chunks of several jobs
    n_traces = read_any_plan(Path(att) / "plan.json").item_count
    assert sum(n for k, _, n in chunks if k == "attribute") == n_traces

    a = pd.read_parquet(Path(att) / "results.parquet")
    assert len(a) == n_traces and not a.duplicated(["trace_id", "method"]).any() and (a["status"] == "complete").all()
    d = pd.read_parquet(Path(disc) / "results.parquet")
    want = {(ds, s, m) for ds in BENCHMARKS for s in (0, 1) for m in ("pc", "llm_zero_shot")}
    assert set(zip(d["dataset"], d["seed"], d["method"])) == want and len(d) == len(want)
    assert (d["status"] == "complete").all() and d.loc[d.method == "pc", "shd"].notna().all()
    assert list(d["dataset"]) == sorted(d["dataset"], key=list(BENCHMARKS).index)  # the plan's order
    outcomes = (Path(disc) / "outcomes.jsonl").read_text().splitlines()
    assert len(outcomes) == len(want) and (Path(disc) / "report.md").is_file()
    meta = json.loads((Path(disc) / "run.json").read_text())
    assert meta["rows"] == {"total": len(want), "reused": 0, "from_store": 0, "failed": 0, "not_run": 0}
    assert meta["plan"]["kind"] == "discover" and meta["plan"]["item_count"] == len(BENCHMARKS)

    # a rerun of both: no task run, no request, every row reused
    n, before = fake_server.count, len(chunks)
    a2 = pd.read_parquet(
        Path(
            attribute(
                AttributionRequest(paths=[str(EXAMPLES)], methods=["all_at_once"]),
                RunOptions(out_dir=str(tmp_path / "a2"), chunk_size=2),
                settings=settings,
            )
        )
        / "results.parquet"
    )
    d2 = pd.read_parquet(
        Path(
            discover(
                DiscoveryRequest(datasets=list(BENCHMARKS), methods=["pc", "llm_zero_shot"], seeds=[0, 1], n=200),
                RunOptions(out_dir=str(tmp_path / "d2"), chunk_size=4),
                settings=settings,
            )
        )
        / "results.parquet"
    )
    assert fake_server.count == n and len(chunks) == before
    assert a2["reused"].all() and d2["reused"].all() and (d2["shd"].fillna(-1) == d["shd"].fillna(-1)).all()
    assert json.loads((tmp_path / "d2" / "run.json").read_text())["rows"]["from_store"] == len(want)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_stored_record_that_fails_its_check_is_recomputed_and_reported(settings, fake_server, tmp_path):
    """One flipped value in the results store: the rerun drops that record (never serves it), computes it
    again (its LLM call a cache hit), says so in run.json and on the console, and reuses the others."""
    import sqlite3

    from flows.attribute import attribute

    corpus = [str(EXAMPLES / "wrong_unit_at_step_2.json"), str(EXAMPLES / "bad_plan_at_step_0.json")]
    first = pd.read_parquet(
        Path(
            attribute(
                AttributionRequest(paths=corpus, methods=["all_at_once"]),
                RunOptions(out_dir=str(tmp_path / "r1")),
                settings=settings,
            )
        )
        / "results.parquet"
    )
    n = fake_server.count
    db = sqlite3.connect(Path(settings.cache_dir) / "results" / "attribute" / "records.sqlite3")
    (key,) = db.execute("SELECT key FROM records WHERE body LIKE '%wrong_unit%'").fetchone()
    db.execute(
        'UPDATE records SET body = replace(body, \'"status":"complete"\', \'"status":"degraded"\') WHERE key = ?',
        (key,),
    )  # valid JSON, a valid record: only its checksum tells
    db.commit()
    db.close()
    run = attribute(
        AttributionRequest(paths=corpus, methods=["all_at_once"]),
        RunOptions(out_dir=str(tmp_path / "r2")),
        settings=settings,
    )
    again = pd.read_parquet(Path(run) / "results.parquet").set_index("trace_id")
    meta = json.loads((Path(run) / "run.json").read_text())
    assert meta["store"]["dropped"] == 1 and meta["rows"]["from_store"] == 1 and fake_server.count == n
    assert (again["status"] == "complete").all()  # the tampered value was never served
    assert (again["pred_step"] == first.set_index("trace_id").loc[again.index, "pred_step"]).all()
    assert again.loc["examples/bad_plan_at_step_0", "reused"] and again["cache_hits"].sum() >= 1
