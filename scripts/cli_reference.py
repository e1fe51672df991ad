"""Write docs/cli.md from the command line's own argparse parsers.

Usage (from the repository root)::

    .venv/bin/python scripts/cli_reference.py           # rewrite docs/cli.md
    .venv/bin/python scripts/cli_reference.py --check   # exit 1 when docs/cli.md is not what the parsers say

The page lists every verb (and sub-verb) of ``agentcausal``: its description, its usage line and a
table of its options by argument group, in the order the parsers define them. Nothing is typed by
hand, so the page cannot drift from ``agentcausal VERB --help``; ``tests/test_docs.py`` fails when it
has.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"
WIDTH = 100  # usage lines are wrapped at this width, whatever the terminal

HEADER = """# Command line reference

Generated from the parsers by `scripts/cli_reference.py` (do not edit by hand: rerun it after changing
an option; `tests/test_docs.py` fails when this page and the parsers differ). `agentcausal VERB --help`
prints the same text. `-v` (INFO logs on the console) is accepted before or after every verb.

Exit statuses, run folders and reruns: [operations.md](operations.md). Presets, routings and
`--route`: [presets-and-routing.md](presets-and-routing.md).
"""


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=WIDTH, max_help_position=40)


def _cell(text: str) -> str:
    """One markdown table cell: single line; pipes, asterisks and angle brackets escaped."""
    text = " ".join(text.split())
    for raw, safe in (("|", "\\|"), ("*", "\\*"), ("<", "&lt;"), (">", "&gt;")):
        text = text.replace(raw, safe)
    return text


def _option(action: argparse.Action, fmt: argparse.HelpFormatter) -> str:
    if not action.option_strings:
        return f"`{fmt._format_args(action, action.dest.upper())}`"
    if action.nargs == 0:
        return ", ".join(f"`{s}`" for s in action.option_strings)
    args = fmt._format_args(action, action.dest.upper())
    return ", ".join(f"`{s} {args}`" for s in action.option_strings)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """name -> (parser, one-line help) of the parser's sub-verbs, in order."""
    out: dict[str, tuple[argparse.ArgumentParser, str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                out[name] = (sub, helps.get(name, ""))
    return out


def _verb_section(name: str, parser: argparse.ArgumentParser, summary: str, level: int) -> list[str]:
    parser.formatter_class = _formatter
    fmt = parser._get_formatter()
    lines = [f"{'#' * level} `{name}`", ""]
    if parser.description:
        lines += [_cell(parser.description), ""]
    elif summary:
        lines += [summary[0].upper() + summary[1:] + ".", ""]
    lines += ["```", parser.format_usage().strip(), "```", ""]
    for group in parser._action_groups:
        rows = [
            a
            for a in group._group_actions
            if a.help is not argparse.SUPPRESS
            and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
            and "--verbose" not in a.option_strings
        ]
        if not rows:
            continue
        title = {"positional arguments": "arguments", "options": "options"}.get(group.title or "", group.title)
        lines += [f"**{title}**" + (f": {_cell(group.description)}" if group.description else ""), ""]
        lines += ["| option | meaning |", "|---|---|"]
        for action in rows:
            lines.append(f"| {_option(action, fmt)} | {_cell(fmt._expand_help(action) if action.help else '')} |")
        lines.append("")
    if parser.epilog:
        lines += [_cell(parser.epilog), ""]
    for sub_name, (sub, sub_help) in _subparsers(parser).items():
        lines += _verb_section(f"{name} {sub_name}", sub, sub_help, level + 1)
    return lines


def render() -> str:
    """The whole page as the parsers define it today."""
    os.environ["COLUMNS"] = str(WIDTH)  # argparse wraps usage at the terminal width otherwise
    from agentcausal_cli import build_parser

    root = build_parser()
    verbs = _subparsers(root)
    lines = [HEADER, "| verb | what it does |", "|---|---|"]
    lines += [f"| [`{v}`](#agentcausal-{v.replace(' ', '-')}) | {_cell(h)} |" for v, (_, h) in verbs.items()]
    lines.append("")
    for v, (p, h) in verbs.items():
        lines += _verb_section(f"agentcausal {v}", p, h, 2)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description="Write docs/cli.md from the agentcausal parsers.")
    cli.add_argument("--check", action="store_true", help="exit 1 when docs/cli.md differs; write nothing")
    args = cli.parse_args(argv)
    text = render()
    if args.check:
        if PAGE.exists() and PAGE.read_text(encoding="utf-8") == text:
            return 0
        print(
            f"{PAGE.relative_to(ROOT)} is out of date: run .venv/bin/python scripts/cli_reference.py", file=sys.stderr
        )
        return 1
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
