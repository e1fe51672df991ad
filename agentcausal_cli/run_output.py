"""What ``agentcausal attribute``, ``evaluate`` and ``discover`` print once a run is done, and their exit status.

The table of the run folder (accuracy, or SHD / NHD / F1), the rows held back by ``--max-cost`` or
``--max-tokens`` (not failures: the next invocation with ``--resume`` runs them), the failed rows, the actual spend, the run
folder and its report; the exit status from ``run.json``
(:func:`agentcausal_cli.run_folder_options.failed_rows_exit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentcausal.records import read_failures
from agentcausal.runs.folder import load_run_meta
from agentcausal_cli.run_folder_options import failed_rows_exit
from agentcausal_cli.spend_options import print_spend

if TYPE_CHECKING:
    from agentcausal.attribution.evaluate import Evaluation
    from agentcausal.attribution.results import AttributionSummary

__all__ = ["print_attribution_run", "print_discovery_run", "print_discovery_report", "unreachable_summary"]


def unreachable_summary(run_meta: Mapping[str, Any]) -> str | None:
    """One line when every row of a run failed because its endpoint was unreachable, else None.

    Read from ``run.json``'s rows and failure tally (:func:`agentcausal.records.read_failures`): the
    ``endpoint_unreachable`` kind's rows, profile, endpoint and cause; a run folder without a tally gives None.

    Parameters
    ----------
    run_meta : the run's ``run.json``

    Examples
    --------
    >>> meta = {"rows": {"total": 1}, "failures": {"endpoint_unreachable": {
    ...     "rows": 1, "profile": "cli", "endpoint": "http://h:9/v1", "cause": "refused"}}}
    >>> unreachable_summary(meta)
    'endpoint unreachable: cli at http://h:9/v1 — refused (all 1 row(s) failed; nothing was cached)'
    >>> unreachable_summary({**meta, "rows": {"total": 2}}) is None
    True
    """
    rows = run_meta.get("rows")
    total = int(rows.get("total", 0) or 0) if isinstance(rows, Mapping) else 0
    down = read_failures(run_meta).get("endpoint_unreachable")
    if total < 1 or down is None or down.rows != total:
        return None
    return (
        f"endpoint unreachable: {down.profile} at {down.endpoint} — {(down.cause or '').strip()} "
        f"(all {total} row(s) failed; nothing was cached)"
    )


def _breaker_rows(run_meta: Mapping[str, Any], not_run: int) -> int:
    """How many of a run's ``not_run`` rows the circuit breaker stopped (failures), not ``--max-cost`` (held back):
    the ``endpoint_down`` kind of ``run.json``'s failure tally; a run folder without one, all of them when the
    breaker stopped the run (``stopped``), else none."""
    if "failures" not in run_meta:
        return not_run if run_meta.get("stopped") else 0
    down = read_failures(run_meta).get("endpoint_down")
    return min(not_run, down.rows) if down is not None else 0


def _print_failures(status_counts: dict[Any, int], rows: int, unit: str = "(trace, method) pairs") -> None:
    """The rows with an error (``unit``), by what a rerun does with them: failed in this run (not cached,
    rows not computed: exit 3) apart from content failures (the method ran and gave no valid answer: cached,
    exit 0) and degraded rows.

    >>> _print_failures({"failed": 1, "content_failed": 2}, 3)
    <BLANKLINE>
    1 (trace, method) pairs failed in this run (not cached; the next run retries them).
    2 (trace, method) pairs have no valid answer: content failures, cached (--retry-failed recomputes them); see the report.
    """
    failed, content = status_counts.get("failed", 0), status_counts.get("content_failed", 0)
    other = rows - failed - content
    lines = [
        f"{failed} {unit} failed in this run (not cached; the next run retries them)." if failed else "",
        f"{content} {unit} have no valid answer: content failures, cached (--retry-failed recomputes them);"
        " see the report."
        if content
        else "",
        f"{other} more {unit} with an error; see the report." if other > 0 else "",
    ]
    if any(lines):
        print("\n" + "\n".join(ln for ln in lines if ln))


def print_attribution_run(run_dir: str, *, exit_on_unreachable: bool = True, evaluate: bool = False) -> int:
    """Print the accuracy table of a run folder: as the flow's report step wrote it (``evaluate=False``: the run
    is evaluated and reported once, by the flow) or evaluated and reported again (``agentcausal evaluate``)."""
    from agentcausal.attribution.results import (  # start-up cost (see attribute.cmd_attribute)
        load_results,
        read_attribution_summary,
    )
    from agentcausal.report.attribution import report_run  # (the same)
    from agentcausal.report.attribution_tables import accuracy_text  # (the same)
    from agentcausal.report.blamed import console_summary  # (the same)

    shown: Evaluation | AttributionSummary
    if evaluate:
        rep = report_run(run_dir)
        shown, path = rep.evaluation, rep.path
    else:
        shown, path = read_attribution_summary(run_dir), Path(run_dir) / "report.md"
    failures = shown.failures
    print(console_summary(load_results(run_dir), accuracy_text(shown), run_dir))  # unlabelled: the blamed steps
    st: dict[Any, int] = failures["status"].value_counts().to_dict() if "status" in failures and len(failures) else {}
    if st.get("not_run", 0):  # the circuit breaker's not_run rows are failures (exit 4)
        down = _breaker_rows(load_run_meta(run_dir), st["not_run"])
        st = {**st, "not_run": st["not_run"] - down, "failed": st.get("failed", 0) + down}
    if st.get("not_run", 0):  # held back by --max-cost: not failures
        _print_not_run(st["not_run"], "(trace, method) pairs")
    _print_failures(st, len(failures) - st.get("not_run", 0))
    print_spend(run_dir)  # the actual spend beside the estimate (run.json)
    _print_run_folder(run_dir, path)
    if not exit_on_unreachable:  # `evaluate`: a report of a run, not the run
        return 0
    meta = load_run_meta(run_dir)
    return failed_rows_exit(meta, unit="(trace, method) row", unreachable=unreachable_summary(meta))


def print_discovery_run(run_dir: str, *, reversal_cost: Literal[1, 2] = 1) -> int:
    """Print the SHD / NHD / F1 table of a discovery run folder as the flow scored it, its failed runs and those
    held back by ``--max-cost``, the spend and the run folder; the exit status."""
    from agentcausal.report.discovery_load import load_scored  # start-up cost (see discover.cmd_discover)
    from agentcausal.report.discovery_tables import summary_text  # (the same)

    frame, meta = load_scored(run_dir), load_run_meta(run_dir)
    print(summary_text(frame, reversal_cost=reversal_cost))
    errors = frame[frame["error"] != ""]
    st = errors["status"].value_counts().to_dict() if "status" in errors else {"failed": len(errors)}
    not_run = st.pop("not_run", 0)
    held = not_run - _breaker_rows(meta, not_run)  # held back by --max-cost; the circuit breaker's are failures
    if not_run - held:
        st["not_run"] = not_run - held
    _print_failures(st, len(errors) - held, unit="(dataset, seed, method) runs")
    if held:  # held back by --max-cost: not failures
        _print_not_run(held, "runs")
    print_spend(run_dir)  # the actual spend beside the estimate (run.json)
    _print_run_folder(run_dir, Path(run_dir) / "report.md")

    return failed_rows_exit(meta, unit="(dataset, seed, method) run")


def print_discovery_report(run_dir: str, *, reversal_cost: Literal[1, 2] = 1) -> None:
    """Write a scored discovery run folder's report again and print its table and where it is
    (``agentcausal discover --report``, ``agentcausal evaluate`` of a discovery run)."""
    from agentcausal.report.discovery import write_report  # start-up cost (see discover.cmd_discover)
    from agentcausal.report.discovery_tables import summary_text  # (the same)

    files = write_report(run_dir, reversal_cost=reversal_cost)
    print(summary_text(files.frame, reversal_cost=reversal_cost))
    _print_run_folder(files.run_dir, files.report)


def _print_not_run(count: int, rows: str) -> None:
    """The line for ``count`` ``rows`` held back by ``--max-cost`` / ``--max-tokens`` (caps on one invocation)."""
    print(
        f"\n{count} {rows} not run (budget: the cap of this invocation); the next invocation with --resume into "
        "the same --out runs them under its own cap, reusing what is done."
    )


def _print_run_folder(run_dir: str | Path, report: str | Path) -> None:
    html = Path(report).with_suffix(".html")
    also = f"\n            {html} (one file: open it in a browser)" if html.is_file() else ""
    print(f"\nrun folder: {run_dir}\nreport:     {report}{also}")
