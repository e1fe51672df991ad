"""Every exit status of ``agentcausal``, in one place (the pipeline verbs' ``--help`` lists them too).

A scheduler (cron, a Prefect deployment, CI) can tell from the status alone whether a run needs a
person: 0 means every row was computed, or there was nothing new to compute (a ``--from-phoenix``
window without traces: one line says so); 3 and 4 mean the run folder was written but some rows were
not (the last line printed says how many); 2 and 5 mean nothing ran; 130 and 143 mean a signal stopped
it (the next run resumes). docs/operations.md shows the same table (:func:`markdown_table`, checked by
``tests/cli/test_exit_status.py``).

Content failures (a reply still invalid after every repair, an algorithm failing on the data) are
results: they are cached, reported and counted, but do not change the status; rows that were not
computed at all (status ``failed``: transport, key, timeout; ``not_run``: the run stopped first, at its
circuit breaker or its ``--max-cost``) do.
"""

from __future__ import annotations

__all__ = [
    "OK",
    "ERROR",
    "BAD_INPUT",
    "FAILED_ROWS",
    "ENDPOINT_DOWN",
    "RUN_FOLDER_BUSY",
    "INTERRUPTED",
    "TERMINATED",
    "EXIT_CODES",
    "epilog",
    "markdown_table",
]

OK = 0  #: the run finished and every row was computed (content failures included), or nothing was new
ERROR = 1  #: an unexpected error (a bug: please report the traceback)
BAD_INPUT = 2  #: bad input or options, refused before any work, in one line (argparse's usage errors too)
FAILED_ROWS = 3  #: the run finished, but some rows were not computed: failed, or held back by --max-cost
ENDPOINT_DOWN = 4  #: an endpoint was dead: the run stopped early (circuit breaker) or every row failed on it
RUN_FOLDER_BUSY = 5  #: another run is writing the run folder (its lock is held); nothing was done
INTERRUPTED = 130  #: Ctrl-C (SIGINT); finished steps are cached, rerun to resume
TERMINATED = 143  #: SIGTERM (a scheduler's timeout or cancel, 128 + 15); finished steps are cached, rerun to resume

#: status -> meaning, as the help epilog shows them
EXIT_CODES = {
    OK: "done, every row computed (or nothing new to compute)",
    ERROR: "unexpected error",
    BAD_INPUT: "bad input or options (nothing ran)",
    FAILED_ROWS: "done with rows not computed: failed, or not run under --max-cost (count on the last line; "
    "the next run, or --resume, computes them)",
    ENDPOINT_DOWN: "an endpoint was dead: stopped early (circuit breaker) or every row failed on it",
    RUN_FOLDER_BUSY: "the run folder is locked by another run",
    INTERRUPTED: "interrupted (Ctrl-C)",
    TERMINATED: "terminated (SIGTERM)",
}


def epilog() -> str:
    """The ``exit status:`` paragraph of a pipeline verb's ``--help``.

    Examples
    --------
    >>> epilog().startswith("exit status: 0 done")
    True
    """
    return "exit status: " + "; ".join(f"{code} {text}" for code, text in EXIT_CODES.items()) + "."


def markdown_table() -> str:
    """:data:`EXIT_CODES` as the Markdown table docs/operations.md shows (``| status | meaning |``).

    Examples
    --------
    >>> markdown_table().splitlines()[2]
    '| 0 | done, every row computed (or nothing new to compute) |'
    """
    rows = [f"| {code} | {' '.join(text.split())} |" for code, text in EXIT_CODES.items()]
    return "\n".join(["| status | meaning |", "|---|---|", *rows])
