"""The dry-run lists every completion cap DCFA will send, per stage and call, derived ones marked; the
listed caps are the ones the calls send (fake server, a test double)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentcausal.attribution.dcfa import DcfaSettings, run_dcfa
from agentcausal.attribution.dcfa.caps import dcfa_caps
from agentcausal.llm import LLMCall
from agentcausal_cli import main
from tests.attribution.dcfa.conftest import DcfaResponder, kind_of, small

ROOT = Path(__file__).resolve().parents[3]
_LINE = re.compile(r"^  (\w+): (dcfa\.\w+) ([\w+]+) -> \S+ (max_\w+)=(\d+) \((.*)\)$")


def _caps(argv, capsys, monkeypatch) -> dict[tuple[str, str], tuple[int, str]]:
    monkeypatch.chdir(ROOT)
    assert main(["attribute", "data/examples", "--dry-run", *argv]) == 0
    err = capsys.readouterr().err
    lines = err.split("completion caps sent per call:\n", 1)[1].splitlines()
    found = [m for m in map(_LINE.match, lines) if m]
    return {(m.group(1), m.group(3)): (int(m.group(5)), m.group(6)) for m in found}


def test_dry_run_lists_every_dcfa_call_and_the_hidden_fallback_cap_of_a_base_url_route(capsys, monkeypatch):
    # a --base-url route has no max_output_tokens: every unset cap falls back to min(4096, context // 4)
    caps = _caps(
        [
            "-m",
            "dcfa",
            "-m",
            "dcfa_gca_only",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "deepseek-ai/DeepSeek-R1",
        ],
        capsys,
        monkeypatch,
    )
    dcfa = {call for m, call in caps if m == "dcfa"}
    assert dcfa == {"MDI", "CGC", "HG", "Correct", "Simulation", "DED"}
    assert {call for m, call in caps if m == "dcfa_gca_only"} == {"MDI", "CGC", "HG"}  # no LCE call
    for cap, how in caps.values():
        assert 2048 <= cap <= 4096 and how.startswith("derived: no max_output_tokens on the profile")


def test_dry_run_marks_set_and_derived_caps_of_small_and_the_no_truth_judge(capsys, monkeypatch):
    caps = _caps(["-m", "dcfa", "--preset", "small", "--no-ground-truth"], capsys, monkeypatch)
    s = small()
    assert caps[("dcfa", "HG")][0] == s.hg_max_tokens and caps[("dcfa", "HG")][1].startswith("hg_max_tokens=")
    assert (
        caps[("dcfa", "MDI+CGC")][0] == s.gca_tokens and "derived from max_deviations" in caps[("dcfa", "MDI+CGC")][1]
    )
    assert caps[("dcfa", "judge")][0] == s.judge_max_tokens
    assert "derived per trace" in caps[("dcfa", "Correct")][1]


@pytest.mark.parametrize("preset", ["paper", "small"])
def test_the_listed_caps_are_the_caps_the_calls_send(fake_server, make_gateway, wrong_lookup_at_step_1, preset):
    settings = small() if preset == "small" else DcfaSettings()
    fake_server.responder = DcfaResponder(
        edges=[(0, 1), (1, 2)], hypothesis=1, corrected=["", "fix 1", "fix 2"] + [""] * 3
    )
    gw = make_gateway(fake_server, cache=False)
    run_dcfa(wrong_lookup_at_step_1, LLMCall(gw), settings)
    listed = {}
    for line in dcfa_caps(gw, {"dcfa": settings.model_dump(mode="json")}):
        m = re.match(r"dcfa: dcfa\.\w+ ([\w+]+) -> \S+ max_\w+=(\d+)", line)
        assert m, line
        listed[m.group(1)] = int(m.group(2))
    names = {
        "gca": "MDI+CGC",
        "mdi": "MDI",
        "cgc": "CGC",
        "hg": "HG",
        "correct": "Correct",
        "simulation": "Simulation",
        "ded": "DED",
    }
    sent: dict[str, set[int]] = {}
    for body in fake_server.chat_requests:
        cap = body.get("max_tokens", body.get("max_completion_tokens"))
        sent.setdefault(names[kind_of(body)], set()).add(cap)
    assert {"HG", "Correct", "Simulation"} <= set(sent) <= set(listed)  # DED under small: one candidate, no call
    for call, caps in sent.items():
        if call == "Correct" and settings.max_corrected_step_chars is not None:
            assert max(caps) <= listed[call]  # derived per trace from its step count; the largest listed
        else:
            assert caps == {listed[call]}, call
