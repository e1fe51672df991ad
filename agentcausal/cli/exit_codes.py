"""Every exit status of ``agentcausal``, in one place (the pipeline verbs' ``--help`` lists them too).

A scheduler (cron, a Prefect deployment, CI) can tell from the status alone whether a run needs a
person: 0 means every row was computed; 3 and 4 mean the run folder was written but some rows were
not (the last line printed says how many); 2 and 5 mean nothing ran.

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
]

OK = 0  #: the run finished and every row was computed (content failures included)
ERROR = 1  #: an unexpected error (a bug: please report the traceback)
BAD_INPUT = 2  #: bad input or options, refused before any work, in one line (argparse's usage errors too)
FAILED_ROWS = 3  #: the run finished, but some rows were not computed: failed, or held back by --max-cost
ENDPOINT_DOWN = 4  #: an endpoint was dead: the run stopped early (circuit breaker) or every row failed on it
RUN_FOLDER_BUSY = 5  #: another run is writing the run folder (its lock is held); nothing was done
INTERRUPTED = 130  #: Ctrl-C (SIGINT); finished work is kept, --resume computes the rest
TERMINATED = 143  #: SIGTERM (a scheduler's stop, a Prefect cancellation); finished work is kept, as for 130

#: status -> meaning, as the help epilog shows them
EXIT_CODES = {
    OK: "done, every row computed",
    ERROR: "unexpected error",
    BAD_INPUT: "bad input or options (nothing ran)",
    FAILED_ROWS: "done with rows not computed: failed, or not run under --max-cost (count on the last line; "
    "the next run, or --resume, computes them)",
    ENDPOINT_DOWN: "an endpoint was dead: stopped early (circuit breaker) or every row failed on it",
    RUN_FOLDER_BUSY: "the run folder is locked by another run",
    INTERRUPTED: "interrupted (SIGINT)",
    TERMINATED: "stopped by SIGTERM (--resume computes the rest)",
}


def epilog() -> str:
    """The ``exit status:`` paragraph of a pipeline verb's ``--help``.

    Examples
    --------
    >>> epilog().startswith("exit status: 0 done")
    True
    """
    return "exit status: " + "; ".join(f"{code} {text}" for code, text in EXIT_CODES.items()) + "."
