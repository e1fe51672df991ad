"""One paid call per prompt across threads and processes; per-profile and grouped limits; wait vs request time.

All against the fake OpenAI-compatible server (test double), which counts
requests and records the peak number in flight.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentcausal.exceptions import EndpointUnreachableError
from agentcausal.llm import Gateway, Profile, ProfileSet
from agentcausal.llm.limits import semaphore
from agentcausal_fakes.fake_openai import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]

# A child process: waits until every child is ready, then sends its prompts with 4 threads.
CHILD = r"""
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from agentcausal.llm import Gateway, Profile, ProfileSet

base_url, cache_dir, barrier, me, n, order, prompts = sys.argv[1:8]
prompts = json.loads(prompts)
if order == "reversed":
    prompts = prompts[::-1]
profiles = ProfileSet(
    profiles={"fake": Profile(name="fake", base_url=base_url, model="fake-model", max_concurrency=4, timeout_s=10),
              "emb": Profile(name="emb", kind="embedding", base_url=base_url, model="fake-embed")},
    routings={"default": {"default": "fake", "embed": "emb"}})
gw = Gateway(profiles, cache_dir=cache_dir)
Path(barrier, me).touch()
while len(list(Path(barrier).iterdir())) < int(n):
    time.sleep(0.01)
with ThreadPoolExecutor(4) as pool:
    replies = list(pool.map(lambda p: gw.chat("baseline", [{"role": "user", "content": p}]), prompts))
    list(pool.map(lambda _: gw.embed("dcfa.embed", ["alpha", "beta", "alpha"]), range(4)))
