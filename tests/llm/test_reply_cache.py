"""The LLM reply cache cannot lie or run code: every corruption is dropped, counted, asked again once, and never sticks.

Each test damages ``cache.db`` the way an attacker or a failing disk would (a flipped bit, a
record edited without its checksum, a record copied under another key, a crafted pickle, a
value file swapped for a link to ``/dev/zero``, a truncated SQLite file) and checks what the
gateway does next against the fake OpenAI server (test double).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sqlite3
import zlib
from pathlib import Path

import diskcache
import numpy as np
import pytest

from agentcausal.exceptions import CorruptStoreError
from agentcausal.llm import Gateway
from agentcausal.llm.reply_cache import MAX_RECORD_BYTES, ReplyCache
from tests.conftest import fake_profiles

Q = [{"role": "user", "content": "who made the decisive error?"}]


def _gateway(server, cache_dir: Path, **kw) -> Gateway:
    return Gateway(fake_profiles(server.base_url), cache_dir=cache_dir, max_retries=0, **kw)


def _rows(cache_dir: Path) -> list[tuple]:
    with sqlite3.connect(cache_dir / "cache.db") as con:
        return con.execute("SELECT key, mode, filename, value FROM Cache").fetchall()


def _update(cache_dir: Path, key: str, **cols) -> None:
    sets = ", ".join(f"{c} = ?" for c in cols)
    with sqlite3.connect(cache_dir / "cache.db") as con:
        con.execute(f"UPDATE Cache SET {sets} WHERE key = ?", (*cols.values(), key))


def _record(value: bytes) -> dict:
    return json.loads(zlib.decompress(value))


def _one_cached_reply(fake_server, cache_dir: Path, reply: str = "step 2") -> str:
    fake_server.push(reply)
    gw = _gateway(fake_server, cache_dir)
    assert gw.chat("baseline", Q) == reply
    gw.close()
    ((key, mode, _f, _v),) = _rows(cache_dir)
    assert mode == 1  # diskcache's raw mode: an inline blob (a JSON record in a zlib stream)
    return key


def _asked_again_once(fake_server, cache_dir: Path, reason: str, caplog) -> None:
    """The next gateway drops the damaged record, counts it, pays one request, and the one after pays none."""
    before = fake_server.count
    fake_server.push("fresh")
    gw = _gateway(fake_server, cache_dir)
    with caplog.at_level(logging.WARNING, logger="agentcausal.llm.reply_cache"):
        assert gw.chat("baseline", Q) == "fresh"
    assert fake_server.count == before + 1
    assert gw.cache_dropped == 1
    notice = gw.cache_notice()
    assert notice is not None and "\n" not in notice and "cache.db" in notice and reason in notice
    assert any(reason in r.getMessage() and "\n" not in r.getMessage() for r in caplog.records)
    gw.close()
    again = _gateway(fake_server, cache_dir)
    assert again.chat("baseline", Q) == "fresh"  # the good record replaced the bad one: never stuck
    assert fake_server.count == before + 1 and again.cache_dropped == 0 and again.cache_notice() is None
    again.close()


def test_a_flipped_bit_in_a_stored_reply_is_dropped_counted_and_asked_again(fake_server, tmp_path, caplog):
    cache = tmp_path / "c"
    key = _one_cached_reply(fake_server, cache, reply="the decisive error is at step 2")
    ((_k, _m, _f, value),) = _rows(cache)
    flipped = bytearray(value)
    flipped[len(flipped) // 2] ^= 0x04
    _update(cache, key, value=bytes(flipped))
    _asked_again_once(fake_server, cache, "undecodable", caplog)


def test_a_reply_edited_without_its_checksum_is_never_served(fake_server, tmp_path, caplog):
    cache = tmp_path / "c"
    key = _one_cached_reply(fake_server, cache, reply="step 2")
    ((_k, _m, _f, value),) = _rows(cache)
    rec = _record(value)
    rec["value"]["text"] = "step 5"  # a valid record in every way but its checksum
    _update(cache, key, value=zlib.compress(json.dumps(rec).encode(), 0))
    _asked_again_once(fake_server, cache, "checksum mismatch", caplog)


def test_a_record_copied_under_another_key_is_dropped(fake_server, tmp_path, caplog):
    cache = tmp_path / "c"
    key = _one_cached_reply(fake_server, cache, reply="step 2")
    fake_server.push("other")
    gw = _gateway(fake_server, cache)
    gw.chat("baseline", [{"role": "user", "content": "another question"}])
    gw.close()
    other = next(v for k, _m, _f, v in _rows(cache) if k != key)
    _update(cache, key, value=other)  # a good record, with a good checksum, of another request
    _asked_again_once(fake_server, cache, "another key", caplog)


class _Payload:
    """Unpickling this runs ``Path.touch(marker)``: proof that a reader unpickled it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.mark.parametrize("where", ["inline", "value file"])
