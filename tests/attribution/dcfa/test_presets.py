"""DCFA under the ``paper`` preset and without ground truth, against the fake server (test double)."""

import json

import pytest

from agentcausal.attribution.dcfa import DcfaSettings, run_dcfa
from agentcausal.attribution.dcfa.gca import run_gca
from agentcausal.attribution.jobs import run_method
from agentcausal.llm import LLMCall
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal_cli import main
from tests.attribution.dcfa.conftest import DcfaResponder, kind_of, make_trace, small, user_text


def test_equations_cgc_keeps_only_edges_whose_three_judgements_hold(fake_server, make_gateway, wrong_lookup_at_step_1):
    fake_server.responder = r = DcfaResponder(
        edges=[(0, 1), (1, 2), (1, 3)], hypothesis=1, judgements={(1, 3): (True, False, True)}
    )
    out = run_gca(
        wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), DcfaSettings(cgc="equations", mdi_cgc="joint")
    )
    assert r.calls == ["gca", "hg"]  # judgements come in the one reply: no extra calls
    assert sorted(out.graph.edges()) == [(0, 1), (1, 2)] and out.dropped_edges.not_causal == 1
    rec = {(j["source"], j["target"]): j for j in out.edge_judgements}
    assert rec[(1, 3)]["kept"] is False and rec[(1, 3)]["necessary"] is False and rec[(0, 1)]["kept"] is True
    schema = json.dumps(fake_server.chat_requests[0]["response_format"])
    assert all(k in schema for k in ("temporal", "necessary", "sufficient"))
    assert "maxItems" not in schema  # paper: no cap on deviations or edges
    hg = user_text(fake_server.chat_requests[1])
    assert "root cause of the failure of the run above" in hg and "0 -> 1, 1 -> 2" in hg and "1 -> 3" not in hg


def test_small_keeps_todays_wording_and_caps(fake_server, make_gateway, wrong_lookup_at_step_1):
    fake_server.responder = DcfaResponder(edges=[(0, 1)], hypothesis=1)
    run_gca(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), small())
    gca_prompt = user_text(fake_server.chat_requests[0])
    assert "list up to 5 steps" in gca_prompt and "up to 10 edges" in gca_prompt
    assert "the first step whose mistake made the final answer wrong" in user_text(fake_server.chat_requests[1])
    assert fake_server.chat_requests[1]["max_tokens"] == 96


def test_paper_budgets_come_from_the_profile(fake_server, make_gateway, wrong_lookup_at_step_1):
    fake_server.responder = DcfaResponder(
        edges=[(1, 2)], hypothesis=1, corrected=["", "a", "b", "", "", ""], outcomes={1: "42"}
    )
    gw = make_gateway(fake_server)
    run_dcfa(wrong_lookup_at_step_1, LLMCall(gw), DcfaSettings())
    from agentcausal.settings import completion_budget

    expected = completion_budget(gw, "dcfa.gca", None)
    assert expected >= 256
    caps = {b["max_tokens"] for b in fake_server.chat_requests}
    assert caps == {expected}  # every stage: the profile's budget, no fixed 48-432 token caps


def test_cap_keeps_edges_closest_to_the_hypothesis(fake_server, make_gateway):
    trace = make_trace(n=8)
    edges = [(0, 1), (1, 2), (5, 6), (6, 7), (4, 5)]
    fake_server.responder = DcfaResponder(edges=edges, hypothesis=5, corrected=[""] * 8)
    a = run_dcfa(trace, LLMCall(make_gateway(fake_server)), small(max_edges=2))
    assert a.details["edges"] == [list(e) for e in sorted(edges)]  # HG saw every valid edge
    assert sorted(map(tuple, a.details["search_edges"])) == [(4, 5), (5, 6)]
    assert a.details["dropped_edges"]["capped"] == 3 and a.details["dropped_edges"]["duplicates"] == 0
    hg = next(b for b in fake_server.chat_requests if kind_of(b) == "hg")
    assert "0 -> 1" in user_text(hg)


def test_no_ground_truth_dcfa_never_sees_the_answer(fake_server, make_gateway, wrong_lookup_at_step_1):
    # "42" is the truth; the judge rates outcome "42" likely, others unlikely
    fake_server.responder = r = DcfaResponder(
        edges=[(1, 2)],
        hypothesis=1,
        corrected=["", "fix 1", "fix 2", "", "", ""],
        outcomes={-1: "41", 1: "40", 2: "42"},
        probabilities={"42": 0.9, "40": 0.2, "41": 0.1},
    )
    a = run_method(
        wrong_lookup_at_step_1, ATTRIBUTION_METHODS["dcfa"], make_gateway(fake_server), {"with_ground_truth": False}
    )
    for b in fake_server.chat_requests:
        assert "<answer>" not in user_text(b) and "42</" not in user_text(b).replace("<data>42</data>", "")
    assert not [x for x in fake_server.requests if x["_path"].endswith("/embeddings")]  # no truth to embed
    assert r.count("judge") == 2  # one per distinct simulated outcome ("42" naming step 2, "40" of T~(1))
    move = a.details["lce"]["path"][0]
    assert move["s"] == pytest.approx(0.9) and move["s_prev"] == pytest.approx(0.2)
    assert a.details["variant"] == "no_truth" and a.settings["with_ground_truth"] is False
    assert a.step == 2  # the search moved to step 2 on the judge's ΔS


def test_cli_refuses_a_method_that_cannot_run_without_truth(capsys, monkeypatch):
    from pathlib import Path

    from pydantic import BaseModel

    from agentcausal.attribution.spec import AttributionSpec
    from agentcausal.registry import ATTRIBUTION_METHODS

    class NeedsTruth(BaseModel):
        k: int = 1

    spec = AttributionSpec(
        name="needs_truth_demo",
        run=lambda t, g, s: None,
        settings_model=NeedsTruth,
        prompt_version="x",
        stages=("baseline",),
        needs_labels=True,
    )
    monkeypatch.setitem(ATTRIBUTION_METHODS.specs, spec.name, spec)
    monkeypatch.chdir(Path(__file__).resolve().parents[3])
    assert main(["attribute", "data/examples", "-m", "needs_truth_demo", "--no-ground-truth", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "needs_truth_demo cannot run without ground truth" in err and len(err.splitlines()) == 1


def test_each_prompt_set_takes_only_the_variants_it_has():
    from agentcausal.attribution.dcfa import PRESETS
    from agentcausal.exceptions import ConfigError
    from agentcausal.settings import resolve

    with pytest.raises(ConfigError, match="prompts='small' has only"):
        resolve(DcfaSettings, PRESETS, "small", {"cgc": "code"})
    with pytest.raises(ConfigError, match="cgc='edges' needs prompts='small'"):
        resolve(DcfaSettings, PRESETS, "paper", {"cgc": "edges"})
    paper, s = DcfaSettings(), small()
    assert (paper.mdi_cgc, paper.cgc, paper.simulation, paper.ded, paper.search_order) == (
        "split",
        "code",
        "code",
        "code",
        "causes_first",
    )
    assert (paper.delta_s_decimals, paper.search_ties, paper.revisit, paper.max_iterations) == (3, "outward", False, 5)
    # small keeps its short prompts; the search rules are the paper's
    assert (s.mdi_cgc, s.cgc, s.simulation, s.ded) == ("joint", "edges", "equations", "equations")
    assert (s.search_order, s.delta_s_decimals, s.search_ties, s.revisit) == ("causes_first", 3, "outward", False)
