"""The MAC paper's LLM baselines: ReAct, LLM-SCD, ILS-CSL, each from its own paper, on the fake server."""

from __future__ import annotations

import functools
import inspect
import json
import re
from pathlib import Path

import pytest

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.datasets import load_dataset
from agentcausal.discovery.evaluate import outcomes_frame
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.jobs import run_discovery
from agentcausal.discovery.llm import ils_csl as ils_mod
from agentcausal.discovery.llm import llm_scd as scd_mod
from agentcausal.discovery.llm import react as react_mod
from agentcausal.discovery.llm.ils_csl import ILSCSLSettings, hill_climb
from agentcausal.discovery.llm.llm_scd import LLMSCDSettings
from agentcausal.discovery.llm.react import ReActSettings
from agentcausal.discovery.method_settings import method_stages
from agentcausal.discovery.variants import resolve_methods, variant
from agentcausal.exceptions import AlgorithmError
from agentcausal.llm import LLMCall
from agentcausal.llm.gateway import Gateway
from agentcausal.registry import DISCOVERY_METHODS
from agentcausal.report.discovery_tables import summary_text
from tests.discovery.conftest import mac_responder, reply_kind

NAMES = ("earthquake", "asia")


@functools.lru_cache(maxsize=None)
def dataset(name: str, seed: int):
    return load_dataset(name, n=500, seed=seed)


@functools.lru_cache(maxsize=1)
def truth() -> frozenset:
    return frozenset(e for name in NAMES for e in dataset(name, 0).true_graph.directed_edges())


def oracle(body: dict) -> str:
    """Answers every baseline's requests as an oracle that knows the true edges of both networks."""
    name, role = reply_kind(body)
    prompt = body["messages"][1]["content"]
    if name == "ReActStepReply":
        steps = prompt.count("Observation ")
        variables = re.findall(r"^- (\w+):", prompt, re.M)
        if steps == 0:
            return json.dumps({"thought": "look at the data", "action": "summary"})
        if steps == 1:
            return json.dumps(
                {
                    "thought": "test a pair",
                    "action": "test",
                    "x": variables[0],
                    "y": variables[1],
                    "given": [variables[2]],
                }
            )
        if steps == 2:
            return json.dumps({"thought": "run pc", "action": "run_algorithm", "algorithm": "pc"})
        edges = [{"cause": a, "effect": b} for a, b in sorted(truth()) if a in variables and b in variables]
        return json.dumps({"thought": "done", "action": "finish", "edges": edges})
    if name == "PairReply":
        x, y = re.search(r"does (\w+) directly cause (\w+)", prompt).groups()
        return json.dumps({"reason": "domain knowledge", "answer": "yes" if (x, y) in truth() else "no"})
    if name == "EdgeVerdictReply":
        x, y = re.search(r"proposes the edge (\w+) -> (\w+)", prompt).groups()
        verdict = "correct" if (x, y) in truth() else "reversed" if (y, x) in truth() else "absent"
        return json.dumps({"reason": "domain knowledge", "verdict": verdict})
    return mac_responder()(body)


def test_methods_are_registered_with_the_baseline_stage():
    assert [v.name for v in resolve_methods(DISCOVERY_METHODS, ["react", "llm_scd", "ils_csl"])] == [
        "react",
        "llm_scd",
        "ils_csl",
    ]
    for m in ("react", "llm_scd", "ils_csl"):
        assert method_stages(DISCOVERY_METHODS[m], DiscoveryConfig()) == ("mac.baseline",)
    for mod, paper in ((react_mod, "2210.03629"), (scd_mod, "2402.01454"), (ils_mod, "2311.11689")):
        assert paper in mod.__doc__ and "docs/baselines.md" in mod.__doc__
        assert set(mod.PRESETS) >= {"paper", "small"}
    page = (Path(__file__).resolve().parents[2] / "docs" / "baselines.md").read_text()
    assert all(f"arXiv:{p}" in page for p in ("2210.03629", "2402.01454", "2311.11689", "2306.16902"))


