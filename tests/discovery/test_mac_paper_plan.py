"""``discover --routing paper --dry-run`` shows MAC with no bound the paper lacks; ``--show-prompts`` renders
each MAC agent's messages (no model, no request, no API key)."""

from __future__ import annotations

import json

import pytest

from agentcausal.discovery.mac.settings import PAPER_UNSPECIFIED, PRESETS
from agentcausal.llm.preview import placeholder
from agentcausal_cli import main

#: every setting that caps a completion, a reason, an edge list or the orderings
BOUNDS = (
    "max_orderings",
    "reason_chars",
    "edge_reason_chars",
    "edges_per_variable",
    "algorithm_max_tokens",
    "verdict_max_tokens",
    "graph_max_tokens",
    "coder_max_tokens",
)


def _plan(capsys, *extra: str) -> dict:
    assert (
        main(["discover", "--dataset", "earthquake", "--method", "mac", "--routing", "paper", *extra, "--dry-run"]) == 0
    )
    return json.loads(capsys.readouterr().out)


def test_paper_dry_run_shows_no_bound_the_paper_lacks_and_the_paper_prompt_set(capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    s = _plan(capsys)["methods"]["mac"]["settings"]
    assert s["prompts"] == "paper"
    assert {k: s[k] for k in BOUNDS} == dict.fromkeys(BOUNDS)
    # what the paper leaves open is a named setting with its value and "paper: unspecified"
    assert set(s["paper_unspecified"]) == set(PAPER_UNSPECIFIED)
    assert s["paper_unspecified"]["subset_size"].startswith(f"{s['subset_size']} (paper: unspecified")
    assert s["paper_unspecified"]["coding_attempts"].startswith(f"{s['coding_attempts']} (paper: unspecified")
    # the small preset keeps its caps and its prompts
    small = _plan(capsys, "--preset", "small")["methods"]["mac"]["settings"]
    assert small["prompts"] == "small" and all(small[k] == PRESETS["small"][k] for k in BOUNDS if k in PRESETS["small"])


@pytest.mark.parametrize(
    "method, calls",
    [
        (
            "mac",
            [
                "DCM algorithm debate: Affirmative",
                "DCM algorithm debate: Negative",
                "DCM algorithm debate: Judge",
                "DCM Causal Coding Executor: write the script",
                "DCM Causal Coding Executor: debug a failed script",
                "MDM graph debate: Affirmative",
                "MDM graph debate: Negative",
                "MDM graph debate: Judge",
            ],
        ),
        ("mdm_only", ["MDM graph debate: Affirmative", "MDM graph debate: Negative", "MDM graph debate: Judge"]),
        (
            "mac_single",
            [
                "DCM algorithm debate: Affirmative",
                "DCM Causal Coding Executor: write the script",
                "DCM Causal Coding Executor: debug a failed script",
                "MDM graph debate: Affirmative",
            ],
        ),
    ],
)
def test_show_prompts_renders_each_mac_agent_with_role_principles_procedure_and_output_format(
    capsys, monkeypatch, method, calls
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # nothing is requested: no key needed
    assert main(["discover", "-d", "earthquake", "-m", method, "-m", "pc", "--routing", "paper", "--show-prompts"]) == 0
    out = capsys.readouterr().out
    blocks = [b for b in out.split("\n=== ") if b.strip()]
    headers = [b.lstrip("= ").splitlines()[0] for b in blocks]
    assert [h.split(" · ")[1].split(" (")[0] for h in headers] == calls  # pc has no prompt: not shown
    assert headers and all(h.startswith(f"{method} on earthquake · ") and "(stage mac." in h for h in headers)
    for b in blocks:
        if "debug a failed script" in b:
            assert "# Execution result" in b and placeholder("the sandbox (the script's error)") in b
            continue
        assert all(f"# {part}\n" in b for part in ("Role", "Goal", "Procedure", "Output format"))
        assert "--- system ---\n" in b and "--- user ---\n" in b
        if "debate" in b.splitlines()[0]:
            assert "# Causal principles\n" in b
    graph_judge = (
        next(b for b in blocks if f"{method} on earthquake · MDM graph debate: Judge" in b)
        if method != "mac_single"
        else ""
    )
    if graph_judge:
        assert placeholder("the Affirmative (A)") in graph_judge and "Colliders (v-structures)" in graph_judge
    if method == "mac":
        assert placeholder("Meta Fusion (the data graph G_C as sentences)") in out
        assert "<rows>\n" in blocks[0] and "- Burglary:" in blocks[0]  # the real context: S and the metadata
        assert "elided" not in out  # earthquake's blocks fit in the 8 lines a data block shows


def test_show_prompts_with_rounds_shows_the_revision_of_each_variant(capsys):
    assert main(["discover", "-d", "earthquake", "-m", "mdm_only", "--rounds", "1", "3", "--show-prompts"]) == 0
    out = capsys.readouterr().out
    assert "=== mdm_only (rounds 1) on earthquake" in out and "=== mdm_only (rounds 3) on earthquake" in out
    assert out.count("Affirmative revising (rounds 2-3)") == 1
    assert "You are the Affirmative. List each direct cause" in out  # the default routing: small prompts
