"""A user dataset without true_edges: discover says there is no true graph (why metrics are '-')."""

import json

import numpy as np

from agentcausal.cli.discover import check_datasets


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