def test_react_uses_its_tools_and_sees_their_observations(fake_server, make_gateway):
    ds = dataset("earthquake", 0)
    fake_server.responder = oracle
    out = run_discovery(variant(DISCOVERY_METHODS, "react"), ds, make_gateway(fake_server), seed=0)
    assert out.error is None and [s["action"] for s in out.details["steps"]] == [
        "summary",
        "test",
        "run_algorithm",
        "finish",
    ]
    last = fake_server.chat_requests[-1]["messages"][1]["content"]
    assert "Strongest associations" in last and "p = " in last and "pc found:" in last
    assert out.graph.directed_edges() == ds.true_graph.directed_edges()


def test_react_asks_for_a_final_graph_when_steps_run_out(fake_server, make_gateway):
    ds = dataset("earthquake", 0)
    fake_server.responder = lambda body: (
        json.dumps({"thought": "more", "action": "summary"})
        if reply_kind(body)[0] == "ReActStepReply"
        else json.dumps({"edges": [{"cause": "Burglary", "effect": "Alarm"}]})
    )
    res = react_mod.react_discovery(LLMCall(make_gateway(fake_server)), ds, ReActSettings(max_steps=2))
    assert not res.finished and len(res.steps) == 2 and fake_server.count == 3
    assert res.graph.directed_edges() == {("Burglary", "Alarm")}


def test_llm_scd_turns_answers_into_a_prior_for_pc(fake_server, make_gateway):
    ds = dataset("earthquake", 0)
    truth()  # loaded before the first request (see the ILS-CSL test)
    fake_server.responder = oracle
    res = scd_mod.llm_scd(LLMCall(make_gateway(fake_server)), ds, LLMSCDSettings(n_samples=2))
    d = ds.d
    samples = 2 if "sample" in inspect.signature(Gateway.structured).parameters else 1  # else cache hits
    assert fake_server.count == d * (d - 1) * samples
    assert (
        "A statistical causal discovery algorithm (PC) found" in fake_server.chat_requests[0]["messages"][1]["content"]
    )
    assert set(res.required) == {f"{a} -> {b}" for a, b in ds.true_graph.directed_edges()}
    assert len(res.forbidden) == d * (d - 1) - len(res.required)
    # PC under the prior: no forbidden direction, and every required pair PC keeps adjacent is oriented so
    forbidden = {tuple(e.split(" -> ")) for e in res.forbidden}
    assert not res.graph.directed_edges() & forbidden
    for e in res.required:
        a, b = e.split(" -> ")
        if frozenset((a, b)) in res.graph.skeleton():
            assert (a, b) in res.graph.directed_edges()
    assert res.graph.skeleton() and res.graph.directed_edges() <= ds.true_graph.directed_edges()


def test_ils_csl_supervises_learned_edges_and_iterates(fake_server, make_gateway):
    ds = dataset("asia", 0)
    truth()  # loaded before the first request: loading it inside the responder can outlast the client's timeout
    fake_server.responder = oracle
    res = ils_mod.ils_csl(LLMCall(make_gateway(fake_server)), ds, ILSCSLSettings())
    first = set(res.iterations[0])
    asked = [
        re.search(r"proposes the edge (\w+ -> \w+)", r["messages"][1]["content"]).group(1)
        for r in fake_server.chat_requests
    ]
    assert set(asked) >= {e.replace(" --> ", " -> ") for e in first}  # every learned edge is judged
    assert len(asked) == len(set(asked)) == len(res.verdicts)  # each once
    assert len(res.iterations) >= 2
    for e, v in res.verdicts.items():
        a, b = e.split(" -> ")
        if v == "absent":
            assert (a, b) not in res.graph.directed_edges() and (b, a) not in res.graph.directed_edges()
        else:
            assert ((a, b) if v == "correct" else (b, a)) in res.graph.directed_edges()
    # the constraints are hard: hill climbing under them keeps a required edge and drops a forbidden one
    g = hill_climb(ds, {("xray", "either")}, {("either", "xray")})
    assert ("xray", "either") in g.directed_edges()


def test_ils_csl_search_follows_the_authors_bdeu_prior_and_parent_bound():
    settings = ILSCSLSettings()
    assert (settings.discrete_score, settings.equivalent_sample_size, settings.max_parents) == ("bdeu", 1.0, 3)
    ds = dataset("asia", 0)
    free = hill_climb(ds, set(), set(), settings.model_copy(update={"max_parents": None}))
    most = max(sum(1 for _, b in free.directed_edges() if b == v) for v in ds.variables)
    assert most >= 2  # asia has a two-parent node the search finds: the bound below is not vacuous
    one = hill_climb(ds, set(), set(), settings.model_copy(update={"max_parents": 1}))
    assert all(sum(1 for _, b in one.directed_edges() if b == v) <= 1 for v in ds.variables)


