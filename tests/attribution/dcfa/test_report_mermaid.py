"""The mermaid drawing of a DCFA attribution's dependency graph (like the paper's Figure 4)."""

import pytest

from agentcausal.report.dcfa import dependency_graph_mermaid
from agentcausal.traces.model import Attribution


def _attribution(**details):
    base = {
        "n_steps": 5,
        "edges": [[0, 1], [1, 2], [2, 4]],
        "deviations": [{"step": 1, "reason": "r"}],
        "hypothesis": {"step": 1, "agent": 'Web"Surfer', "reason": "h"},
        "lce": {
            "path": [
                {
                    "direction": "forward",
                    "iteration": 1,
                    "pivot": 1,
                    "step": 2,
                    "s": 0.9,
                    "delta_s": 0.4,
                    "accepted": True,
                }
            ],
            "scores": [{"step": 1, "s": 0.5}, {"step": 2, "s": 0.9}],
        },
        "final": {"step": 2, "agent": "Assistant", "reason": "f"},
    }
    base.update(details)
    return Attribution(trace_id="t/1", method="dcfa", step=2, details=base)


def test_mermaid_marks_roles_edges_and_search_path():
    text = dependency_graph_mermaid(_attribution())
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    assert sum(1 for line in lines if line.startswith("  s") and '["' in line) == 5  # every step of a short trace
    assert "  s0 --> s1" in lines and "  s2 --> s4" in lines
    assert any(line.startswith("  s1 -.->") and "ΔS=+0.40" in line and line.endswith("s2") for line in lines)
    assert "  class s1 deviation" in lines and "  class s1 hypothesis" in lines and "  class s2 decisive" in lines
    assert any(line.startswith("  linkStyle 3 ") for line in lines)  # the 4th link is the search move
    assert "#quot;" in text and 'Web"Surfer' not in text  # labels are escaped
    assert "S=0.90" in text


def test_mermaid_gca_only_has_no_search_links():
    text = dependency_graph_mermaid(_attribution(lce=None, final={"step": 1}))
    assert "-.->" not in text and "linkStyle" not in text and "  class s1 decisive" in text


def test_mermaid_long_trace_shows_only_involved_steps():
    text = dependency_graph_mermaid(
        _attribution(
            n_steps=100, edges=[[10, 50]], deviations=[], lce=None, hypothesis={"step": 10}, final={"step": 10}
        )
    )
    nodes = [line for line in text.splitlines() if '["' in line]
    assert len(nodes) == 2


def test_mermaid_failed_gca_gives_one_node():
    a = Attribution(trace_id="t/1", method="dcfa", error="GCA: boom", details={"n_steps": 3})
    text = dependency_graph_mermaid(a)
    assert "boom" in text and "-->" not in text


def test_mermaid_rejects_non_dcfa_attribution():
    with pytest.raises(ValueError, match="no DCFA details"):
        dependency_graph_mermaid(Attribution(trace_id="t/1", method="all_at_once", step=1))
