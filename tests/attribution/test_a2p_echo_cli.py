"""``agentcausal attribute data/examples --method a2p --method echo`` through the CLI and the flow,
on the fake OpenAI server (test double) with the benchmark's rule-based replies."""

import json
from pathlib import Path

import pandas as pd
import pytest

from agentcausal_cli import main
from agentcausal_fakes.responders import BenchResponder

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "data" / "examples"


@pytest.fixture
def fake_profiles(fake_server, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    for var in ("AGENTCAUSAL_ROUTING", "AGENTCAUSAL_PROFILES"):
        monkeypatch.delenv(var, raising=False)
    fake_server.responder = BenchResponder()
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        'max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
    )
    return str(toml)


def test_dry_run_plans_a2p_and_echo_in_both_presets(fake_profiles, capsys):
    for preset in ("paper", "small"):
        assert (
            main(
                [
                    "attribute",
                    "data/examples",
                    "--method",
                    "a2p",
                    "--method",
                    "echo",
                    "--preset",
                    preset,
                    "--no-ground-truth",
                    "--profiles",
                    fake_profiles,
                    "--dry-run",
                ]
            )
            == 0
        )
        plan = json.loads(capsys.readouterr().out)
        assert set(plan["methods"]) == {"a2p", "echo"}
        for m in plan["methods"].values():
            assert (
                m["preset"] == preset and m["variant"] == "no_truth" and m["stages"] == {"baseline": "fake:fake-model"}
            )
            assert m["settings"]["with_ground_truth"] is False
        assert (plan["methods"]["echo"]["settings"]["max_candidates"] is None) is (preset == "paper")


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("truth", [[], ["--no-ground-truth"]], ids=["with_truth", "no_truth"])
def test_cli_attribute_runs_a2p_and_echo(fake_server, fake_profiles, tmp_path, capsys, truth):
    run = tmp_path / "run"
    rc = main(
        [
            "attribute",
            "data/examples",
            "--method",
            "a2p",
            "--method",
            "echo",
            "--profiles",
            fake_profiles,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--out",
            str(run),
            *truth,
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "a2p" in out and "echo" in out
    res = pd.read_parquet(run / "results.parquet")
    assert sorted(res["method"].unique()) == ["a2p", "echo"] and len(res) == 8
    assert res["error"].isna().all() and res["pred_step"].notna().all()
    assert fake_server.count == 4 * (1 + 2)  # A2P one call, ECHO two per trace
    reqs = fake_server.chat_requests
    assert reqs and all(("<answer>" in r["messages"][1]["content"]) is (not truth) for r in reqs)
