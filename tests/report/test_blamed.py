"""The blamed-steps block ``attribute`` prints on unlabelled traces (:func:`agentcausal.report.blamed.console_summary`):
its header counts traces and methods, not (trace, method) rows."""

from __future__ import annotations

from agentcausal.attribution.results import load_results, save_run
from agentcausal.report.blamed import console_summary
from agentcausal.traces.model import Attribution, Step, Trace


def _trace(tid: str) -> Trace:
    return Trace(
        id=tid, question="q", ground_truth="", steps=[Step(index=k, agent=f"A{k}", content=f"s{k}") for k in range(3)]
    )


def test_header_counts_unlabelled_traces_and_methods(tmp_path):
    one = [_trace("t/1")]
    save_run(
        [Attribution(trace_id="t/1", method=m, step=1, agent="A1") for m in ("all_at_once", "dcfa")],
        one,
        tmp_path / "a",
        {},
    )
    assert "Blamed steps (1 unlabelled trace x 2 methods; " in console_summary(load_results(tmp_path / "a"), "", "RUN")
    two = [_trace("t/1"), _trace("t/2")]
    atts = [Attribution(trace_id=t.id, method="dcfa", step=2, agent="A2") for t in two]
    save_run(atts, two, tmp_path / "b", {})
    assert "Blamed steps (2 unlabelled traces x 1 method; " in console_summary(load_results(tmp_path / "b"), "", "RUN")