@pytest.mark.parametrize("preset", ["small"])
def test_earthquake_and_asia_seeds_0_1_with_mac_in_one_table(fake_server, make_gateway, preset):
    fake_server.responder = oracle
    gw = make_gateway(fake_server)
    config = DiscoveryConfig(
        react=ReActSettings(**react_mod.PRESETS[preset]),
        llm_scd=LLMSCDSettings(**scd_mod.PRESETS[preset]),
        ils_csl=ILSCSLSettings(**ils_mod.PRESETS[preset]),
    )
    outs = [
        run_discovery(variant(DISCOVERY_METHODS, m), dataset(name, s), gw, config, seed=s)
        for name in NAMES
        for s in (0, 1)
        for m in ("react", "llm_scd", "ils_csl", "mac")
    ]
    assert all(o.error is None and o.graph is not None for o in outs), [o.error for o in outs if o.error]
    table = summary_text(outcomes_frame(outs))
    for name in NAMES:
        for m in ("react", "llm_scd", "ils_csl", "mac"):
            assert re.search(rf"^{name}\s+500\s+{m}\s", table, re.M), (name, m)


def test_paper_bounds_edge_lists_by_what_a_dag_allows_and_small_keeps_2d(fake_server, make_gateway):
    from agentcausal.discovery.llm.react import PRESETS as REACT_PRESETS
    from agentcausal.discovery.llm.react import ReActSettings
    from agentcausal.discovery.mac import MACSettings
    from agentcausal.discovery.mac.settings import PRESETS as MAC_PRESETS

    asia = dataset("asia", 0)  # d = 8: a DAG has at most 28 edges, small's bound is 16

    def respond(body: dict) -> str:
        if reply_kind(body)[0] == "GraphProposal":  # the zero-shot answer: the true edges
            return json.dumps(
                {"edges": [{"cause": a, "effect": b} for a, b in sorted(asia.true_graph.directed_edges())]}
            )
        return oracle(body)

    fake_server.responder = respond
    gw = make_gateway(fake_server, max_output_tokens=5000)
    small = DiscoveryConfig(mac=MACSettings(**MAC_PRESETS["small"]), react=ReActSettings(**REACT_PRESETS["small"]))
    for config, bound, paper in ((DiscoveryConfig(), 28, True), (small, 16, False)):
        fake_server.requests.clear()
        for m in ("llm_zero_shot", "react"):
            assert run_discovery(variant(DISCOVERY_METHODS, m), asia, gw, config, seed=0).error is None
        bodies = fake_server.chat_requests
        schemas = [b["response_format"]["json_schema"]["schema"] for b in bodies]
        assert {s["properties"]["edges"]["maxItems"] for s in schemas} == {bound}
        assert ("maxLength" in json.dumps(schemas)) is not paper  # ReAct's thought: unbounded under paper
        assert bodies and all((b["max_tokens"] == 5000) is paper for b in bodies)  # paper: the profile's budget


