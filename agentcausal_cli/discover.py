"""``agentcausal discover``: causal discovery over datasets x seeds x methods, as a cached Prefect flow.

::

    agentcausal discover --dataset earthquake --dataset asia --method mac --method pc --seeds 0 1 --n 1000
    agentcausal discover --dataset all --method statistical --out runs/stat
    agentcausal discover --dataset main --method statistical --method mac --llm-dataset earthquake --llm-dataset asia
    agentcausal discover --dataset mydata.csv --method mac --rounds 2 --executor coding
    agentcausal discover --dataset asia --method mac --method react --set mac.rounds=2 --set react.max_steps=6
    agentcausal discover --report runs/discover-20250101-120000
    agentcausal discover --dataset asia --method mac --routing paper --dry-run    # the plan as JSON
    agentcausal discover --dataset asia --method mac --routing paper --show-prompts  # what each agent is sent
    agentcausal discover -d earthquake -d cancer -m mac -m llm_zero_shot -m pc --rounds 1 2 3  # rounds sweep

Prints the SHD / NHD / F1 table and the run folder (``results.parquet``,
``outcomes.jsonl``, ``summary.csv``, ``graphs/``, ``report.md``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentcausal.exceptions import ConfigError
from agentcausal.runs.folder import default_run_dir
from agentcausal.settings import preset_values, routing_preset
from agentcausal_cli import quiet_task_failures
from agentcausal_cli.dataset_checks import check_datasets, expand_datasets
from agentcausal_cli.input_options import add_input_arguments, apply_input_arguments
from agentcausal_cli.method_sets import add_method_argument, discover_sets
from agentcausal_cli.run_folder_options import (
    add_run_folder_arguments,
    apply_run_folder_arguments,
    claim_run_folder,
    run_options,
    starting_prefect,
)
from agentcausal_cli.run_output import print_discovery_report, print_discovery_run
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

__all__ = ["register", "cmd_discover", "build_config"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``discover`` verb."""
    p = subparsers.add_parser(
        "discover",
        help="causal discovery: MAC, its ablations, an LLM baseline and statistical baselines",
        description="Run causal-discovery methods over benchmark or user datasets and seeds as a cached Prefect "
        "flow; write results.parquet, report.md and graph drawings to a run folder and print SHD / NHD / F1.",
    )
    p.add_argument(
        "--dataset",
        "-d",
        action="append",
        dest="datasets",
        metavar="NAME|PATH",
        help="benchmark (earthquake, cancer, survey, asia, child, sachs, alarm, auto_mpg; 'main' = the MAC "
        "paper's five of Table 2 (earthquake, cancer, survey, auto_mpg, child) plus asia, which the rank "
        "tables leave out and name; 'all' = all eight) or a .csv/.parquet file with its .json metadata "
        'beside it (or DATA::META): {"variables": {column: description}, "domain": str, "true_edges": '
        '[[cause, effect], ...] (optional; no true graph -> no SHD/F1), "data_type", "missing_values"} '
        "-- see docs/inputs.md; repeatable",
    )
    add_method_argument(
        p,
        "mac, mac_single, dcm_only, mdm_only, llm_zero_shot, react, llm_scd, ils_csl, pc, fci, ges, "
        "exact_search, "
        "direct_lingam, or 'statistical' (the five); repeatable (default: mac)",
    )
    p.add_argument(
        "--anonymise",
        action="append",
        choices=("none", "names", "all"),
        metavar="MODE",
        help="memorisation control, repeatable: run each LLM method once per mode: none (as is), "
        "names (neutral variable ids, descriptions kept), all (ids only: descriptions, states and "
        "domain dropped); the report shows the modes side by side (default: none)",
    )
    p.add_argument(
        "--llm-dataset",
        action="append",
        dest="llm_datasets",
        metavar="NAME",
        help="run LLM methods only on this dataset (repeatable; default: every dataset); "
        "statistical methods run on all",
    )
    p.add_argument("--seeds", type=int, nargs="+", default=[0], metavar="SEED", help="seeds (default: 0)")
    p.add_argument("--n", type=int, default=1000, help="rows sampled from a bnlearn network (default 1000)")
    p.add_argument("--out", default=None, metavar="DIR", help="run folder (default runs/discover-<timestamp>)")
    add_settings_arguments(p)
    add_model_arguments(p)
    g = p.add_argument_group("MAC")
    g.add_argument(
        "--rounds",
        type=int,
        nargs="+",
        default=None,
        metavar="R",
        help="Affirmative-Negative rounds per debate (1-5, default 1); several values run the rounds "
        "sweep in one run (paper §4.3): each MAC method once per value, its own row, e.g. 'mac (rounds 2)'",
    )
    g.add_argument("--subset-size", type=int, default=None, help="rows of the subset S in the algorithm debate")
    g.add_argument(
        "--executor",
        choices=("auto", "typed", "coding"),
        default=None,
        help="auto (default; the small preset: typed): LLM-written causal-learn code in the sandbox "
        "where the sandbox works here, else typed (said in one line and marked in the rows); coding: "
        "refused where the sandbox cannot work; typed: run the chosen algorithm through the pool",
    )
    g.add_argument("--coding-attempts", type=int, default=None, help="scripts tried in coding mode (default 3)")
    g.add_argument(
        "--timeout", type=float, default=None, help="wall limit of one statistical algorithm, s (default 300)"
    )
    g.add_argument(
        "--shd-reversal",
        type=int,
        choices=(1, 2),
        default=1,
        help="SHD cost of a reversed edge in the SHD column (default 1); the rank tables always rank by the "
        "MAC paper's SHD (App. B: 2) with this one beside, labelled",
    )
    p.add_argument(
        "--preset",
        default=None,
        choices=["paper", "small"],
        help="method-settings preset: paper or small (dcfa_paper is attribution's: the Who&When baselines as "
        "DCFA ran them); default: the routing's preset",
    )
    p.add_argument(
        "--set",
        action="append",
        dest="sets",
        default=[],
        metavar="METHOD.FIELD=VALUE",
        help="a method setting (repeatable; after the preset and the MAC options above): METHOD is mac "
        "(MAC, mac_single, dcm_only, mdm_only; llm_zero_shot reads mac.max_tokens_scale), react, "
        "llm_scd or ils_csl, e.g. mac.rounds=2, react.max_steps=6, llm_scd.sampling=takayama; VALUE is JSON "
        "or text",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        metavar="K",
        help="run every (dataset, seed, method) K times (repeat r sent as sample/seed r)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the run plan as one JSON object and exit (no model, no request, no API key)",
    )
    p.add_argument(
        "--show-prompts",
        action="store_true",
        help="print the messages each MAC agent would send (role, principles, procedure, output format; "
        "an earlier agent's reply shown as a placeholder) instead of the plan, and exit (no request)",
    )
    p.add_argument(
        "--report",
        metavar="RUN_DIR",
        default=None,
        help="only recompute the tables and report of an existing run folder",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="run the valid datasets and list the invalid user datasets left out, instead of refusing; "
        "run.json records them under 'skipped'",
    )
    add_threads_argument(p)
    add_runner_arguments(p)
    add_input_arguments(p, datasets=True)
    add_run_folder_arguments(p)
    p.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        metavar="N",
        help="(dataset, seed, method) runs per Prefect task (default 1: a task run each); each run "
        "is stored on its own either way",
    )
    add_spend_arguments(p)  # after the run-folder options: it adds --resume only where they did not
    p.set_defaults(func=cmd_discover)


