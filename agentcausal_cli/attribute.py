"""``agentcausal attribute`` and ``agentcausal evaluate``: failure attribution over a trace corpus.

::

    agentcausal attribute data/examples --method all_at_once --method binary_search --limit 4
    agentcausal attribute ../shared/data/who_and_when --method dcfa --max-steps 10 --limit 5 --out runs/dcfa5
    agentcausal attribute traces.jsonl --method step_by_step --set step_by_step.on_no_yes=last_step
    agentcausal attribute data/examples -m dcfa --routing paper --dry-run   # the plan as JSON, no request
    agentcausal attribute data/examples -m dcfa --preset small --repeats 3
    agentcausal evaluate runs/dcfa5

``attribute`` runs the Prefect flow ``attribute`` (one cached, retried task per
trace and method), shows a progress bar, writes ``results.parquet``,
``report.md`` and ``accuracy.csv`` into the run folder and prints the accuracy
table. ``evaluate`` recomputes the tables and report of a run folder.

Method settings come from a preset (``--preset paper|small``; default: the
routing's ``preset`` key, :mod:`agentcausal.settings`), then ``--set``.
``--dry-run`` prints the plan (:mod:`agentcausal.runs.plan`) as one JSON object and
exits 0 without starting a model, making a request or needing an API key.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcausal.exceptions import AgentCausalError, ConfigError, TraceFormatError, UnknownStageError
from agentcausal.runs.folder import default_run_dir, run_kind
from agentcausal.settings import routing_preset
from agentcausal_cli import quiet_task_failures
from agentcausal_cli.exit_codes import OK
from agentcausal_cli.import_traces import (
    add_import_arguments,
    import_corpus,
    import_sources,
    phoenix_query,
    prepare_corpus,
    uses_importer,
)
from agentcausal_cli.input_options import add_input_arguments, apply_input_arguments
from agentcausal_cli.method_sets import add_method_argument, parse_bool_sets, parse_sets
from agentcausal_cli.run_folder_options import (
    add_run_folder_arguments,
    apply_run_folder_arguments,
    claim_run_folder,
    run_options,
    starting_prefect,
)
from agentcausal_cli.run_output import print_attribution_run, print_discovery_report
from agentcausal_cli.runner_options import add_runner_arguments
from agentcausal_cli.settings_options import (
    add_model_arguments,
    add_settings_arguments,
    add_threads_argument,
    apply_model_arguments,
    apply_threads,
    settings_from_args,
)
from agentcausal_cli.spend_options import (
    add_spend_arguments,
    check_spend_arguments,
    print_estimate,
    refuse_unpriced_cap,
    run_check,
)

if TYPE_CHECKING:
    from agentcausal.attribution.spec import AttributionSpec
    from agentcausal.traces.model import Trace

__all__ = ["register", "cmd_attribute", "cmd_evaluate"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``attribute`` and ``evaluate`` verbs."""
    p = subparsers.add_parser(
        "attribute",
        help="attribute failed traces to an agent and step with one or more methods",
        description="Run attribution methods over traces (a Who&When folder, Who&When *.json files, or our "
        "Trace *.jsonl) as a cached Prefect flow; write results.parquet and report.md to a run folder.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="trace folder(s) or file(s) (or --from-phoenix URL)")
    add_method_argument(
        p,
        "method to run (repeatable): all_at_once, step_by_step, binary_search, a2p, echo, dcfa, "
        "dcfa_gca_only (default: all_at_once)",
    )
    p.add_argument(
        "--set",
        action="append",
        dest="sets",
        default=[],
        metavar="METHOD.FIELD=VALUE",
        help="a method setting (repeatable), e.g. step_by_step.on_no_yes=last_step; VALUE is JSON or text",
    )
    p.add_argument(
        "--evidence",
        action="store_true",
        help="every method quotes the blamed step verbatim (quote_evidence=true for each method that has it: one "
        "more reply field, checked against the step); ECHO quotes without it, binary_search cannot",
    )
    p.add_argument("--limit", type=int, default=None, help="at most N traces (after --id and --max-steps)")
    p.add_argument(
        "--id",
        action="append",
        dest="ids",
        metavar="TRACE_ID",
        help="only this trace id (repeatable), e.g. Algorithm-Generated/38",
    )
    p.add_argument("--max-steps", type=int, default=None, help="skip traces with more steps")
    p.add_argument("--out", default=None, metavar="DIR", help="run folder (default runs/attribute-<timestamp>)")
    add_settings_arguments(p)
    add_model_arguments(p)
    add_import_arguments(p)
    p.add_argument(
        "--no-ground-truth",
        action="store_true",
        help="no method sees the correct final answer (DCFA runs its no_truth variant; a method that "
        "cannot run without the answer is refused)",
    )
    p.add_argument(
        "--preset",
        default=None,
        metavar="NAME",
        help="method-settings preset: paper (as the papers define the methods), small (caps and "
        "wording for sub-2B models) or dcfa_paper (paper, with the three Who&When baselines as DCFA's "
        "released code runs them for its Table 1); default: the routing's preset",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        metavar="K",
        help="run every (trace, method) K times (repeat r sent as sample/seed r); report mean ± std",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the run plan as one JSON object and exit (no model, no request, no API key)",
    )
    p.add_argument(
        "--show-prompts",
        action="store_true",
        help="with --dry-run: print the messages every method would send for the first trace (or each "
        "--id), earlier replies as placeholders, instead of the plan",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="run the valid traces and list the invalid files (and JSONL lines) left out, instead of "
        "refusing the corpus; run.json records them under 'skipped'",
    )
    add_threads_argument(p)
    add_runner_arguments(p)
    add_input_arguments(p)
    add_run_folder_arguments(p)
    p.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        metavar="N",
        help="traces per Prefect task (default 100, on threads; on --runner dask about 4 tasks per worker the "
        "cluster has at the start, 100 to 400 traces each; fewer when a method has under 8 chunks' worth, more "
        "when it would have over 400 chunks); 1 = a task run per (trace, method); each trace is stored on its own "
        "either way, and the items of every chunk share one pool of threads",
    )
    add_spend_arguments(p)  # after the run-folder options: it adds --resume only where they did not
    p.set_defaults(func=cmd_attribute)

    e = subparsers.add_parser(
        "evaluate",
        help="recompute accuracy tables and report.md of a run folder",
        description="Exact step/agent evaluation of a run folder written by `attribute`.",
    )
    e.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="run folder written by `attribute` (holds results.parquet and run.json), e.g. runs/dcfa5",
    )
    e.set_defaults(func=cmd_evaluate)