def test_a_crafted_pickle_in_the_cache_never_runs(fake_server, tmp_path, caplog, where):
    cache = tmp_path / "c"
    key = _one_cached_reply(fake_server, cache)
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Payload(marker))
    if where == "inline":
        _update(cache, key, mode=4, value=payload)  # diskcache's pickle mode
    else:
        name = "ab/cd/" + "0" * 28 + ".val"
        (cache / "ab" / "cd").mkdir(parents=True)
        (cache / name).write_bytes(payload)
        _update(cache, key, mode=4, filename=name, value=None)
    _asked_again_once(fake_server, cache, "pickle format", caplog)
    assert not marker.exists()
    # the payload is live: diskcache's default reader runs it (so the assertion above could fail)
    _update(cache, key, mode=4, filename=None, value=payload)
    with diskcache.Cache(str(cache)) as plain:
        plain.get(key)
    assert marker.exists()


def test_a_value_file_swapped_for_a_link_to_an_endless_device_is_refused_unread(fake_server, tmp_path, caplog):
    cache = tmp_path / "c"
    fake_server.push("x" * (2 * 2**15))  # above diskcache's 32 KiB inline limit: a value file
    gw = _gateway(fake_server, cache)
    gw.chat("baseline", Q)
    gw.close()
    ((key, mode, name, _v),) = _rows(cache)
    assert mode == 2 and name  # diskcache's binary mode: a value file
    (cache / name).unlink()
    (cache / name).symlink_to("/dev/zero")
    _asked_again_once(fake_server, cache, "cannot be opened", caplog)


def test_a_value_file_name_outside_the_folder_is_neither_read_nor_deleted(fake_server, tmp_path, caplog):
    cache = tmp_path / "c"
    key = _one_cached_reply(fake_server, cache)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    _update(cache, key, mode=2, filename=str(victim), value=None)
    _asked_again_once(fake_server, cache, "never writes", caplog)
    assert victim.read_text() == "keep me"


def test_a_damaged_embedding_record_is_asked_again(fake_server, tmp_path):
    cache = tmp_path / "c"
    gw = _gateway(fake_server, cache)
    first = gw.embed("dcfa.embed", ["alpha", "beta"])
    gw.close()
    key, _m, _f, value = _rows(cache)[0]
    rec = _record(value)
    rec["value"]["f32le"] = rec["value"]["f32le"][:-8]  # a shorter vector, checksum kept
    _update(cache, key, value=zlib.compress(json.dumps(rec).encode(), 0))
    gw = _gateway(fake_server, cache)
    again = gw.embed("dcfa.embed", ["alpha", "beta"])
    assert gw.cache_dropped == 1 and len(fake_server.embedding_requests) == 2
    assert len(fake_server.embedding_requests[-1]["input"]) == 1  # only the damaged text is asked again
    np.testing.assert_array_equal(again, first)  # float32 through JSON: exact
    gw.close()


def _big_cache(fake_server, cache: Path, n: int = 400) -> None:
    fake_server.responder = lambda body: "r " + body["messages"][-1]["content"] * 20
    gw = _gateway(fake_server, cache)
    for i in range(n):
        gw.chat("baseline", [{"role": "user", "content": f"q{i}"}])
    gw.close()


def _heal_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "was damaged" in r.getMessage()]


