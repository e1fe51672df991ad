"""A user dataset without true_edges: discover says there is no true graph (why metrics are '-')."""

import json

import numpy as np

from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.runs.options import RunOptions
from agentcausal_cli.dataset_checks import check_datasets


def _write(tmp_path, meta):
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    rows = ["a,b"] + [f"{u:.4f},{u + v:.4f}" for u, v in zip(x, rng.normal(size=40))]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "d.json").write_text(json.dumps(meta))
    return str(tmp_path / "d.csv")


def test_missing_true_edges_prints_a_note(tmp_path, capsys):
    spec = _write(tmp_path, {"domain": "toy", "variables": {"a": "cause", "b": "effect"}})
    assert check_datasets([spec])[0] == [spec]
    assert "no true graph" in capsys.readouterr().err


def test_true_edges_given_no_note(tmp_path, capsys):
    spec = _write(tmp_path, {"domain": "toy", "variables": {"a": "cause", "b": "effect"}, "true_edges": [["a", "b"]]})
    check_datasets([spec])
    assert "no true graph" not in capsys.readouterr().err


def test_the_flow_writes_the_note_into_run_json_and_report_md(tmp_path):
    from agentcausal.settings import RunSettings
    from flows.discover import discover

    spec = _write(tmp_path, {"domain": "toy", "variables": {"a": "first", "b": "second"}})
    run = discover(
        DiscoveryRequest(datasets=[spec], methods=["pc"]),
        RunOptions(out_dir=str(tmp_path / "run")),
        settings=RunSettings(cache_dir=str(tmp_path / "cache")),
    )
    notes = json.loads((tmp_path / "run" / "run.json").read_text())["notes"]
    assert len(notes) == 1 and "no true graph" in notes[0]
    assert notes[0] in (tmp_path / "run" / "report.md").read_text()
    assert run == str(tmp_path / "run")
