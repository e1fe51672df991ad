"""``agentcausal tables dcfa|mac RUN...``: the papers' published tables from run folders, one command each.

::

    agentcausal tables dcfa runs/attribute-gpt5 runs/attribute-r1 runs/attribute-gpt5-notruth
    agentcausal tables mac runs/discover-gpt4o runs/discover-gemini runs/discover-r1

``dcfa``: DCFA's Table 1 (subsets × with/without truth × backbone; agent-and-step, the headline as
DCFA's ``evaluate.py`` computes it, beside step-only) and Figure 3 by the released levels
(:func:`agentcausal.report.attribution_paper_tables.dcfa_tables_text`). ``mac``: MAC's Tables 1-3,
mean ranks, win counts and cost multiples over several runs, one backbone each
(:func:`agentcausal.report.mac_paper_tables.mac_tables_text`). Every cell prints its n and the
published number it corresponds to. Markdown on stdout; offline (reads the run folders only).
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register", "cmd_tables"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``tables`` verb with its ``dcfa`` and ``mac`` subcommands."""
    p = subparsers.add_parser(
        "tables",
        help="the DCFA or MAC paper's tables from run folders",
        description="Print a paper's published tables computed from run folders, every cell with its n "
        "and the published number it corresponds to (markdown on stdout; no model is called).",
    )
    sub = p.add_subparsers(dest="paper", metavar="PAPER", required=True)
    d = sub.add_parser(
        "dcfa",
        help="DCFA's Table 1 and Figure 3 from attribute runs",
        description="DCFA's Table 1 (subsets x with/without truth x backbone: agent-and-step, the headline "
        "as DCFA's evaluate.py computes it, beside step-only) and Figure 3 by the released trace-length "
        "levels, from attribute run folders (one backbone each).",
    )
    d.add_argument("runs", nargs="+", metavar="RUN", help="attribute run folder (results.parquet)")
    d.set_defaults(func=cmd_tables)
    m = sub.add_parser(
        "mac",
        help="MAC's Tables 1-3, mean ranks, wins and costs from discover runs",
        description="MAC's Tables 1-3 (mean ± std over seeds per backbone, then over backbones), mean "
        "ranks, win counts and cost multiples, from discover run folders (one backbone each).",
    )
    m.add_argument("runs", nargs="+", metavar="RUN", help="discover run folder (results.parquet, outcomes.jsonl)")
    m.set_defaults(func=cmd_tables)


def _unique(labels: list[str]) -> list[str]:
    """Labels made unique by a ``#k`` suffix (two runs of one backbone stay apart)."""
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
        out.append(lab if seen[lab] == 1 else f"{lab} #{seen[lab]}")
    return out


def cmd_tables(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal tables dcfa|mac``.

    Raises
    ------
    RunFileError
        If a folder is not a run of the kind asked for or its files are unreadable (one line, exit 2).
    """
    # start-up cost: pandas and the report modules, which `agentcausal --help` would pay at import
    from agentcausal.exceptions import RunFileError

    runs = [Path(r) for r in args.runs]
    if args.paper == "dcfa":
        from agentcausal.attribution.results import load_results
        from agentcausal.report.attribution_paper_tables import dcfa_tables_text

        frames = dict(zip(_unique([r.name for r in runs]), (load_results(r) for r in runs)))
        print(dcfa_tables_text(frames))
        return 0
    from agentcausal.discovery.analyses import cost_frame
    from agentcausal.discovery.outcome import iter_outcomes
    from agentcausal.report.discovery_analyses import backbone_label
    from agentcausal.report.discovery_load import load_scored

    labels = _unique([backbone_label(r) for r in runs])
    frames, costs = {}, {}
    for label, r in zip(labels, runs):
        frames[label] = load_scored(r)
        try:
            costs[label] = cost_frame(iter_outcomes(r))
        except RunFileError:
            pass  # scored without outcomes.jsonl: no cost table for this run
    from agentcausal.report.mac_paper_tables import mac_tables_text

    print(mac_tables_text(frames, costs))
    return 0