def test_a_truncated_sqlite_file_is_moved_aside_in_one_line_and_a_new_cache_begins(fake_server, tmp_path, caplog):
    cache = tmp_path / "c"
    _big_cache(fake_server, cache)
    db = cache / "cache.db"
    with open(db, "r+b") as f:
        f.truncate(db.stat().st_size // 2)
    sent = fake_server.count
    with caplog.at_level(logging.WARNING, logger="agentcausal.llm.reply_cache"):
        gw = _gateway(fake_server, cache)
    (line,) = _heal_lines(caplog)
    (aside,) = cache.glob("cache.db.damaged-*")
    assert str(db) in line and str(aside) in line and "truncated" in line and "readable record(s) kept" in line
    assert gw.cache.store.heals[0].damaged == str(aside)
    assert gw.chat("baseline", [{"role": "user", "content": "q1"}]).startswith("r q1")
    assert fake_server.count == sent + 1  # lost, so asked again
    gw.close()
    assert _gateway(fake_server, cache).chat("baseline", [{"role": "user", "content": "q1"}]).startswith("r q1")
    assert fake_server.count == sent + 1  # the new cache serves what was asked again


def test_a_file_that_is_no_database_heals_and_one_that_cannot_be_moved_is_one_line(fake_server, tmp_path, caplog):
    cache = tmp_path / "c"
    cache.mkdir()
    (cache / "cache.db").write_bytes(b"this is not SQLite" * 100)
    with caplog.at_level(logging.WARNING, logger="agentcausal.llm.reply_cache"):
        ReplyCache(cache).close()
    assert "not an SQLite database" in _heal_lines(caplog)[0]
    (cache / "cache.db").write_bytes(b"this is not SQLite" * 100)
    cache.chmod(0o500)  # the folder refuses the rename
    try:
        if os.access(cache, os.W_OK):
            pytest.skip("running as a user whom permissions do not stop (root)")
        with pytest.raises(CorruptStoreError, match="not an SQLite database") as err:
            ReplyCache(cache)
        assert "\n" not in str(err.value) and "mv " in str(err.value)
    finally:
        cache.chmod(0o700)


def test_damage_found_after_opening_heals_too_keeping_the_readable_records(fake_server, tmp_path, caplog):
    cache = tmp_path / "c"
    _big_cache(fake_server, cache)
    db = cache / "cache.db"
    size = db.stat().st_size
    with open(db, "r+b") as f:  # keep the header, the size and the first pages; wipe some pages in the middle
        f.seek(size // 2)
        f.write(b"\xff" * 3 * 4096)
    store = ReplyCache(cache)  # the header and the Settings table still read
    keys = [k for k in _all_keys(tmp_path / "good", fake_server)]
    with caplog.at_level(logging.WARNING, logger="agentcausal.llm.reply_cache"):
        found = [store.get(k) for k in keys]
    lines = _heal_lines(caplog)
    if not lines:
        pytest.skip("SQLite read past the wiped pages without finding them")
    (line,) = lines
    heal = store.heals[0]
    assert "malformed" in line and 0 < heal.kept < len(keys) and Path(heal.damaged).is_file()
    kept = [k for k in keys if store.get(k) is not None]
    assert len(kept) == heal.kept  # every kept record reads and passes its check; the rest are gone
    assert sum(f is not None for f in found) <= len(keys)
    store.close()


def _all_keys(cache: Path, fake_server) -> list[str]:
    """The keys of :func:`_big_cache`'s requests (the same requests into a clean cache)."""
    _big_cache(fake_server, cache)
    return [r[0] for r in _rows(cache)]


def test_oversized_records_are_refused_before_they_are_read(tmp_path):
    store = ReplyCache(tmp_path / "c")
    store.set("a" * 64, {"text": "small"})
    store.close()
    bomb = zlib.compress(b"[" * (MAX_RECORD_BYTES + 10), 9)  # a few kB that decompress past the limit
    _update(tmp_path / "c", "a" * 64, value=bomb)
    store = ReplyCache(tmp_path / "c")
    assert store.get("a" * 64) is None and store.dropped == 1
    assert "decompressed" in next(iter(store.drop_reasons))
    store.close()


def test_records_are_data_and_keys_stay_the_request_hashes(fake_server, tmp_path):
    cache = tmp_path / "c"
    key = _one_cached_reply(fake_server, cache, reply="plain text")
    ((k, mode, _f, value),) = _rows(cache)
    rec = _record(value)
    assert k == key and len(k) == 64 and set(rec) == {"v", "key", "sha256", "value"}
    assert rec["key"] == key and rec["value"] == {"text": "plain text"}
    assert b"plain text" in value  # stored, not compressed: greppable


def test_a_key_held_by_another_process_waits_and_is_free_again_when_that_process_is_killed(tmp_path):
    import subprocess
    import sys
    import threading

    key = "ab" * 32
    holder = (
        "import signal, sys\nfrom agentcausal.llm.reply_cache import ReplyCache\n"
        "s = ReplyCache(sys.argv[1])\nheld = s.process_lock(sys.argv[2])\nheld.__enter__()\n"
        "print('held', flush=True)\n"
        "signal.pause()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", holder, str(tmp_path / "c"), key],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        store = ReplyCache(tmp_path / "c")
        got = threading.Event()

        def take() -> None:
            with store.process_lock(key):
                got.set()

        threading.Thread(target=take, daemon=True).start()
        with store.process_lock("cd" * 32):  # another key is free meanwhile
            pass
        assert not got.wait(0.5)  # the same key waits for the other process
        proc.kill()
        assert got.wait(10)  # the OS released the dead holder's lock
        store.close()
    finally:
        proc.kill()
        proc.wait(10)


def test_a_cache_of_the_pickled_format_is_asked_again_with_a_few_lines_and_a_count(fake_server, tmp_path, caplog):
    """Replies an older version stored (pickled by diskcache's default reader) are never read: each is dropped and
    asked again once; the console gets the first few lines and the count, not one line per record."""
    from agentcausal.llm.reply_cache import WARNED_DROPS

    cache = tmp_path / "c"
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(WARNED_DROPS + 3)]
    fake_server.responder = lambda body: "new"
    gw = _gateway(fake_server, cache)
    for p in prompts:
        gw.chat("baseline", p)
    gw.close()
    keys = [k for k, *_ in _rows(cache)]
    with diskcache.Cache(str(cache)) as old:  # what the older version wrote under the same keys
        for k in keys:
            old.set(k, {"text": "old"})
    assert {m for _k, m, _f, _v in _rows(cache)} == {4}  # diskcache's pickle mode
    sent = fake_server.count
    gw = _gateway(fake_server, cache)
    with caplog.at_level(logging.WARNING, logger="agentcausal.llm.reply_cache"):
        assert [gw.chat("baseline", p) for p in prompts] == ["new"] * len(prompts)
    assert fake_server.count == sent + len(prompts) and gw.cache_dropped == len(prompts)
    assert len([r for r in caplog.records if "failed its check" in r.getMessage()]) == WARNED_DROPS
    assert f"{len(prompts)} record(s)" in gw.cache_notice() and "pickle format" in gw.cache_notice()
    gw.close()


def test_a_store_follows_a_cache_another_process_healed(tmp_path):
    late = ReplyCache(tmp_path / "c")
    late.set("a" * 64, {"text": "old"})
    ReplyCache(tmp_path / "c").heal("damaged elsewhere")  # another process moves it aside
    late.set("b" * 64, {"text": "new"})  # written into the new cache.db, not the moved copy
    late.close()
    fresh = ReplyCache(tmp_path / "c")
    assert fresh.get("b" * 64) == {"text": "new"} and fresh.get("a" * 64) == {"text": "old"}
    fresh.close()


def test_a_write_never_evicts_and_an_open_past_the_size_limit_evicts_the_oldest(tmp_path, monkeypatch):
    import agentcausal.llm.reply_cache as rc

    store = ReplyCache(tmp_path / "c")
    for i in range(40):
        store.set(f"{i:064x}", {"text": "x" * 2000})
    store.close()
    stored = ReplyCache(tmp_path / "c")._cache.volume()
    monkeypatch.setattr(rc, "SIZE_LIMIT_BYTES", stored)  # what the 40 records take: the open evicts nothing
    store = ReplyCache(tmp_path / "c")
    for i in range(40, 50):  # written past the limit: kept until the next open
        store.set(f"{i:064x}", {"text": "x" * 2000})
    assert store._cache.volume() > stored
    assert all(store.get(f"{i:064x}") is not None for i in range(50))
    store.close()
    reopened = ReplyCache(tmp_path / "c")
    assert reopened._cache.volume() <= stored
    assert reopened.get(f"{0:064x}") is None  # the first stored went first
    assert reopened.get(f"{49:064x}") is not None
