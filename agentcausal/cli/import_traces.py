"""``agentcausal import``: turn recorded traces (OTel, OpenInference, AG2, LangSmith ...) into our JSONL.

::

    agentcausal import otlp-traces.json -o traces.jsonl
    agentcausal import spans.txt --format openinference --labels labels.jsonl -o traces.jsonl
    agentcausal import traces.json --logs logs.json -o traces.jsonl        # GenAI v1.28-1.36 content events

It prints, per trace, its id, number of steps and agents. The same options
(``--format``, ``--labels``, ``--logs``) on ``agentcausal attribute`` import on
the fly: the imported corpus is written as ``traces.jsonl`` in the run folder.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from agentcausal.traces.model import Trace

__all__ = ["register", "cmd_import", "add_import_arguments", "load_with_options", "prepare_corpus",
           "refuse_truthless"]


def add_import_arguments(p: argparse.ArgumentParser) -> None:
    """``--format``, ``--labels``, ``--logs``, ``--tool-agent`` (shared by ``import`` and ``attribute``)."""
    from agentcausal.traces.importers import FORMATS

    p.add_argument("--format", default="auto", choices=FORMATS,
                   help="trace format of the paths (default auto: detected per file)")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="labels JSONL: per trace_id, ground_truth, mistake_agent, mistake_step (0-based), "
                   "mistake_span_id")
    p.add_argument("--logs", default=None, metavar="FILE",
                   help="OTLP JSON logs file with the GenAI content events (semantic conventions v1.28-1.36)")
    p.add_argument("--tool-agent", default=None, metavar="NAME",
                   help="agent name for tool-result steps (default: the calling agent), e.g. Computer_terminal")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``import`` verb."""
    p = subparsers.add_parser(
        "import", help="convert recorded traces (OTel GenAI, OpenInference, AG2, LangSmith) into Trace JSONL",
        description="Import trace files into our Trace JSONL; prints id, steps and agents per trace.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace file(s)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="Trace JSONL to write")
    add_import_arguments(p)
    if not any("--skip-invalid" in a.option_strings for a in p._actions):
        p.add_argument("--skip-invalid", action="store_true",
                       help="skip invalid traces (no content: capture was off) instead of refusing the input")
    p.set_defaults(func=cmd_import)


def load_with_options(paths: Sequence[str], args: argparse.Namespace) -> list[Trace]:
    """Import ``paths`` with the options of :func:`add_import_arguments` and apply ``--labels``.

    Raises
    ------
    TraceFormatError
        If a file matches no format, is malformed or holds an invalid trace, or a label does not fit.
    """
    from agentcausal.traces.importers import import_traces
    from agentcausal.traces.importers.labels import apply_labels, read_labels

    with _skip_notices():
        traces = import_traces(paths, args.format, logs=args.logs, tool_agent=args.tool_agent,
                               skip_invalid=bool(getattr(args, "skip_invalid", False)))
    if args.labels:
        traces = apply_labels(traces, read_labels(args.labels))
    return traces


#: logger whose "skipped ..." warnings (--skip-invalid) the CLI prints in its own style
_IMPORT_LOGGER = "agentcausal.traces.importers"


@contextlib.contextmanager
def _skip_notices() -> Iterator[None]:
    """Print the importers' "skipped ..." warnings as ``agentcausal: skipping ...`` lines, not as log records."""
    import logging
    import sys

    class _Notice(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            msg = record.getMessage()
            if msg.startswith("skipped "):
                text = msg[len('skipped '):].replace(" cannot be imported", " that cannot be imported", 1)
                print(f"agentcausal: skipping {text}", file=sys.stderr)
            else:  # any other warning goes on to the usual handlers
                logging.getLogger().handle(record)

    logger = logging.getLogger(_IMPORT_LOGGER)
    handler, propagate = _Notice(level=logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def prepare_corpus(args: argparse.Namespace, traces: Sequence[Trace] | None = None) -> list[str]:
    """For ``attribute``: the paths the flow should read, importing other formats into the run folder.

    Who&When and Trace JSONL paths without ``--labels`` are passed on as they are; anything
    else is imported (``--format``, ``--logs``, ``--tool-agent``, ``--skip-invalid``), labelled
    (``--labels``) and written to ``<run folder>/traces.jsonl`` (``args.out`` is set to the
    run folder when it was not given). ``traces``: the corpus already imported (not read again).

    Returns
    -------
    list of str

    Raises
    ------
    TraceFormatError
        If a file matches no format, is malformed or holds an invalid trace, a label does not fit,
        or no trace is left (all skipped by ``--skip-invalid``; the message names the input files).
    """
    from agentcausal.exceptions import TraceFormatError
    from agentcausal.traces.importers import detect_formats
    from agentcausal.traces.io import write_jsonl

    if {fmt for _, fmt in detect_formats(args.paths, args.format)} <= {"who-and-when", "jsonl"} and not args.labels:
        return list(args.paths)
    traces = load_with_options(args.paths, args) if traces is None else traces
    if not traces:  # every trace skipped: say so about the user's files, before a run folder exists
        raise TraceFormatError("no valid trace to run (every trace was skipped)", path=", ".join(args.paths))
    if not args.out:
        from agentcausal.runs.folder import default_run_dir

        args.out = default_run_dir("attribute")
    return [str(write_jsonl(traces, Path(args.out) / "traces.jsonl"))]


def refuse_truthless(paths: Sequence[str], args: argparse.Namespace) -> None:
    """Unless ``--no-ground-truth``: refuse the selected traces that have no ground truth, all in one message.

    Raises
    ------
    ConfigError
        Naming every selected trace without a ground truth.
    """
    if getattr(args, "no_ground_truth", False):
        return
    from agentcausal.traces.importers.labels import require_ground_truth
    from agentcausal.traces.io import load_traces, select_traces

    traces = load_traces(paths, skip_invalid=bool(getattr(args, "skip_invalid", False)))
    require_ground_truth(select_traces(traces, ids=args.ids, limit=args.limit, max_steps=args.max_steps))


def cmd_import(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal import``.

    Raises
    ------
    TraceFormatError
        If a file matches no format, is malformed or holds an invalid trace.
    """
    from agentcausal.traces.io import write_jsonl

    traces = load_with_options(args.paths, args)
    out = write_jsonl(traces, args.output)
    width = max([len(t.id) for t in traces] + [5])
    print(f"{'trace':<{width}}  steps  agents")
    for t in traces:
        print(f"{t.id:<{width}}  {len(t):>5}  {', '.join(t.agents)}")
    print(f"\n{len(traces)} trace(s) written to {out}")
    return 0
