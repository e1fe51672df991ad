"""DCFA under ``paper`` follows the authors' released code: the requests themselves, on the fake server
(test double), and the prompt previews on Who&When traces (skipped when ../shared is absent)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from agentcausal.attribution.dcfa import DcfaSettings, run_dcfa
from agentcausal.attribution.dcfa.ded import HYPOTHESIS_FLAG
from agentcausal.attribution.previews import attribution_previews
from agentcausal.llm import LLMCall
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal_cli import main
from tests.attribution.dcfa.conftest import DcfaResponder, kind_of, make_trace, small, user_text

ROOT = Path(__file__).resolve().parents[3]

#: 0 -> 1 -> 2 -> 4, 1 -> 3; hypothesis 1; the corrector changes steps 1, 2 and 4
CHAIN = dict(
    deviations=[(1, "wrong lookup"), (2, "copies it")],
    edges=[(0, 1), (1, 2), (1, 3), (2, 4)],
    hypothesis=1,
    corrected=["", "fixed 1", "fixed 2", "", "fixed 4", ""],
    outcomes={-1: "41", 1: "40", 2: "42", 4: "42"},
)


def cosine_embedder(text: str) -> list[float]:
    """Truth "42" is (1, 0); an outcome "c<x>" has cosine x with it; anything else is orthogonal."""
    if text == "42":
        return [1.0, 0.0]
    m = re.fullmatch(r"c(-?[\d.]+)", text)
    x = float(m.group(1)) if m else 0.0
    return [x, math.sqrt(max(0.0, 1 - x * x))]


def _requests(fake_server, kind: str) -> list[str]:
    return [user_text(b) for b in fake_server.chat_requests if kind_of(b) == kind]


# ------------------------------------------------------------------ GCA
def test_mdi_and_cgc_see_the_log_only_and_ask_the_released_instructions(
    fake_server, make_gateway, wrong_lookup_at_step_1
):
    fake_server.responder = r = DcfaResponder(**CHAIN)
    a = run_dcfa(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), DcfaSettings())
    assert r.calls[:3] == ["mdi", "cgc", "hg"]  # split, as the released code calls them
    (mdi,), (cgc,), (hg,) = _requests(fake_server, "mdi"), _requests(fake_server, "cgc"), _requests(fake_server, "hg")
    for crit in (
        "Data input error",
        "Faulty assumption or shortcut",
        "Core function execution failure",
        "Unproductive loop or action",
        "5. Other",
        "Mark more than one step",
        "Example.",
    ):
        assert crit in mdi
    assert "<question>" not in mdi and "<question>" not in cgc and "<answer>" not in mdi + cgc
    assert "- step 1: wrong lookup" in cgc and "- step 2: copies it" in cgc  # MDI's reasons reach CGC
    for crit in (
        "temporality",
        "precondition",
        "influence",
        "mistake -> mistake",
        "normal -> mistake",
        "mistake -> normal",
        "Within an agent",
        "Across agents",
        "one entry for every step 0 to 5",
    ):
        assert crit in cgc
    # the cause/effect lists are the graph HG sees, with the question and the truth
    assert "<question>What is 6 x 7?</question>" in hg and "<answer>42</answer>" in hg
    assert "- step 1: causes 0; effects 2, 3" in hg and "upstream, non-obvious error" in hg
    assert a.details["links"][1] == {"step": 1, "causes": [0], "effects": [2, 3]}
    assert a.details["log_answer"] == "41" and a.details["cgc"] == "code"
    schema = fake_server.chat_requests[2]["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["log_answer", "step", "reason"]  # the released HG reply order


# ------------------------------------------------------------------ LCE
def test_each_candidate_has_its_own_named_simulation_and_one_without_a_root_cause(
    fake_server, make_gateway, wrong_lookup_at_step_1
):
    fake_server.responder = r = DcfaResponder(**CHAIN)
    a = run_dcfa(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), DcfaSettings())
    sims = _requests(fake_server, "simulation")
    s2 = next(u for u in sims if "Root-cause step: step 2" in u)
    assert "Root-cause step: step 2 (Agent2); the steps it directly affects: 4." in s2
    assert "only it and the steps it directly affects have been corrected" in s2
    assert "derive the correct final answer" in s2 and "fixed 2" in s2 and "fixed 4" not in s2
    nameless = [u for u in sims if "Root-cause step: none named." in u]
    assert nameless and all("derive the correct final answer" in u for u in nameless)
    assert any("fixed 1" in u and "fixed 2" not in u for u in nameless)  # S(1) of candidate 2: T~(1), no root
    # every candidate scored (0, then 2, 3, then 4) was named once; causes were searched first
    assert sorted(x for x in r.named if x is not None) == [0, 2, 3, 4]
    ev = a.details["lce"]["evaluated"]
    assert [(e["direction"], e["step"]) for e in ev] == [
        ("backward", 0),
        ("forward", 2),
        ("forward", 3),
        ("forward", 4),
    ]
    assert ev and all(e["s_prev"] is not None for e in ev) and a.step == 2


def test_delta_s_is_rounded_to_three_decimals_before_acceptance(fake_server, make_gateway, wrong_lookup_at_step_1):
    fake_server.embedder = cosine_embedder
    base = dict(
        edges=[(1, 2)], hypothesis=1, corrected=["", "fix 1", "fix 2", "", "", ""], outcomes={1: "c0.5", 2: "c0.5004"}
    )  # ΔS(2) = 0.5004 - 0.5 = 0.0004
    fake_server.responder = DcfaResponder(**base)
    a = run_dcfa(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), DcfaSettings())
    (move,) = a.details["lce"]["evaluated"]
    assert move["step"] == 2 and move["delta_s"] == pytest.approx(0.0004, abs=1e-6) and not move["accepted"]
    assert a.details["lce"]["path"] == [] and a.details["lce"]["candidates"] == [1]
    ded = _requests(fake_server, "ded")[-1]
    assert '<step n="1">' in ded and '<step n="2">' not in ded  # DED saw the hypothesis alone
    # raw floats (the text's version): the same ΔS is a move
    fake_server.responder = DcfaResponder(**base)
    b = run_dcfa(
        wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server, cache=False)), DcfaSettings(delta_s_decimals=None)
    )
    assert [m["step"] for m in b.details["lce"]["path"]] == [2]


def test_no_step_is_scored_twice_in_one_search(fake_server, make_gateway, wrong_lookup_at_step_1):
    # hypothesis 3; causes {0, 1, 2} -> 2 (largest ΔS); the causes of 2 are {1}, already scored: the search stops
    fake_server.embedder = cosine_embedder
    fake_server.responder = r = DcfaResponder(
        edges=[(0, 3), (1, 3), (1, 2), (2, 3)],
        hypothesis=3,
        corrected=[f"fix {k}" for k in range(6)],
        outcomes={-1: "c0", 0: "c0", 1: "c0.2", 2: "c0.9", 3: "c0.95"},
    )
    a = run_dcfa(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server, cache=False)), DcfaSettings())
    lce = a.details["lce"]
    assert [m["step"] for m in lce["path"]] == [2] and lce["stopped"]["backward"] == "all_evaluated"
    steps = [e["step"] for e in lce["evaluated"]]
    assert sorted(steps) == [0, 1, 2] and len(steps) == len(set(steps))
    named = [x for x in r.named if x is not None]
    assert sorted(named) == [0, 1, 2]  # each candidate's S(i) was requested once


def test_at_most_five_moves_per_direction(fake_server, make_gateway):
    # a chain 0 -> 1 -> ... -> 8 where every correction helps (ΔS = 0.1): the search stops after 5 moves
    trace = make_trace(n=9)
    fake_server.embedder = cosine_embedder
    fake_server.responder = r = DcfaResponder(
        edges=[(i, i + 1) for i in range(8)],
        hypothesis=0,
        corrected=[f"fix {k}" for k in range(9)],
        outcomes={k: f"c{0.1 * (k + 1):.1f}" for k in range(-1, 9)},
    )
    a = run_dcfa(trace, LLMCall(make_gateway(fake_server, cache=False)), DcfaSettings())
    lce = a.details["lce"]
    assert [m["step"] for m in lce["path"]] == [1, 2, 3, 4, 5] and lce["stopped"]["forward"] == "max_iterations"
    assert sorted(x for x in r.named if x is not None) == [1, 2, 3, 4, 5]  # step 6 never simulated
    assert len(_requests(fake_server, "simulation")) == 10  # S(i) and S(i-1) for each of the 5 candidates


@pytest.mark.parametrize(
    "source, setting, expected",
    [
        ("Algorithm-Generated", "auto", "algorithm_generated"),
        ("Hand-Crafted", "auto", "hand_crafted"),
        ("otel", "auto", "algorithm_generated"),
        ("otel", "hand_crafted", "hand_crafted"),
    ],
)
def test_correct_variant_follows_the_subset(fake_server, make_gateway, source, setting, expected):
    trace = make_trace().model_copy(update={"source": source})
    fake_server.responder = DcfaResponder(**CHAIN)
    a = run_dcfa(trace, LLMCall(make_gateway(fake_server)), DcfaSettings(correct_variant=setting))
    (correct,) = _requests(fake_server, "correct")
    assert a.details["lce"]["correct_variant"] == expected
    assert "factual elements" in correct and "<answer>42</answer>" in correct and "- step 1: wrong lookup" in correct
    if expected == "hand_crafted":
        assert "Remove redundant content" in correct and "Keep the number of steps" in correct
        assert "code snippets, intermediate calculations" in correct
    else:
        assert "Remove redundant content" not in correct and "ends in the correct answer" in correct
        assert "add no new information, reasoning or events" in correct


# ------------------------------------------------------------------ DED
def test_ded_sees_each_candidates_simulation_and_mdi_reasons_and_the_flagged_hypothesis(
    fake_server, make_gateway, wrong_lookup_at_step_1
):
    fake_server.responder = DcfaResponder(**CHAIN)
    a = run_dcfa(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), DcfaSettings())
    (ded,) = _requests(fake_server, "ded")
    assert "- step 1 (Agent1): " + HYPOTHESIS_FLAG in ded
    assert "  mistake reason (MDI): wrong lookup" in ded and "  mistake reason (MDI): copies it" in ded
    assert (
        "- step 2 (Agent2): when this step was corrected (Simulation): correcting through step 2 changes the answer"
    ) in ded
    # every candidate's text (the released code's dict.update kept only the last one's), no graph
    assert '<step n="1">' in ded and '<step n="2">' in ded and '<step n="0">' not in ded
    assert "Causal graph" not in ded and "->" not in ded.split("Example.")[0]
    assert "<question>What is 6 x 7?</question>" in ded and "<answer>42</answer>" in ded
    schema = next(b for b in fake_server.chat_requests if kind_of(b) == "ded")["response_format"]["json_schema"]
    assert "enum" not in json.dumps(schema) and schema["schema"]["properties"]["step"]["maximum"] == 5
    assert a.details["lce"]["decision"]["skipped"] is False


def test_ded_is_always_called_and_may_answer_outside_the_candidates(fake_server, make_gateway, wrong_lookup_at_step_1):
    fake_server.responder = r = DcfaResponder(
        edges=[(1, 2)], hypothesis=1, corrected=["", "a", "b", "", "", ""], decision=4
    )
    a = run_dcfa(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), DcfaSettings())
    assert r.count("ded") == 1 and a.details["lce"]["candidates"] == [1]  # one candidate: still asked
    assert a.step == 4 and a.details["lce"]["decision"]["off_candidates"] is True
    # the text's version (and small): an enum of the candidates, skipped with one
    fake_server.responder = r2 = DcfaResponder(edges=[(1, 2)], hypothesis=1, corrected=["", "a", "b", "", "", ""])
    b = run_dcfa(wrong_lookup_at_step_1, LLMCall(make_gateway(fake_server)), small())
    assert r2.count("ded") == 0 and b.details["lce"]["decision"]["skipped"] is True


# ------------------------------------------------------------------ previews
def _preview(trace, method="dcfa", **settings):
    """Call -> the user message of each call (the system message is the shared one)."""
    return {
        p.call: "\n".join(m["content"] for m in p.messages if m["role"] == "user")
        for p in attribution_previews(trace, ATTRIBUTION_METHODS[method], settings)
    }


def _who_and_when(root: Path, subset: str, stem: str):
    from agentcausal.traces.whowhen import load_who_and_when_file

    path = root / subset / f"{stem}.json"

    return load_who_and_when_file(path)


@pytest.mark.parametrize("subset", ["Algorithm-Generated", "Hand-Crafted"])
def test_preview_under_paper_shows_each_released_instruction_in_its_stage(who_and_when_dir, subset):
    trace = _who_and_when(who_and_when_dir, subset, "1")
    p = _preview(trace)
    correct_call = "Correct (hand-crafted)" if subset == "Hand-Crafted" else "Correct (algorithm-generated)"
    assert list(p) == ["MDI", "CGC", "HG", correct_call, "Simulation S(i)", "Simulation S(i-1)", "DED"]
    assert "Faulty assumption or shortcut" in p["MDI"] and "Mark more than one step" in p["MDI"]
    assert "<question>" not in p["MDI"] and "<question>" not in p["CGC"]
    assert "mistake -> normal" in p["CGC"] and "⟨reply of MDI" in p["CGC"]
    assert "downstream, decisive error" in p["HG"] and "⟨reply of CGC" in p["HG"]
    assert "factual elements" in p[correct_call]
    assert ("Remove redundant content" in p[correct_call]) == (subset == "Hand-Crafted")
    assert "Root-cause step: ⟨the candidate step i" in p["Simulation S(i)"]
    assert "the steps it directly affects" in p["Simulation S(i)"]
    assert "Root-cause step: none named." in p["Simulation S(i-1)"]
    assert HYPOTHESIS_FLAG in p["DED"] and "when this step was corrected (Simulation)" in p["DED"]
    assert "mistake reason (MDI)" in p["DED"] and "Causal graph" not in p["DED"]
    for text in p.values():  # the trace text is there, never a request
        assert "⟨reply of" in text or "<trace>" in text


@pytest.mark.parametrize("subset", ["Algorithm-Generated", "Hand-Crafted"])
def test_preview_of_all_at_once_and_binary_search_has_no_step_numbers(who_and_when_dir, subset):
    trace = _who_and_when(who_and_when_dir, subset, "1")
    for method in ("all_at_once", "binary_search"):
        (text,) = _preview(trace, method).values()
        inside = text.split("<trace>", 1)[1].split("</trace>", 1)[0]
        assert not re.search(r"^Step \d+", inside, re.M) and '<step n="' not in inside
        assert f"{trace.steps[0].role if subset == 'Hand-Crafted' else trace.steps[0].agent}: " in inside
    if subset == "Hand-Crafted":  # the full role, as Who&When's code shows it
        roles = {s.role for s in trace.steps if "(" in s.role}
        (text,) = _preview(trace, "all_at_once").values()
        assert roles and all(f"\n{r}: " in text for r in roles)


def test_small_preview_keeps_its_short_prompts():
    p = _preview(
        make_trace(),
        **{
            "prompts": "small",
            "mdi_cgc": "joint",
            "cgc": "edges",
            "simulation": "equations",
            "ded": "equations",
            "max_deviations": 5,
            "max_edges": 10,
        },
    )
    assert list(p) == ["MDI+CGC", "HG", "Correct", "Simulation S(i)", "Simulation S(i-1)", "DED"]
    assert "list up to 5 steps" in p["MDI+CGC"] and "Steps 0 to i above are revised" in p["Simulation S(i)"]


def test_cli_show_prompts_prints_the_calls_and_makes_no_request(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert (
        main(
            [
                "attribute",
                "data/examples",
                "-m",
                "dcfa",
                "-m",
                "all_at_once",
                "--routing",
                "paper",
                "--dry-run",
                "--show-prompts",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.count("##### ") == 2 and "=== dcfa · MDI (stage dcfa.gca) ===" in out
    assert "=== dcfa · DED (stage dcfa.lce) ===" in out and "=== all_at_once · All-at-One" not in out
    assert "=== all_at_once · All-at-Once (stage baseline) ===" in out and "no request made" in out
    assert main(["attribute", "data/examples", "-m", "dcfa", "--id", "nope", "--dry-run", "--show-prompts"]) == 2