gw.close()
print(json.dumps(replies))
"""


def profiles_for(base_url: str, **extra: Profile) -> ProfileSet:
    chat = Profile(name="fake", base_url=base_url, model="fake-model", max_concurrency=4, timeout_s=5)
    emb = Profile(name="emb", kind="embedding", base_url=base_url, model="fake-embed")
    return ProfileSet(
        profiles={"fake": chat, "emb": emb, **extra}, routings={"default": {"default": "fake", "embed": "emb"}}
    )


def run_threads(fn, n: int) -> list:
    """Run ``fn(i)`` in n threads started together; return results in order (re-raising the first error)."""
    out: list = [None] * n
    errors: list[BaseException] = []
    start = threading.Barrier(n)

    def work(i: int) -> None:
        start.wait()
        try:
            out[i] = fn(i)
        except BaseException as exc:  # re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


# ------------------------------------------------------------ single flight
def test_two_processes_on_one_cache_pay_once_per_distinct_prompt(tmp_path):
    prompts = [f"prompt {i}" for i in range(12)] + ["prompt 3", "prompt 7"]  # 12 distinct
    with FakeOpenAIServer(responder=lambda b: "re: " + b["messages"][-1]["content"], latency_s=0.05) as srv:
        barrier = tmp_path / "ready"
        barrier.mkdir()
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    CHILD,
                    srv.base_url,
                    str(tmp_path / "cache"),
                    str(barrier),
                    f"p{i}",
                    "2",
                    order,
                    json.dumps(prompts),
                ],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i, order in enumerate(("same", "reversed"))
        ]
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (_, err) in zip(procs, outs):
            assert p.returncode == 0, err
        assert len(srv.chat_requests) == 12
        assert sorted(r["messages"][-1]["content"] for r in srv.chat_requests) == sorted(set(prompts))
        assert len(srv.embedding_requests) == 1
        assert srv.embedding_requests[0]["input"] == ["alpha", "beta"]  # a repeated text is sent once
    first = json.loads(outs[0][0])
    assert first == [f"re: {p}" for p in prompts]


def test_identical_embedding_calls_from_many_threads_make_one_request(tmp_path):
    with FakeOpenAIServer(latency_s=0.1) as srv:
        gw = Gateway(profiles_for(srv.base_url), cache_dir=tmp_path / "c")
        vecs = run_threads(lambda i: gw.embed("dcfa.embed", ["same text", "other"], item="t"), 24)
        assert srv.count == 1
        assert all((v == vecs[0]).all() for v in vecs)
        u = gw.usage.by_stage("t")["dcfa.embed"]
        assert (u.calls, u.requests, u.cache_hits) == (24, 1, 46)
        assert gw.cache.keys_in_flight == 0
        gw.close()


def test_identical_chat_calls_wait_for_the_first_without_a_cache_dir_lock_left(tmp_path):
    with FakeOpenAIServer(responder=lambda b: "one", latency_s=0.1) as srv:
        gw = Gateway(profiles_for(srv.base_url), cache_dir=tmp_path / "c")
        assert run_threads(lambda i: gw.chat("baseline", [{"role": "user", "content": "q"}]), 8) == ["one"] * 8
        assert srv.count == 1
        gw.close()


# ------------------------------------------------------------------ limits
def test_two_profiles_in_one_limit_group_never_exceed_the_group_size():
    with FakeOpenAIServer(responder=lambda b: "ok", latency_s=0.1, faults=[500, 500, 429]) as srv:
        a = Profile(name="a", base_url=srv.base_url, model="m-a", max_concurrency=8, limit_group="box", timeout_s=5)
        b = Profile(name="b", base_url=srv.base_url, model="m-b", max_concurrency=8, limit_group="box", timeout_s=5)
        profiles = ProfileSet(
            profiles={"a": a, "b": b}, routings={"default": {"default": "a", "other": "b"}}, limit_groups={"box": 3}
        )
        gw = Gateway(profiles, cache_dir=None, max_retries=3)
        run_threads(lambda i: gw.chat("other" if i % 2 else "baseline", [{"role": "user", "content": f"q{i}"}]), 16)
        assert srv.max_in_flight <= 3
        assert srv.count == 16 + 3  # the faulted requests were retried
        # every slot came back, retries and backoff included
        sem = semaphore(profiles, a, srv.base_url)
        assert sem is semaphore(profiles, b, srv.base_url)
        assert all(sem.acquire(blocking=False) for _ in range(3)) and not sem.acquire(blocking=False)
        for _ in range(3):
            sem.release()
        gw.close()


def test_failed_calls_release_their_slots():
    with FakeOpenAIServer(faults=[500] * 10) as srv:
        p = Profile(name="solo", base_url=srv.base_url, model="solo-model", max_concurrency=2, timeout_s=5)
        profiles = ProfileSet(profiles={"solo": p}, routings={"default": {"default": "solo"}})
        gw = Gateway(profiles, cache_dir=None, max_retries=0)
        for i in range(3):
            with pytest.raises(EndpointUnreachableError):
                gw.chat("baseline", [{"role": "user", "content": f"q{i}"}])
        sem = semaphore(profiles, p, srv.base_url)
        assert sem.acquire(blocking=False) and sem.acquire(blocking=False)
        sem.release()
        sem.release()
        gw.close()


def test_two_profiles_on_one_endpoint_keep_their_own_limits():
    url = "http://127.0.0.1:9/v1"
    small = Profile(name="small", base_url=url, model="m", max_concurrency=1)
    big = Profile(name="big", base_url=url, model="m", max_concurrency=5)
    profiles = ProfileSet(profiles={"small": small, "big": big}, routings={"default": {"default": "small"}})
    assert semaphore(profiles, small, url) is not semaphore(profiles, big, url)


def test_limit_group_size_defaults_to_the_largest_member_limit_and_is_read_from_the_file(tmp_path):
    from agentcausal.llm import load_profiles

    toml = tmp_path / "p.toml"
    toml.write_text(
        "[limit_groups]\nbox = 2\n"
        '[profiles.a]\nbase_url = "http://x/v1"\nmodel = "a"\nmax_concurrency = 4\nlimit_group = "box"\n'
        '[profiles.b]\nbase_url = "http://x/v1"\nmodel = "b"\nmax_concurrency = 6\nlimit_group = "undeclared"\n'
    )
    ps = load_profiles(toml)
    assert ps.limit_group_size("box") == 2
    assert ps.limit_group_size("undeclared") == 6
    toml.write_text('[limit_groups]\nbox = 0\n[profiles.a]\nbase_url = "http://x/v1"\nmodel = "a"\n')
    from agentcausal.exceptions import ConfigError

    with pytest.raises(ConfigError, match="limit_groups"):
        load_profiles(toml)


# ---------------------------------------------------------- time accounting
def test_waiting_for_a_slot_is_counted_apart_from_request_time(tmp_path):
    with FakeOpenAIServer(responder=lambda b: "ok", latency_s=0.1) as srv:
        p = Profile(name="one", base_url=srv.base_url, model="m1", max_concurrency=1, timeout_s=5)
        profiles = ProfileSet(profiles={"one": p}, routings={"default": {"default": "one"}})
        gw = Gateway(profiles, cache_dir=tmp_path / "c")
        run_threads(lambda i: gw.chat("baseline", [{"role": "user", "content": f"q{i}"}], item="t"), 4)
        u = gw.usage.by_stage("t")["baseline"]
        assert u.requests == 4
        assert u.request_seconds > 0 and u.seconds == u.request_seconds
        assert u.wait_seconds > 0  # three of four calls queued behind the single slot
        gw.usage.reset()
        gw.chat("baseline", [{"role": "user", "content": "q0"}], item="t")  # a cache hit
        hit = gw.usage.by_stage("t")["baseline"]
        assert (hit.cache_hits, hit.requests, hit.request_seconds, hit.seconds) == (1, 0, 0.0, 0.0)
        gw.close()


def test_two_gateways_in_one_process_on_one_cache_pay_once(tmp_path):
    with FakeOpenAIServer(responder=lambda b: "one", latency_s=0.1) as srv:
        gws = [Gateway(profiles_for(srv.base_url), cache_dir=tmp_path / "c") for _ in range(2)]
        out = run_threads(lambda i: gws[i % 2].chat("baseline", [{"role": "user", "content": "q"}]), 6)
        assert out == ["one"] * 6 and srv.count == 1
        for gw in gws:
            gw.close()


def test_refresh_rereads_nothing_old_but_shares_this_runs_replies(tmp_path):
    with FakeOpenAIServer(replies=["old", "new", "unexpected"], latency_s=0.05) as srv:
        Gateway(profiles_for(srv.base_url), cache_dir=tmp_path / "c").chat(
            "baseline", [{"role": "user", "content": "q"}]
        )
        gw = Gateway(profiles_for(srv.base_url), cache_dir=tmp_path / "c", refresh=True)
        out = run_threads(lambda i: gw.chat("baseline", [{"role": "user", "content": "q"}]), 4)
        assert out == ["new"] * 4 and srv.count == 2
        gw.close()


def test_requests_count_the_clients_retries_and_failed_calls_are_recorded(tmp_path):
    with FakeOpenAIServer(responder=lambda b: "ok", faults=[429, 500]) as srv:
        gw = Gateway(profiles_for(srv.base_url), cache_dir=None, max_retries=3)
        assert gw.chat("baseline", [{"role": "user", "content": "q"}], item="t") == "ok"
        assert gw.usage.by_stage("t")["baseline"].requests == 3 == srv.count
        gw2 = Gateway(profiles_for(srv.base_url), cache_dir=None, max_retries=2)
        srv.inject(500, 500, 500)
        with pytest.raises(EndpointUnreachableError):
            gw2.chat("baseline", [{"role": "user", "content": "q2"}], item="f")
        u = gw2.usage.by_stage("f")["baseline"]
        assert (u.calls, u.requests, u.prompt_tokens) == (1, 3, 0) and u.request_seconds > 0
        gw.close()
        gw2.close()
