"""bench.fingerprint: what it compares and what it leaves out."""

from __future__ import annotations

import pandas as pd

from bench.fingerprint import _report_digest, _table_digest


def test_table_digest_ignores_the_clock_and_who_paid_but_not_a_prediction(tmp_path):
    base = pd.DataFrame(
        {
            "trace_id": ["a", "b"],
            "method": ["dcfa", "dcfa"],
            "pred_step": [3, 1],
            "seconds": [0.1, 0.2],
            "requests": [2, 0],
        }
    )
    base.to_parquet(tmp_path / "a.parquet")
    clock = base.assign(seconds=[9.0, 8.0], requests=[0, 2]).iloc[::-1]  # other times, other payer, other order
    clock.to_parquet(tmp_path / "b.parquet")
    moved = base.assign(pred_step=[3, 2])
    moved.to_parquet(tmp_path / "c.parquet")
    a, b, c = (_table_digest(tmp_path / f"{n}.parquet") for n in "abc")
    assert a[0] == b[0] and a[3] == b[3] == {"requests": 2}
    assert a[0] != c[0]
    assert "seconds" not in a[2] and "pred_step" in a[2]


def test_report_digest_leaves_out_cost_sections_and_clock_lines(tmp_path):
    page = "# Failure attribution\n**started**: 2026-12-07T05:15:05\n## Blamed steps\n| t | 3 |\n## Cost per stage\n| x | {} |\n"
    (tmp_path / "a.md").write_text(page.format("0.31"))
    (tmp_path / "b.md").write_text(page.format("0.99").replace("05:15:05", "06:00:00"))
    (tmp_path / "c.md").write_text(page.format("0.31").replace("| t | 3 |", "| t | 4 |"))
    a, b, c = (_report_digest(tmp_path / f"{n}.md") for n in "abc")
    assert a == b
    assert a != c
