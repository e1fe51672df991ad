"""The results store and the engine's resume without Prefect: what is stored, what a rerun reuses, what a
record that fails its check becomes, and chunks that resume."""

import logging
import sqlite3
import time

import pytest

from agentcausal.exceptions import EndpointUnreachableError
from agentcausal.integrity import heals_of
from agentcausal.runs.engine import RunEngine, drive
from agentcausal.runs.half import Job
from agentcausal.runs.plan import MethodPlan, Plan, PlanItem
from agentcausal.runs.scheduling import chunked, run_items
from agentcausal.runs.store import ResultStore
from agentcausal.settings import RunSettings
from agentcausal.traces.model import Attribution


def _att(tid: str, status: str = "complete") -> Attribution:
    return Attribution(
        trace_id=tid,
        method="m",
        step=1,
        agent="A",
        status=status,
        error=None if status in ("complete", "degraded") else "E: x",
    )


@pytest.fixture
def store(tmp_path):
    with ResultStore(tmp_path, "attribute", Attribution) as s:
        yield s


def test_failed_records_are_never_stored_and_reused_marks_dropped(store):
    assert store.put("a", _att("a", "failed")) is False and store.get("a") is None
    assert store.put("b", _att("b").model_copy(update={"reused": True}))
    assert store.get("b").record == _att("b")


def test_a_record_that_no_longer_loads_counts_as_absent_and_is_counted(store):
    store.put("x", _att("x"))
    db = sqlite3.connect(store.path)
    db.execute('UPDATE records SET body = \'{"not": "an attribution"}\'')  # a record of another schema ...
    db.commit()
    assert store.get("x") is None and store.dropped == 1 and len(store) == 0  # ... dropped, counted, gone


@pytest.mark.parametrize(
    "tamper",
    [
        "UPDATE records SET body = replace(body, '\"step\":1', '\"step\":2')",  # one changed value: a flipped bit
        "UPDATE records SET key = 'other'",  # a record moved under another key
        "UPDATE records SET body = 'cos\nsystem\n(S''touch /tmp/pwned''\ntR.'",  # a pickle payload: never run
    ],
)
def test_a_record_that_fails_its_checksum_is_dropped_counted_and_never_served(store, tamper):
    store.put("k", _att("k"))
    db = sqlite3.connect(store.path)
    db.execute(tamper)
    db.commit()
    assert store.get("k") is None and store.get("other") is None and store.dropped == 1
    store.put("k", _att("k"))  # recomputed and stored again: never stuck
    assert store.get("k").record == _att("k")


def test_a_store_file_that_is_no_database_is_moved_aside_in_one_line_and_a_new_one_begins(tmp_path, caplog):
    store = ResultStore(tmp_path, "attribute", Attribution)
    path = store.path
    store.close()
    path.write_bytes(b"not a database" * 100)
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    with caplog.at_level(logging.WARNING, logger="agentcausal.runs.store"):
        healed = ResultStore(tmp_path, "attribute", Attribution)
    (line,) = [r.getMessage() for r in caplog.records]
    (aside,) = path.parent.glob("records.sqlite3.damaged-*")
    assert str(path) in line and str(aside) in line and "not an SQLite database" in line and "\n" not in line
    assert aside.read_bytes() == b"not a database" * 100  # the damaged copy, kept as it was
    assert heals_of(path)[-1].damaged == str(aside) and healed.heals == heals_of(path)[-1:]
    assert len(healed) == 0 and healed.put("k", _att("k")) and healed.get("k").record == _att("k")
    healed.close()


def _many(store, n=3000):
    for i in range(n):
        store.put(f"k{i:05d}", _att(f"t{i}").model_copy(update={"reason": "r" * 200}))
    store.close()
    for suffix in ("-wal", "-shm"):
        store.path.with_name(store.path.name + suffix).unlink(missing_ok=True)
    return [f"k{i:05d}" for i in range(n)]


def test_damage_found_after_opening_heals_keeping_every_readable_row(tmp_path):
    store = ResultStore(tmp_path, "attribute", Attribution)
    keys = _many(store)
    data = bytearray(store.path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 8192] = b"\xff" * 8192  # two pages in the middle: the header and the size still right
    store.path.write_bytes(bytes(data))
    again = ResultStore(tmp_path, "attribute", Attribution)
    got = again.get_many(keys)  # SQLite finds the damage here: healed, and the read runs on the new store
    (heal,) = again.heals
    assert "malformed" in heal.reason and 0 < heal.kept < len(keys)
    assert sum(g is not None for g in got) == heal.kept == len(again)
    assert all(g.record == _att(g.record.trace_id).model_copy(update={"reason": "r" * 200}) for g in got if g)
    assert again.dropped == 0  # nothing kept fails its check
    again.close()


