"""``agentcausal compare RUN_A RUN_B``: two run folders side by side, with paired tests on their shared items.

::

    agentcausal compare runs/attribute-A runs/attribute-B            # markdown to stdout, RUN_B/compare.html
    agentcausal compare runs/discover-A runs/discover-B --out cmp.html

See :mod:`agentcausal.report.compare` for the pairing and the tests (exact
McNemar for right/wrong, Wilcoxon for SHD and the other discovery metrics).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register", "cmd_compare"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare`` verb."""
    p = subparsers.add_parser(
        "compare",
        help="compare two run folders with paired tests",
        description="Compare two run folders of the same kind (attribution or discovery): "
        "per method the metrics of A and B, their difference and a paired test on the shared "
        "items; flipped items; cost. Markdown to stdout, HTML to --out.",
    )
    p.add_argument("run_a", metavar="RUN_A", help="run folder A (the baseline)")
    p.add_argument("run_b", metavar="RUN_B", help="run folder B")
    p.add_argument("--out", default=None, help="HTML file (default: RUN_B/compare.html)")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    """Handler of ``agentcausal compare``.

    Raises
    ------
    CompareError
        If the folders are not runs of one kind or share no item (the CLI prints one line, exit 2).
    """
    # start-up cost: loads networkx, openai, pandas, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.report.compare import compare_runs
    from agentcausal.report.compare_pages import comparison_markdown, write_comparison_html

    c = compare_runs(args.run_a, args.run_b)
    warning = c.content_warning()
    if warning:  # paired by id: an edited trace keeps its id; say so before the tables
        print(f"warning: {warning}", file=sys.stderr)
    out = Path(args.out) if args.out else Path(args.run_b) / "compare.html"
    print(comparison_markdown(c))
    path = write_comparison_html(c, out)
    print(f"HTML: {path}", file=sys.stderr)
    return 0
