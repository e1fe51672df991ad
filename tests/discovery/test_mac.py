"""MAC end to end on the fake server: DCM -> Meta Fusion -> MDM, ablations, the coding executor, methods."""

from __future__ import annotations

import json

import pytest

from agentcausal.discovery.cache_key import discovery_key
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.datasets import load_dataset
from agentcausal.discovery.jobs import run_discovery
from agentcausal.discovery.mac import MACSettings, run_mac
from agentcausal.discovery.mac import executor as ex
from agentcausal.discovery.mac.sandbox import sandbox_available
from agentcausal.discovery.mac.settings import PRESETS
from agentcausal.discovery.variants import resolve_methods, variant
from agentcausal.exceptions import ConfigError
from agentcausal.llm import LLMCall
from agentcausal.registry import DISCOVERY_METHODS
from tests.discovery.conftest import mac_responder, reply_kind

needs_sandbox = pytest.mark.skipif(sandbox_available() is not None, reason=f"{sandbox_available()}")

CYCLIC = (("Burglary", "Alarm"), ("Alarm", "JohnCalls"), ("JohnCalls", "Burglary"), ("Alarm", "Alarm"))


@pytest.fixture(scope="module")
def earthquake():
    return load_dataset("earthquake", n=500, seed=0)


def test_full_mac_runs_dcm_fusion_mdm_and_outputs_a_dag(fake_server, make_gateway, earthquake):
    fake_server.responder = mac_responder(affirmative_edges=CYCLIC)
    res = run_mac(LLMCall(make_gateway(fake_server)), earthquake, MACSettings(executor="typed"), seed=0)
    kinds = [reply_kind(r) for r in fake_server.chat_requests]
    assert [k for k, _ in kinds] == ["AlgorithmProposalReply"] * 2 + ["AlgorithmVerdictReply"] + [
        "GraphProposal"
    ] * 2 + ["GraphVerdictReply"]
    assert res.dcm.execution.mode == "typed" and res.dcm.execution.choice.algorithm == "pc"
    assert res.fusion and all(s in fake_server.chat_requests[3]["messages"][1]["content"] for s in res.fusion)
    assert res.graph.is_dag()
    assert res.graph.directed_edges() == {("Burglary", "Alarm"), ("Alarm", "JohnCalls")}
    assert set(res.mdm.dropped) == {"JohnCalls -> Burglary: closes a cycle", "Alarm -> Alarm: self-loop"}
    # the subset S has 5 rows by default
    rows = fake_server.chat_requests[0]["messages"][1]["content"].split("<rows>\n")[1].split("\n</rows>")[0]
    assert len(rows.splitlines()) == 5


def test_ablations_call_only_their_stages(fake_server, make_gateway, earthquake):
    fake_server.responder = mac_responder()
    gw = make_gateway(fake_server, cache=False)
    dcm = run_mac(LLMCall(gw), earthquake, MACSettings(stages="dcm_only", executor="typed"))
    assert fake_server.count == 3 and dcm.mdm is None and dcm.graph == dcm.dcm.execution.graph
    mdm = run_mac(LLMCall(gw), earthquake, MACSettings(stages="mdm_only"))
    assert fake_server.count == 6 and mdm.dcm is None and mdm.fusion == ()
    assert "<data_graph>" not in fake_server.chat_requests[3]["messages"][1]["content"]
    single = run_mac(LLMCall(gw), earthquake, MACSettings(single_agent=True, executor="typed"))
    assert fake_server.count == 8 and single.mdm.debate.negative is None


@needs_sandbox
def test_coding_executor_runs_llm_code_in_the_sandbox(fake_server, make_gateway, earthquake):
    code = (
        "import numpy as np\nfrom causallearn.search.ConstraintBased.PC import pc\n"
        "X = np.load('data.npy')\ng = pc(X, 0.05, 'chisq', show_progress=False).G.graph\n"
        "A = ((g.T == 1) & (g == -1)).astype(int) | ((g == -1) & (g.T == -1)).astype(int)\n"
        "np.save('adjacency.npy', A)\nopen('encoding.txt', 'w').write('adjacency')\n"
    )
    fake_server.responder = mac_responder(code=code)
    from agentcausal.discovery.statistical.algorithms import PCParams

    exe = ex.execute_coding(
        LLMCall(make_gateway(fake_server)), earthquake, PCParams(indep_test="chisq"), MACSettings(executor="coding")
    )
    assert exe.mode == "coding" and exe.fallback_reason == "" and len(exe.attempts) == 1
    typed = ex.execute_typed(earthquake, exe.choice)
    assert exe.graph.directed_edges() == typed.graph.directed_edges()
    assert exe.graph.skeleton() == typed.graph.skeleton()


