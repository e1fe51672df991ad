"""MAC end to end on the real embedded model under the ``small`` preset, the embedded routing's own
(slow: needs the packaged GGUF model; about 1-2 min on 2 cores)."""

from __future__ import annotations

import pytest

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.datasets import load_dataset
from agentcausal.discovery.jobs import run_discovery
from agentcausal.discovery.mac import MACSettings
from agentcausal.discovery.mac.settings import PRESETS
from agentcausal.discovery.variants import variant
from agentcausal.registry import DISCOVERY_METHODS

#: MAC's small preset (short prompts, fixed caps, the typed executor); the library defaults are ``paper``
SMALL_MAC = MACSettings(**PRESETS["small"])


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_mac_on_earthquake_with_the_embedded_model(tmp_path):
    from agentcausal.llm import Gateway

    gw = Gateway.from_settings(cache_dir=tmp_path / "llm")
    ds = load_dataset("earthquake", n=1000, seed=0)
    out = run_discovery(variant(DISCOVERY_METHODS, "mac"), ds, gw, DiscoveryConfig(mac=SMALL_MAC), seed=0)
    assert out.error is None, out.error
    assert out.prompt_version == "mac-2026-11-v6"  # the small set
    assert out.graph is not None and out.graph.is_dag()
    assert out.details["dcm"]["execution"]["choice"]["algorithm"] in (
        "pc",
        "fci",
        "ges",
        "exact_search",
        "direct_lingam",
    )
    assert out.usage["mac.debate"]["requests"] >= 4


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_llm_baselines_on_earthquake_with_the_embedded_model(tmp_path):
    """ReAct, LLM-SCD and ILS-CSL under the ``small`` preset, seed 0, with MAC in one table."""
    from agentcausal.discovery.evaluate import outcomes_frame
    from agentcausal.discovery.llm import ils_csl, llm_scd, react
    from agentcausal.llm import Gateway
    from agentcausal.report.discovery_tables import summary_text

    gw = Gateway.from_settings(cache_dir=tmp_path / "llm")
    ds = load_dataset("earthquake", n=1000, seed=0)
    config = DiscoveryConfig(
        mac=SMALL_MAC,
        react=react.ReActSettings(**react.PRESETS["small"]),
        llm_scd=llm_scd.LLMSCDSettings(**llm_scd.PRESETS["small"]),
        ils_csl=ils_csl.ILSCSLSettings(**ils_csl.PRESETS["small"]),
    )
    outs = [
        run_discovery(variant(DISCOVERY_METHODS, m), ds, gw, config, seed=0)
        for m in ("react", "llm_scd", "ils_csl", "mac")
    ]
    for o in outs:
        assert o.graph is not None and o.error is None, (o.method, o.error)
    table = summary_text(outcomes_frame(outs))
    assert all(m in table for m in ("react", "llm_scd", "ils_csl", "mac"))
