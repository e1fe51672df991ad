"""``agentcausal import``: turn recorded traces (OTel, OpenInference, AG2, LangSmith ...) into our JSONL.

::

    agentcausal import otlp-traces.json -o traces.jsonl
    agentcausal import spans.txt --format openinference --labels labels.jsonl -o traces.jsonl
    agentcausal import traces.json --logs logs.json -o traces.jsonl        # GenAI v1.28-1.36 content events
    agentcausal import --from-phoenix http://127.0.0.1:6006 --phoenix-project agents --since 24h \
        --phoenix-filter "status_code == 'ERROR'" -o traces.jsonl           # a running Phoenix server

It prints, per trace, its id, number of steps and agents. The same options
(``--format``, ``--labels``, ``--logs``, ``--from-phoenix`` ...) on ``agentcausal
attribute`` import on the fly: the imported corpus is written as ``traces.jsonl``
in the run folder. With ``--skip-invalid`` every file and trace left out is named
(and ``attribute`` records them in ``run.json`` under ``skipped``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentcausal.exceptions import ConfigError, InvalidTracesError, TraceFormatError
from agentcausal.runs.folder import default_run_dir
from agentcausal.traces.model import Trace

__all__ = [
    "register",
    "cmd_import",
    "add_import_arguments",
    "load_with_options",
    "import_corpus",
    "phoenix_query",
    "import_sources",
    "uses_importer",
    "prepare_corpus",
    "refuse_truthless",
]


def add_import_arguments(p: argparse.ArgumentParser) -> None:
    """``--format``, ``--labels``, ``--logs``, ``--tool-agent`` (shared by ``import`` and ``attribute``)."""
    # start-up cost: loads pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.traces.importers import FORMATS

    p.add_argument(
        "--format", default="auto", choices=FORMATS, help="trace format of the paths (default auto: detected per file)"
    )
    p.add_argument(
        "--labels",
        default=None,
        metavar="FILE",
        help="labels JSONL: per trace_id, ground_truth, mistake_agent, mistake_step (0-based), mistake_span_id",
    )
    p.add_argument(
        "--logs",
        default=None,
        metavar="FILE",
        help="OTLP JSON logs file with the GenAI content events (semantic conventions v1.28-1.36)",
    )
    p.add_argument(
        "--tool-agent",
        default=None,
        metavar="NAME",
        help="agent name for tool-result steps (default: the calling agent), e.g. Computer_terminal",
    )
    g = p.add_argument_group(
        "Arize Phoenix source",
        "read traces from a running Phoenix server (besides any PATH); an API key is read from PHOENIX_API_KEY",
    )
    g.add_argument("--from-phoenix", default=None, metavar="URL", help="the Phoenix server, e.g. http://127.0.0.1:6006")
    g.add_argument("--phoenix-project", default="default", metavar="NAME", help="project name or id (default: default)")
    g.add_argument(
        "--since",
        default=None,
        metavar="WHEN",
        help="spans starting at or after WHEN select traces: ISO-8601 (2025-06-01T00:00:00Z) or a duration "
        "back from now (30m, 24h, 7d)",
    )
    g.add_argument("--until", default=None, metavar="WHEN", help="... and before WHEN (same forms; default now)")
    g.add_argument(
        "--phoenix-filter",
        default=None,
        metavar="CONDITION",
        help="Phoenix's span filter condition, passed through unchanged, e.g. \"span_kind == 'LLM' and "
        "status_code == 'ERROR'\"; a trace is read whole when any of its spans in the window matches",
    )
    g.add_argument(
        "--max-spans",
        type=int,
        default=100_000,
        metavar="N",
        help="at most N matching spans select traces (default 100000)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``import`` verb."""
    p = subparsers.add_parser(
        "import",
        help="convert recorded traces (OTel GenAI, OpenInference, OpenAI Agents SDK, AG2, LangSmith, Who&When, "
        "MAST, AgentRx) into Trace JSONL",
        description="Import trace files into our Trace JSONL; prints id, steps and agents per trace.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="trace file(s) or folder(s) (or --from-phoenix)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="Trace JSONL to write")
    add_import_arguments(p)
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="import the valid traces and name every file and trace left out (unrecognised, malformed, "
        "no content: capture was off) instead of refusing the input",
    )
    p.set_defaults(func=cmd_import)