def test_a_truncated_store_heals_and_keeps_what_its_pages_still_hold(tmp_path):
    store = ResultStore(tmp_path, "attribute", Attribution)
    keys = _many(store)
    store.path.write_bytes(store.path.read_bytes()[: store.path.stat().st_size // 2])
    again = ResultStore(tmp_path, "attribute", Attribution)
    (heal,) = again.heals
    assert heal.reason.startswith("truncated") and heal.kept == len(again) < len(keys)
    again.close()


class ToyHalf:
    """A half whose jobs answer from a dict: what ran is recorded, status per item id."""

    kind, record_type, default_chunk_size, remote_chunk_range = "attribute", Attribution, 2, (2, 2)

    def __init__(self, status=None):
        self.status, self.ran, self.rows = dict(status or {}), [], []

    def job_counts(self, plan):
        return {m: plan.item_count for m in plan.methods}

    def jobs(self, plan):
        return (Job(i, m) for i in plan.iter_items() for m in plan.methods)

    submission_order = jobs

    def keyer(self, plan, settings):
        return lambda job: f"{job.item.id}:{job.method}"

    def run(self, job, plan, settings):
        self.ran.append(job.item.id)
        return _att(job.item.id, self.status.get(job.item.id, "complete"))

    def storable(self, record):
        return True

    def failed(self, job, exc):
        return _att(job.item.id, "failed")

    def item_workers(self, settings):
        return 2

    def sink(self, plan, run_dir, meta):
        half = self

        class Sink:
            def add(self, job, record):
                half.rows.append((job.item.id, record.status, record.reused))

            def close(self):
                return {}

        return Sink()


def _plan(n):
    return Plan(
        kind="attribute",
        items=[PlanItem(id=f"t{i}", path="/x", sha256="0") for i in range(n)],
        item_count=n,
        methods={"m": MethodPlan(preset="paper", variant="default", settings={}, stages={})},
    )


def _run(half, plan, settings, tmp_path, name):
    from concurrent.futures import ThreadPoolExecutor

    from agentcausal.runs.engine import run_chunk

    engine = RunEngine(half, plan, settings, chunk_size=2)
    with ThreadPoolExecutor(2) as pool:
        drive(engine, submit=lambda c: pool.submit(run_chunk, half, c), result=lambda f: f.exception() or f.result())
    half.rows = []
    engine.finish(tmp_path / name)
    return engine


def test_the_engine_reuses_stored_runs_missing_and_retries_failed_statuses(tmp_path):
    settings = RunSettings(cache_dir=str(tmp_path / "cache"))
    plan = _plan(4)
    first = ToyHalf({"t1": "content_failed", "t2": "degraded"})
    _run(first, plan, settings, tmp_path, "r1")
    assert sorted(first.ran) == ["t0", "t1", "t2", "t3"] and not any(r for _, _, r in first.rows)
    plain = ToyHalf()
    e = _run(plain, plan, settings, tmp_path, "r2")
    assert plain.ran == [] and e.from_store == 4 and all(r for _, _, r in plain.rows)
    assert [s for _, s, _ in plain.rows] == ["complete", "content_failed", "degraded", "complete"]
    retry = ToyHalf()
    _run(retry, plan, settings.model_copy(update={"retry_failed": True}), tmp_path, "r3")
    assert sorted(retry.ran) == ["t1", "t2"]  # the content_failed and degraded ones, computed again
    assert [(i, s, r) for i, s, r in retry.rows] == [
        ("t0", "complete", True),
        ("t1", "complete", False),
        ("t2", "complete", False),
        ("t3", "complete", True),
    ]
    fresh = ToyHalf()
    _run(fresh, plan, settings.model_copy(update={"refresh": True}), tmp_path, "r4")
    assert sorted(fresh.ran) == ["t0", "t1", "t2", "t3"] and not any(r for _, _, r in fresh.rows)


def test_chunks_take_the_halfs_remote_size_where_they_run_in_other_processes(tmp_path):
    settings = RunSettings(cache_dir=str(tmp_path / "cache"))
    half = ToyHalf()
    half.default_chunk_size, half.remote_chunk_range = 2, (5, 20)
    plan = _plan(400)
    assert RunEngine(half, plan, settings).chunk_len == {"m": 2}
    assert RunEngine(half, plan, settings, remote=True).chunk_len == {"m": 5}  # workers unknown: the smallest
    for workers, size in ((None, 5), (2, 20), (8, 13), (40, 5)):  # about four chunks a worker, within (5, 20)
        assert RunEngine(half, plan, settings, remote=True, workers=lambda w=workers: w).chunk_len == {"m": size}
    asked = []
    engine = RunEngine(half, plan, settings, chunk_size=3, remote=True, workers=lambda: asked.append(1) or 2)
    assert engine.chunk_len == {"m": 3} and not asked  # the run's own size: the cluster is not asked
    assert RunEngine(half, plan, settings, chunk_size=0, remote=True, workers=lambda: 2).chunk_len == {
        "m": 20
    }  # 0: the default


def test_a_run_the_store_answers_whole_never_asks_for_the_workers(tmp_path):
    settings = RunSettings(cache_dir=str(tmp_path / "cache"))
    plan = _plan(6)
    _run(ToyHalf(), plan, settings, tmp_path, "first")
    asked = []
    for name, run_plan in (("again", plan), ("grown", _plan(9))):
        half = ToyHalf()
        engine = RunEngine(half, run_plan, settings, remote=True, workers=lambda n=name: asked.append(n) or 2)
        submitted: list = []
        drive(engine, submit=lambda c, s=submitted: s.append(c) or _done(c), result=lambda f: None)
        assert bool(submitted) == (name == "grown")  # three new jobs to run
    assert asked == ["grown"]  # asking may start a cluster: only a run with chunks to run asks, once


def _done(value):
    from concurrent.futures import Future

    fut: Future = Future()
    fut.set_result(value)
    return fut


def test_chunk_stores_each_item_and_a_retry_repeats_only_the_failed_one(store):
    calls = []
    flaky = {"t1": 1}

    def job(tid):
        def run():
            calls.append(tid)
            if flaky.get(tid):
                flaky[tid] -= 1
                raise EndpointUnreachableError("p", "http://x", "connection refused")
            return _att(tid)

        return run

    jobs = [(f"key-{t}", job(t)) for t in ("t0", "t1", "t2")]
    start = time.time()
    with pytest.raises(EndpointUnreachableError):
        run_items(jobs, store, not_before=start)
    assert sorted(calls) == ["t0", "t1", "t2"] and store.get("key-t1") is None and store.get("key-t0")
    out = run_items(jobs, store, not_before=start)  # the orchestrator's retry
    assert out == [None, None, None] and sorted(calls) == ["t0", "t1", "t1", "t2"]
    assert [store.get(f"key-{t}").record.trace_id for t in ("t0", "t1", "t2")] == ["t0", "t1", "t2"]
    # a record stored before not_before is recomputed (refresh / retry-failed)
    run_items(jobs[:1], store, not_before=time.time() + 1)
    assert calls.count("t0") == 2


def test_chunked_keeps_order_and_sizes():
    assert chunked(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert chunked([4, 9], 0) == [[4], [9]]


def test_the_cli_names_a_store_it_cannot_heal_in_one_line_before_any_work(fake_server, tmp_path, capsys, monkeypatch):
    import errno

    import agentcausal.runs.store as store_module
    from agentcausal_cli import main
    from tests.conftest import EXAMPLES, write_profiles

    store = ResultStore(tmp_path / "cache", "attribute", Attribution)
    path = store.path
    store.close()
    path.write_bytes(b"\x00garbage" * 512)
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)

    def refused(path, inode=None):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(store_module, "move_aside", refused)  # a folder the run may not rename in
    rc = main(
        [
            "attribute",
            str(EXAMPLES),
            "--profiles",
            write_profiles(tmp_path / "p.toml", fake_server.base_url),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and str(path) in err and len(err.strip().splitlines()) == 1
    assert "could not be moved aside" in err and "mv " in err
    assert fake_server.count == 0 and not (tmp_path / "run").exists()  # refused before any request or file


def test_two_handles_on_one_damaged_store_heal_it_once(tmp_path):
    store = ResultStore(tmp_path, "attribute", Attribution)
    keys = _many(store)
    data = bytearray(store.path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 8192] = b"\xff" * 8192
    store.path.write_bytes(bytes(data))
    first, second = ResultStore(tmp_path, "attribute", Attribution), ResultStore(tmp_path, "attribute", Attribution)
    kept = sum(g is not None for g in first.get_many(keys))  # the first to find the damage heals it
    assert sum(g is not None for g in second.get_many(keys)) == kept  # the second reads the healed store
    assert len(list(store.path.parent.glob("records.sqlite3.damaged-*[0-9]Z"))) == 1
    assert len(first.heals) == 1 and second.heals == []
    first.close()
    second.close()


def test_a_handle_follows_a_store_another_process_healed(tmp_path):
    late = ResultStore(tmp_path, "attribute", Attribution)
    late.put("old", _att("old"))
    ResultStore(tmp_path, "attribute", Attribution).heal("damaged elsewhere")  # another process moves it aside
    assert late.put("new", _att("new"))  # written into the new file, not the moved copy
    fresh = ResultStore(tmp_path, "attribute", Attribution)
    assert fresh.get("new").record == _att("new") and fresh.get("old").record == _att("old")  # "old" was kept
    late.close()
    fresh.close()


def test_a_rerun_reports_the_jobs_the_store_answers_in_one_step_not_one_per_batch(tmp_path):
    settings = RunSettings(cache_dir=str(tmp_path / "cache"))
    plan = _plan(600)  # three batches of the plan read against the store
    _run(ToyHalf(), plan, settings, tmp_path, "first")
    steps: list[int] = []
    rerun = RunEngine(ToyHalf(), plan, settings, chunk_size=2, on_progress=steps.append)
    assert list(rerun.chunks()) == [] and steps == [600]  # one line and one artifact update, not three
    half = ToyHalf()
    partly = RunEngine(half, _plan(610), settings, chunk_size=2, on_progress=steps.append)
    steps.clear()
    chunks = list(partly.chunks())  # t600-t609 are new: what the store answered goes out before their first chunk
    assert len(chunks) == 5 and sum(steps) == 600 and len(steps) < 3
