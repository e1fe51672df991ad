"""Damaged stores heal themselves (issue 32): the results store and the LLM reply cache cut short between two
runs of the CLI; the second run exits 0, names each damaged copy once, and pays only for the replies that were
lost; a row that fails its check is named on the console; ``cache check`` / ``cache repair`` do it by hand.
On the fake OpenAI server (test double), the CLI in its own process as a user runs it."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import EXAMPLES, write_profiles

REPO = Path(__file__).resolve().parents[2]
COLS = ["trace_id", "method", "pred_step", "pred_agent", "error"]


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentcausal", *args],
        capture_output=True,
        text=True,
        timeout=400,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        stdin=subprocess.DEVNULL,
    )


def _rows(run: Path) -> pd.DataFrame:
    return pd.read_parquet(run / "results.parquet").sort_values(["trace_id", "method"])[COLS].reset_index(drop=True)


def _truncate(db: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])


def _llm_records(cache: Path) -> int:
    with sqlite3.connect(cache / "llm" / "cache.db") as db:
        return int(db.execute("SELECT COUNT(*) FROM Cache").fetchone()[0])


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_truncated_results_store_and_llm_cache_heal_and_only_what_was_lost_is_paid_again(scripted_server, tmp_path):
    cache = tmp_path / "cache"
    profiles = write_profiles(tmp_path / "p.toml", scripted_server.base_url)

    def attribute(out: str) -> subprocess.CompletedProcess:
        args = ["attribute", str(EXAMPLES), "-m", "all_at_once", "-m", "step_by_step", "--profiles", profiles]
        return _cli(*args, "--cache-dir", str(cache), "--out", str(tmp_path / out), "--no-progress")

    first = attribute("r1")
    assert first.returncode == 0, first.stderr
    paid, replies = scripted_server.count, _llm_records(cache)
    store, llm = cache / "results" / "attribute" / "records.sqlite3", cache / "llm" / "cache.db"
    _truncate(store)
    _truncate(llm)
    assert _cli("cache", "check", "--cache-dir", str(cache)).returncode == 3  # check sees it and changes nothing

    second = attribute("r2")
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    lines = [ln for ln in second.stderr.splitlines() if "was damaged" in ln]
    assert len(lines) == 2, second.stderr  # one line each, printed once (no Prefect repeat of it)
    for db, line in zip((store, llm), sorted(lines, key=lambda ln: "LLM" in ln), strict=True):
        (aside,) = db.parent.glob(f"{db.name}.damaged-*")
        assert str(db) in line and str(aside) in line and "truncated" in line
    kept = int(re.search(r"(\d+) readable record\(s\) kept", next(ln for ln in lines if "LLM" in ln)).group(1))
    assert scripted_server.count - paid == replies - kept  # every lost row recomputed; only lost replies paid
    pd.testing.assert_frame_equal(_rows(tmp_path / "r1"), _rows(tmp_path / "r2"))
    healed = json.loads((tmp_path / "r2" / "run.json").read_text())["store"]["healed"]
    assert sorted(h["path"] for h in healed) == sorted([str(store), str(llm)])  # run.json names them too

    with sqlite3.connect(store) as db:  # one row no longer what was stored: named on the console, recomputed
        (key,) = db.execute("SELECT key FROM records LIMIT 1").fetchone()
        db.execute("UPDATE records SET sha256 = ? WHERE key = ?", ("0" * 64, key))
    paid = scripted_server.count
    third = attribute("r3")
    assert third.returncode == 0, third.stderr
    assert any("failed its check" in ln and "recomputing" in ln for ln in third.stderr.splitlines()), third.stderr
    assert scripted_server.count == paid  # its replies are cached
    pd.testing.assert_frame_equal(_rows(tmp_path / "r1"), _rows(tmp_path / "r3"))
    ok = _cli("cache", "check", "--cache-dir", str(cache))
    assert ok.returncode == 0 and ok.stdout.count(": ok, ") == 2, ok.stdout


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_cache_repair_heals_and_drops_by_hand(tmp_path):
    from agentcausal.llm.reply_cache import ReplyCache
    from agentcausal.runs.store import ResultStore
    from agentcausal.traces.model import Attribution

    cache = tmp_path / "cache"
    with ResultStore(cache, "attribute", Attribution) as store:
        for i in range(5):
            store.put(f"k{i}", Attribution(trace_id=f"t{i}", method="m", step=i, agent="A"))
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE records SET sha256 = ? WHERE key = 'k3'", ("0" * 64,))
    replies = ReplyCache(cache / "llm")
    replies.set("a" * 64, {"text": "x"})
    replies.close()
    (cache / "llm" / "cache.db").write_bytes(b"not SQLite at all" * 64)
    check = _cli("cache", "check", "--cache-dir", str(cache))
    assert check.returncode == 3, check.stderr
    assert "5 records, 1 fail their check (checksum mismatch: 1)" in check.stdout
    assert "damaged (not an SQLite database)" in check.stdout
    repair = _cli("cache", "repair", "--cache-dir", str(cache))
    assert repair.returncode == 0 and repair.stderr == "", repair.stderr
    assert "1 record(s) that failed their check dropped" in repair.stdout and "moved aside to" in repair.stdout
    assert len(repair.stdout.strip().splitlines()) == 2
    again = _cli("cache", "check", "--cache-dir", str(cache))
    assert again.returncode == 0 and "ok, 4 records" in again.stdout and "ok, 0 records" in again.stdout


def test_cache_check_of_a_folder_that_is_not_there_is_bad_input(tmp_path, capsys):
    from agentcausal_cli import main

    assert main(["cache", "check", "--cache-dir", str(tmp_path / "nowhere")]) == 2
    assert "no cache folder" in capsys.readouterr().err
