"""The discovery memory row's datasets: valid user tables, each with a prompt of its own (so every dataset
costs one request, none a reply-cache hit)."""

from __future__ import annotations

from pathlib import Path

from agentcausal.discovery.data.datasets import load_spec, metadata_text
from bench.engine_memory import _write_datasets


def test_the_synthetic_datasets_load_and_differ(tmp_path):
    paths = Path(_write_datasets(3, str(tmp_path / "ds"))).read_text().split()
    loaded = [load_spec(p) for p in paths]
    assert [d.name for d in loaded] == ["ds0", "ds1", "ds2"] and all(d.data.shape == (100, 3) for d in loaded)
    assert len({metadata_text(d) for d in loaded}) == 3 and len({d.content_hash() for d in loaded}) == 3
    assert all(d.true_graph is not None and len(d.true_graph.edges) == 2 for d in loaded)
