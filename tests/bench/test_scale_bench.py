"""The scale benchmark's code path on a tiny corpus (not timed): every field, the concurrency limit held at the
fake server (test double), every trace back once under its own id, a fully cached rerun with no request, each row in a fresh process, the Dask
row on a cluster started before timing, the memory pair in processes of their own, and docs/performance.md."""

import json
import os

import pytest

from bench.performance import is_full_run, performance_markdown, scale_targets
from bench.scale import COLUMNS, run_scale


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_scale_bench_rows_on_a_tiny_corpus(tmp_path):
    res = run_scale(
        [("all_at_once", 20), ("dcfa", 3)],
        latencies_s=[0.01],
        concurrencies=[3],
        chunk_sizes=[None, 4],
        runners=("thread",),
        memory_traces=(),
        memory_datasets=(),
        work=tmp_path,
        log=lambda *a: None,
    )
    rows = res["rows"]
    # a row per chunk size asked for (None: the default), each with the size the run used (its run.json): at least
    # 8 chunks per method, so 20 traces run in chunks of 3 and 3 traces in chunks of 1 whatever was asked
    assert [(r["method"], r["traces"], r["chunk_size"]) for r in rows] == [
        ("all_at_once", 20, 3),
        ("all_at_once", 20, 3),
        ("dcfa", 3, 1),
        ("dcfa", 3, 1),
    ]
    for r in rows:
        assert set(COLUMNS) <= set(r)
        assert r["rows_ok"] and r["failed_rows"] == 0, r
        assert 0 < r["peak_in_flight"] <= r["concurrency"], r
        assert r["requests"] >= r["traces"] and r["rerun_requests"] == 0, r
        assert r["bound_s"] > 0 and r["ratio"] > 0 and r["rss_mb"] > 0
        assert r["cpu_ms_per_request"] > 0 and r["cpu_s"] > 0
        assert r["rss_scope"] == "row"  # Linux: the peak is reset before each row
    assert len({r["pid"] for r in rows} | {os.getpid()}) == len(rows) + 1  # each row in a fresh process
    doc = performance_markdown({**res, "argv": ["--only", "scale"]}, None)
    assert "A reduced run" in doc and "### Targets" in doc and "| ratio <= 1.10 at 1 s" in doc
    assert not is_full_run(res)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_scale_bench_dask_row_runs_chunks_on_two_workers_started_before_timing(tmp_path):
    """The Dask row: chunk tasks on 2 local worker processes started (and their imports warmed) before the timed
    call return every trace, none failed, and the per-worker limits add up to the row's concurrency, which the
    server's peak never exceeds; the workers' CPU counts in the row's CPU per request."""
    res = run_scale(
        [("all_at_once", 12)],
        latencies_s=[0.01],
        concurrencies=[4],
        runners=("dask",),
        dask_workers=2,
        memory_traces=(),
        memory_datasets=(),
        work=tmp_path,
        log=lambda *a: None,
    )
    (row,) = res["rows"]
    assert row["runner"] == "dask x2" and row["concurrency"] == 4
    assert row["rows_ok"] and row["failed_rows"] == 0, row
    assert row["requests"] == 12 and row["rerun_requests"] == 0, row
    assert 0 < row["peak_in_flight"] <= 4, row
    assert row["cpu_ms_per_request"] > 0


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_memory_pair_runs_each_size_in_a_fresh_process(tmp_path):
    res = run_scale(
        [],
        latencies_s=[0.01],
        concurrencies=[3],
        runners=("thread",),
        memory_traces=(6, 12),
        memory_latency_s=0.01,
        memory_datasets=(2, 4),
        work=tmp_path,
        log=lambda *a: None,
    )
    assert res["rows"] == []
    d_small, d_large = res["discovery_memory_rows"]
    assert (d_small["datasets"], d_large["datasets"]) == (2, 4) and d_small["rows_ok"] and d_large["rows_ok"]
    assert set(res["memory_ratios"]) == {"attribute", "discover"}
    assert res["memory_ratios"]["discover"] == round(d_large["peak_rss_mb"] / d_small["peak_rss_mb"], 3)
    small, large = res["memory_rows"]
    assert (small["traces"], large["traces"]) == (6, 12)
    for r in (small, large):
        assert r["runner"] == "thread (own process)" and r["rows_ok"], r
        assert r["requests"] == r["traces"] and 0 < r["peak_in_flight"] <= 3, r  # counted at the parent's server
        assert r["rss_mb"] > 50 and r["cpu_ms_per_request"] > 0 and r["rerun_s"] is None
    memory = [t for t in scale_targets(res) if t["target"].startswith("memory")]
    assert memory[0]["held"] is not None and "12 traces" in memory[0]["target"]
    assert memory[1]["held"] is not None and "4 datasets" in memory[1]["target"]
    json.dumps(res)  # the payload is JSON (scale.json)


def test_targets_name_the_worst_row_and_judge_each_target():
    rows = [
        {
            "runner": "thread",
            "method": "all_at_once",
            "traces": 2000,
            "concurrency": c,
            "latency_s": lat,
            "ratio": ratio,
            "rerun_fraction": 0.04,
            "rerun_requests": 0,
            "peak_in_flight": c,
            "rows_ok": True,
        }
        for c, lat, ratio in ((16, 1.0, 1.05), (64, 1.0, 1.3), (64, 0.2, 1.4))
    ]
    rows.append({**rows[1], "runner": "dask x2", "ratio": 1.19})
    mem = [{**rows[1], "traces": n, "rss_mb": mb, "rerun_fraction": None} for n, mb in ((5000, 600), (50000, 700))]
    got = {t["target"].split(",")[0]: t for t in scale_targets({"rows": rows, "memory_rows": mem})}
    assert (
        got["ratio <= 1.10 at 1 s"]["held"] is False
        and "1.3 (thread all_at_once 2000" in got["ratio <= 1.10 at 1 s"]["worst"]
    )
    assert got["ratio <= 1.5 at 200 ms"]["held"] is True
    assert got["ratio <= 1.2 on Dask"]["held"] is True
    mem_t = next(t for t in got.values() if t["target"].startswith("memory"))
    assert mem_t["held"] is True and "1.17" in mem_t["worst"]
    mem[1]["rss_mb"] = 1100
    assert (
        next(t for t in scale_targets({"rows": rows, "memory_rows": mem}) if t["target"].startswith("memory"))["held"]
        is False
    )


def test_a_bench_child_on_the_parents_api_runs_flows_without_heartbeats(monkeypatch):
    """With PREFECT_API_URL set, the product keeps Prefect's flow heartbeats (a user's server); a bench child on the
    bench's own temporary API turns them off, as the product does on the APIs it starts."""
    from prefect.settings import get_current_settings

    from bench.common import on_parent_api

    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # restored after the test
    assert get_current_settings().flows.heartbeat_frequency is not None
    with on_parent_api("http://127.0.0.1:9/api"):
        assert get_current_settings().flows.heartbeat_frequency is None
        assert get_current_settings().api.url == "http://127.0.0.1:9/api"
