"""Keyed integrity of both stores: with ``AGENTCAUSAL_CACHE_KEY`` (or a key file only its owner reads) every
record carries an HMAC; a record rewritten with a valid checksum but no valid MAC is dropped and recomputed,
on the fake OpenAI server (test double)."""

from __future__ import annotations

import json
import logging
import sqlite3
import zlib
from pathlib import Path

import pytest

from agentcausal.exceptions import ConfigError
from agentcausal.integrity import KEY_ENV, KEY_FILE_ENV, cache_key
from agentcausal.llm import Gateway
from agentcausal.llm.reply_cache import ReplyCache, _digest, check_cache
from agentcausal.runs.store import ResultStore, check_store, checksum
from agentcausal.traces.model import Attribution
from tests.conftest import fake_profiles

Q = [{"role": "user", "content": "who made the decisive error?"}]
KEY = "team-secret-0123456789"


def _att(step: int = 1) -> Attribution:
    return Attribution(trace_id="t", method="m", step=step, agent="A")


def _forge_row(path: Path, key: str, step: int) -> None:
    """Rewrite a results row as someone who can write the store but has no key would: a new body, its checksum."""
    body = _att(step).model_dump_json(exclude={"reused"})
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET body = ?, sha256 = ? WHERE key = ?", (body, checksum(key, False, body), key))


def test_a_results_row_forged_with_a_valid_checksum_is_dropped_with_a_key_and_recomputed(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ResultStore(tmp_path, "attribute", Attribution) as store:
        store.put("k", _att(1))
        assert store.get("k").record.step == 1
        raw = store.path.read_bytes() + Path(f"{store.path}-wal").read_bytes()
        assert KEY.encode() not in raw  # the key is never stored
    _forge_row(store.path, "k", 7)
    assert check_store(store.path).failing == {"no valid MAC (written without the cache key, or forged)": 1}
    with ResultStore(tmp_path, "attribute", Attribution) as store:
        with caplog.at_level(logging.WARNING, logger="agentcausal.runs.store"):
            assert store.get("k") is None  # never served: dropped, so the job is recomputed
        assert store.dropped == 1 and "no valid MAC" in next(iter(store.drop_reasons))
        assert not any(KEY in r.getMessage() for r in caplog.records)
        store.put("k", _att(1))  # the recomputed record
        assert store.get("k").record.step == 1
    monkeypatch.delenv(KEY_ENV)
    _forge_row(store.path, "k", 7)
    with ResultStore(tmp_path, "attribute", Attribution) as store:
        assert store.get("k").record.step == 7  # without a key a checksum is all there is: what a key is for


def test_records_written_without_a_key_read_without_one_and_a_key_recomputes_them(tmp_path, monkeypatch):
    with ResultStore(tmp_path, "attribute", Attribution) as store:
        store.put("k", _att(2))
    with ResultStore(tmp_path, "attribute", Attribution) as store:
        assert store.get("k").record.step == 2
    with ResultStore(tmp_path, "attribute", Attribution, key=b"k") as store:
        assert store.get("k") is None and store.dropped == 1  # switching a key on recomputes
        store.put("k", _att(2))
    with ResultStore(tmp_path, "attribute", Attribution) as store:
        assert store.get("k").record.step == 2  # a keyed row still reads without the key (its checksum holds)
    with ResultStore(tmp_path, "attribute", Attribution, key=b"other") as store:
        assert store.get("k") is None  # another key's MAC fails


def _gateway(server, cache_dir: Path) -> Gateway:
    return Gateway(fake_profiles(server.base_url), cache_dir=cache_dir, max_retries=0)


def test_a_reply_forged_with_a_valid_checksum_is_asked_again_with_a_key(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    cache = tmp_path / "c"
    fake_server.push("the decisive error is at step 2")
    gw = _gateway(fake_server, cache)
    assert gw.chat("baseline", Q) == "the decisive error is at step 2"
    gw.close()
    with sqlite3.connect(cache / "cache.db") as db:
        ((key, value),) = db.execute("SELECT key, value FROM Cache").fetchall()
        rec = json.loads(zlib.decompress(value))
        assert "mac" in rec and KEY not in json.dumps(rec)
        forged = {"text": "the decisive error is at step 0"}
        rec = {"v": 1, "key": key, "sha256": _digest(key, forged), "value": forged}  # a valid checksum, no MAC
        db.execute("UPDATE Cache SET value = ? WHERE key = ?", (zlib.compress(json.dumps(rec).encode(), 0), key))
    assert not check_cache(cache).ok
    sent = fake_server.count
    fake_server.push("the decisive error is at step 2")
    gw = _gateway(fake_server, cache)
    assert gw.chat("baseline", Q) == "the decisive error is at step 2"  # the forged reply never served
    assert fake_server.count == sent + 1 and gw.cache_dropped == 1 and "no valid MAC" in gw.cache_notice()
    gw.close()
    assert check_cache(cache).ok


def test_the_key_file_must_be_the_owners_alone(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    assert cache_key() is None
    key_file = tmp_path / "cache.key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o644)
    monkeypatch.setenv(KEY_FILE_ENV, str(key_file))
    with pytest.raises(ConfigError) as err:
        cache_key()
    msg = str(err.value)
    assert "\n" not in msg and str(key_file) in msg and "chmod 600" in msg and KEY not in msg
    with pytest.raises(ConfigError):
        ReplyCache(tmp_path / "c")  # a store refuses to open rather than run unkeyed
    key_file.chmod(0o600)
    assert cache_key() == KEY.encode()
    monkeypatch.setenv(KEY_ENV, "from-the-environment")
    assert cache_key() == b"from-the-environment"  # the variable wins over the file
    monkeypatch.delenv(KEY_ENV)
    key_file.write_text("")
    with pytest.raises(ConfigError, match="empty"):
        cache_key()


def test_the_cli_refuses_an_unsafe_key_file_in_one_line_before_any_work(fake_server, tmp_path, monkeypatch, capsys):
    from agentcausal_cli import main
    from tests.conftest import EXAMPLES, write_profiles

    key_file = tmp_path / "cache.key"
    key_file.write_text(KEY)
    key_file.chmod(0o640)
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv(KEY_FILE_ENV, str(key_file))
    profiles = write_profiles(tmp_path / "p.toml", fake_server.base_url)
    args = ["attribute", str(EXAMPLES), "--profiles", profiles, "--cache-dir", str(tmp_path / "cache")]
    rc = main([*args, "--out", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "chmod 600" in err and KEY not in err
    assert fake_server.count == 0 and not (tmp_path / "run").exists()
