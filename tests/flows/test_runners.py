"""flows/runners.py: the task runner chosen from --runner/--dask-address/--dask-workers."""

import argparse
from pathlib import Path

import pytest
from prefect.task_runners import ThreadPoolTaskRunner

from agentcausal.exceptions import ConfigError
from agentcausal_cli.runner_options import add_runner_arguments
from flows.runners import (
    RunnerChoice,
    RunnerKind,
    SharedAPIDaskTaskRunner,
    dask_workers,
    runner_choice_from_args,
    task_runner,
    with_runner,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"


def _args(*argv):
    p = argparse.ArgumentParser()
    add_runner_arguments(p)
    return p.parse_args(list(argv))


def test_default_is_thread_pool_and_leaves_flow_unchanged():
    from flows.attribute import attribute

    assert runner_choice_from_args(_args()) == RunnerChoice()
    assert isinstance(task_runner(), ThreadPoolTaskRunner)
    assert with_runner(attribute, None) is attribute and with_runner(attribute, RunnerChoice()) is attribute


def test_dask_local_cluster_sized_by_workers():
    choice = runner_choice_from_args(_args("--runner", "dask", "--dask-workers", "2"))
    tr = task_runner(choice)
    assert isinstance(tr, SharedAPIDaskTaskRunner)
    assert tr.address is None and tr.cluster_kwargs["n_workers"] == 2 and tr.cluster_kwargs["processes"] is True


def test_dask_address_connects_to_existing_scheduler():
    from flows.attribute import attribute

    choice = runner_choice_from_args(_args("--runner", "dask", "--dask-address", "tcp://10.1.2.3:8786"))
    fl = with_runner(attribute, choice)
    assert fl is not attribute and fl.name == "attribute"
    assert isinstance(fl.task_runner, SharedAPIDaskTaskRunner) and fl.task_runner.address == "tcp://10.1.2.3:8786"
    # duplicate() (what the flow engine enters) keeps the subclass and the address
    dup = fl.task_runner.duplicate()
    assert type(dup) is SharedAPIDaskTaskRunner and dup.address == "tcp://10.1.2.3:8786"


@pytest.mark.parametrize(
    "argv",
    [
        ["--dask-address", "tcp://h:1"],
        ["--dask-workers", "2"],
        ["--runner", "dask", "--dask-address", "tcp://h:1", "--dask-workers", "2"],
        ["--runner", "dask", "--dask-workers", "0"],
    ],
)
def test_inconsistent_runner_options_are_config_errors(argv):
    with pytest.raises(ConfigError):
        runner_choice_from_args(_args(*argv))


def test_runner_choice_rejects_address_for_threads():
    with pytest.raises(ValueError, match="needs kind='dask'"):
        RunnerChoice(kind=RunnerKind.THREAD, dask_address="tcp://h:1")


def test_cli_attribute_rejects_runner_options_before_any_call(fake_server, tmp_path):
    from agentcausal_cli import main

    rc = main(["attribute", str(EXAMPLES), "--dask-address", "tcp://h:1", "--cache-dir", str(tmp_path)])
    assert rc == 2 and fake_server.count == 0


def test_dask_runner_makes_local_workers_non_daemonic_and_keeps_a_set_api_url():
    import dask
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url = "http://127.0.0.1:9/api"  # set: the runner must not start or substitute a temporary API
    with temporary_settings(updates={PREFECT_API_URL: url}):
        with task_runner(RunnerChoice(kind=RunnerKind.DASK, n_workers=1)):
            assert dask.config.get("distributed.worker.daemon") is False  # tasks may start processes
            assert PREFECT_API_URL.value() == url
    assert dask.config.get("distributed.worker.daemon") is True


def test_dask_local_cluster_listens_on_loopback_only():
    from distributed import LocalCluster

    tr = task_runner(RunnerChoice(kind=RunnerKind.DASK, n_workers=1))
    kw = tr.cluster_kwargs
    assert kw["host"] == "127.0.0.1" and kw["dashboard_address"].startswith("127.0.0.1:")
    with LocalCluster(**{**kw, "threads_per_worker": 1}) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        assert all(w.startswith("tcp://127.0.0.1:") for w in cluster.scheduler_info["workers"])
        http = [sock.getsockname()[0] for sock in cluster.scheduler.http_server._sockets.values()]
        assert http and set(http) == {"127.0.0.1"}  # the dashboard's HTTP server too
        with task_runner(RunnerChoice(kind=RunnerKind.DASK, dask_address=cluster.scheduler_address)) as runner:
            assert dask_workers(runner) == 1  # what a remote run's chunk size follows
    assert dask_workers(task_runner()) is None
