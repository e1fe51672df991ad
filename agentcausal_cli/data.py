"""``agentcausal data fetch who-and-when|mast|agentrx``: download a labelled corpus.

::

    agentcausal data fetch who-and-when                 # into $AGENTCAUSAL_WHO_AND_WHEN_DIR or data/who_and_when
    agentcausal data fetch who-and-when --dest /data/ww --force
    agentcausal data fetch mast                         # $AGENTCAUSAL_MAST_DIR or data/mast (--full: 200 MB more)
    agentcausal data fetch agentrx                      # $AGENTCAUSAL_AGENTRX_DIR or data/agentrx

MAST-Data and AgentRx (both CC-BY-4.0) come from the Hugging Face hub; the
folders are git-ignored, never committed.

It downloads the public repository archive (GitHub ``ag2ai/Agents_Failure_Attribution``)
and keeps only ``Who&When/<subset>/*.json``. Offline it fails with a message
saying how to place a copy by hand.
"""

from __future__ import annotations

import argparse

from agentcausal.settings import RunSettings

__all__ = ["register", "cmd_fetch"]

DATASETS = ("who-and-when", "mast", "agentrx")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``data`` verb (sub-verb ``fetch``)."""
    p = subparsers.add_parser("data", help="download benchmark data", description="Download benchmark data.")
    sub = p.add_subparsers(dest="data_verb", metavar="ACTION", required=True)
    f = sub.add_parser("fetch", help="download a dataset", description="Download a dataset from its public home.")
    f.add_argument("dataset", choices=DATASETS)
    f.add_argument(
        "--dest", default=None, help="target folder (default: the who_and_when_dir, mast_dir or agentrx_dir setting)"
    )
    f.add_argument("--url", default=None, help="archive URL (default: the GitHub repository zip)")
    f.add_argument("--timeout", type=float, default=60.0, help="network timeout, seconds")
    f.add_argument("--force", action="store_true", help="replace an existing copy")
    f.add_argument("--full", action="store_true", help="mast: also the full MAD dataset (about 200 MB)")
    f.set_defaults(func=cmd_fetch)


def cmd_fetch(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal data fetch``.

    Raises
    ------
    DatasetError
        If the download fails (offline) or the destination already holds data without ``--force``.
    """
    # start-up cost: loads pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.traces.whowhen import WHO_AND_WHEN_ZIP_URL, fetch_who_and_when, load_who_and_when

    if args.dataset in ("mast", "agentrx"):
        return _fetch_hub(args, RunSettings.from_env())
    dest = args.dest or RunSettings.from_env().who_and_when_dir
    out = fetch_who_and_when(dest, url=args.url or WHO_AND_WHEN_ZIP_URL, timeout_s=args.timeout, overwrite=args.force)
    traces = load_who_and_when(out)
    counts = {s: sum(t.source == s for t in traces) for s in sorted({t.source for t in traces})}
    print(f"Who&When: {len(traces)} traces in {out} ({', '.join(f'{k} {v}' for k, v in counts.items())})")
    return 0


def _fetch_hub(args: argparse.Namespace, settings: RunSettings) -> int:
    if args.dataset == "mast":
        # start-up cost: loads pydantic, which `agentcausal --help` and every other verb would pay at import
        from agentcausal.traces.importers.mast import fetch_mast, load_mast

        out = fetch_mast(args.dest or settings.mast_dir, full=args.full, timeout_s=args.timeout, overwrite=args.force)
        traces = load_mast(out)
        print(f"MAST: {len(traces)} traces in {out} (trace-level failure modes only)")
        return 0
    # start-up cost: loads pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.traces.importers.agentrx import fetch_agentrx, load_agentrx

    out = fetch_agentrx(args.dest or settings.agentrx_dir, timeout_s=args.timeout, overwrite=args.force)
    traces = load_agentrx(out)
    print(
        f"AgentRx: {len(traces)} trajectories in {out} ({sum(t.label is not None for t in traces)} with "
        "a root-cause step)"
    )
    return 0
