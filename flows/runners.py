"""Task-runner selection for the flows: a thread pool by default, Dask (``prefect-dask``) to scale out.

Every flow keeps Prefect's default thread pool unless a caller swaps the
runner with ``flow.with_options(task_runner=...)``; :func:`with_runner` does
that from the two CLI options ``--runner {thread,dask}`` and
``--dask-address``::

    from flows.attribute import attribute
    from flows.runners import RunnerChoice, with_runner

    run = with_runner(attribute, RunnerChoice(kind="dask"))          # a local cluster, one per flow run
    run = with_runner(attribute, RunnerChoice(kind="dask", dask_address="tcp://10.0.0.5:8786"))
    run_dir = run(plan=AttributionRequest(paths=["data/examples"], methods=["all_at_once"]))

What workers share
------------------
* **Prefect API.** Task runs are reported from the worker processes. With
  no ``PREFECT_API_URL`` Prefect would start one temporary API server per
  worker process (each with its own database, about 10 s each); the Dask
  runner here asks for the flow process's server once (the shared local one,
  :mod:`flows.shared_api`, or a temporary one) and hands its URL to the
  workers instead. For a remote cluster set ``PREFECT_API_URL``
  to a server every worker can reach (``prefect server start``).
* **Caches.** The LLM reply cache (diskcache under ``<cache_dir>/llm``,
  SQLite in WAL mode) and Prefect's persisted task results
  (``<cache_dir>/prefect``, one file per cache key) are safe for several
  processes at once; workers on other machines need the same path on a
  shared file system. Pass an absolute ``--cache-dir`` (relative paths are
  resolved in each worker's working directory).
* **LLM endpoints.** Concurrency limits (``max_concurrency`` in a profile)
  hold per process: N workers may send N times as many requests. With the
  ``embedded`` profile every worker would start its own llama.cpp server;
  run ``agentcausal serve-local`` once and export the ``AGENTCAUSAL_EMBEDDED_URL``
  and ``AGENTCAUSAL_EMBEDDED_KEY`` it prints so that all of them share it.
* **Network.** A local cluster listens on loopback only: scheduler and
  workers on 127.0.0.1, the scheduler's HTTP server (Dask dashboard) on
  127.0.0.1 and a free port (Dask's default binds every interface on :8787).
"""

from __future__ import annotations

import functools
from enum import Enum
from typing import Any, ParamSpec, TypeVar

from prefect import Flow
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentcausal.exceptions import ConfigError
from flows import api_server

api_server.install()  # the shared local API server, or a temporary one that dies with this process (kill -9 too)

__all__ = [
    "RunnerKind",
    "RunnerChoice",
    "SharedAPIDaskTaskRunner",  # noqa: F822 (module __getattr__)
    "task_runner",
    "dask_workers",
    "with_runner",
    "runner_choice_from_args",
]

P = ParamSpec("P")
R = TypeVar("R")


class RunnerKind(str, Enum):
    """Where mapped tasks run."""

    THREAD = "thread"  #: threads of the flow process (Prefect's default)
    DASK = "dask"  #: a Dask cluster: an existing scheduler, or a local cluster started for the run


class RunnerChoice(BaseModel):
    """The task runner a flow run should use.

    Attributes
    ----------
    kind : RunnerKind
    dask_address : str or None, a running scheduler (``tcp://host:8786``); None starts a
        ``distributed.LocalCluster`` for the flow run and closes it afterwards
    n_workers : int or None, local-cluster worker processes (default: Dask's choice from the cores)
    threads_per_worker : int, threads per local worker; tasks mostly wait on HTTP, so more than one
    max_workers : int or None, thread-pool size for ``thread`` (default: Prefect's)
    """

    model_config = ConfigDict(frozen=True)

    kind: RunnerKind = RunnerKind.THREAD
    dask_address: str | None = None
    n_workers: int | None = Field(default=None, ge=1)
    threads_per_worker: int = Field(default=4, ge=1)
    max_workers: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _address_needs_dask(self) -> "RunnerChoice":
        if self.kind is RunnerKind.THREAD and self.dask_address:
            raise ValueError("a Dask scheduler address needs kind='dask'")
        if self.dask_address and self.n_workers is not None:
            raise ValueError("n_workers sizes a local cluster; an existing scheduler has its own workers")
        return self


