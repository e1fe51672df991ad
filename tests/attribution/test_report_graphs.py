"""report.md draws each DCFA attribution's dependency graph from the saved results."""

from agentcausal.attribution.results import results_frame
from agentcausal.report.attribution import dependency_graphs_markdown
from agentcausal.traces.model import Attribution, Label, Step, Trace


def _trace():
    steps = [Step(index=i, agent=f"A{i % 2}", content=f"step {i}") for i in range(3)]
    return Trace(id="t/1", question="q", ground_truth="42", steps=steps, label=Label(agent="A1", step=1))


def test_dcfa_rows_become_mermaid_blocks_and_baselines_do_not():
    details = {
        "n_steps": 3,
        "edges": [[0, 1], [1, 2]],
        "deviations": [{"step": 1, "reason": "r"}],
        "hypothesis": {"step": 1, "reason": "h"},
        "final": {"step": 1, "reason": "f"},
    }
    frame = results_frame(
        [
            Attribution(trace_id="t/1", method="dcfa", step=1, agent="A1", details=details),
            Attribution(trace_id="t/1", method="all_at_once", step=0, agent="A0"),
        ],
        [_trace()],
    )
    md = dependency_graphs_markdown(frame)
    assert md.count("```mermaid") == 1
    assert "### t/1 · dcfa (annotated decisive step: 1)" in md
    assert "s0 --> s1" in md and "class s1 decisive" in md


def test_no_dcfa_rows_gives_no_section():
    frame = results_frame([Attribution(trace_id="t/1", method="all_at_once", step=0)], [_trace()])
    assert dependency_graphs_markdown(frame) == ""