def cmd_attribute(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal attribute``: check inputs, plan the run into its folder, run the flow, print the table.

    The corpus is read once, as a stream, by the plan's builder (every file checked before anything
    is refused); the plan's items go to ``<run folder>/plan.items.jsonl`` and its header to
    ``plan.json``, which the flow runs. ``--dry-run`` prints the header, the item count and the first
    items, and writes nothing.

    Raises
    ------
    ConfigError
        If a path does not exist, a method is unknown or a setting is invalid (before any LLM call).
    """
    # start-up cost: the library's run path imports openai (about 0.8 s measured), which every other verb and
    # `agentcausal --help` would pay if these were imported with the module (build_parser imports every verb)
    from agentcausal.attribution.method_settings import resolve_methods
    from agentcausal.attribution.plan import attribute_plan
    from agentcausal.registry import ATTRIBUTION_METHODS
    from agentcausal.runs.plan import ITEMS_FILE, SHOWN_ITEMS, write_plan
    from agentcausal.traces.model import Attribution
    from agentcausal_cli.cache import open_stores
    from agentcausal_cli.endpoints import check_endpoints

    apply_input_arguments(args)
    check_spend_arguments(args)
    if not args.paths and not args.from_phoenix:
        raise ConfigError("give trace folder(s) or file(s), or --from-phoenix URL")
    missing = [p for p in args.paths if not os.path.lexists(p)]  # a symlink loop is named by the loader
    if missing:
        raise ConfigError(f"no such trace file or folder: {', '.join(missing)}")
    methods = list(dict.fromkeys(args.methods or ["all_at_once"]))
    sets = parse_bool_sets(parse_sets(args.sets))
    if args.evidence:  # quote_evidence on for every method that has it (in the cache key as the setting is)
        from agentcausal.attribution.method_settings import evidence_sets  # start-up cost (see above)

        sets = evidence_sets(ATTRIBUTION_METHODS, methods, sets)
    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {args.limit}")
    if args.max_steps is not None and args.max_steps < 1:
        raise ConfigError(f"--max-steps must be at least 1, got {args.max_steps}")
    if args.repeats < 1:
        raise ConfigError(f"--repeats must be at least 1, got {args.repeats}")
    apply_threads(args)
    settings, model_facts = apply_model_arguments(args, settings_from_args(args))
    settings = apply_run_folder_arguments(args, settings)
    preset = args.preset or routing_preset(settings.profiles_path, settings.routing)
    with_truth = False if args.no_ground_truth else None
    resolved = resolve_methods(ATTRIBUTION_METHODS, methods, sets, with_ground_truth=with_truth, preset=preset)
    specs = [ATTRIBUTION_METHODS[m] for m in methods]
    imported = _imported(args)
    plan_args = dict(
        methods=specs,
        resolved=resolved,
        preset=preset,
        routing=settings.routing,
        profiles_path=settings.profiles_path,
        ids=args.ids,
        limit=args.limit,
        max_steps=args.max_steps,
        repeats=args.repeats,
        skip_invalid=args.skip_invalid,
        require_truth=not args.no_ground_truth,
        **_provenance(args, imported),
    )
    refuse_unpriced_cap(args, settings.profiles_path, settings.routing, _stages(specs, resolved))  # a blind cap
    if args.dry_run:  # no model, no request, no key, nothing written; the same refusals as a run
        if args.show_prompts:
            from agentcausal.attribution.previews import show_prompts  # start-up cost (see cmd_attribute)
            from agentcausal.traces.display import visible

            print(
                visible(
                    show_prompts(
                        _prompt_traces(args),
                        specs,
                        resolved,
                        ids=args.ids,
                        profiles_path=settings.profiles_path,
                        routing=settings.routing,
                    )
                )  # the prompts as sent, their control and bidi characters shown (\x1b, \u202e)
            )
            return 0
        try:
            corpus, skipped = _imported_traces(args) if imported else (None, [])
        except NothingNew as quiet:
            print(quiet)
            return OK
        plan = _with_skipped(
            attribute_plan(args.paths, traces=corpus, keep_items=SHOWN_ITEMS, **plan_args), skipped, args
        )
        print(plan.dumps())
        print_estimate(plan, args.max_cost, max_tokens=args.max_tokens)  # stderr: stdout stays one JSON object
        print_caps(resolved, settings)  # stderr: every completion cap the baselines will send
        return run_check(settings.profiles_path, settings.routing, _stages(specs, resolved)) if args.check else 0
    stages = _stages(specs, resolved)
    settings.check_routes(stages)
    print_caps(resolved, settings, quiet=True)  # a set cap the routed profile cannot honour: refused here
    run_dir = Path(args.out or default_run_dir("attribute"))
    out_existed = run_dir.exists()
    claim_run_folder(args, run_dir)  # locked until the command ends; a run in it: --resume, --force or refused
    try:  # every refusal before the run leaves no run folder behind
        skipped = []
        if imported:  # other formats and --labels: imported into <run folder>/traces.jsonl; the plan points there
            traces, skipped = _imported_traces(args)
            args.out = str(run_dir)
            paths = prepare_corpus(args, traces=[t for _, t in traces])
        else:
            paths = list(args.paths)
        plan = _with_skipped(attribute_plan(paths, items_file=run_dir / ITEMS_FILE, **plan_args), skipped, args)
        open_stores(settings.cache_dir, "attribute", Attribution)  # a damaged store heals in one line, now
        check_endpoints(settings.profiles_path, settings.routing, stages)  # one line and exit 2 when one is down
        plan_file = write_plan(plan, run_dir)
    except NothingNew as quiet:  # a quiet night: one line, exit 0, the run folder as it was
        if not out_existed:
            _remove_new_run_folder(run_dir)
        print(quiet)
        return OK
    except BaseException:
        if not out_existed:
            _remove_new_run_folder(run_dir)
        raise
    starting_prefect()
    # start-up cost (Prefect, ~1 s): imported when a run starts
    from flows.attribute import run_attribute
    from flows.runners import runner_choice_from_args  # (the same)

    quiet_task_failures(getattr(args, "verbose", False))  # Prefect's handlers exist now
    options = run_options(args, run_dir, model_facts, corpus=[str(Path(p).resolve()) for p in paths])
    run_attribute(str(plan_file), options, settings=settings, runner=runner_choice_from_args(args))
    return print_attribution_run(str(run_dir))


def _imported(args: argparse.Namespace) -> bool:
    """Whether the corpus is imported (any format but Who&When and Trace JSONL, ``--labels``, ``--from-phoenix``)."""
    return uses_importer(args)


def _imported_traces(args: argparse.Namespace) -> tuple[list[tuple[str, Trace]], list[dict[str, Any]]]:
    """The traces of an imported corpus, read in memory by its importer, and the inputs ``--skip-invalid`` left
    out (:func:`agentcausal_cli.import_traces.import_corpus`).

    Raises
    ------
    TraceFormatError
        If no trace is left (every one skipped by ``--skip-invalid``), naming the user's inputs.
    """
    corpus, skipped = import_corpus(args)
    if not corpus and not skipped and args.from_phoenix and not args.paths:
        raise NothingNew(_nothing_new_line(args))
    if not corpus:
        raise TraceFormatError(
            "no valid trace to run (every trace was skipped)",
            path=", ".join([*args.paths, *([args.from_phoenix] if args.from_phoenix else [])]),
        )
    return corpus, skipped


class NothingNew(Exception):
    """A Phoenix window (``--from-phoenix``) that selects no trace: a quiet night, not an error (exit 0)."""


def _nothing_new_line(args: argparse.Namespace) -> str:
    """The one line of a Phoenix window without traces: the server, project, window and filter it asked."""
    q = phoenix_query(args)
    window = f"since {q.start.isoformat()}" if q.start else "at all"
    if q.end:
        window += f" until {q.end.isoformat()}"
    where = f"Phoenix project {q.project!r} at {q.url}" + (f" (filter {q.filter!r})" if q.filter else "")
    return f"agentcausal: nothing new {window} in {where}: no trace to attribute, nothing sent"


def _with_skipped(plan: Any, skipped: list[dict[str, Any]], args: argparse.Namespace) -> Any:
    """The plan with the inputs an importer left out in its ``skipped`` (``--skip-invalid``)."""
    if not args.skip_invalid or not skipped:
        return plan
    return plan.model_copy(update={"skipped": [*skipped, *(plan.skipped or [])]})


def _prompt_traces(args: argparse.Namespace) -> list[Trace]:
    """The traces ``--show-prompts`` renders: each ``--id``, else the first valid trace (read as the run reads them)."""
    from agentcausal.traces.io import ScannedTrace, iter_traces  # start-up cost (see cmd_attribute)

    if _imported(args):
        return [t for _, t in _imported_traces(args)[0]]
    wanted = set(args.ids or [])
    out = []
    for x in iter_traces(list(args.paths)):
        if isinstance(x, ScannedTrace) and (x.trace.id in wanted or not wanted):
            out.append(x.trace)
            if not wanted or len(out) == len(wanted):
                break
    return out


def _provenance(args: argparse.Namespace, imported: bool) -> dict[str, Any]:
    """``sources``/``labels`` of :func:`agentcausal.attribution.plan.attribute_plan` for an imported corpus (else none)."""
    if not imported:
        return {}
    sources, labels = import_sources(args)
    return {"sources": sources, "labels": labels}


def _remove_new_run_folder(run_dir: Path) -> None:
    """Remove what a refused run wrote into a run folder this command created (traces.jsonl, the plan)."""
    from agentcausal.runs.plan import ITEMS_FILE, PLAN_FILE  # start-up cost (see cmd_attribute)

    for name in ("traces.jsonl", PLAN_FILE, ITEMS_FILE):
        (run_dir / name).unlink(missing_ok=True)
    try:
        run_dir.rmdir()  # only when empty: never anything else
    except OSError:
        pass


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal evaluate``.

    A discovery run folder (``outcomes.jsonl``) is re-reported the way
    ``agentcausal discover --report RUN_DIR`` does, saying so in one line.

    Raises
    ------
    ConfigError
        If the folder is missing.
    RunFileError
        If the folder holds no valid ``results.parquet``.
    """
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise ConfigError(f"no such run folder: {run_dir}")
    if run_kind(run_dir) == "discover":
        print(
            f"agentcausal: {run_dir} is a discovery run; re-reporting it as "
            f"`agentcausal discover --report {run_dir}` does",
            file=sys.stderr,
        )
        print_discovery_report(str(run_dir))
        return 0
    return print_attribution_run(str(run_dir), exit_on_unreachable=False, evaluate=True)


