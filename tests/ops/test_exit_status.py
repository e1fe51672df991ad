"""Runs that fail say so: a CLI run whose rows failed exits 3 with the count on its last line; one whose endpoint
dies mid-run is stopped by the circuit breaker and exits 4 naming the endpoint, the rest marked ``not_run``
and nothing cached for them. Prefect's temporary API in the test process; the fake server (test double)."""

import json
import threading
import time

import pandas as pd
import pytest

from agentcausal.cli import main
from agentcausal.cli.exit_codes import ENDPOINT_DOWN, FAILED_ROWS
from tests.ops.conftest import EXAMPLES, write_profiles


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_rows_failed_for_a_refused_key_exit_3_with_the_count_last(scripted_server, tmp_path, capsys):
    scripted_server.api_key = "right"  # every chat request without it: HTTP 401 (not a dead endpoint)
    profiles = write_profiles(tmp_path / "profiles.toml", scripted_server.base_url)
    rc = main(
        [
            "attribute",
            str(EXAMPLES),
            "-m",
            "all_at_once",
            "--profiles",
            profiles,
            "--cache-dir",
            str(tmp_path / "c"),
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    n = len(list(EXAMPLES.glob("*.json")))
    assert rc == FAILED_ROWS
    assert err[-1].startswith(f"agentcausal: {n} of {n} (trace, method) rows not computed ({n} failed, 0 not run)")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["rows"]["failed"] == n and "stopped" not in meta


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_endpoint_dying_mid_run_trips_the_breaker_and_exits_4(scripted_server, tmp_path, capsys):
    scripted_server.latency_s = 0.2
    profiles = write_profiles(tmp_path / "profiles.toml", scripted_server.base_url, max_concurrency=1)
    url = scripted_server.base_url

    def kill_server():
        while scripted_server.count < 3:
            time.sleep(0.02)
        scripted_server.inject(*["drop"] * 100_000)  # from now on every request's connection is closed unanswered

    killer = threading.Thread(target=kill_server, daemon=True)
    killer.start()
    t0 = time.monotonic()
    rc = main(
        [
            "attribute",
            str(EXAMPLES),
            "-m",
            "all_at_once",
            "--repeats",
            "10",
            "--chunk-size",
            "1",
            "--breaker-after",
            "2",
            "--profiles",
            profiles,
            "--cache-dir",
            str(tmp_path / "c"),
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
        ]
    )
    killer.join(timeout=5)
    err = capsys.readouterr().err.strip().splitlines()
    jobs = 10 * len(list(EXAMPLES.glob("*.json")))
    assert rc == ENDPOINT_DOWN, err[-5:]
    assert err[-2].startswith(f"agentcausal: error: endpoint down: fake at {url} failed 2 requests in a row")
    assert err[-1].startswith("agentcausal: ") and f"of {jobs} (trace, method) rows not computed" in err[-1]
    df = pd.read_parquet(tmp_path / "run" / "results.parquet")
    assert len(df) == jobs and (df["status"] == "not_run").sum() >= jobs // 2
    assert set(df["status"]) <= {"complete", "failed", "not_run"}
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["rows"]["not_run"] == (df["status"] == "not_run").sum() and url in meta["stopped"]
    assert time.monotonic() - t0 < 300