@needs_sandbox
def test_coding_executor_feeds_tracebacks_back_then_falls_back_to_typed(fake_server, make_gateway, earthquake):
    fake_server.responder = mac_responder(code="raise ValueError('boom')")
    from agentcausal.discovery.statistical.algorithms import PCParams

    exe = ex.execute_coding(
        LLMCall(make_gateway(fake_server)),
        earthquake,
        PCParams(indep_test="chisq"),
        MACSettings(executor="coding", coding_attempts=2),
    )
    assert exe.mode == "typed" and "coding failed after 2 attempt(s)" in exe.fallback_reason
    assert len(exe.attempts) == 2 and "ValueError: boom" in exe.attempts[0].error
    retry = fake_server.chat_requests[1]["messages"]
    assert retry[-1]["content"].startswith("# Execution result\nThe script failed:")  # the paper set: debug it
    assert "ValueError: boom" in retry[-1]["content"] and "Debug it" in retry[-1]["content"]
    first = fake_server.chat_requests[0]
    assert list(first["response_format"]["json_schema"]["schema"]["properties"]) == ["reason", "code"]
    assert "# Role\nCausal Coding Executor" in first["messages"][1]["content"]
    # the small set: its own wording, the code field only, 600 tokens
    fake_server.requests.clear()
    small = MACSettings(**{**PRESETS["small"], "executor": "coding", "coding_attempts": 1})
    ex.execute_coding(LLMCall(make_gateway(fake_server)), earthquake, PCParams(indep_test="chisq"), small)
    body = fake_server.chat_requests[0]
    assert body["messages"][1]["content"].startswith("Write a Python script") and body["max_tokens"] == 600
    assert list(body["response_format"]["json_schema"]["schema"]["properties"]) == ["code"]


CODE_PC = (
    "import numpy as np\nfrom causallearn.search.ConstraintBased.PC import pc\n"
    "X = np.load('data.npy')\ng = pc(X, 0.05, 'chisq', show_progress=False).G.graph\n"
    "np.save('adjacency.npy', g)\nopen('encoding.txt', 'w').write('general_graph')\n"
)


@needs_sandbox
def test_default_config_runs_the_coding_agent_where_the_sandbox_works(fake_server, make_gateway, earthquake):
    """No executor named (a Python caller, the scheduled deployment): DCM's coder writes the script."""
    fake_server.responder = mac_responder(code=CODE_PC)
    assert MACSettings().executor == "auto" and DiscoveryConfig().resolved().mac.executor == "coding"
    out = run_discovery(
        variant(DISCOVERY_METHODS, "dcm_only"), earthquake, make_gateway(fake_server), DiscoveryConfig(), seed=0
    )
    assert [k for k, _ in map(reply_kind, fake_server.chat_requests)][-1] == "CodeReply"
    assert out.details["dcm"]["execution"]["mode"] == "coding" and out.status == "complete"
    assert out.models["mac.coder"] == "fake:fake-model" and "executor_fallback" not in out.details
    # the key names the executor that runs, the same as when it is asked for by name
    assert discovery_key(earthquake, variant(DISCOVERY_METHODS, "mac"), DiscoveryConfig()) == discovery_key(
        earthquake, variant(DISCOVERY_METHODS, "mac"), DiscoveryConfig(mac=MACSettings(executor="coding"))
    )
    assert discovery_key(earthquake, variant(DISCOVERY_METHODS, "mac"), DiscoveryConfig()) != discovery_key(
        earthquake, variant(DISCOVERY_METHODS, "mac"), DiscoveryConfig(mac=MACSettings(executor="typed"))
    )


def test_default_config_runs_typed_and_says_why_where_the_sandbox_cannot(
    fake_server, make_gateway, earthquake, monkeypatch
):
    monkeypatch.setattr(ex, "sandbox_available", lambda: "no namespaces here")
    fake_server.responder = mac_responder()
    config = DiscoveryConfig().resolved()
    assert config.mac.executor == "typed" and "no namespaces here" in config.executor_fallback
    out = run_discovery(
        variant(DISCOVERY_METHODS, "mac"), earthquake, make_gateway(fake_server), DiscoveryConfig(), seed=0
    )
    assert "CodeReply" not in [k for k, _ in map(reply_kind, fake_server.chat_requests)]
    assert out.details["executor_fallback"] == config.executor_fallback and "mac.coder" not in out.models
    assert out.details["dcm"]["execution"]["mode"] == "typed" and out.status == "complete"