def _stages(specs: list[AttributionSpec[Any]], resolved: dict[str, dict[str, Any]]) -> set[str]:
    """The stages the run calls (a no-truth run scores with a judge, not the embedder)."""
    return {
        st
        for spec in specs
        for st in spec.stages
        if resolved[spec.name].get("with_ground_truth", True) or not st.endswith(".embed")
    }


def print_caps(resolved: dict[str, dict[str, Any]], settings: Any, *, quiet: bool = False) -> None:
    """The completion cap each baseline and DCFA call sends, on stderr (none printed when ``quiet``).

    Raises
    ------
    ConfigError
        If a set ``max_tokens`` exceeds the routed profile's ceiling (:func:`~agentcausal.llm.dialect.sent_cap`).
    """
    from agentcausal.attribution.baseline_settings import baseline_caps
    from agentcausal.attribution.dcfa.caps import dcfa_caps
    from agentcausal.llm.profiles import load_profiles

    try:
        profiles = load_profiles(settings.profiles_path, settings.routing)
    except AgentCausalError:
        return  # the routing's own refusal comes from the run's checks
    try:
        lines = baseline_caps(profiles, resolved)
        lines += dcfa_caps(profiles, resolved)  # DCFA's per-call caps, derived ones marked
    except UnknownStageError:
        return
    for line in [] if quiet else (["completion caps sent per call:"] + ["  " + x for x in lines] if lines else []):
        print(line, file=sys.stderr)
