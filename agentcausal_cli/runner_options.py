"""The scale-out options shared by the pipeline verbs: ``--runner``, ``--dask-address``, ``--dask-workers``.

Only argparse here (no Prefect import, so ``agentcausal --help`` stays fast);
the handler turns the parsed options into a task runner with
``flows.runners.runner_choice_from_args`` and ``flows.runners.with_runner``.
"""

from __future__ import annotations

import argparse

__all__ = ["RUNNERS", "add_runner_arguments"]

#: accepted ``--runner`` values (``flows.runners.RunnerKind``)
RUNNERS = ("thread", "dask")


def add_runner_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--runner``, ``--dask-address`` and ``--dask-workers`` to a verb's parser.

    Parameters
    ----------
    parser : argparse.ArgumentParser of the verb

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_runner_arguments(p)
    >>> p.parse_args(["--runner", "dask", "--dask-address", "tcp://10.0.0.5:8786"]).dask_address
    'tcp://10.0.0.5:8786'
    """
    g = parser.add_argument_group("scale-out")
    g.add_argument(
        "--runner",
        choices=RUNNERS,
        default="thread",
        help="where tasks run: threads of this process (default) or a Dask cluster (prefect-dask)",
    )
    g.add_argument(
        "--dask-address",
        default=None,
        metavar="tcp://HOST:PORT",
        help="with --runner dask: a running Dask scheduler (default: start a local cluster)",
    )
    g.add_argument(
        "--dask-workers",
        type=int,
        default=None,
        metavar="N",
        help="with --runner dask and no address: local worker processes (default: Dask's choice)",
    )