def test_small_preset_keeps_the_typed_executor():
    from agentcausal.discovery.mac.settings import PRESETS
    from agentcausal.discovery.method_settings import method_settings, method_stages

    small = DiscoveryConfig(mac=MACSettings(**PRESETS["small"]))
    assert small.resolved() is small and method_stages(DISCOVERY_METHODS["mac"], small) == ("mac.debate",)
    assert method_settings(variant(DISCOVERY_METHODS, "mac"), small)["executor"] == "typed"
    assert method_settings(variant(DISCOVERY_METHODS, "mac"), DiscoveryConfig())["executor"] in ("coding", "typed")


def test_coding_executor_falls_back_when_the_sandbox_is_unavailable(fake_server, make_gateway, earthquake, monkeypatch):
    monkeypatch.setattr(ex, "sandbox_available", lambda: "no namespaces here")
    from agentcausal.discovery.statistical.algorithms import PCParams

    exe = ex.execute_coding(LLMCall(make_gateway(fake_server)), earthquake, PCParams(indep_test="chisq"))
    assert exe.mode == "typed" and exe.fallback_reason == "sandbox unavailable: no namespaces here"
    assert fake_server.count == 0


def test_run_discovery_records_statistical_llm_and_failed_methods(fake_server, make_gateway, earthquake):
    fake_server.responder = mac_responder()
    gw = make_gateway(fake_server)
    pc = run_discovery(variant(DISCOVERY_METHODS, "pc"), earthquake, None, seed=0)
    assert pc.error is None and pc.details["choice"]["indep_test"] == "chisq" and pc.models == {}
    zs = run_discovery(variant(DISCOVERY_METHODS, "llm_zero_shot"), earthquake, gw, seed=0)
    assert zs.graph.directed_edges() == {("Burglary", "Alarm")} and zs.models == {"mac.baseline": "fake:fake-model"}
    assert zs.usage["mac.baseline"]["requests"] == 1
    mac = run_discovery(variant(DISCOVERY_METHODS, "mac"), earthquake, gw, seed=0)
    assert mac.error is None and mac.details["dcm"]["debate"]["verdict"]["winner"] == "affirmative"
    fake_server.responder = lambda body: "garbage"
    bad = run_discovery(
        variant(DISCOVERY_METHODS, "mdm_only"), earthquake, make_gateway(fake_server, cache=False), seed=0
    )
    assert bad.graph is None and bad.error.startswith("StructuredOutputError")
    with pytest.raises(ConfigError, match="pass a gateway"):
        run_discovery(variant(DISCOVERY_METHODS, "mac"), earthquake, None)
    with pytest.raises(ConfigError, match="unknown discovery method"):
        run_discovery(variant(DISCOVERY_METHODS, "notears"), earthquake, gw)


def test_resolve_methods_and_cache_keys(fake_server, make_gateway, earthquake):
    names = [v.name for v in resolve_methods(DISCOVERY_METHODS, ["statistical", "mac", "pc"])]
    assert names == ["pc", "fci", "ges", "exact_search", "direct_lingam", "mac"]
    with pytest.raises(ConfigError, match="choose from"):
        resolve_methods(DISCOVERY_METHODS, ["magic"])
    gw = make_gateway(fake_server)
    cfg = DiscoveryConfig()
    k = discovery_key(earthquake, variant(DISCOVERY_METHODS, "mac"), cfg, gw, seed=0)
    assert k == discovery_key(
        load_dataset("earthquake", n=500, seed=0), variant(DISCOVERY_METHODS, "mac"), cfg, gw, seed=0
    )
    assert k != discovery_key(earthquake, variant(DISCOVERY_METHODS, "mac"), cfg, gw, seed=1)
    assert k != discovery_key(
        earthquake, variant(DISCOVERY_METHODS, "mac"), DiscoveryConfig(mac=MACSettings(rounds=2)), gw, seed=0
    )
    assert k != discovery_key(
        load_dataset("earthquake", n=500, seed=1), variant(DISCOVERY_METHODS, "mac"), cfg, gw, seed=0
    )
    # statistical keys ignore the LLM settings
    assert discovery_key(earthquake, variant(DISCOVERY_METHODS, "pc"), cfg, gw) == discovery_key(
        earthquake, variant(DISCOVERY_METHODS, "pc"), DiscoveryConfig(mac=MACSettings(rounds=2)), None
    )
    with pytest.raises(ConfigError):
        discovery_key(earthquake, variant(DISCOVERY_METHODS, "nope"), cfg)
    json.dumps(k)
