"""The README's main job: its plan, and (slow) one real quick run on the embedded model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.demo_selection import DEMO_TRACE_FILES, demo_selection, examples_dir

REPO = Path(__file__).resolve().parents[1]


def test_plan_without_who_and_when_uses_examples_and_says_so(tmp_path):
    plan = demo_selection(tmp_path / "absent", out_dir=tmp_path / "run")
    assert plan.trace_paths and all(Path(p).parent == examples_dir() for p in plan.trace_paths)
    assert any("Who&When traces not found" in n for n in plan.notes)
    assert set(plan.llm_datasets) == {"earthquake", "asia"}
    assert set(plan.datasets) == {"earthquake", "cancer", "survey", "asia", "child", "auto_mpg"}
    assert plan.attribution_methods == ("all_at_once", "step_by_step", "binary_search", "dcfa")


def test_plan_with_who_and_when_adds_the_real_traces(who_and_when_dir, tmp_path):
    plan = demo_selection(who_and_when_dir, out_dir=tmp_path / "run")
    real = [p for p in plan.trace_paths if Path(p).parent != examples_dir()]
    assert [Path(p).relative_to(who_and_when_dir).as_posix() for p in real] == list(DEMO_TRACE_FILES)
    assert plan.notes == ()


@pytest.mark.slow
def test_quick_demo_runs_every_stage_on_the_embedded_model(tmp_path):
    env = dict(os.environ, AGENTCAUSAL_CACHE_DIR=str(tmp_path / "cache"), PREFECT_LOGGING_LEVEL="WARNING")
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "agentcausal", "demo", "--quick", "--out", str(out), "--no-progress"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Failure attribution" in proc.stdout and "Causal discovery" in proc.stdout
    attribution = pd.read_parquet(out / "attribution" / "results.parquet")
    assert set(attribution["method"]) == {"all_at_once", "binary_search"} and len(attribution) == 4
    discovery = pd.read_parquet(out / "discovery" / "results.parquet")
    assert {"mac", "pc", "ges"} <= set(discovery["method"])
    mac = discovery[discovery["method"] == "mac"].iloc[0]
    assert mac["error"] == "" and mac["dataset"] == "earthquake"
    assert (out / "attribution" / "report.md").is_file() and (out / "discovery" / "report.md").is_file()


def test_demo_refuses_zero_threads_before_any_work(capsys):
    from agentcausal_cli import main

    assert main(["demo", "--threads", "0"]) == 2
    assert "--threads must be at least 1" in capsys.readouterr().err