def phoenix_query(args: argparse.Namespace) -> Any:
    """The :class:`~agentcausal.tracers.phoenix.PhoenixQuery` of ``--from-phoenix`` and its options, or None.

    Raises
    ------
    ConfigError
        If a Phoenix option is given without ``--from-phoenix``, a time is malformed, ``--since`` is not
        before ``--until``, or ``--max-spans`` is below 1.
    """

    url = getattr(args, "from_phoenix", None)
    given = [f"--{k.replace('_', '-')}" for k in ("since", "until", "phoenix_filter") if getattr(args, k, None)]
    if getattr(args, "phoenix_project", "default") != "default":
        given.append("--phoenix-project")
    if not url:
        if given:
            raise ConfigError(f"{', '.join(given)} only apply with --from-phoenix URL")
        return None
    # start-up cost: loads pandas, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.tracers.phoenix import PhoenixQuery, parse_when

    start = parse_when(args.since) if args.since else None
    end = parse_when(args.until) if args.until else None
    if start and end and start >= end:
        raise ConfigError(f"--since {args.since} is not before --until {args.until}")
    if args.max_spans < 1:
        raise ConfigError(f"--max-spans must be at least 1, got {args.max_spans}")
    return PhoenixQuery(
        url=url,
        project=args.phoenix_project,
        start=start,
        end=end,
        filter=args.phoenix_filter,
        max_spans=args.max_spans,
    )


def uses_importer(args: argparse.Namespace) -> bool:
    """Whether the corpus must be imported (any format but Who&When and Trace JSONL, ``--labels`` or
    ``--from-phoenix``), rather than read by the run as the files are."""
    # start-up cost: loads pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.traces.importers import detect_formats

    if getattr(args, "from_phoenix", None) or args.labels:
        return True
    unrecognised: list = []  # files of no format: the importer names (or, with --skip-invalid, skips) them
    found = {fmt for _, fmt in detect_formats(args.paths, args.format, unrecognised=unrecognised)}
    return bool(unrecognised) or not found <= {"who-and-when", "jsonl"}


def import_corpus(args: argparse.Namespace) -> tuple[list[tuple[str, Trace]], list[dict[str, Any]]]:
    """Every input of an import (files of any format, ``--from-phoenix``), labelled (``--labels``).

    With ``--skip-invalid`` the files and traces left out are printed, one line each, to stderr;
    without it the first (or all, in one message) are refused.

    Returns
    -------
    (corpus, skipped): (origin, Trace) pairs of the valid traces (origin: the file(s), or
    ``phoenix <url> project <name>``), and the inputs left out as ``{"path", "field", "error"}``
    records (``run.json``'s ``skipped``).

    Raises
    ------
    TraceFormatError, InvalidTracesError
        If an input matches no format, is malformed or holds an invalid trace (unless ``--skip-invalid``),
        two traces share an id, or a label does not fit.
    TraceStoreError, ConfigError
        If the Phoenix server cannot be read, or an option is wrong.
    """
    import sys

    # start-up cost: loads pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.traces.importers import scan_imports
    from agentcausal.traces.importers.labels import apply_labels, read_labels
    from agentcausal.traces.io import check_unique_ids

    q = phoenix_query(args)
    if not args.paths and q is None:
        raise ConfigError("give trace file(s) or folder(s), or --from-phoenix URL")
    corpus: list[tuple[str, Trace]] = []
    invalid: list[TraceFormatError] = []
    if args.paths:
        scan = scan_imports(args.paths, args.format, logs=args.logs, tool_agent=args.tool_agent)
        corpus += list(zip(scan.origins, scan.traces, strict=True))
        invalid += scan.invalid
    if q is not None:
        # start-up cost: loads pandas, pydantic, which `agentcausal --help` and every other verb would pay at import
        from agentcausal.tracers.phoenix import load_phoenix

        origin = f"phoenix {q.url} project {q.project}"
        bad: list[tuple[str, str]] = []
        corpus += [(origin, t) for t in load_phoenix(q, tool_agent=args.tool_agent, invalid=bad)]
        invalid += [TraceFormatError(why, path=origin, field=f"trace {tid}") for tid, why in bad]
    if invalid and not getattr(args, "skip_invalid", False):
        raise invalid[0] if len(invalid) == 1 else InvalidTracesError(invalid)
    if invalid:
        print(f"agentcausal: skipping {len(invalid)} invalid trace input(s):", file=sys.stderr)
        for e in invalid:
            print(f"  {e}", file=sys.stderr)
    check_unique_ids([t for _, t in corpus])
    unknown = [t.id for _, t in corpus if t.metadata.get("unknown_agent_steps")]
    if unknown:  # said, not hidden: such a step is blamed on agent "unknown"
        print(
            f"agentcausal: {len(unknown)} trace(s) have steps that no span names an agent for (agent 'unknown'; "
            f"step metadata agent_unknown): {', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}",
            file=sys.stderr,
        )
    if args.labels:
        labelled = apply_labels([t for _, t in corpus], read_labels(args.labels))
        corpus = [(o, t) for (o, _), t in zip(corpus, labelled, strict=True)]
    return corpus, [{"path": e.path, "field": e.field, "error": e.detail} for e in invalid]


