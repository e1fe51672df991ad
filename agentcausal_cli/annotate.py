"""``agentcausal annotate``: send a run's blamed steps back to the tracer the traces came from.

::

    agentcausal attribute --from-phoenix http://127.0.0.1:6006 --since 24h -m dcfa --no-ground-truth --out runs/night
    agentcausal annotate runs/night --phoenix http://127.0.0.1:6006        # span annotations in Phoenix
    agentcausal annotate runs/night --otlp runs/night/evaluations.otlp.json # GenAI evaluation log records

``--phoenix`` writes one span annotation per blamed span
(:func:`agentcausal.tracers.phoenix.annotate_phoenix`); ``--otlp`` writes the
same results as OTLP JSON log records of ``gen_ai.evaluation.result`` events
for any OpenTelemetry backend (:mod:`agentcausal.tracers.otlp_export`). Each
carries the label, the confidence as score where the method has one, the reason,
the evidence, the fix and the ranked candidates. Both read the run folder's
``results.parquet`` and ``run.json``; rows with nothing to annotate (no decisive
step, a failed method, a trace without span ids) and blamed spans Phoenix does not
hold (skipped; the rest are written) are counted on stderr and listed with ``-v``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from agentcausal.exceptions import ConfigError
from agentcausal_cli.method_sets import add_method_argument

__all__ = ["register", "cmd_annotate"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``annotate`` verb."""
    p = subparsers.add_parser(
        "annotate",
        help="write a run's blamed spans back: Phoenix span annotations and/or an OTLP JSON file",
        description="Send each blamed span of an attribution run back to the tracer: as a Phoenix span annotation "
        "(label 'decisive error', score = the method's confidence where it has one, explanation = reason, "
        "evidence and fix, metadata: method, run, preset, model, evidence, fix, ranked candidates; spans Phoenix "
        "does not hold are skipped and counted) and/or as OpenTelemetry GenAI evaluation log records "
        "(gen_ai.evaluation.result, keyed by trace and span id) in an OTLP JSON file. Only traces imported from "
        "spans (OTel, OpenInference, Phoenix ...) have span ids to annotate.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="run folder written by `attribute` (results.parquet, run.json)")
    p.add_argument(
        "--phoenix",
        default=None,
        metavar="URL",
        help="the Phoenix server holding the spans, e.g. http://127.0.0.1:6006 (API key: PHOENIX_API_KEY)",
    )
    p.add_argument("--otlp", default=None, metavar="FILE", help="OTLP JSON logs file to write (one LogsData document)")
    add_method_argument(p, "only this method's results (repeatable; default all)")
    p.set_defaults(func=cmd_annotate)


def _unplaced_line(unplaced: list[dict[str, Any]]) -> str:
    by = Counter(u["why"] for u in unplaced)
    return "; ".join(f"{n} {why}" for why, n in by.most_common())


def cmd_annotate(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal annotate``.

    Raises
    ------
    ConfigError
        If neither ``--phoenix`` nor ``--otlp`` is given.
    RunFileError
        If the run folder's results cannot be read.
    TraceStoreError
        If Phoenix cannot be reached or refuses the annotations.
    """

    if not args.phoenix and not args.otlp:
        raise ConfigError("say where to write: --phoenix URL and/or --otlp FILE")
    if not Path(args.run_dir).is_dir():
        raise ConfigError(f"no such run folder: {args.run_dir}")  # as `show` says it
    unplaced: list[dict[str, Any]] = []
    if args.phoenix:
        # start-up cost: loads pandas, pydantic, which `agentcausal --help` and every other verb would pay at import
        from agentcausal.tracers.phoenix import annotate_phoenix

        res = annotate_phoenix(args.run_dir, args.phoenix, methods=args.methods)
        print(
            f"{res.written} span annotation(s) written to Phoenix at {args.phoenix} "
            f"(name {', '.join(res.names) or '-'}; identifier {res.identifier})"
        )
        if res.missing:
            print(
                f"agentcausal: {len(res.missing)} blamed span(s) skipped: Phoenix holds no span with that id "
                "(deleted, or another project's); the rest were written",
                file=sys.stderr,
            )
            if getattr(args, "verbose", False):
                for u in res.missing:
                    print(f"  {u['trace_id']} ({u['method']}): span {u['span_id']}", file=sys.stderr)
        unplaced = res.unplaced
    if args.otlp:
        # start-up cost: loads pandas, pydantic, which `agentcausal --help` and every other verb would pay at import
        from agentcausal.tracers.otlp_export import write_evaluation_logs

        out = write_evaluation_logs(args.run_dir, args.otlp, methods=args.methods)
        print(f"{out.written} gen_ai.evaluation.result log record(s) written to {out.path}")
        unplaced = out.left_out if len(out.left_out) >= len(unplaced) else unplaced
    if unplaced:
        print(f"agentcausal: not annotated: {_unplaced_line(unplaced)}", file=sys.stderr)
        if getattr(args, "verbose", False):
            for u in unplaced:
                print(f"  {u['trace_id']} ({u['method']}): {u['why']}", file=sys.stderr)
    return 0
