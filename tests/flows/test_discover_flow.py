"""The ``discover`` flow end to end on the fake server (test double) and Prefect's ephemeral API:
Parquet results, report, graphs, cache reuse across two flow runs, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.discovery.mac.sandbox import sandbox_available
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.runs.options import RunOptions
from agentcausal.settings import RunSettings
from tests.discovery.conftest import mac_responder

EDGES = (("Burglary", "Alarm"), ("Earthquake", "Alarm"), ("Alarm", "JohnCalls"), ("Alarm", "MaryCalls"))
#: what the fake coder writes: causal-learn's PC, its G.graph saved with the general_graph encoding
CODE_PC = (
    "import numpy as np\nfrom causallearn.search.ConstraintBased.PC import pc\n"
    "X = np.load('data.npy')\ng = pc(X, 0.05, 'chisq', show_progress=False).G.graph\n"
    "np.save('adjacency.npy', g)\nopen('encoding.txt', 'w').write('general_graph')\n"
)
#: a flow called without a config runs DCM's coding agent where the sandbox works (executor "auto")
CODER = 1 if sandbox_available() is None else 0


@pytest.fixture
def fake_settings(fake_server, tmp_path):
    """RunSettings routing every stage to the fake server (MAC responder), caches in a temp folder."""
    fake_server.responder = mac_responder(affirmative_edges=EDGES, negative_edges=EDGES[:2], code=CODE_PC)
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        'max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
    )
    return RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / "cache"))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_discover_flow_writes_run_and_reuses_cache(fake_server, fake_settings, tmp_path):
    from flows.discover import discover

    request = DiscoveryRequest(
        datasets=["earthquake"], methods=["mac", "llm_zero_shot", "pc", "ges"], seeds=[0, 1], n=300
    )
    run1 = discover(request, RunOptions(out_dir=str(tmp_path / "run1")), settings=fake_settings)
    first = fake_server.count
    # mac: 6 debate calls and (where the sandbox works) one coder call per seed; zero-shot 1 per seed
    # (each seed is its own LLM sample)
    assert first == 2 * (6 + CODER + 1)

    df = pd.read_parquet(Path(run1) / "results.parquet")
    assert len(df) == 8 and set(df["method"]) == {"mac", "llm_zero_shot", "pc", "ges"}
    assert (df["error"] == "").all()
    mac = df[df.method == "mac"].iloc[0]
    assert mac.shd == 0 and mac.f1 == 1.0 and mac.algorithm == "pc" and mac.llm_requests == 6 + CODER
    assert json.loads(mac.models) == {
        "mac.debate": "fake:fake-model",
        **({"mac.coder": "fake:fake-model"} if CODER else {}),
    }
    assert mac.status == "complete"  # the coder's script ran (or, without a sandbox, typed ran as asked)
    assert set(df["shd_reversal_cost"]) == {1}
    report = (Path(run1) / "report.md").read_text()
    assert "SHD: a reversed edge counts once" in report and "```mermaid" in report and "- DCM: Affirmative pc" in report
    assert (Path(run1) / "graphs" / "earthquake__mac.png").stat().st_size > 1000
    assert (Path(run1) / "summary.csv").is_file() and (Path(run1) / "outcomes.jsonl").is_file()

    # second run: every outcome comes from Prefect's persisted cache (same seconds, no new requests)
    run2 = discover(request, RunOptions(out_dir=str(tmp_path / "run2")), settings=fake_settings)
    assert fake_server.count == first
    df2 = pd.read_parquet(Path(run2) / "results.parquet")
    key = ["method", "seed"]
    pd.testing.assert_frame_equal(
        df.sort_values(key)[["seconds", "shd"]].reset_index(drop=True),
        df2.sort_values(key)[["seconds", "shd"]].reset_index(drop=True),
    )


def test_flow_rejects_unknown_method_before_any_call(fake_server, fake_settings, tmp_path):
    from agentcausal.exceptions import ConfigError
    from flows.discover import discover

    with pytest.raises(ConfigError, match="unknown discovery method"):
        discover.fn(
            DiscoveryRequest(datasets=["earthquake"], methods=["nope"]),
            RunOptions(out_dir=str(tmp_path / "r")),
            settings=fake_settings,
        )
    assert fake_server.count == 0


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cli_discover_prints_table_and_checks_inputs(fake_server, fake_settings, tmp_path, capsys):
    from agentcausal_cli import main

    out = tmp_path / "cli"
    rc = main(
        [
            "discover",
            "--dataset",
            "cancer",
            "--dataset",
            "survey",
            "--method",
            "pc",
            "--method",
            "mdm_only",
            "--llm-dataset",
            "cancer",
            "--n",
            "200",
            "--profiles",
            fake_settings.profiles_path,
            "--cache-dir",
            fake_settings.cache_dir,
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0 and "cancer" in text and "mdm_only" in text and "SHD: a reversed edge counts once" in text
    assert (out / "report.md").is_file()
    df = pd.read_parquet(out / "results.parquet")
    assert sorted(zip(df.dataset, df.method)) == [("cancer", "mdm_only"), ("cancer", "pc"), ("survey", "pc")]
    meta = json.loads((out / "run.json").read_text())
    assert meta["preset"] == meta["plan"]["preset"] is not None  # top level, like attribute's run.json
    assert meta["plan"]["anonymise"] == ["none"] and all(Path(i["path"]).is_absolute() for i in meta["plan"]["items"])
    assert main(["discover", "--dataset", "asia", "--llm-dataset", "child"]) == 2
    assert "not among the --dataset" in capsys.readouterr().err
    assert main(["discover", "--dataset", "nowhere", "--method", "pc"]) == 2
    assert "unknown dataset" in capsys.readouterr().err
    assert main(["discover", "--dataset", "asia", "--method", "magic"]) == 2
    assert main(["discover", "--dataset", "asia", "--rounds", "9"]) == 2
    assert "rounds" in capsys.readouterr().err
    assert main(["discover", "--dataset", str(tmp_path / "x.csv")]) == 2
    assert "file not found" in capsys.readouterr().err
    assert main(["discover", "--report", str(out), "--shd-reversal", "2"]) == 0
    assert "counts twice" in capsys.readouterr().out
