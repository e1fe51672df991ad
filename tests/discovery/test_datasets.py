"""Datasets load offline: every vendored BIF network, Auto MPG, a user CSV with metadata."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentcausal.discovery.data.datasets import (
    BENCHMARKS,
    BNLEARN_NETWORKS,
    data_dir,
    load_dataset,
    load_user_dataset,
    metadata_text,
    sample_rows,
)
from agentcausal.exceptions import DatasetError

EXPECTED = {
    "earthquake": (5, 4),
    "cancer": (5, 4),
    "survey": (6, 6),
    "asia": (8, 8),
    "child": (20, 25),
    "sachs": (11, 17),
    "alarm": (37, 46),
}


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any socket connection fails: loading must be offline."""
    import socket

    def refuse(*a, **k):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.mark.parametrize("name", BNLEARN_NETWORKS)
def test_every_bnlearn_network_loads_offline(name):
    ds = load_dataset(name, n=40, seed=3)
    d, n_edges = EXPECTED[name]
    assert ds.data.shape == (40, d) and ds.data_type == "discrete"
    assert len(ds.true_graph.edges) == n_edges and ds.true_graph.is_dag()
    for j, v in enumerate(ds.variables):
        info = ds.metadata.variables[v]
        assert info.description and info.states
        assert set(np.unique(ds.data[:, j])) <= set(range(len(info.states)))


def test_sampling_is_seeded_and_columns_follow_the_bif_order():
    a, b, c = (load_dataset("asia", n=200, seed=s) for s in (1, 1, 2))
    assert np.array_equal(a.data, b.data) and not np.array_equal(a.data, c.data)
    assert a.content_hash() == b.content_hash() != c.content_hash()
    assert a.variables == ("asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp")
    # states keep the BIF order (yes=0, no=1), not pandas' sorted category order
    assert a.metadata.variables["smoke"].states == ("yes", "no")
    # 'either' is the logical OR of tub and lung in the BIF file: check the coding is consistent
    tub, lung, either = (a.data[:, a.variables.index(v)] for v in ("tub", "lung", "either"))
    assert np.all((either == 0) == ((tub == 0) | (lung == 0)))


def test_auto_mpg_has_392_rows_and_the_takayama_graph():
    ds = load_dataset("auto")
    assert ds.data.shape == (392, 5) and ds.data_type == "continuous"
    assert ds.variables == ("Displacement", "Mpg", "Horsepower", "Weight", "Acceleration")
    assert ds.true_graph.directed_edges() == {
        ("Weight", "Displacement"),
        ("Displacement", "Horsepower"),
        ("Horsepower", "Mpg"),
        ("Weight", "Mpg"),
        ("Horsepower", "Acceleration"),
    }
    assert not np.isnan(ds.data).any()


def test_every_benchmark_has_descriptions_for_every_variable():
    for name in BENCHMARKS:
        raw = json.loads((data_dir() / "descriptions" / f"{name}.json").read_text())
        assert raw["title"] and raw["domain"] and all(raw["variables"].values())
    assert (data_dir() / "bnlearn" / "ORIGIN.md").is_file()


def test_metadata_text_and_subset():
    ds = load_dataset("earthquake", n=100, seed=0)
    text = metadata_text(ds)
    assert text.splitlines()[1].startswith("- Burglary: ") and "[states: True, False]" in text
    s = sample_rows(ds, 5, seed=0)
    assert s.shape == (5, 5) and np.array_equal(s, sample_rows(ds, 5, seed=0))
    assert sample_rows(ds, 1000, seed=0).shape == (100, 5)


def test_user_dataset_csv_with_metadata(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    (tmp_path / "toy.csv").write_text(
        "x,y,colour\n" + "\n".join(f"{a:.3f},{2 * a:.3f},{'red' if a > 0 else 'blue'}" for a in x)
    )
    (tmp_path / "toy.json").write_text(
        json.dumps(
            {
                "title": "Toy",
                "domain": "made up",
                "variables": {"x": "input", "y": "output", "colour": "label"},
                "true_edges": [["x", "y"], ["x", "colour"]],
            }
        )
    )
    ds = load_user_dataset(tmp_path / "toy.csv", tmp_path / "toy.json")
    assert ds.data.shape == (50, 3) and ds.data_type == "continuous"
    assert ds.metadata.variables["colour"].states == ("blue", "red")
    assert ds.true_graph.directed_edges() == {("x", "y"), ("x", "colour")}
    parquet = tmp_path / "toy.parquet"
    ds.to_frame().to_parquet(parquet)
    assert load_user_dataset(parquet, tmp_path / "toy.json").data.shape == (50, 3)


def test_dataset_errors(tmp_path):
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_dataset("nope")
    with pytest.raises(DatasetError, match="n must be"):
        load_dataset("asia", n=0)
    with pytest.raises(DatasetError, match="file not found"):
        load_user_dataset(tmp_path / "a.csv", tmp_path / "a.json")
    (tmp_path / "a.txt").write_text("x\n1\n")
    (tmp_path / "a.json").write_text(json.dumps({"variables": {"x": "a"}}))
    with pytest.raises(DatasetError, match="csv or .parquet"):
        load_user_dataset(tmp_path / "a.txt", tmp_path / "a.json")
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "b.json").write_text(json.dumps({"variables": {"x": "a", "z": "b"}}))
    with pytest.raises(DatasetError, match="not columns"):
        load_user_dataset(tmp_path / "a.csv", tmp_path / "b.json")
    (tmp_path / "c.json").write_text(json.dumps({"vars": {}}))
    with pytest.raises(DatasetError, match="invalid metadata"):
        load_user_dataset(tmp_path / "a.csv", tmp_path / "c.json")
    (tmp_path / "d.json").write_text(json.dumps({"variables": {"x": "a"}, "true_edges": [["x", "q"]]}))
    with pytest.raises(DatasetError, match="true_edges"):
        load_user_dataset(tmp_path / "a.csv", tmp_path / "d.json")


def test_data_dir_env_override_must_hold_bnlearn(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTCAUSAL_DATA_DIR", str(tmp_path))
    assert data_dir() != tmp_path  # falls through to the repository's data/
    (tmp_path / "bnlearn").mkdir()
    assert data_dir() == tmp_path


def test_concurrent_loads_draw_the_same_rows_as_sequential_ones():
    from concurrent.futures import ThreadPoolExecutor

    seq = [load_dataset("cancer", n=300, seed=s).content_hash() for s in (0, 1, 2, 3)]
    with ThreadPoolExecutor(4) as pool:
        par = list(pool.map(lambda s: load_dataset("cancer", n=300, seed=s).content_hash(), (0, 1, 2, 3)))
    assert par == seq
