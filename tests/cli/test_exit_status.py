"""Runs that fail say so: a CLI run whose rows failed exits 3 with the count on its last line; one whose endpoint
dies mid-run is stopped by the circuit breaker and exits 4 naming the endpoint, the rest marked ``not_run``
and nothing cached for them. A quiet night (a Phoenix window without traces) is exit 0 with one line, nothing
sent, no run folder left. docs/operations.md and deploy/README.md show the exit-code table of ``agentcausal_cli.exit_codes``.
Prefect's temporary API in the test process; the fake server (test double)."""

import json
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from agentcausal_cli import main
from agentcausal_cli.exit_codes import ENDPOINT_DOWN, EXIT_CODES, FAILED_ROWS, OK, markdown_table
from tests.conftest import EXAMPLES, write_profiles

ROOT = Path(__file__).resolve().parents[2]


def test_operations_page_shows_the_exit_code_table_of_the_code():
    for page in ("docs/operations.md", "deploy/README.md"):
        assert markdown_table() in (ROOT / page).read_text(encoding="utf-8"), page
    assert {0, 2, 3, 4, 5, 130, 143} <= set(EXIT_CODES)


def test_top_level_help_lists_every_exit_status(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the epilog
    assert all(f"{code} {' '.join(meaning.split())}" in text for code, meaning in EXIT_CODES.items())


def test_a_phoenix_window_without_traces_is_exit_0_with_one_line(monkeypatch, scripted_server, tmp_path, capsys):
    import agentcausal.tracers.phoenix as phoenix

    asked = []
    monkeypatch.setattr(phoenix, "load_phoenix", lambda q, **kw: asked.append(q) or [])  # the window holds none
    profiles = write_profiles(tmp_path / "profiles.toml", scripted_server.base_url)
    run_dir = tmp_path / "run"
    argv = ["attribute", "--from-phoenix", "http://127.0.0.1:6006", "--since", "1m", "--no-ground-truth"]
    argv += ["--profiles", profiles, "--cache-dir", str(tmp_path / "c"), "--out", str(run_dir), "--no-progress"]
    assert main(argv) == OK
    out, err = capsys.readouterr()
    assert len(asked) == 1 and asked[0].start is not None
    assert out.startswith("agentcausal: nothing new since ") and "'default' at http://127.0.0.1:6006" in out
    assert out.count("\n") == 1 and not err
    assert scripted_server.count == 0 and not run_dir.exists()
    assert main([*argv, "--dry-run"]) == OK and "nothing new since" in capsys.readouterr().out


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
