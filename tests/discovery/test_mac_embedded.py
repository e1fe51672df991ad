"""MAC end to end on the real embedded model (slow: needs the packaged GGUF model; about 1-2 min on 2 cores)."""

from __future__ import annotations

import pytest

from agentcausal.discovery.datasets import load_dataset
from agentcausal.discovery.methods import run_discovery


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_mac_on_earthquake_with_the_embedded_model(tmp_path):
    from agentcausal.llm import Gateway

    gw = Gateway.from_settings(cache_dir=tmp_path / "llm")
    ds = load_dataset("earthquake", n=1000, seed=0)
    out = run_discovery("mac", ds, gw, seed=0)
    assert out.error == "", out.error
    assert out.graph is not None and out.graph.is_dag()
    assert out.details["dcm"]["execution"]["choice"]["algorithm"] in ("pc", "fci", "ges", "exact_search",
                                                                      "direct_lingam")
    assert out.usage["mac.debate"]["requests"] >= 4
