"""Scale-out with Dask: a 2-worker LocalCluster run of the ``attribute`` flow against the fake server (test
double) gives the same records as a thread-pool run, and the disk caches written by worker processes serve
later runs in other processes (Prefect persisted results and the gateway's LLM reply cache); the heartbeat counts
the calls and tokens of the chunks the workers ran."""

import shutil

import pandas as pd
import pytest

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.runs import heartbeat
from agentcausal.runs.options import RunOptions
from tests.conftest import EXAMPLES, METHODS, requests_by_prompt, settings_at

KEY = ["trace_id", "method"]
SAME = [
    "pred_step",
    "pred_agent",
    "error",
    "undetermined",
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "settings_json",
    "models_json",
    "trace_hash",
]


def _frame(run_dir):
    return pd.read_parquet(f"{run_dir}/results.parquet").sort_values(KEY).reset_index(drop=True)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_dask_two_workers_match_thread_pool_and_share_caches(scripted_server, profiles_file, tmp_path, capsys):
    from distributed import Client, LocalCluster

    from agentcausal_cli import main
    from flows.attribute import run_attribute
    from flows.runners import RunnerChoice, RunnerKind

    scripted_server.latency_s = 0.05
    corpus = [str(EXAMPLES)]

    # 1. thread pool, caches in A
    thread_dir = run_attribute(
        AttributionRequest(paths=corpus, methods=METHODS),
        RunOptions(out_dir=str(tmp_path / "thread")),
        settings=settings_at(profiles_file, tmp_path / "A"),
    )
    n_thread = scripted_server.count
    once = requests_by_prompt(scripted_server)
    assert n_thread > 0 and set(once.values()) == {1}

    # 2. the CLI on a 2-worker LocalCluster (worker processes), caches in B
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None) as cluster:
        rc = main(
            [
                "attribute",
                *corpus,
                *sum((["-m", m] for m in METHODS), []),
                "--profiles",
                profiles_file,
                "--cache-dir",
                str(tmp_path / "B"),
                "--out",
                str(tmp_path / "dask"),
                "--no-progress",
                "--runner",
                "dask",
                "--dask-address",
                cluster.scheduler_address,
            ]
        )
        assert rc == 0, capsys.readouterr().err
        with Client(cluster.scheduler_address) as client:
            # every worker process built a gateway, i.e. ran attribution tasks
            per_worker = client.run(
                lambda: (
                    __import__("agentcausal.runs.engine", fromlist=["gateway_for"]).gateway_for.cache_info().currsize
                )
            )
        assert len(per_worker) == 2 and all(v >= 1 for v in per_worker.values()), per_worker
        assert scripted_server.count == 2 * n_thread, "the Dask run asked other prompts or asked some twice"
        assert set(requests_by_prompt(scripted_server).values()) == {2}
        thread, dask = _frame(thread_dir), _frame(tmp_path / "dask")
        assert len(dask) == 4 * len(METHODS) and not dask.duplicated(KEY).any()
        pd.testing.assert_frame_equal(thread[KEY + SAME], dask[KEY + SAME])
        assert (dask["requests"] > 0).all()
        # the heartbeat's calls and tokens on Dask: the chunks ran in the workers, the flow counted them as they
        # came back (the meter of the latest attribute run in this process)
        meter = next(m for (kind, _), m in reversed(heartbeat._meters.items()) if kind == "attribute")
        assert meter.calls == dask["calls"].sum() > 0
        assert meter.tokens == (dask["prompt_tokens"] + dask["completion_tokens"]).sum() > 0

        # 3. the LLM reply cache written by the test process in run 1 (copied, without Prefect results): the
        #    tasks run in the worker processes and every LLM call is a cache hit
        shutil.copytree(tmp_path / "A" / "llm", tmp_path / "C" / "llm")
        run3 = run_attribute(
            AttributionRequest(paths=corpus, methods=METHODS),
            RunOptions(out_dir=str(tmp_path / "dask3")),
            settings=settings_at(profiles_file, tmp_path / "C"),
            runner=RunnerChoice(kind=RunnerKind.DASK, dask_address=cluster.scheduler_address),
        )
        assert scripted_server.count == 2 * n_thread
        df3 = _frame(run3)
        hit_same = [c for c in SAME if c not in ("prompt_tokens", "completion_tokens")]  # hits carry no tokens
        pd.testing.assert_frame_equal(thread[KEY + hit_same], df3[KEY + hit_same])
        assert (df3["requests"] == 0).all() and (df3["cache_hits"] == df3["calls"]).all()

    # 4. a new local cluster (made by the runner, 2 workers) reuses B's results store written by the old
    #    workers: no request, identical records (same seconds and requests: the tasks did not rerun)
    run4 = run_attribute(
        AttributionRequest(paths=corpus, methods=METHODS),
        RunOptions(out_dir=str(tmp_path / "dask4")),
        settings=settings_at(profiles_file, tmp_path / "B"),
        runner=RunnerChoice(kind=RunnerKind.DASK, n_workers=2),
    )
    assert scripted_server.count == 2 * n_thread
    pd.testing.assert_frame_equal(
        dask[KEY + SAME + ["seconds", "requests"]], _frame(run4)[KEY + SAME + ["seconds", "requests"]]
    )
