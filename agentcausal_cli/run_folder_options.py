"""The run-folder and scheduling options of the pipeline verbs (``attribute``, ``discover``).

* ``--name NAME``: the run's name, kept in ``run.json`` (``name``) and used as the Prefect flow-run name.
* ``--resume`` / ``--force``: what to do when ``--out`` already holds a run. Without either the run is
  refused (exit 2, one line). ``--resume`` runs the plan again into the same folder: the results store
  answers every job it holds (same item content, method, settings and models), so only new or changed
  items are computed, and the folder's files are rewritten for the whole plan. ``--force`` deletes the
  folder's contents first.
* ``--breaker-after N``: the circuit breaker's limit (:mod:`agentcausal.runs.breaker`).
* ``--heartbeat SECONDS``: the interval of the heartbeat lines printed without a terminal
  (:mod:`agentcausal.runs.heartbeat`).

While a run writes its folder it holds the folder's lock (:mod:`agentcausal.runs.lock`): a second run on
the same folder, even with ``--resume`` or ``--force``, refuses in one line naming the holder (exit 5).

Only argparse and the library here (no Prefect import).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcausal.exceptions import ConfigError, RunFolderExistsError
from agentcausal.runs.heartbeat import HEARTBEAT_ENV, heartbeat_interval
from agentcausal.runs.lock import LOCK_FILE, run_folder_lock
from agentcausal.settings import DEFAULT_BREAKER_AFTER, RunSettings
from agentcausal_cli.exit_codes import ENDPOINT_DOWN, FAILED_ROWS, OK, epilog
from agentcausal_cli.spend_options import spent_before

if TYPE_CHECKING:
    from agentcausal.runs.options import RunOptions

__all__ = [
    "RUN_FILES",
    "add_run_folder_arguments",
    "apply_run_folder_arguments",
    "claim_run_folder",
    "add_resume_arguments",
    "holds_run",
    "run_options",
    "starting_prefect",
    "failed_rows_exit",
]

#: files whose presence makes a folder a run folder
RUN_FILES = ("run.json", "plan.json", "plan.items.jsonl", "results.parquet", "outcomes.jsonl")


def add_run_folder_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``--name``, ``--resume``, ``--force``, ``--breaker-after`` and ``--heartbeat``, and the exit-status epilog.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_run_folder_arguments(p)
    >>> a = p.parse_args(["--name", "nightly", "--resume"])
    >>> a.run_name, a.resume, a.force
    ('nightly', True, False)
    """
    g = p.add_argument_group("run folder and scheduled runs")
    g.add_argument(
        "--name",
        dest="run_name",
        default=None,
        metavar="NAME",
        help="a name for the run: kept in run.json and used as the Prefect flow-run name",
    )
    add_resume_arguments(g)
    g.add_argument(
        "--breaker-after",
        type=int,
        default=None,
        metavar="N",
        help=f"stop the run when one endpoint failed N jobs in a row (refused, 5xx or timed out after "
        f"the client's retries); the rest are marked not_run (default {DEFAULT_BREAKER_AFTER}, or "
        "$AGENTCAUSAL_BREAKER_AFTER; 0 = never)",
    )
    g.add_argument(
        "--heartbeat",
        type=float,
        default=None,
        metavar="SECONDS",
        help="without a terminal: a line every SECONDS with items done, LLM calls and tokens so far "
        f"(default {heartbeat_interval():g}, or ${HEARTBEAT_ENV}; 0 = off)",
    )
    p.epilog = epilog()