def build_config(args: argparse.Namespace, preset: str | None = None):
    """The :class:`DiscoveryConfig` of parsed options: MAC's settings from ``preset``
    (:mod:`agentcausal.settings`; None = the model defaults), then the options given.

    Raises
    ------
    ConfigError on an invalid value (e.g. ``--rounds 9``) or an unknown preset.
    """
    # start-up cost: the discovery modules import causal-learn and openai (see cmd_discover)
    from agentcausal.discovery.config import DiscoveryConfig
    from agentcausal.discovery.llm import ils_csl, llm_scd, react
    from agentcausal.discovery.mac import settings as mac_settings
    from agentcausal.discovery.mac.executor import resolve_executor
    from agentcausal.discovery.variants import resolve_methods
    from agentcausal.registry import DISCOVERY_METHODS

    # only the methods that run DCM run an executor: refuse or say "fallback" only for them
    names = getattr(args, "methods", None) or ["mac"]
    uses_dcm = any(v.spec.runs_dcm for v in resolve_methods(DISCOVERY_METHODS, names))
    values = preset_values(getattr(mac_settings, "PRESETS", {}), preset) if preset else {}
    # --executor given, else the preset's (small: typed), else auto
    requested = getattr(args, "executor", None) or values.get("executor", "auto")
    executor, fallback = resolve_executor(requested if uses_dcm or requested == "typed" else "auto")
    if fallback and uses_dcm:
        print(fallback, file=sys.stderr)
    # the preset's MAC values, then the options given (None = not given)
    rounds = getattr(args, "rounds", None) or []
    rounds = rounds if isinstance(rounds, list) else [rounds]
    given = {
        "rounds": rounds[0] if len(set(rounds)) == 1 else None,  # several: the sweep's variants carry their own
        "subset_size": getattr(args, "subset_size", None),
        "executor": executor,
        "coding_attempts": getattr(args, "coding_attempts", None),
        "algorithm_timeout_s": getattr(args, "timeout", None),
    }
    values.setdefault("algorithm_timeout_s", 300.0)  # the --timeout default
    values.update({k: v for k, v in given.items() if v is not None})
    timeout = getattr(args, "timeout", None)
    models = {
        "mac": mac_settings.MACSettings,
        "react": react.ReActSettings,
        "llm_scd": llm_scd.LLMSCDSettings,
        "ils_csl": ils_csl.ILSCSLSettings,
    }
    sets = discover_sets(getattr(args, "sets", None) or [], models)
    values.update(sets.get("mac", {}))
    try:
        mac = mac_settings.MACSettings(**values)
        baselines = {
            name: models[name](**{**(preset_values(mod.PRESETS, preset) if preset else {}), **sets.get(name, {})})
            for name, mod in (("react", react), ("llm_scd", llm_scd), ("ils_csl", ils_csl))
        }
        samples = len(getattr(args, "seeds", None) or [0]) * max(1, getattr(args, "repeats", 1) or 1)
        return DiscoveryConfig(
            mac=mac,
            algorithm_timeout_s=300.0 if timeout is None else timeout,
            executor_fallback=fallback,
            samples=samples,
            **baselines,
        )
    except ValidationError as exc:
        raise ConfigError(f"invalid MAC option: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from exc


def cmd_discover(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal discover``: check inputs, plan the run into its folder, run the flow, print the table.

    Raises
    ------
    ConfigError, DatasetError
        On an unknown method or dataset, a missing file or an invalid option (before any work).
    """
    # start-up cost: the library's run path imports openai and causal-learn (over a second measured), which
    # every other verb and `agentcausal --help` would pay if these were imported with the module
    from agentcausal.discovery.evaluate import score_run
    from agentcausal.discovery.method_settings import method_stages
    from agentcausal.discovery.outcome import DiscoveryOutcome
    from agentcausal.discovery.plan import discover_plan
    from agentcausal.discovery.previews import discover_previews
    from agentcausal.discovery.variants import expand_rounds, resolve_methods, with_anonymise
    from agentcausal.llm.preview import render_previews
    from agentcausal.registry import DISCOVERY_METHODS
    from agentcausal.runs.plan import write_plan
    from agentcausal_cli.cache import open_stores
    from agentcausal_cli.endpoints import check_endpoints

    if args.report:
        if not (Path(args.report) / "outcomes.jsonl").is_file():
            raise ConfigError(f"{args.report} holds no outcomes.jsonl (not a discover run folder)")
        score_run(args.report, reversal_cost=args.shd_reversal)
        print_discovery_report(args.report, reversal_cost=args.shd_reversal)
        return 0
    if not args.datasets:
        raise ConfigError("name at least one --dataset (e.g. --dataset earthquake, or --dataset main)")
    if args.n < 10:
        raise ConfigError(f"--n must be at least 10, got {args.n}")
    if args.repeats < 1:
        raise ConfigError(f"--repeats must be at least 1, got {args.repeats}")
    apply_threads(args)
    apply_input_arguments(args)
    check_spend_arguments(args)
    datasets = expand_datasets(args.datasets)
    methods = with_anonymise(resolve_methods(DISCOVERY_METHODS, args.methods or ["mac"]), args.anonymise or ["none"])
    methods = expand_rounds(methods, args.rounds or [])  # --rounds 1 2 3: "mac (rounds 1)", ... (paper §4.3)
    llm_datasets = args.llm_datasets
    if llm_datasets:
        unknown = [d for d in expand_datasets(llm_datasets) if d not in datasets]
        if unknown:
            raise ConfigError(f"--llm-dataset {', '.join(unknown)} is not among the --dataset values")
    loaded: dict[str, Any] = {}
    datasets, skipped = check_datasets(datasets, skip_invalid=args.skip_invalid, loaded=loaded)
    if llm_datasets and skipped:
        llm_datasets = [d for d in llm_datasets if d not in {s["dataset"] for s in skipped}] or None
    settings, model_facts = apply_model_arguments(args, settings_from_args(args))
    settings = apply_run_folder_arguments(args, settings)
    preset = args.preset or routing_preset(settings.profiles_path, settings.routing)
    config = build_config(args, preset)
    plan = discover_plan(
        datasets,
        methods,
        config=config,
        preset=preset,
        routing=settings.routing,
        profiles_path=settings.profiles_path,
        n=args.n,
        repeats=args.repeats,
        anonymise=args.anonymise or [],
        seeds=args.seeds,  # [] = not asked: names as they are
        llm_datasets=expand_datasets(llm_datasets) if llm_datasets else None,
        skipped=skipped if args.skip_invalid else None,
        loaded=loaded,
    )  # user datasets as the check read them: not read again
    if args.show_prompts:
        print(
            render_previews(discover_previews(datasets, methods, config, n=args.n, seed=args.seeds[0], loaded=loaded))
        )  # instructions whole, data blocks cut
        return 0
    stages = {st for m in methods for st in method_stages(m.spec, config)}
    refuse_unpriced_cap(args, settings.profiles_path, settings.routing, stages)  # a blind cap: before any request
    if args.dry_run:
        print(plan.dumps())
        print_estimate(plan, args.max_cost, max_tokens=args.max_tokens)  # stderr: stdout stays one JSON object
        print_mac_caps(plan, settings, loaded)  # stderr: every MAC call's cap
        return run_check(settings.profiles_path, settings.routing, stages) if args.check else 0
    settings.check_routes(stages)
    open_stores(settings.cache_dir, "discover", DiscoveryOutcome)  # a damaged store heals in one line, now
    check_endpoints(settings.profiles_path, settings.routing, stages)  # one line and exit 2 when one is down
    run_dir = args.out or default_run_dir("discover")
    claim_run_folder(args, run_dir)  # locked until the command ends; a run in it: --resume, --force or refused
    plan_file = write_plan(plan, run_dir)
    starting_prefect()
    # start-up cost (Prefect, ~1 s): imported when a run starts
    from flows.discover import run_discover
    from flows.runners import runner_choice_from_args  # (the same)

    quiet_task_failures(getattr(args, "verbose", False))  # Prefect's handlers exist now
    runner = runner_choice_from_args(args)
    dropped = {
        ds.name: {k: ds.extra[k] for k in ("rows_read", "rows_dropped_missing", "missing_by_column")}
        for ds in loaded.values()
        if ds.extra.get("rows_dropped_missing")
    }  # rows left out for missing values
    options = run_options(args, run_dir, model_facts, **({"missing_values": dropped} if dropped else {}))
    run_discover(
        str(plan_file),
        options,
        settings=settings,
        reversal_cost=args.shd_reversal,
        runner=None if runner.kind.value == "thread" and runner.max_workers is None else runner,
    )
    return print_discovery_run(run_dir, reversal_cost=args.shd_reversal)


def print_mac_caps(plan: Any, settings: Any, loaded: dict[str, Any]) -> None:
    """The completion cap every MAC call of ``plan`` sends, one line per call kind, on stderr
    (:func:`agentcausal.discovery.mac.caps.mac_caps`); nothing when the plan runs no MAC method."""
    from agentcausal.discovery.data.datasets import load_header  # start-up cost (see cmd_discover)
    from agentcausal.discovery.mac.caps import mac_caps  # (the same)
    from agentcausal.llm.profiles import load_profiles  # (the same)

    profiles = load_profiles(settings.profiles_path, settings.routing)
    resolved = {m: mp.settings for m, mp in plan.methods.items()}
    if not mac_caps(profiles, resolved, {}):
        return  # no MAC method: not a dataset read
    variables: dict[str, list[str]] = {}
    for item in plan.iter_items():
        try:
            ds = loaded.get(item.spec or "") or load_header(item.spec or item.path)  # no row sampled
            variables[item.id] = list(ds.variables)
        except Exception:  # the dry run never fails on a cap listing: that dataset is left out of the sizing
            continue
    lines = mac_caps(profiles, resolved, variables)
    print("completion caps sent per call:", *("  " + x for x in lines), sep="\n", file=sys.stderr)
