"""``agentcausal demo``: the README's main job on the embedded default model.

::

    agentcausal demo            # attribution (3 baselines + DCFA) and discovery (MAC + statistical)
    agentcausal demo --quick    # a few-minute smoke run of every stage

An ``--out`` that already holds a demo run is refused unless ``--resume`` (run again into it, finished
items reused) or ``--force`` (start over) is given, as for ``attribute`` and ``discover``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from agentcausal.exceptions import ConfigError
from agentcausal.settings import preset_values, routing_preset
from agentcausal_cli.run_folder_options import add_resume_arguments, claim_run_folder, starting_prefect
from agentcausal_cli.settings_options import (
    add_model_arguments,
    add_settings_arguments,
    apply_model_arguments,
    settings_from_args,
)

__all__ = ["register", "cmd_demo"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` verb."""
    p = subparsers.add_parser(
        "demo",
        help="run the main job: attribution and causal discovery on real inputs",
        description="Failure attribution (All-at-Once, Step-by-Step, Binary-Search, DCFA) on example and real "
        "Who&When traces, then MAC and the statistical baselines on bnlearn networks and Auto MPG, on the "
        "active routing (default: the embedded model). Prints the accuracy and SHD/NHD/F1 tables and writes "
        "everything to a run folder. Reruns come from the cache.",
    )
    p.add_argument("--quick", action="store_true", help="a smaller smoke selection (a few minutes)")
    p.add_argument("--out", default=None, metavar="DIR", help="run folder (default runs/demo-<timestamp>)")
    add_resume_arguments(p)
    add_settings_arguments(p)
    add_model_arguments(p)
    p.add_argument(
        "--who-and-when",
        default=None,
        metavar="DIR",
        help="Who&When folder (default: $AGENTCAUSAL_WHO_AND_WHEN_DIR or data/who_and_when)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="CPU threads of the embedded model (default: every core, since the demo owns the machine; "
        "$AGENTCAUSAL_PROFILE_EMBEDDED_THREADS wins; use fewer when other work shares the machine)",
    )
    p.add_argument(
        "--preset",
        default=None,
        metavar="NAME",
        help="method-settings preset: paper or small; default: the routing's preset",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal demo``: plan, run the demo flow, print both tables."""
    # start-up cost: the library's run path imports openai and causal-learn (over a second measured), which
    # every other verb and `agentcausal --help` would pay if these were imported with the module
    from agentcausal.attribution.results import read_attribution_summary
    from agentcausal.demo_selection import demo_selection
    from agentcausal.discovery.config import DiscoveryConfig
    from agentcausal.discovery.method_settings import method_stages
    from agentcausal.registry import ATTRIBUTION_METHODS, DISCOVERY_METHODS
    from agentcausal.report.attribution_tables import accuracy_text
    from agentcausal.report.discovery_load import load_scored
    from agentcausal.report.discovery_tables import summary_text

    if args.threads is not None and args.threads < 1:
        raise ConfigError(f"--threads must be at least 1, got {args.threads}")
    # Documented choice: the embedded server's usual default keeps one core free
    # (agentcausal.llm.local.default_threads); the demo runs alone, and on 2 cores
    # every core roughly halves its time.
    os.environ.setdefault("AGENTCAUSAL_PROFILE_EMBEDDED_THREADS", str(args.threads or os.cpu_count() or 1))
    settings, _ = apply_model_arguments(args, settings_from_args(args, who_and_when_dir=args.who_and_when))

    preset = args.preset or routing_preset(settings.profiles_path, settings.routing)
    preset_values({}, preset)  # an unknown preset fails here, before any work
    plan = demo_selection(settings.who_and_when_dir, quick=args.quick, out_dir=args.out)

    settings.check_routes(
        {st for m in plan.attribution_methods for st in ATTRIBUTION_METHODS[m].stages}
        | {st for m in plan.llm_methods for st in method_stages(DISCOVERY_METHODS[m], DiscoveryConfig())}
    )
    for note in plan.notes:
        print(f"note: {note}", file=sys.stderr)
    print(
        f"agentcausal demo: {len(plan.trace_paths)} trace files x {len(plan.attribution_methods)} attribution "
        f"methods; MAC on {', '.join(plan.llm_datasets)}; statistical baselines on "
        f"{len(plan.datasets)} datasets; routing {settings.routing!r}, preset {preset!r}",
        file=sys.stderr,
    )
    # the demo's two run folders, locked until the command ends; a run in either: --resume, --force or refused
    for sub, planned in (("attribution", plan.trace_paths), ("discovery", plan.datasets)):
        if planned:
            claim_run_folder(args, Path(plan.out_dir) / sub)
    starting_prefect()
    from flows.api_server import unwatched_heartbeats_off
    from flows.demo import (
        demo,  # start-up cost (Prefect, ~1 s): imported when a run starts
    )

    t0 = time.time()
    with unwatched_heartbeats_off():
        progress = not args.no_progress and sys.stderr.isatty()
        dirs = demo(selection=plan, settings=settings, progress=progress, preset=preset)
    if "attribution" in dirs:
        print("\n== Failure attribution (Who&When metrics; exact step match) ==")
        print(accuracy_text(read_attribution_summary(dirs["attribution"])))  # as the flow evaluated it
    if "discovery" in dirs:
        print("\n== Causal discovery (SHD / NHD / F1 against the true graph) ==")
        print(summary_text(load_scored(dirs["discovery"])))
    print(f"\nrun folder: {plan.out_dir}  ({time.time() - t0:.0f} s)")
    for key, d in dirs.items():
        print(f"  {key:<22} {d}/report.md")
    return 0