def add_resume_arguments(g: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--resume`` and ``--force`` (one or the other): what to do with an ``--out`` that holds a run
    (:func:`claim_run_folder` reads them)."""
    mode = g.add_mutually_exclusive_group()
    mode.add_argument(
        "--resume",
        action="store_true",
        help="--out holds a run: run the plan again into it; finished items are reused from the "
        "results store, only new or changed items are computed (a nightly job's mode)",
    )
    mode.add_argument(
        "--force",
        action="store_true",
        help="--out holds a run: delete its contents and start over (the results store still "
        "answers finished items; add --refresh to recompute them)",
    )


def apply_run_folder_arguments(args: argparse.Namespace, settings: RunSettings) -> RunSettings:
    """``settings`` with ``--breaker-after``; ``--heartbeat`` put into the environment the flow reads.

    Raises
    ------
    ConfigError
        If ``--breaker-after``, ``--heartbeat`` or ``--chunk-size`` is negative, or ``--name`` is empty.
    """
    name = getattr(args, "run_name", None)
    if name is not None and not name.strip():
        raise ConfigError("--name must not be empty")
    chunk = getattr(args, "chunk_size", None)
    if chunk is not None and chunk < 0:
        raise ConfigError(f"--chunk-size must be 0 (the default) or a positive number of jobs per task, got {chunk}")
    beat = getattr(args, "heartbeat", None)
    if beat is not None:
        if not beat >= 0:
            raise ConfigError(f"--heartbeat must be 0 (off) or a positive number of seconds, got {beat:g}")
        os.environ[HEARTBEAT_ENV] = repr(beat)
    after = getattr(args, "breaker_after", None)
    if after is None:
        return settings
    if after < 0:
        raise ConfigError(f"--breaker-after must be 0 (off) or a positive number of jobs, got {after}")
    return settings.model_copy(update={"breaker_after": after})


def holds_run(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a run (any of :data:`RUN_FILES`)."""
    d = Path(run_dir)
    return d.is_dir() and any((d / f).exists() for f in RUN_FILES)


def claim_run_folder(args: argparse.Namespace, run_dir: str | Path) -> Path:
    """Lock ``run_dir`` for this command and apply ``--resume``/``--force`` to a run already in it.

    The lock is held until the command ends (``args.exit_stack``, set by :func:`agentcausal_cli.main`);
    a folder this call created is removed again when the command fails (a refusal leaves nothing).

    Returns
    -------
    Path of the run folder

    Raises
    ------
    RunFolderBusyError
        If another run holds the folder's lock.
    RunFolderExistsError
        If the folder holds a run and neither ``--resume`` nor ``--force`` was given.
    """
    d = Path(run_dir)
    stack: contextlib.ExitStack = getattr(args, "exit_stack", None) or _fallback_stack()
    existed = d.exists()
    if not existed:
        stack.callback(_remove_if_only_lock, d)
    stack.enter_context(run_folder_lock(d))
    if existed and holds_run(d):
        if getattr(args, "force", False):
            for entry in d.iterdir():
                if entry.name == LOCK_FILE:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        elif not getattr(args, "resume", False):
            raise RunFolderExistsError(str(d))
    return d


_stack: contextlib.ExitStack | None = None


def _fallback_stack() -> contextlib.ExitStack:
    """A stack closed at exit, for a handler called without :func:`agentcausal_cli.main`."""
    global _stack
    if _stack is None:
        import atexit

        _stack = contextlib.ExitStack()
        atexit.register(_stack.close)
    return _stack


def _remove_if_only_lock(d: Path) -> None:
    """After the command: remove a folder it created when nothing but the lock file is in it (a refused run)."""
    with contextlib.suppress(OSError):
        if [p.name for p in d.iterdir()] == [LOCK_FILE]:
            (d / LOCK_FILE).unlink()
            d.rmdir()


def run_options(
    args: argparse.Namespace, run_dir: str | Path, model_facts: dict[str, object], **meta: Any
) -> RunOptions:
    """The :class:`~agentcausal.runs.options.RunOptions` of a pipeline verb (``attribute``, ``discover``) in
    ``run_dir``: ``--chunk-size``, ``--max-cost``, ``--max-tokens``, what a ``--resume`` folder spent before
    (:func:`~agentcausal_cli.spend_options.spent_before`), a progress bar on a terminal unless ``--no-progress``,
    and ``run.json``'s extra fields: ``meta``, ``model`` (the ``--base-url``/``--route`` facts, when any) and
    ``name`` (``--name``, which also names the Prefect flow run)."""
    from agentcausal.runs.options import RunOptions  # start-up cost: pydantic, paid when a run starts

    name = getattr(args, "run_name", None)
    return RunOptions(
        out_dir=str(run_dir),
        chunk_size=args.chunk_size,
        max_cost=args.max_cost,
        max_tokens=args.max_tokens,
        spent_before_usd=spent_before(args),
        progress=not args.no_progress and sys.stderr.isatty(),
        meta={**meta, **({"model": model_facts} if model_facts else {}), **({"name": name.strip()} if name else {})},
    )


def starting_prefect() -> None:
    """Say on stderr that Prefect is starting (its import, and an API server to start, take 20-40 s here, silently).

    Names the API the run will use: ``PREFECT_API_URL``'s, the shared local server's (``flows.shared_api``) when
    one is leased under ``PREFECT_HOME``, or the one about to start.

    Raises
    ------
    ConfigError
        If ``AGENTCAUSAL_SHARED_API`` or ``AGENTCAUSAL_SHARED_API_IDLE_S`` is invalid (before Prefect starts).
    """
    from flows import shared_api  # no Prefect import: the lease is read as a file

    url = os.environ.get("PREFECT_API_URL")
    if url:
        where = f"API at {url}"
    elif shared_api.enabled():
        idle = shared_api.idle_seconds()
        home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect")
        lease = shared_api.read_lease(home)
        where = (
            f"the shared local API server at {lease.api_url}"
            if lease is not None and lease.server_alive()
            else f"and its local API server, which later commands reuse until it is idle for {idle:g} s"
        )
    else:
        where = "its temporary API server takes a while to start"
    print(f"agentcausal: starting Prefect ({where})…", file=sys.stderr, flush=True)


def failed_rows_exit(run_meta: dict[str, Any], *, unit: str, unreachable: str | None = None) -> int:
    """The exit status of a finished run from its ``run.json``; prints the last line when rows failed.

    Parameters
    ----------
    run_meta : the run's ``run.json`` (``rows``: ``failed``, ``not_run``, ``total``; ``stopped``: the circuit
        breaker's message, when it stopped the run); ``not_run`` rows (the breaker's, or held back by
        ``--max-cost``) are rows not computed, as ``failed`` ones are
    unit : what a row is, for the message (``(trace, method) row``)
    unreachable : the one-line summary when every row failed on an unreachable endpoint, if so

    Returns
    -------
    :data:`~agentcausal_cli.exit_codes.OK`, :data:`~agentcausal_cli.exit_codes.FAILED_ROWS` or
    :data:`~agentcausal_cli.exit_codes.ENDPOINT_DOWN`

    Examples
    --------
    >>> failed_rows_exit({"rows": {"total": 4, "failed": 0, "not_run": 0}}, unit="row")
    0
    """
    rows = run_meta["rows"] if isinstance(run_meta.get("rows"), dict) else {}
    stopped = run_meta.get("stopped")
    failed, total = int(rows.get("failed", 0) or 0), int(rows.get("total", 0) or 0)
    not_run = int(rows.get("not_run", 0) or 0)  # the breaker stopped the run, or --max-cost held them back
    sys.stdout.flush()
    if stopped:
        print(f"agentcausal: error: {stopped}", file=sys.stderr)
    elif unreachable:
        print(f"agentcausal: error: {unreachable}", file=sys.stderr)
    if not failed and not not_run:
        return OK
    code = ENDPOINT_DOWN if stopped or unreachable else FAILED_ROWS
    print(
        f"agentcausal: {failed + not_run} of {total} {unit}s not computed ({failed} failed, {not_run} not run); "
        f"not cached: the next run computes them",
        file=sys.stderr,
    )
    return code
