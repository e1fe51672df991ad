"""Scheduling of chunk items without Prefect: every chunk of a process shares one first-in, first-out item pool
(never more items at once than its size, whatever the number of chunks), every item comes back once in job
order, a chunk that was already stored runs nothing, and the pool is sized from the routing's limits."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentcausal.llm import Profile, ProfileSet
from agentcausal.runs.scheduling import item_pool, item_pools_held, item_workers, routed_limits, run_items
from agentcausal.runs.store import ResultStore
from agentcausal.traces.model import Attribution


@pytest.fixture
def index(tmp_path):
    with ResultStore(tmp_path, "attribute", Attribution) as idx:
        yield idx


class Gauge:
    """Counts jobs running at once (the highest count seen) and the order in which jobs start."""

    def __init__(self):
        self.lock, self.now, self.peak, self.started = threading.Lock(), 0, 0, []

    def job(self, tid: str, hold: threading.Event):
        def run():
            with self.lock:
                self.now += 1
                self.peak = max(self.peak, self.now)
                self.started.append(tid)
            hold.wait(5)  # every job waits for the release: all the pool's threads get busy at once
            with self.lock:
                self.now -= 1
            return Attribution(trace_id=tid, method="m", step=0, agent="A")

        return run


def test_chunks_share_one_pool_and_never_exceed_its_size(index):
    gauge, hold, workers = Gauge(), threading.Event(), 5
    chunks = [[(f"k{c}-{i}", gauge.job(f"t{c}-{i}", hold)) for i in range(7)] for c in range(6)]  # 42 items
    with ThreadPoolExecutor(max_workers=len(chunks)) as orchestrator:  # chunk tasks run at once, as Prefect's
        futures = [orchestrator.submit(run_items, jobs, index, workers=workers) for jobs in chunks]
        deadline = time.time() + 10
        while gauge.now < workers and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # give a pool that would overrun its size the chance to do so
        assert gauge.now == workers
        hold.set()
        outs = [f.result() for f in futures]
    assert gauge.peak == workers
    assert outs == [[None] * 7] * 6  # every record stored, none held back
    assert [[index.get(f"k{c}-{i}").record.trace_id for i in range(7)] for c in range(6)] == [
        [f"t{c}-{i}" for i in range(7)] for c in range(6)
    ]
    assert sorted(gauge.started) == sorted(f"t{c}-{i}" for c in range(6) for i in range(7))  # each once
    assert all(index.get(f"k{c}-{i}") is not None for c in range(6) for i in range(7))
    assert item_pool(workers) is item_pool(workers)


def test_items_start_first_in_first_out(index):
    gauge, hold = Gauge(), threading.Event()
    hold.set()
    jobs = [(f"f{i}", gauge.job(f"t{i}", hold)) for i in range(12)]
    run_items(jobs, index, workers=1)  # one thread: the start order is the queue's order
    assert gauge.started == [f"t{i}" for i in range(12)]


def test_a_stored_chunk_runs_no_job(index):
    gauge, hold = Gauge(), threading.Event()
    hold.set()
    jobs = [(f"s{i}", gauge.job(f"t{i}", hold)) for i in range(4)]
    first = run_items(jobs, index, workers=3)
    again = run_items(jobs, index, workers=3)
    assert gauge.started.count("t0") == 1 and len(gauge.started) == 4 and again == first


def test_pool_size_follows_the_routed_limits():
    common = dict(base_url="http://127.0.0.1:9", model="m", timeout_s=5.0)
    profiles = ProfileSet(
        profiles={
            "chat": Profile(name="chat", max_concurrency=16, limit_group="g", **common),
            "emb": Profile(name="emb", kind="embedding", max_concurrency=3, **common),
            "unused": Profile(name="unused", max_concurrency=500, **common),
        },
        routings={"default": {"default": "chat", "embed": "emb"}},
        limit_groups={"g": 40},
    )
    assert sorted(routed_limits(profiles)) == [3, 40]  # the group's size, not the profile's; unrouted ignored
    workers = item_workers(routed_limits(profiles))
    assert 40 <= workers <= 5 * 40  # at least every slot of the largest limit, a bounded number of items per slot
    assert item_workers([]) >= 1


def test_chunks_survive_the_dask_round_trip():
    """Dask pickles a chunk task's arguments: Prefect's ``quote`` (a tuple subclass) comes back holding a
    one-element tuple of the chunk, which the thread runner never shows (the Dask runner's chunks failed on it)."""
    import pickle

    from prefect.utilities.annotations import quote

    from agentcausal.runs.half import Chunk, Job
    from agentcausal.runs.plan import Plan, PlanItem
    from agentcausal.settings import RunSettings
    from tasks.chunks import unquoted

    item = PlanItem(id="t0", path="/x", sha256="0")
    chunk = Chunk(
        kind="attribute",
        method="m",
        jobs=(Job(item, "m"),),
        keys=("k",),
        plan=Plan(kind="attribute", methods={}),
        settings=RunSettings(),
        not_before=0.0,
    )
    for wrapped in (quote(chunk), pickle.loads(pickle.dumps(quote(chunk))), (chunk,), [chunk], chunk):
        assert unquoted(wrapped) == chunk


def _item_threads(workers: int) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"items{workers}_")]


def _jobs(prefix: str, n: int):
    return [
        (f"{prefix}{i}", lambda i=i: Attribution(trace_id=f"{prefix}{i}", method="m", step=0, agent="A"))
        for i in range(n)
    ]


def test_the_last_run_ends_the_item_threads_and_their_store_connections(tmp_path):
    """A pool that outlived its run kept every item thread and its SQLite connection to each store it used."""
    store = ResultStore(tmp_path, "attribute", Attribution)
    try:
        with item_pools_held():
            with item_pools_held():  # a second run of the process, ending first: the pool stays for the other
                assert run_items(_jobs("a", 12), store, workers=7) == [None] * 12
            assert _item_threads(7)
            assert run_items(_jobs("b", 12), store, workers=7) == [None] * 12
            used = {t for t, _ in store._open}
            assert len(used - {threading.current_thread()}) >= 2  # item threads held connections of their own
        assert _item_threads(7) == []
        assert [t for t, _ in store._open] == [threading.current_thread()]  # the caller's own connection stays
        assert store.get("b3").record.trace_id == "b3"  # the store still answers, and a new run gets new threads
        with item_pools_held():
            assert run_items(_jobs("c", 3), store, workers=7) == [None] * 3
    finally:
        store.close()


def test_a_run_ended_by_an_exception_does_not_wait_for_its_items():
    hold = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt), item_pools_held():
        item_pool(3).submit(hold.wait, 10)
        raise KeyboardInterrupt
    assert time.monotonic() - t0 < 5
    hold.set()


def test_a_run_that_ends_after_a_stop_does_not_wait_for_its_items(monkeypatch):
    """A stop (a cancellation) ends the chunks without their items in flight; the run's end does not wait for them."""
    from agentcausal.runs import stop

    hold = threading.Event()
    t0 = time.monotonic()
    with item_pools_held():
        item_pool(3).submit(hold.wait, 10)
        monkeypatch.setattr(stop, "stop_requested", lambda: True)
    assert time.monotonic() - t0 < 5
    hold.set()
