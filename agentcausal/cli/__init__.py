"""The ``agentcausal`` command line: one entry point, one module per verb.

Each verb module in this package defines ``register(subparsers)``. Verbs that
run a pipeline import ``flows`` lazily inside their handler: the CLI is the one
library module that reaches up to the Prefect layer, and only when run.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from agentcausal import __version__
from agentcausal.exceptions import AgentCausalError

__all__ = ["main", "build_parser", "console_logging"]

VERB_MODULES = ["attribute", "discover", "demo", "data", "serve", "compare", "import_traces"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentcausal",
        description="LLM agents on causal questions: DCFA failure attribution and MAC causal discovery, "
        "as cached, retryable Prefect pipelines.",
    )
    parser.add_argument("--version", action="version", version=f"agentcausal {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name in VERB_MODULES:
        try:
            mod = importlib.import_module(f"agentcausal.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"agentcausal.cli.{name}":
                continue
            raise
        mod.register(sub)
    for verb_parser in sub.choices.values():  # -v after the verb too; SUPPRESS keeps a -v given before it
        verb_parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                                 help="log at INFO level (also accepted before the verb)")
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    for key, value in PREFECT_DEFAULTS.items():
        if not (key == "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL" and args.verbose):
            os.environ.setdefault(key, value)
    console_logging(args.verbose)
    quiet_third_party(args.verbose)
    try:
        return int(args.func(args) or 0)
    except AgentCausalError as exc:
        print(f"agentcausal: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("agentcausal: interrupted; finished steps are cached, rerun to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