def test_ils_csl_finishes_on_verdicts_whose_requirements_close_a_cycle(fake_server, make_gateway, monkeypatch):
    """Each learned edge judged "correct", over searches that learn tub -> either -> xray, then xray -> tub
    (and smoke -> lung): the three requirements close a cycle pgmpy refuses; the cycle-closing one is
    dropped, and the real search runs under the rest to the end."""
    ds = dataset("asia", 0)
    cyclic = {("tub", "either"), ("either", "xray"), ("xray", "tub")}
    with pytest.raises(AlgorithmError, match="hill climbing failed"):
        hill_climb(ds, cyclic, set())  # what made the row fail before
    real = ils_mod.hill_climb
    scripted = [
        [("tub", "either"), ("either", "xray")],
        [("tub", "either"), ("either", "xray"), ("xray", "tub"), ("smoke", "lung")],  # one more new edge
    ]
    seen: list[set] = []

    def search(ds_, required, forbidden, settings):
        seen.append(set(required))
        if scripted:
            return CausalGraph.from_edges(ds_.variables, scripted.pop(0))
        return real(ds_, required, forbidden, settings)

    monkeypatch.setattr(ils_mod, "hill_climb", search)
    fake_server.responder = lambda body: json.dumps({"reason": "yes", "verdict": "correct"})
    res = ils_mod.ils_csl(LLMCall(make_gateway(fake_server)), ds, ILSCSLSettings())
    assert res.dropped == ("xray -> tub",) and res.verdicts["xray -> tub"] == "correct"
    assert set(res.required) >= {"tub -> either", "either -> xray"} and "xray -> tub" not in res.required
    assert all(not ils_mod.closes_cycle(r - {e}, e) for r in seen for e in r)  # every search ran acyclic
    assert {("tub", "either"), ("either", "xray"), ("smoke", "lung")} <= res.graph.directed_edges()
    assert res.stopped == "no_new_constraint" and len(seen) >= 3  # the real search ran after the drop


def test_ils_csl_runs_to_its_own_rule_under_paper_and_small_keeps_its_bound(fake_server, make_gateway):
    from agentcausal.discovery.method_settings import method_settings

    assert ILSCSLSettings().max_iterations is None and ils_mod.PRESETS["small"]["max_iterations"] == 2
    ds = dataset("asia", 0)
    truth()
    fake_server.responder = oracle
    res = ils_mod.ils_csl(LLMCall(make_gateway(fake_server)), ds, ILSCSLSettings())
    assert res.stopped == "no_new_constraint"
    small = ils_mod.ils_csl(LLMCall(make_gateway(fake_server, cache=False)), ds, ILSCSLSettings(max_iterations=1))
    assert small.stopped == "max_iterations" and len(small.iterations) == 1
    plan = method_settings(
        variant(DISCOVERY_METHODS, "ils_csl"), DiscoveryConfig(ils_csl=ILSCSLSettings(**ils_mod.PRESETS["small"]))
    )
    assert plan["max_iterations"] == 2  # the bound is in the plan
    assert method_settings(variant(DISCOVERY_METHODS, "ils_csl"), DiscoveryConfig())["max_iterations"] is None


def test_llm_scd_asks_at_temperature_0_under_paper_and_takayamas_sampling_is_named(fake_server, make_gateway):
    """The MAC paper runs every LLM at temperature 0 (§4.1): ``paper``'s LLM-SCD sends temperature 0, one
    answer per ordered pair; ``sampling=takayama`` is Takayama et al.'s five answers at 0.7."""
    from agentcausal.discovery.method_settings import llm_temperature, method_settings
    from agentcausal.settings import resolve

    paper = resolve(LLMSCDSettings, scd_mod.PRESETS, "paper", {}, name="llm_scd")
    assert (paper.sampling, paper.temperature, paper.n_samples) == ("mac_paper", 0.0, 1)
    small = resolve(LLMSCDSettings, scd_mod.PRESETS, "small", {"sampling": "takayama"}, name="llm_scd")
    assert (small.temperature, small.n_samples) == (0.7, 5)
    assert LLMSCDSettings(sampling="takayama", temperature=0.3).temperature == 0.3  # a given value stays
    config = DiscoveryConfig(llm_scd=paper, samples=3)
    assert (
        llm_temperature(DISCOVERY_METHODS["llm_scd"], config) == 0.0
        and method_settings(variant(DISCOVERY_METHODS, "llm_scd"), config)["temperature_used"] == 0.0
    )
    ds = dataset("earthquake", 0)
    truth()
    fake_server.responder = oracle
    scd_mod.llm_scd(LLMCall(make_gateway(fake_server)), ds, paper)
    sent = fake_server.chat_requests
    assert len(sent) == ds.d * (ds.d - 1) and {r["temperature"] for r in sent} == {0.0}
    before = len(sent)
    scd_mod.llm_scd(LLMCall(make_gateway(fake_server, cache=False)), ds, LLMSCDSettings(sampling="takayama"))
    sampled = fake_server.chat_requests[before:]
    assert len(sampled) == 5 * ds.d * (ds.d - 1) and {r["temperature"] for r in sampled} == {0.7}
