"""The ``agentcausal`` command line: one entry point, one module per verb.

Each verb module in this package defines ``register(subparsers)``; :func:`build_parser` imports each
explicitly, in the order ``agentcausal --help`` lists them. The command line is the application layer, above
``flows`` (``.importlinter``): verbs that run a pipeline import ``flows`` inside their handler, so ``agentcausal
--help`` and the checks before a run never pay Prefect's start-up.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from typing import Any, NoReturn

from agentcausal import __version__
from agentcausal.exceptions import AgentCausalError, RunFolderBusyError
from agentcausal.runs import stop
from agentcausal_cli import exit_codes
from agentcausal_cli.exit_codes import BAD_INPUT, INTERRUPTED, RUN_FOLDER_BUSY

__all__ = ["main", "build_parser", "console_logging", "quiet_task_failures"]


class OneLineErrors(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line (``agentcausal VERB: error: …``) and a pointer to
    ``--help``, not the whole usage block first; the exit status stays argparse's 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.verbs: dict[str, argparse.ArgumentParser] = {}  # the verbs' parsers by name (the top level's only)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


def build_parser() -> OneLineErrors:
    parser = OneLineErrors(
        prog="agentcausal",
        description="LLM agents on causal questions: DCFA failure attribution and MAC causal discovery, "
        "as cached, retryable Prefect pipelines.",
        epilog=exit_codes.epilog() + " `agentcausal VERB --help` for a verb's options.",
    )
    parser.add_argument("--version", action="version", version=f"agentcausal {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True, parser_class=OneLineErrors)
    from agentcausal_cli import (
        annotate,
        attribute,
        cache,
        compare,
        data,
        demo,
        discover,
        import_traces,
        serve,
        show,
        tables,
    )

    for verb in (attribute, discover, demo, data, serve, compare, import_traces, annotate, show, tables, cache):
        verb.register(sub)
    for verb_parser in sub.choices.values():  # -v after the verb too; SUPPRESS keeps a -v given before it
        verb_parser.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            default=argparse.SUPPRESS,
            help="log at INFO level (also accepted before the verb)",
        )
    parser.verbs = dict(sub.choices)
    return parser


#: Prefect settings the CLI sets unless the environment already has them (FACTS: the
#: ephemeral API took 9-19 s to start here and timed out at Prefect's default 20 s;
#: telemetry fails noisily offline; per-task INFO logs drown the tables). INFO logs go to the
#: Prefect API (the UI shows them) while the console handler shows warnings only (INFO with -v).
PREFECT_DEFAULTS = {
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "INFO",
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


#: environment a quiet console needs unless ``-v``: no Hugging Face download/weights-loading bars,
#: transformers errors only, llama.cpp errors only (its start-up notes are not for users to act on)
QUIET_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "AGENTCAUSAL_LLAMA_VERBOSITY": "1",
}

#: third-party loggers whose warnings a user cannot act on, raised to ERROR unless ``-v``
#: (pgmpy: "Probability values don't exactly sum to 1" float rounding of the BIF tables)
QUIET_LOGGERS = ("pgmpy",)


def quiet_third_party(verbose: bool) -> None:
    """Keep third-party notes a user cannot act on off the console unless ``verbose``.

    Sets :data:`QUIET_ENV` (where not already set) and raises :data:`QUIET_LOGGERS` to ERROR;
    with ``verbose`` it does nothing, so every note shows. Warnings a user can act on (ours,
    Prefect's, failing calls) are untouched.
    """
    if verbose:
        return
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def console_logging(verbose: bool) -> None:
    """Show warnings on the console (INFO too with ``verbose``); INFO records still reach Prefect's API handler.

    Adds a stderr handler at that level to the root logger when it has none. A console
    handler already on the root logger (Prefect's own, set up by an earlier flow run in
    this process, or a host application's) is set to that level too: otherwise it would
    keep showing every INFO record whatever the CLI's ``-v`` says.
    """
    level = logging.INFO if verbose else logging.WARNING
    root = logging.getLogger()
    consoles = [s for s in (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__) if s is not None]
    for handler in root.handlers:
        if any(getattr(handler, "stream", None) is s for s in consoles):
            handler.setLevel(level)
    console = logging.StreamHandler()
    console.setLevel(level)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=[console])


#: loggers whose failure records (a failed task or flow run, with chained tracebacks) the console
#: shows in one line unless ``-v``; the Prefect API (the UI) still gets the full record
TASK_RUN_LOGGERS = ("prefect.task_runs", "prefect.flow_runs")


class OneLineTaskFailures(logging.Filter):
    """Console filter: a failed task run in one line, without its traceback; Prefect's repeat of it dropped, and
    Prefect's "Crash detected!" of a run a signal stopped (the CLI says it stopped, with its exit status).

    Prefect logs a failed task run twice at ERROR: "Task run failed with exception: …" with
    the chained tracebacks, then "Finished in state Failed(…)". The run's summary table and
    report say which (trace, method) failed and why, so the console keeps the first line of the
    first record only. Records are changed only after Prefect's API handler (on the task-run
    logger itself) has sent them, since this filter sits on root's console handlers.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(TASK_RUN_LOGGERS) or record.levelno < logging.WARNING:
            return True
        msg = record.getMessage()
        if msg.startswith("Finished in state Failed") or msg.startswith("Finished in state Crashed"):
            return False
        if msg.startswith("Crash detected") and stop.stop_requested():  # our stop, said in one line of ours
            return False
        if record.exc_info or record.exc_text or "\n" in msg:
            record.msg, record.args = msg.split("\n", 1)[0], None
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def quiet_task_failures(verbose: bool) -> None:
    """Put :class:`OneLineTaskFailures` on the root logger's console handlers (unless ``verbose``).

    Call after Prefect is imported (it sets up its handlers on import); calling twice adds nothing.
    """
    if verbose:
        return
    consoles = [s for s in (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__) if s is not None]
    for handler in logging.getLogger().handlers:
        if (
            any(getattr(handler, "stream", None) is s for s in consoles)
            or type(handler).__name__ == "PrefectConsoleHandler"
        ):
            if not any(isinstance(f, OneLineTaskFailures) for f in handler.filters):
                handler.addFilter(OneLineTaskFailures())


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # the verb's own usage error, not the top level's (`attribute --methd`)
        parser.verbs[args.verb].error(f"unrecognized arguments: {' '.join(extra)}")
    for key, value in PREFECT_DEFAULTS.items():
        if not (key == "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL" and args.verbose):
            os.environ.setdefault(key, value)
    console_logging(args.verbose)
    quiet_third_party(args.verbose)
    status = _run_verb(args)
    if stop.stop_signal() is not None:  # a signal stopped the verb: end now, leaving no process and no wait
        stop.hard_exit(status)
    return status


#: the last line of a command stopped by SIGINT or SIGTERM
INTERRUPTED_LINE = "agentcausal: interrupted; finished work is kept: the same command with --resume computes the rest"


def _run_verb(args: argparse.Namespace) -> int:
    """Run the verb; its exit status. SIGTERM and SIGINT stop it (:mod:`agentcausal.runs.stop`): exit 143 / 130
    within seconds (statistical workers, their forkserver and every process of the command ended), a second
    signal at once."""
    try:
        with (
            stop.stop_on_signal(stop.StopSignal, message=INTERRUPTED_LINE),
            contextlib.ExitStack() as args.exit_stack,  # what a verb holds until it ends (a run folder's lock)
        ):
            return int(args.func(args) or 0)
    except (KeyboardInterrupt, stop.RunStopped) as exc:
        if isinstance(exc, stop.RunStopped) and not stop.stop_requested():  # pragma: no cover - not raised so
            raise
        print(INTERRUPTED_LINE, file=sys.stderr)
        return stop.exit_status() if stop.stop_signal() is not None else INTERRUPTED
    except RunFolderBusyError as exc:
        print(f"agentcausal: error: {exc}", file=sys.stderr)
        return RUN_FOLDER_BUSY
    except AgentCausalError as exc:
        if stop.stop_requested():  # a job's error on the way out of a stopped run
            print(INTERRUPTED_LINE, file=sys.stderr)
            return stop.exit_status()
        print(f"agentcausal: error: {exc}", file=sys.stderr)
        return BAD_INPUT
    except BrokenPipeError:  # `... --dry-run | head`: the reader closed stdout; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit would raise again
        return 0


if __name__ == "__main__":
    sys.exit(main())
