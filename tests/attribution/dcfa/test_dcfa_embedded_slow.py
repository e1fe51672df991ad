"""DCFA on a real Who&When trace with the real embedded 0.5B model (slow: about 2 minutes on 2 cores)."""

import pytest

from agentcausal.attribution.jobs import run_method
from agentcausal.llm import Gateway
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.report.dcfa import dependency_graph_mermaid
from agentcausal.traces.whowhen import load_who_and_when_file

pytestmark = [pytest.mark.slow, pytest.mark.whowhen]


def test_dcfa_runs_on_shortest_algorithm_generated_trace(who_and_when_dir, tmp_path):
    trace = load_who_and_when_file(who_and_when_dir / "Algorithm-Generated" / "38.json")
    gw = Gateway.from_settings(cache_dir=tmp_path / "llm")
    a = run_method(trace, ATTRIBUTION_METHODS["dcfa"], gw)
    assert a.error is None and 0 <= a.step < len(trace)
    d = a.details
    assert 0 <= d["hypothesis"]["step"] < len(trace)
    assert all(p < q for p, q in d["edges"])
    assert set(a.usage) <= {"dcfa.gca", "dcfa.lce", "dcfa.embed"} and a.usage["dcfa.gca"]["requests"] >= 2
    assert dependency_graph_mermaid(a).startswith("flowchart LR")
    gw.close()
    gw2 = Gateway.from_settings(cache_dir=tmp_path / "llm")
    again = run_method(trace, ATTRIBUTION_METHODS["dcfa"], gw2)
    assert again.step == a.step and sum(u["requests"] for u in again.usage.values()) == 0
    gw2.close()
