"""Memorisation control: LLM methods once per anonymise mode, scored on the real names, reported side by side."""

from __future__ import annotations

import pytest

from agentcausal.discovery.cache_key import discovery_key
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.anonymise import anonymise
from agentcausal.discovery.data.datasets import load_dataset, metadata_text
from agentcausal.discovery.evaluate import outcomes_frame
from agentcausal.discovery.jobs import run_discovery
from agentcausal.discovery.variants import resolve_methods, variant, with_anonymise
from agentcausal.exceptions import ConfigError
from agentcausal.registry import DISCOVERY_METHODS
from agentcausal.report.discovery import markdown_report
from agentcausal.report.discovery_tables import memorisation_text
from tests.discovery.conftest import mac_responder


@pytest.fixture(scope="module")
def earthquake():
    return load_dataset("earthquake", n=200, seed=0)


def test_modes_hide_names_then_all_metadata(earthquake):
    same, ident = anonymise(earthquake, "none")
    assert same is earthquake and ident["Alarm"] == "Alarm"
    names, back = anonymise(earthquake, "names")
    text = metadata_text(names)
    assert names.variables == ("V1", "V2", "V3", "V4", "V5") and (names.data == earthquake.data).all()
    assert not any(v in text for v in earthquake.variables)
    assert earthquake.metadata.variables["Alarm"].description in text  # descriptions kept
    assert names.true_graph.directed_edges() == {
        (f"V{earthquake.variables.index(a) + 1}", f"V{earthquake.variables.index(b) + 1}")
        for a, b in earthquake.true_graph.directed_edges()
    }
    bare, _ = anonymise(earthquake, "all")
    bare_text = metadata_text(bare)
    assert earthquake.metadata.domain not in bare_text and "burglar" not in bare_text.lower()
    assert names.content_hash() != earthquake.content_hash()
    with pytest.raises(ConfigError):
        anonymise(earthquake, "some")


def test_method_variants_resolve_and_expand():
    assert [
        v.name
        for v in with_anonymise(
            resolve_methods(DISCOVERY_METHODS, ["mac", "llm_zero_shot", "pc"]), ["none", "names", "all"]
        )
    ] == [
        "mac",
        "mac@names",
        "mac@all",
        "llm_zero_shot",
        "llm_zero_shot@names",
        "llm_zero_shot@all",
        "pc",
    ]
    assert [v.name for v in resolve_methods(DISCOVERY_METHODS, ["mac@names", "mac@none"])] == ["mac@names", "mac"]
    with pytest.raises(ConfigError, match="only applies to LLM"):
        resolve_methods(DISCOVERY_METHODS, ["pc@names"])
    with pytest.raises(ConfigError, match="anonymise mode"):
        resolve_methods(DISCOVERY_METHODS, ["mac@blur"])


def test_llm_methods_run_once_per_mode_scored_on_real_names(fake_server, make_gateway, earthquake):
    def respond(body):
        # the model answers with whatever names it was shown: real ones, or V3 -> V4 when anonymised
        prompt = body["messages"][1]["content"]
        if "Alarm" in prompt:
            return mac_responder(affirmative_edges=(("Alarm", "JohnCalls"),))(body)
        return mac_responder(affirmative_edges=(("V3", "V4"),))(body)

    fake_server.responder = respond
    gw = make_gateway(fake_server)
    outs = [
        run_discovery(m, earthquake, gw, seed=0)
        for m in with_anonymise(resolve_methods(DISCOVERY_METHODS, ["llm_zero_shot"]), ["none", "names", "all"])
    ]
    assert [o.method for o in outs] == ["llm_zero_shot", "llm_zero_shot@names", "llm_zero_shot@all"]
    assert fake_server.count == 3
    prompts = [r["messages"][1]["content"] for r in fake_server.chat_requests]
    assert "Alarm" in prompts[0] and not any(v in prompts[1] + prompts[2] for v in earthquake.variables)
    v3, v4 = earthquake.variables[2], earthquake.variables[3]
    assert outs[1].graph.nodes == earthquake.variables and outs[1].graph.directed_edges() == {(v3, v4)}
    assert outs[1].details["anonymise"]["mode"] == "names"
    assert (
        len({discovery_key(earthquake, variant(DISCOVERY_METHODS, o.method), DiscoveryConfig(), gw) for o in outs}) == 3
    )
    df = outcomes_frame(outs)
    mem = memorisation_text(df)
    header = mem.splitlines()[0].split()
    assert header[-3:] == ["none", "names", "all"] and "llm_zero_shot" in mem.splitlines()[1]
    assert "Memorisation control" in markdown_report(df, outs, {})