def load_with_options(paths: Sequence[str], args: argparse.Namespace) -> list[Trace]:
    """The traces of ``paths`` (and ``--from-phoenix``) with the import options, labelled (see :func:`import_corpus`).

    Raises
    ------
    TraceFormatError
        If a file matches no format, is malformed or holds an invalid trace, or a label does not fit.
    """
    return [t for _, t in import_corpus(argparse.Namespace(**{**vars(args), "paths": list(paths)}))[0]]


def import_sources(args: argparse.Namespace) -> tuple[list[Any], Any]:
    """The provenance of an imported corpus: each input file (:func:`agentcausal.runs.plan.source_files`), and the
    Phoenix query as a source of format ``phoenix`` whose path is the query's address; the labels file."""
    from urllib.parse import urlencode

    # start-up cost: loads openai, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.runs.plan import SourceFile, source_files
    from agentcausal.traces.importers import detect_formats

    detected = detect_formats(args.paths, args.format, unrecognised=[]) if args.paths else []
    sources, labels = source_files(detected, args.labels, args.logs)
    q = phoenix_query(args)
    if q is not None:
        d = {k: v for k, v in q.describe().items() if v is not None and k not in ("phoenix", "project")}
        sources.append(
            SourceFile(
                path=f"{q.url.rstrip('/')}/projects/{q.project}/spans" + (f"?{urlencode(d)}" if d else ""),
                sha256=None,
                format="phoenix",
            )
        )
    return sources, labels


def prepare_corpus(args: argparse.Namespace, traces: Sequence[Trace] | None = None) -> list[str]:
    """For ``attribute``: the paths the flow should read, importing other formats into the run folder.

    Who&When and Trace JSONL paths without ``--labels`` are passed on as they are; anything
    else (and ``--from-phoenix``) is imported (``--format``, ``--logs``, ``--tool-agent``, ``--skip-invalid``), labelled
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
    # start-up cost: loads pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.traces.jsonl import write_jsonl

    if not uses_importer(args):
        return list(args.paths)
    traces = [t for _, t in import_corpus(args)[0]] if traces is None else traces
    if not traces:  # every trace skipped: say so about the user's inputs, before a run folder exists
        raise TraceFormatError(
            "no valid trace to run (every trace was skipped)",
            path=", ".join([*args.paths, *([args.from_phoenix] if args.from_phoenix else [])]),
        )
    if not args.out:
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
    # start-up cost: loads pydantic, which `agentcausal --help` and every other verb would pay at import
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
    # start-up cost: loads pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.traces.jsonl import write_jsonl

    traces = [t for _, t in import_corpus(args)[0]]
    out = write_jsonl(traces, args.output)
    width = max([len(t.id) for t in traces] + [5])
    print(f"{'trace':<{width}}  steps  agents")
    for t in traces:
        print(f"{t.id:<{width}}  {len(t):>5}  {', '.join(t.agents)}")
    print(f"\n{len(traces)} trace(s) written to {out}")
    return 0
