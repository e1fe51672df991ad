"""The circuit breaker: a run whose endpoint answers every request with 503 stops after ``breaker_after``
consecutive dead jobs, marks the rest ``not_run`` naming the endpoint, caches nothing for them, and the next
run computes them. The engine driven by a thread pool (no Prefect), on the fake server (test double)."""

from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest

from agentcausal.attribution.plan import plan_attribution
from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.exceptions import EndpointDownError, EndpointUnreachableError, LLMCallError
from agentcausal.records import read_failures
from agentcausal.registry import ATTRIBUTION, ATTRIBUTION_METHODS, DISCOVERY_METHODS
from agentcausal.runs.breaker import CircuitBreaker
from agentcausal.runs.engine import RunEngine, drive, run_chunk
from agentcausal.runs.folder import load_run_meta
from agentcausal.settings import RunSettings
from tests.conftest import EXAMPLES, scripted_responder, write_profiles

JOBS = 4 * 10  # 4 example traces x 10 repeats of all_at_once (one request each when the endpoint answers)


def _run(settings, tmp_path, name):
    plan = plan_attribution(
        AttributionRequest(paths=[str(EXAMPLES)], methods=["all_at_once"], repeats=10),
        settings,
        ATTRIBUTION_METHODS,
        run_dir=tmp_path / name,
    )
    engine = RunEngine(ATTRIBUTION, plan, settings, chunk_size=1)
    with ThreadPoolExecutor(2) as pool:
        drive(
            engine,
            submit=lambda c: pool.submit(run_chunk, ATTRIBUTION, c),
            result=lambda f: f.exception() or f.result(),
        )
    return engine.finish(tmp_path / name)


def test_dead_endpoint_stops_the_run_and_marks_the_rest_not_run(fake_server, tmp_path):
    fake_server.responder = scripted_responder
    fake_server.inject(*[503] * 10_000)
    profiles = write_profiles(tmp_path / "profiles.toml", fake_server.base_url, max_concurrency=2)
    settings = RunSettings(profiles_path=profiles, cache_dir=str(tmp_path / "cache"), breaker_after=3)
    summary = _run(settings, tmp_path, "r1")

    assert summary.rows == JOBS and summary.failed + summary.not_run == JOBS
    assert summary.not_run >= JOBS // 2, "the run went on sending work to a dead endpoint"
    assert summary.stopped and f"fake at {fake_server.base_url}" in summary.stopped
    asked = len(fake_server.chat_requests)
    assert asked < JOBS * 2, f"{asked} requests to a dead endpoint"
    meta = load_run_meta(tmp_path / "r1")
    assert meta["rows"]["not_run"] == summary.not_run and meta["stopped"] == summary.stopped
    df = pd.read_parquet(tmp_path / "r1" / "results.parquet")
    not_run = df[df["status"] == "not_run"]
    assert len(not_run) == summary.not_run
    assert not_run["error"].str.startswith("EndpointDownError: endpoint down: fake at").all()
    assert set(df["status"]) == {"failed", "not_run"}
    kinds = read_failures(meta)  # run.json's typed tally: what the command line reads
    assert kinds["endpoint_down"].rows == summary.not_run and kinds["endpoint_down"].profile == "fake"
    unreachable = kinds["endpoint_unreachable"]
    assert (unreachable.rows, unreachable.profile, unreachable.endpoint) == (
        summary.failed,
        "fake",
        fake_server.base_url,
    )

    fake_server.faults.clear()  # the endpoint is back: the next run computes every row, nothing was cached
    summary2 = _run(settings, tmp_path, "r2")
    assert summary2.from_store == 0 and summary2.failed == summary2.not_run == 0 and summary2.stopped is None
    assert len(fake_server.chat_requests) - asked == JOBS


def test_breaker_counts_dead_endpoints_only_and_a_finished_job_resets_it():
    b = CircuitBreaker(2)
    dead = EndpointUnreachableError("p", "http://h/v1", "refused")
    assert not b.failure(LLMCallError("p", "s", 401, "bad key")) and not b.failure(ValueError("x"))
    assert not b.failure(dead)
    b.success()
    assert not b.failure(dead) and b.failure(dead) and b.is_open
    with pytest.raises(EndpointDownError, match="p at http://h/v1 failed 2 requests in a row"):
        b.guard(lambda: 1)()
    assert CircuitBreaker(0).failure(dead) is False  # 0: never opens


def test_breaker_setting_from_the_environment(monkeypatch):
    monkeypatch.setenv("AGENTCAUSAL_BREAKER_AFTER", "5")
    assert RunSettings.from_env().breaker_after == 5
    monkeypatch.delenv("AGENTCAUSAL_BREAKER_AFTER")
    assert RunSettings.from_env().breaker_after == 8
    import pickle

    err = EndpointDownError("p at u", 3, "refused")
    assert str(pickle.loads(pickle.dumps(err))) == str(err)  # crosses to Dask workers and back


def test_methods_not_routed_to_the_dead_endpoint_go_on(fake_server, tmp_path):
    from agentcausal.discovery.plan import plan_discovery
    from agentcausal.registry import DISCOVERY

    fake_server.inject(*[503] * 10_000)  # the LLM baseline's endpoint is dead; PC needs none
    profiles = write_profiles(tmp_path / "profiles.toml", fake_server.base_url, max_concurrency=2)
    settings = RunSettings(profiles_path=profiles, cache_dir=str(tmp_path / "cache"), breaker_after=2)
    seeds = list(range(6))
    plan = plan_discovery(
        DiscoveryRequest(datasets=["cancer", "earthquake"], methods=["llm_zero_shot", "pc"], seeds=seeds, n=200),
        settings,
        DISCOVERY_METHODS,
    )
    engine = RunEngine(DISCOVERY, plan, settings, chunk_size=1)
    with ThreadPoolExecutor(2) as pool:
        drive(
            engine, submit=lambda c: pool.submit(run_chunk, DISCOVERY, c), result=lambda f: f.exception() or f.result()
        )
    summary = engine.finish(tmp_path / "d")
    df = pd.read_parquet(tmp_path / "d" / "results.parquet")
    assert summary.stopped and summary.not_run > 0
    assert set(df.loc[df.method == "pc", "status"]) == {"complete"}  # statistical runs are not held back
    assert set(df.loc[df.method == "llm_zero_shot", "status"]) <= {"failed", "not_run"}
    assert CircuitBreaker(1).blocks(None) is False
    b = CircuitBreaker(1)
    b.failure(EndpointUnreachableError("p", "http://h/v1", "refused"))
    assert b.blocks({"p"}) and not b.blocks({"q"}) and b.blocks(None)
