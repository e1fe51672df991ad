"""The completion caps ``discover --dry-run`` lists for MAC are the ones its calls send: each line's value is
what :func:`agentcausal.discovery.mac.calls.completion_cap` gives the call (graph proposals through
:func:`agentcausal.discovery.mac.mdm.graph_budget`), on the fake server's profiles (test double)."""

from __future__ import annotations

import re

from agentcausal.discovery.mac.calls import completion_cap
from agentcausal.discovery.mac.caps import mac_caps
from agentcausal.discovery.mac.mdm import graph_budget
from agentcausal.discovery.mac.settings import DEBATE_STAGE, PRESETS, MACSettings
from agentcausal.llm import Gateway
from agentcausal_cli import main
from tests.conftest import fake_profiles

VARIABLES = {"tiny": ["a", "b", "c"], "wide": [f"VARIABLE_{i}" for i in range(20)]}


def _caps(lines: list[str]) -> dict[str, int]:
    """``"METHOD CALL"`` -> the value sent."""
    out = {}
    for line in lines:
        m = re.match(r"(\S+): \S+ (.+?) -> \S+ \w+=(\d+) ", line)
        assert m, line
        out[f"{m[1]} {m[2]}"] = int(m[3])
    return out


def test_small_caps_are_what_the_calls_send_the_graph_cap_sized_on_the_widest_dataset():
    profiles = fake_profiles("http://127.0.0.1:9/v1")
    gw = Gateway(profiles, cache_dir=None)
    s = MACSettings(**{**PRESETS["small"], "executor": "coding", "max_tokens_scale": 1.5})
    caps = _caps(mac_caps(profiles, {"mac": s.model_dump(mode="json")}, VARIABLES))
    scale = s.max_tokens_scale
    assert caps["mac DCM Affirmative"] == completion_cap(gw, DEBATE_STAGE, s.algorithm_max_tokens, scale=scale)
    assert caps["mac DCM Judge"] == completion_cap(gw, DEBATE_STAGE, s.verdict_max_tokens, scale=scale)
    assert caps["mac DCM coder"] == completion_cap(gw, "mac.coder", s.coder_max_tokens, scale=scale)
    widest = completion_cap(gw, DEBATE_STAGE, graph_budget(VARIABLES["wide"], s), scale=scale)
    assert caps["mac MDM Affirmative"] == caps["mac MDM Negative"] == widest
    assert widest > completion_cap(gw, DEBATE_STAGE, graph_budget(VARIABLES["tiny"], s), scale=scale)


def test_paper_caps_are_the_profiles_budget_and_single_agent_sends_no_negative_or_judge():
    profiles = fake_profiles("http://127.0.0.1:9/v1")
    gw = Gateway(profiles, cache_dir=None)
    paper = MACSettings(executor="typed")
    resolved = {
        "mac_single": paper.model_copy(update={"single_agent": True}).model_dump(mode="json"),
        "mdm_only": paper.model_copy(update={"stages": "mdm_only"}).model_dump(mode="json"),
        "pc": {"algorithm_timeout_s": 120},
    }
    caps = _caps(mac_caps(profiles, resolved, VARIABLES))
    budget = completion_cap(gw, DEBATE_STAGE, None)
    assert caps == {
        "mac_single DCM Affirmative": budget,
        "mac_single MDM Affirmative": budget,
        "mdm_only MDM Affirmative": budget,
        "mdm_only MDM Negative": budget,
        "mdm_only MDM Judge": budget,
    }  # no coder under the typed executor; pc has no LLM call


def test_discover_dry_run_lists_every_mac_call_cap_on_stderr(capsys):
    argv = ["discover", "--dataset", "asia", "--method", "mac", "--method", "pc", "--preset", "small", "--dry-run"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    listed = err[err.index("completion caps sent per call:") :].splitlines()[1:]
    calls = [ln.split(" -> ")[0].strip() for ln in listed if ln.startswith("  mac:")]
    assert calls[:3] == ["mac: mac.debate DCM Affirmative", "mac: mac.debate DCM Negative", "mac: mac.debate DCM Judge"]
    assert "mac: mac.debate MDM Affirmative" in calls and "(asia, 8 variables)" in err