@functools.cache
def _shared_api_dask_runner() -> type:
    """The :class:`SharedAPIDaskTaskRunner` class, built on first use: ``prefect_dask`` (and Dask with it, about
    30 MB and 0.5 s) is imported only by a run that asks for Dask."""
    from prefect_dask import DaskTaskRunner  # an optional dependency, and a start-up cost (~30 MB, 0.5 s)

    class SharedAPIDaskTaskRunner(DaskTaskRunner):
        """``prefect_dask.DaskTaskRunner`` whose workers report to the flow process's Prefect API.

        Without ``PREFECT_API_URL`` (Prefect's temporary, "ephemeral" API), the
        stock runner lets every worker process start a temporary API server of
        its own: slow, and their task runs never reach the flow's database. On
        entering, this runner starts (or finds) the flow process's temporary
        server and puts its URL in the settings that Prefect serialises with
        every submitted task. With ``PREFECT_API_URL`` set it behaves as
        ``DaskTaskRunner``. A local cluster it starts has non-daemonic worker
        processes, so that tasks may start processes of their own (the discovery
        algorithm pool does); start remote workers with
        ``DASK_DISTRIBUTED__WORKER__DAEMON=False dask worker ...`` for the same.

        Parameters
        ----------
        As ``prefect_dask.DaskTaskRunner`` (``address``, ``cluster_class``, ``cluster_kwargs``, ...).
        """

        def __enter__(self) -> "SharedAPIDaskTaskRunner":
            import dask  # with prefect_dask: the optional Dask dependency, imported only by a Dask run

            super().__enter__()
            # local workers may start processes of their own (the discovery algorithm pool): not daemonic
            self._exit_stack.enter_context(dask.config.set({"distributed.worker.daemon": False}))
            if not PREFECT_API_URL.value():
                from prefect.server.api.server import SubprocessASGIServer  # start-up cost: Prefect's server code

                server = SubprocessASGIServer()  # a per-process singleton: the one the flow's client uses
                server.start()
                self._exit_stack.enter_context(temporary_settings(updates={PREFECT_API_URL: server.api_url}))
            return self

    SharedAPIDaskTaskRunner.__qualname__ = "SharedAPIDaskTaskRunner"  # pickled by reference: this module's name
    return SharedAPIDaskTaskRunner


def dask_workers(runner: Any) -> int | None:
    """The worker processes of a Dask task runner's cluster, as its scheduler counts them now (asking starts the
    runner's local cluster, as its first task would); None for another runner, an empty cluster, or a scheduler
    that does not answer. An adaptive cluster is counted as it stands when asked."""
    if not hasattr(type(runner), "client"):  # not a DaskTaskRunner
        return None
    try:
        return len(runner.client.nthreads()) or None
    except Exception:  # the chunks still run, in chunks of the smallest size
        return None


def __getattr__(name: str) -> Any:  # ``from flows.runners import SharedAPIDaskTaskRunner`` imports Dask then
    if name == "SharedAPIDaskTaskRunner":
        return _shared_api_dask_runner()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def task_runner(choice: RunnerChoice | None = None) -> TaskRunner[Any]:
    """The Prefect task runner for a :class:`RunnerChoice`.

    Parameters
    ----------
    choice : RunnerChoice or None (a default thread pool)

    Returns
    -------
    ``ThreadPoolTaskRunner`` for ``thread``; :class:`SharedAPIDaskTaskRunner` for ``dask``,
    connected to ``dask_address`` or starting a ``distributed.LocalCluster`` of worker
    processes (``n_workers`` x ``threads_per_worker``) on 127.0.0.1, dashboard included.

    Examples
    --------
    >>> type(task_runner(RunnerChoice(kind="dask", dask_address="tcp://127.0.0.1:8786"))).__name__
    'SharedAPIDaskTaskRunner'
    >>> type(task_runner()).__name__
    'ThreadPoolTaskRunner'
    """
    choice = choice or RunnerChoice()
    if choice.kind is RunnerKind.THREAD:
        return ThreadPoolTaskRunner(max_workers=choice.max_workers)
    if choice.dask_address:
        return _shared_api_dask_runner()(address=choice.dask_address)
    cluster: dict[str, Any] = {
        "processes": True,
        "threads_per_worker": choice.threads_per_worker,
        "host": "127.0.0.1",  # scheduler and workers on loopback only
        "dashboard_address": "127.0.0.1:0",  # loopback, a free port (Dask's default: every interface, :8787)
    }
    if choice.n_workers is not None:
        cluster["n_workers"] = choice.n_workers
    return _shared_api_dask_runner()(cluster_kwargs=cluster)


def with_runner(flow: Flow[P, R], choice: RunnerChoice | None = None) -> Flow[P, R]:
    """``flow`` with the task runner of ``choice`` (``flow.with_options(task_runner=...)``).

    Parameters
    ----------
    flow : a Prefect flow (e.g. ``flows.attribute.attribute``)
    choice : RunnerChoice or None; None and the default thread choice return ``flow`` unchanged

    Returns
    -------
    The same kind of flow, runnable with the same parameters.
    """
    if choice is None or choice == RunnerChoice():
        return flow
    return flow.with_options(task_runner=task_runner(choice))


def runner_choice_from_args(args: Any) -> RunnerChoice:
    """The :class:`RunnerChoice` of parsed ``--runner``/``--dask-address``/``--dask-workers`` options.

    Parameters
    ----------
    args : argparse.Namespace from a parser set up by ``agentcausal_cli.runner_options.add_runner_arguments``

    Returns
    -------
    RunnerChoice

    Raises
    ------
    ConfigError
        If ``--dask-address`` or ``--dask-workers`` is given without ``--runner dask``, or both are given.
    """
    kind = getattr(args, "runner", "thread") or "thread"
    address = getattr(args, "dask_address", None)
    workers = getattr(args, "dask_workers", None)
    if kind != RunnerKind.DASK.value and (address or workers):
        raise ConfigError("--dask-address and --dask-workers need --runner dask")
    try:
        return RunnerChoice(kind=RunnerKind(kind), dask_address=address, n_workers=workers)
    except ValueError as exc:
        raise ConfigError(f"invalid runner options: {exc}") from exc
