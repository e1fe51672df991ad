"""docs/fidelity/mac.md names only settings, methods and functions that exist; and the guards of what `paper`
runs: Meta Fusion's implied orderings uncapped, every LLM at temperature 0 (MAC arXiv:2407.15073 §3.5, §4.1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentcausal.discovery.data.datasets import load_dataset
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.llm import ils_csl, llm_scd, react
from agentcausal.discovery.mac import MACSettings, run_mac
from agentcausal.discovery.mac import pipeline as pipeline_mod
from agentcausal.discovery.mac import settings as mac_settings
from agentcausal.discovery.mac.fusion import meta_fusion
from agentcausal.exceptions import AgentCausalError
from agentcausal.llm import LLMCall
from agentcausal.registry import DISCOVERY_METHODS
from agentcausal.settings import resolve
from tests.attribution.test_fidelity_tables import check_function, rows, settings_of
from tests.discovery.conftest import mac_responder

TABLE = Path(__file__).resolve().parents[2] / "docs" / "fidelity" / "mac.md"
#: the settings `discover --set` takes: name -> (settings model, presets)
SETTINGS = {
    "mac": (MACSettings, mac_settings.PRESETS),
    "react": (react.ReActSettings, react.PRESETS),
    "llm_scd": (llm_scd.LLMSCDSettings, llm_scd.PRESETS),
    "ils_csl": (ils_csl.ILSCSLSettings, ils_csl.PRESETS),
}


def check_discovery_setting(method: str, field: str, value: object) -> None:
    """Raise when ``method.field=value`` is not a setting ``discover --set`` takes."""
    if method not in SETTINGS:
        raise AssertionError(f"no discovery settings named {method!r}")
    model, presets = SETTINGS[method]
    if field not in model.model_fields:
        raise AssertionError(f"{method} has no setting {field!r}")
    resolve(model, presets, None, {field: value}, name=method)


def test_every_row_of_the_mac_table_names_existing_settings_methods_and_functions():
    table = rows(TABLE)
    assert len(table) >= 12
    named = set()
    for r in table:
        assert len(r) == 6, r
        for method, field, value in settings_of(r[5]):
            check_discovery_setting(method, field, value)
            named.add(f"{method}.{field}")
        for dotted in re.findall(r"`(agentcausal\.[\w.]+)`", r[3] + r[4]):
            check_function(dotted)
        for m in re.findall(r"methods? `(\w+)`(?:, `(\w+)`)?", r[3]):
            assert {x for x in m if x} <= set(DISCOVERY_METHODS), m
    # every setting that switches `paper` to another reading of the text has its row
    assert {"mac.rounds", "mac.judge_rule", "mac.max_orderings", "mac.executor", "llm_scd.sampling"} <= named
    assert {"ils_csl.max_iterations", "mac.sampling_temperature", "mac.stages", "mac.single_agent"} <= named


def test_the_table_check_fails_on_what_does_not_exist():
    with pytest.raises(AssertionError, match="no setting 'max_hops'"):
        check_discovery_setting("mac", "max_hops", 3)
    with pytest.raises(AgentCausalError):
        check_discovery_setting("llm_scd", "sampling", "greedy")  # not one of its values
    with pytest.raises(AssertionError, match="no discovery settings"):
        check_discovery_setting("dcfa", "max_iterations", 2)


def chain(n: int) -> CausalGraph:
    names = [f"V{i}" for i in range(n)]
    return CausalGraph.from_edges(names, list(zip(names, names[1:])))


def test_meta_fusion_states_every_implied_ordering_under_paper():
    """A 7-node chain implies C(7, 2) - 6 = 15 orderings: all of them under `paper`, 10 under `small`."""
    paper = MACSettings()
    assert paper.max_orderings is None
    said = [s for s in meta_fusion(chain(7), max_orderings=paper.max_orderings) if "precedes" in s]
    assert len(said) == 15
    small = resolve(MACSettings, mac_settings.PRESETS, "small", name="mac")
    assert len([s for s in meta_fusion(chain(7), max_orderings=small.max_orderings) if "precedes" in s]) == 10


def test_the_pipeline_passes_the_presets_ordering_bound_to_meta_fusion(fake_server, make_gateway, monkeypatch):
    seen: list[object] = []
    real = pipeline_mod.meta_fusion

    def spy(graph, *, max_orderings=None):
        seen.append(max_orderings)
        return real(graph, max_orderings=max_orderings)

    monkeypatch.setattr(pipeline_mod, "meta_fusion", spy)
    fake_server.responder = mac_responder()
    ds = load_dataset("earthquake", n=300, seed=0)
    run_mac(LLMCall(make_gateway(fake_server)), ds, MACSettings(executor="typed"))
    assert seen == [None]


def test_every_llm_of_paper_runs_at_temperature_0(fake_server, make_gateway):
    """MAC §4.1: temperature 0 for every LLM. `paper` sends the profile's temperature (0) on every MAC call, and
    LLM-SCD's default sampling asks at 0: a drift in either default fails here."""
    assert MACSettings().sampling_temperature is None and ils_csl.ILSCSLSettings().sampling_temperature is None
    assert llm_scd.LLMSCDSettings().temperature == 0.0 and llm_scd.LLMSCDSettings().sampling == "mac_paper"
    fake_server.responder = mac_responder()
    ds = load_dataset("earthquake", n=300, seed=0)
    run_mac(LLMCall(make_gateway(fake_server)), ds, MACSettings(executor="typed"))
    assert fake_server.chat_requests and {r.get("temperature") for r in fake_server.chat_requests} == {0.0}


def test_every_paper_graph_debate_request_states_the_ci_adjacency_principle(fake_server, make_gateway):
    """App. A.1: two nodes are adjacent iff no set of the others makes them conditionally independent; every
    graph-mode agent of `paper` (Affirmative, Negative, Judge) is told so, with colliders and acyclicity."""
    from agentcausal.discovery.mac.paper_prompts import GRAPH_PRINCIPLES

    assert "exactly when no set of the other variables makes them conditionally independent" in GRAPH_PRINCIPLES
    fake_server.responder = mac_responder()
    ds = load_dataset("earthquake", n=300, seed=0)
    run_mac(LLMCall(make_gateway(fake_server)), ds, MACSettings(executor="typed", stages="mdm_only"))
    graph_mode = [r for r in fake_server.chat_requests if "Graph" in r["response_format"]["json_schema"]["name"]]
    assert len(graph_mode) >= 3  # Affirmative, Negative, Judge
    for r in graph_mode:
        text = "\n".join(m["content"] for m in r["messages"])
        assert "makes them conditionally independent" in text and "Colliders (v-structures)" in text
        assert "No cycles" in text
