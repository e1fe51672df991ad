"""Fault injection: 20 synthetic traces, three methods, about 20 % of requests faulted (401, 429, 500, timeouts,
dropped connections, malformed and truncated replies) on the fake server (test double).

Every row of the faulty run either matches the fault-free run or is marked (failed, content_failed, degraded);
a plain rerun on a healthy endpoint retries the failed rows and the rows degraded by a failure of the run
(``status_detail`` "LCE failed (run)"), reuses the content-failed and content-degraded ones, ``--retry-failed``
recomputes those, and then every answer equals the fault-free run's.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.runs.options import RunOptions
from agentcausal.settings import RunSettings
from agentcausal.traces.jsonl import write_jsonl
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from agentcausal_fakes.profiles import profiles_toml
from agentcausal_fakes.responders import BenchResponder
from agentcausal_fakes.synthetic import synthetic_traces

METHODS = ["all_at_once", "binary_search", "dcfa"]
FAULTS = (401, 429, 500, "timeout", "drop", "malformed", "truncated")
ANSWER = ["trace_id", "method", "pred_step", "pred_agent"]


def _schedule(n: int, seed: int = 0) -> list:
    """About 20 % faults over ``n`` requests (``None`` = a normal reply); a 401 among the first requests."""
    rng = random.Random(seed)
    out = [rng.choice(FAULTS) if rng.random() < 0.2 else None for _ in range(n)]
    out[2] = 401
    return out


def _run(corpus: str, settings: RunSettings, out: Path) -> pd.DataFrame:
    from flows.attribute import attribute
    from flows.engine import run_dir_of

    # rows failed: the flow run ends Failed (flows.engine.FailedRows), its run folder written all the same
    run_dir = run_dir_of(
        lambda: attribute(
            AttributionRequest(paths=[corpus], methods=METHODS), RunOptions(out_dir=str(out)), settings=settings
        )
    )
    return pd.read_parquet(Path(run_dir) / "results.parquet").sort_values(["trace_id", "method"]).reset_index(drop=True)


def _settings(server: FakeOpenAIServer, tmp_path: Path, name: str, **kw) -> RunSettings:
    toml = profiles_toml(tmp_path / f"{name}.toml", server.base_url, 4, model=f"m-{name}")
    return RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / f"cache-{name}"), **kw)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_faulty_run_is_marked_and_recovers_to_the_fault_free_answers(tmp_path):
    corpus = str(write_jsonl(synthetic_traces(20, seed=3), tmp_path / "corpus.jsonl"))
    with FakeOpenAIServer(responder=BenchResponder()) as clean:
        reference = _run(corpus, _settings(clean, tmp_path, "clean"), tmp_path / "reference")
        n_requests = clean.count
    assert (reference["status"] == "complete").all()

    with FakeOpenAIServer(responder=BenchResponder(), faults=_schedule(n_requests), timeout_sleep_s=0.2) as srv:
        settings = _settings(srv, tmp_path, "faulty")
        faulty = _run(corpus, settings, tmp_path / "faulty")
        srv.faults.clear()  # the endpoint is healthy from here on
        marked = faulty["status"] != "complete"
        assert marked.any() and (faulty.loc[marked, "status"] != "").all()
        same = (faulty[ANSWER].astype(str) == reference[ANSWER].astype(str)).all(axis=1)
        assert (same | marked).all(), faulty.loc[~same & ~marked, ANSWER + ["status"]]  # no silent difference
        assert set(faulty.loc[faulty.status == "failed", "status_detail"]) <= {
            "LLMCallError",
            "EndpointUnreachableError",
        }

        before = srv.count
        plain = _run(corpus, settings, tmp_path / "plain")  # retries the failed rows, reuses the rest
        assert (plain["status"] != "failed").all()
        assert srv.count > before or not (faulty["status"] == "failed").any()
        assert plain.loc[faulty["status"] == "complete", "reused"].all()
        # a fallback after a failure of the run (transport, 401, timeout during LCE) is a failure of the run:
        # never cached, so the plain rerun recomputes it on the healthy endpoint; content-caused marks are kept
        of_run = (faulty["status"] == "degraded") & faulty["status_detail"].fillna("").str.startswith(
            "LCE failed (run)"
        )
        kept = faulty["status"].isin(["content_failed", "degraded"]) & ~of_run
        assert plain.loc[kept, "reused"].all() and (plain.loc[kept, "status"] == faulty.loc[kept, "status"]).all()
        assert (plain.loc[of_run, "status"] == "complete").all() and not plain.loc[of_run, "reused"].any()
        assert (plain.loc[of_run, ANSWER].astype(str) == reference.loc[of_run, ANSWER].astype(str)).all(axis=None)

        final = _run(corpus, settings.model_copy(update={"retry_failed": True}), tmp_path / "retried")
    pd.testing.assert_frame_equal(final[ANSWER], reference[ANSWER])
    assert (final["status"] == "complete").all()
    assert final.loc[plain["status"] == "complete", "reused"].all()  # complete rows are never recomputed
