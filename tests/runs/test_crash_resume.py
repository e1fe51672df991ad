"""Crash and resume: the ``attribute`` CLI killed with SIGKILL in the middle of a corpus, then rerun, finishes
with every trace, no duplicated or wrong record, and no repeat of any LLM call that had completed.

The fake server (test double) runs in the test process, so it outlives the killed run and counts every request
by prompt across both runs. The profile allows one request at a time and each takes 0.6 s, so at the kill
exactly one request is in flight and every earlier one has been answered (and cached) for at least 0.4 s.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.runs.options import RunOptions
from tests.conftest import EXAMPLES, METHODS, prompt_key, requests_by_prompt, settings_at, write_profiles

LATENCY_S = 0.6
KILL_AT_REQUEST = 7


def _cli(args, env, log):
    code = "import sys; from agentcausal_cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigkill_mid_corpus_then_rerun_finishes_without_repeating_llm_calls(scripted_server, tmp_path):
    from prefect.server.api.server import SubprocessASGIServer

    api = SubprocessASGIServer()  # this process's temporary Prefect API; both CLI runs report to it
    api.start(timeout=180)
    env = dict(os.environ, PREFECT_API_URL=api.api_url)
    scripted_server.latency_s = LATENCY_S
    profiles = write_profiles(tmp_path / "profiles.toml", scripted_server.base_url, max_concurrency=1)
    run_dir = tmp_path / "run"
    args = [
        "attribute",
        str(EXAMPLES),
        *sum((["-m", m] for m in METHODS), []),
        "--profiles",
        profiles,
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(run_dir),
        "--no-progress",
    ]

    # run 1: SIGKILL while request KILL_AT_REQUEST is being answered
    with open(tmp_path / "run1.log", "w") as log:
        proc = _cli(args, env, log)
        deadline = time.monotonic() + 300
        while scripted_server.count < KILL_AT_REQUEST:
            assert proc.poll() is None, (tmp_path / "run1.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "run 1 made too few requests"
            time.sleep(0.01)
        time.sleep(LATENCY_S - 0.2)
        in_flight = scripted_server.in_flight
        done_before_kill = [prompt_key(r) for r in scripted_server.chat_requests[: scripted_server.count - in_flight]]
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    assert in_flight == 1, "expected exactly one request in flight at the kill"
    assert len(done_before_kill) == KILL_AT_REQUEST - 1
    assert not (run_dir / "results.parquet").exists(), "run 1 was not killed mid-corpus"
    time.sleep(LATENCY_S)  # let the server finish answering the dead client

    # run 2: the same command, continuing the killed run's folder
    with open(tmp_path / "run2.log", "w") as log:
        proc = _cli([*args, "--resume"], env, log)
        assert proc.wait(timeout=400) == 0, (tmp_path / "run2.log").read_text()[-3000:]

    counts = requests_by_prompt(scripted_server)
    repeated = [k for k in done_before_kill if counts[k] != 1]
    assert not repeated, f"{len(repeated)} LLM calls completed before the kill were asked again"
    assert sum(c - 1 for c in counts.values()) <= in_flight, "more prompts repeated than were in flight"
    assert len(counts) > KILL_AT_REQUEST, "run 2 asked nothing new: the kill was not mid-corpus"

    df = pd.read_parquet(run_dir / "results.parquet")
    n_traces = len(list(EXAMPLES.glob("*.json")))
    assert len(df) == n_traces * len(METHODS) and not df.duplicated(["trace_id", "method"]).any()
    assert df["error"].isna().all()
    by = {m: g for m, g in df.groupby("method")}
    aao = by["all_at_once"].set_index("trace_id")["pred_agent"]
    assert set(by["all_at_once"]["pred_step"]) == {2} and aao["examples/wrong_unit_at_step_2"] == "Conversion_Expert"
    assert aao.notna().all()  # elsewhere the scripted reply names one of that trace's own agents (schema enum)
    assert set(by["step_by_step"]["pred_step"]) == {0} and set(by["binary_search"]["pred_step"]) == {0}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_result_files_torn_by_a_kill_count_as_missing(scripted_server, profiles_file, tmp_path):
    """A results store cut short (a kill during its write, a disk that lost its tail) heals: the next run moves it
    aside in one line naming the damaged copy, recomputes the rows it lost, served by the LLM reply cache, and the
    records are the same."""
    from flows.attribute import run_attribute

    settings = settings_at(profiles_file, tmp_path / "cache")
    corpus = [str(EXAMPLES / "wrong_unit_at_step_2.json"), str(EXAMPLES / "bad_plan_at_step_0.json")]
    first = pd.read_parquet(
        f"{run_attribute(AttributionRequest(paths=corpus, methods=['all_at_once']), RunOptions(out_dir=str(tmp_path / 'r1')), settings=settings)}/results.parquet"
    )
    n = scripted_server.count
    from agentcausal.runs.engine import _store, result_store
    from agentcausal.traces.model import Attribution

    handle = result_store(settings, "attribute", Attribution)
    store = handle.path
    handle.close()  # this process's connections (a new process opens the file afresh)
    _store.cache_clear()
    for p in store.parent.glob(store.name + "-*"):  # the journal: gone with the kill
        p.unlink()
    store.write_bytes(store.read_bytes()[: store.stat().st_size // 2])
    again = pd.read_parquet(
        f"{run_attribute(AttributionRequest(paths=corpus, methods=['all_at_once']), RunOptions(out_dir=str(tmp_path / 'r3')), settings=settings)}/results.parquet"
    )
    (heal,) = json.loads((tmp_path / "r3" / "run.json").read_text())["store"]["healed"]  # the run says so
    assert heal["path"] == str(store) and heal["damaged"].startswith(f"{store}.damaged-")
    assert Path(heal["damaged"]).is_file() and heal["reason"].startswith("truncated")
    assert scripted_server.count == n
    cols = ["trace_id", "pred_step", "pred_agent", "error"]
    pd.testing.assert_frame_equal(
        first.sort_values("trace_id")[cols].reset_index(drop=True),
        again.sort_values("trace_id")[cols].reset_index(drop=True),
    )
    assert (again["cache_hits"] == 1).all() and (again["requests"] == 0).all()
