"""``agentcausal show RUN [TRACE]``: the blamed steps of a run in the terminal.

::

    agentcausal show runs/night                  # every trace with its blamed step, agent, span id, confidence, reason
    agentcausal show runs/night 4bf92f35         # one trace's steps, with each method's blame, evidence and fix
    agentcausal show runs/night 4bf92f35 --full -m dcfa

TRACE is a trace id or any part of one that names a single trace. Nothing is
recomputed: everything is read from the run folder (``results.parquet``,
``run.json``) and the trace file the run's plan names (hash checked).
"""

from __future__ import annotations

import argparse

from agentcausal.exceptions import ConfigError
from agentcausal.runs.folder import load_run_meta, run_kind
from agentcausal_cli.method_sets import add_method_argument

__all__ = ["register", "cmd_show"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``show`` verb."""
    p = subparsers.add_parser(
        "show",
        help="print a run's blamed steps, or one trace's steps with blame, evidence and fix",
        description="Print what an attribution run blamed. Without TRACE: one line per trace and method (blamed "
        "step, agent, span id, confidence, reason). With TRACE: that trace's steps, each method's blame, "
        "confidence, verbatim evidence, corrected step and simulated outcome beside the blamed step.",
    )
    p.add_argument("run_dir", metavar="RUN", help="run folder written by `agentcausal attribute`")
    p.add_argument(
        "trace", metavar="TRACE", nargs="?", default=None, help="trace id, or a part of one naming a single trace"
    )
    add_method_argument(p, "only this method's results (repeatable; default all)")
    p.add_argument("--full", action="store_true", help="every step's whole content (default: one line per step)")
    p.add_argument("--width", type=int, default=None, help="line width (default: the terminal's)")
    p.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal show``.

    Raises
    ------
    ConfigError
        If the folder is missing, a ``--method`` did not run in it, or TRACE names no trace or several.
    RunFileError
        If the folder's ``results.parquet`` is missing or unreadable.
    """
    from pathlib import Path

    # start-up cost: loads pandas, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.attribution.results import load_results

    # start-up cost: loads pandas, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.report.blamed import blamed_text

    if not Path(args.run_dir).is_dir():
        raise ConfigError(f"no such run folder: {args.run_dir}")

    if run_kind(args.run_dir) == "discover":
        raise ConfigError(
            f"{args.run_dir} is a discovery run; `show` prints attribution runs "
            f"(`agentcausal evaluate {args.run_dir}` re-reports a discovery run)"
        )
    results = load_results(args.run_dir)
    if args.methods:
        ran = sorted(set(results["method"].astype(str)))
        unknown = [m for m in args.methods if m not in ran]
        if unknown:
            raise ConfigError(
                f"no method {', '.join(repr(m) for m in unknown)} in this run; its methods: {', '.join(ran) or 'none'}"
            )
        results = results[results["method"].isin(args.methods)]
    if args.trace is None:
        text = blamed_text(results, width=args.width, max_rows=10**9)
        print(text or "no result rows" + (f" for method(s) {', '.join(args.methods)}" if args.methods else ""))
        return 0
    # start-up cost: loads openai, pandas, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.report.attribution_load import run_traces
    from agentcausal.report.trace_view import find_trace, trace_view_text

    tid = find_trace(list(results["trace_id"].astype(str)), args.trace)
    trace = run_traces(
        Path(args.run_dir), load_run_meta(args.run_dir), results[results["trace_id"].astype(str) == tid]
    ).get(tid)
    recorded = str(results.loc[results["trace_id"].astype(str) == tid, "trace_hash"].iloc[0] or "")
    if trace is not None and recorded not in ("", "nan", "<NA>", trace.content_hash()):
        trace = None  # the file changed since the run: its text is not the text the methods saw
    print(trace_view_text(results, tid, trace, methods=args.methods, width=args.width, full=args.full))
    return 0
