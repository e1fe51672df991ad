"""Compare two ``bench --embedded`` result files: the same traces and methods before and after a change.

Used for the DCFA-fidelity issue's check that the ``small`` preset (the
embedded 0.5B model's accommodations) is not worse than the settings it
replaced. Each input is an ``embedded.json`` written by
:func:`bench.embedded.run_embedded`; only (trace, method) pairs present in both
are compared, so an interrupted run compares on what it finished.

Run it::

    .venv/bin/python -m bench.embedded_compare BEFORE.json AFTER.json \\
        --before-label 8ae4b00 --after-label "HEAD, small" --out bench/results/embedded_small_vs_before
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.common import md_table

__all__ = ["compare_rows", "compare_markdown"]


def compare_rows(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-method step/agent correct counts and cost on the (trace, method) pairs both runs finished.

    Parameters
    ----------
    before, after : rows of ``embedded.json`` (keys trace, method, step_correct, agent_correct,
        requests, prompt_tokens, completion_tokens, seconds, pred_step, error)

    Returns
    -------
    dict with ``pairs`` (trace, method, before/after predicted step and correctness) and ``methods``
    (method -> n, step and agent correct before and after, mean requests and tokens per trace before and
    after, errors before and after, and ``not_worse``: after's step and agent correct counts are each at
    least before's).
    """
    b = {(r["trace"], r["method"]): r for r in before}
    a = {(r["trace"], r["method"]): r for r in after}
    common = sorted(set(b) & set(a))
    pairs = [
        {
            "trace": t,
            "method": m,
            "true_step": b[t, m]["true_step"],
            "before_step": b[t, m]["pred_step"],
            "after_step": a[t, m]["pred_step"],
            "before_step_correct": bool(b[t, m]["step_correct"]),
            "after_step_correct": bool(a[t, m]["step_correct"]),
            "before_agent_correct": bool(b[t, m]["agent_correct"]),
            "after_agent_correct": bool(a[t, m]["agent_correct"]),
            "before_error": b[t, m].get("error") or "",
            "after_error": a[t, m].get("error") or "",
        }
        for t, m in common
    ]
    methods: dict[str, dict[str, Any]] = {}
    for m in sorted({m for _, m in common}):
        mine = [(b[k], a[k]) for k in common if k[1] == m]
        n = len(mine)

        def tot(side: int, key: str) -> int:
            return sum(int(bool(x[side][key])) for x in mine)  # noqa: B023 (called within this iteration)

        def mean(side: int, key: str) -> float:
            return round(sum(float(x[side].get(key) or 0) for x in mine) / n, 1)  # noqa: B023 (called within this iteration)

        row = {
            "n": n,
            "step_correct_before": tot(0, "step_correct"),
            "step_correct_after": tot(1, "step_correct"),
            "agent_correct_before": tot(0, "agent_correct"),
            "agent_correct_after": tot(1, "agent_correct"),
            "errors_before": sum(bool(x[0].get("error")) for x in mine),
            "errors_after": sum(bool(x[1].get("error")) for x in mine),
            "requests_before": mean(0, "requests"),
            "requests_after": mean(1, "requests"),
            "tokens_before": round(mean(0, "prompt_tokens") + mean(0, "completion_tokens"), 1),
            "tokens_after": round(mean(1, "prompt_tokens") + mean(1, "completion_tokens"), 1),
        }
        row["not_worse"] = (
            row["step_correct_after"] >= row["step_correct_before"]
            and row["agent_correct_after"] >= row["agent_correct_before"]
            and row["errors_after"] <= row["errors_before"]
        )
        methods[m] = row
    return {"pairs": pairs, "methods": methods, "traces": sorted({t for t, _ in common})}


def compare_markdown(result: dict[str, Any], before_label: str, after_label: str, note: str = "") -> str:
    """Markdown: one table per method (counts out of n) and one per (trace, method) pair."""
    head = (
        f"# Embedded model: `small` after the change vs before\n\n"
        f"Before: {before_label}. After: {after_label}. Traces ({len(result['traces'])}): "
        f"{', '.join(result['traces'])}. Counts are traces correct out of n (step-level and agent-level "
        f"accuracy, Who&When's convention: exact step index, agent name). Requests and tokens are means per "
        f"trace. With n this small a difference of one trace is noise; the check is for regressions such as "
        f"new errors or a method that stops answering.{(' ' + note) if note else ''}\n\n"
    )
    cols = [
        "n",
        "step_correct_before",
        "step_correct_after",
        "agent_correct_before",
        "agent_correct_after",
        "errors_before",
        "errors_after",
        "requests_before",
        "requests_after",
        "tokens_before",
        "tokens_after",
        "not_worse",
    ]
    methods = [{"method": m, **{c: r[c] for c in cols}} for m, r in result["methods"].items()]
    return head + "## Per method\n\n" + md_table(methods) + "\n\n## Per trace\n\n" + md_table(result["pairs"]) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.embedded_compare", description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path, help="embedded.json of the run before the change")
    p.add_argument("after", type=Path, help="embedded.json of the run after the change")
    p.add_argument("--before-label", default="before")
    p.add_argument("--after-label", default="after")
    p.add_argument("--note", default="", help="a sentence added to the header (why the set is what it is)")
    p.add_argument("--out", type=Path, required=True, help="output stem: writes STEM.json and STEM.md")
    args = p.parse_args(argv)
    res = compare_rows(json.loads(args.before.read_text())["rows"], json.loads(args.after.read_text())["rows"])
    res.update(before=args.before_label, after=args.after_label, note=args.note)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n")
    md = compare_markdown(res, args.before_label, args.after_label, args.note)
    args.out.with_suffix(".md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
