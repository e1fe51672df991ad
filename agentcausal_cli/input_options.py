"""Command-line options for hostile-input limits: ``--max-input-mb`` (attribute, discover) and ``--drop-missing``
(discover). Both are handed to the loaders through the environment, so the flow's tasks, which read their
own inputs again, apply the same limits (:mod:`agentcausal.input_files`, :mod:`agentcausal.discovery.data.user_data`).
"""

from __future__ import annotations

import argparse
import os

from agentcausal.exceptions import ConfigError
from agentcausal.input_files import DEFAULT_MAX_INPUT_MB, MAX_INPUT_ENV

__all__ = ["add_input_arguments", "apply_input_arguments"]


def add_input_arguments(p: argparse.ArgumentParser, *, datasets: bool = False) -> None:
    """Add ``--max-input-mb`` (and, for ``datasets``, ``--drop-missing``) to a verb's parser."""
    p.add_argument(
        "--max-input-mb",
        type=float,
        default=None,
        metavar="MIB",
        help=f"largest input file read, MiB (default {DEFAULT_MAX_INPUT_MB}, or ${MAX_INPUT_ENV}); "
        "a larger file is refused unread",
    )
    if datasets:
        p.add_argument(
            "--drop-missing",
            action="store_true",
            help="drop the rows of a user dataset that hold a missing value (empty, NA, ?, ...), "
            "counted per column on the console and in run.json, instead of refusing the dataset",
        )


def apply_input_arguments(args: argparse.Namespace) -> None:
    """Put the options into the environment the loaders read (``AGENTCAUSAL_MAX_INPUT_MB``,
    ``AGENTCAUSAL_DROP_MISSING``).

    Raises
    ------
    ConfigError
        If ``--max-input-mb`` is not a positive number.
    """
    mb = getattr(args, "max_input_mb", None)
    if mb is not None:
        if not mb > 0:
            raise ConfigError(f"--max-input-mb must be a positive number of MiB, got {mb:g}")
        os.environ[MAX_INPUT_ENV] = repr(mb)
    if getattr(args, "drop_missing", False):
        os.environ["AGENTCAUSAL_DROP_MISSING"] = "1"
