"""The scale benchmark's code path on a tiny corpus (not timed): every field, the concurrency limit held at the
fake server (test double), every trace back once under its own id, and a fully cached rerun with no request."""

import pytest

from bench.scale import COLUMNS, run_scale


@pytest.mark.timeout(400)
def test_scale_bench_rows_on_a_tiny_corpus(tmp_path):
    res = run_scale([("all_at_once", 20), ("dcfa", 3)], latencies_s=[0.01], concurrencies=[3],
                    chunk_sizes=[None, 4], work=tmp_path, log=lambda *a: None)
    rows = res["rows"]
    assert [(r["method"], r["traces"], r["chunk_size"] if i % 2 else None) for i, r in enumerate(rows)] == [
        ("all_at_once", 20, None), ("all_at_once", 20, 4), ("dcfa", 3, None), ("dcfa", 3, 4)]
    for r in rows:
        assert set(COLUMNS) <= set(r)
        assert r["rows_ok"] and r["failed_rows"] == 0, r
        assert 0 < r["peak_in_flight"] <= r["concurrency"], r
        assert r["requests"] >= r["traces"] and r["rerun_requests"] == 0, r
        assert r["bound_s"] > 0 and r["ratio"] > 0 and r["rss_mb"] > 0


@pytest.mark.timeout(400)
def test_scale_bench_dask_row_runs_chunks_on_two_workers(tmp_path):
    """The Dask row (issue 15 item 6): chunk tasks on 2 local worker processes return every trace, none failed
    (a pickled chunk once reached the workers as a one-element tuple and every chunk failed), and the per-worker
    limits add up to the row's concurrency, which the server's peak never exceeds."""
    res = run_scale([("all_at_once", 12)], latencies_s=[0.01], concurrencies=[4], runners=("dask",),
                    dask_workers=2, work=tmp_path, log=lambda *a: None)
    (row,) = res["rows"]
    assert row["runner"] == "dask x2" and row["concurrency"] == 4
    assert row["rows_ok"] and row["failed_rows"] == 0, row
    assert row["requests"] == 12 and row["rerun_requests"] == 0, row
    assert 0 < row["peak_in_flight"] <= 4, row
