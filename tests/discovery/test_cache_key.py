"""A discovery key from a plan item's data hash and the dataset's header (no row) is the key of the sampled
rows, for a statistical and an LLM method; the metadata enters only an LLM method's key."""

from __future__ import annotations

import pytest

from agentcausal.discovery.cache_key import discovery_key, planned_key
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.datasets import load_header, load_spec
from agentcausal.discovery.variants import variant
from agentcausal.registry import DISCOVERY_METHODS


@pytest.mark.parametrize("method", ["pc", "llm_zero_shot", "mac@names (rounds 2)"])
@pytest.mark.parametrize("name", ["cancer", "auto_mpg"])
def test_the_planned_key_is_the_key_of_the_sampled_rows(name, method):
    ds = load_spec(name, n=120, seed=3)
    config = DiscoveryConfig()
    head = load_header(name)
    assert head.metadata == ds.metadata and head.variables == ds.variables and head.true_graph == ds.true_graph
    want = discovery_key(ds, variant(DISCOVERY_METHODS, method), config, seed=3)
    assert (
        planned_key(ds.content_hash(), ds.name, lambda: head, variant(DISCOVERY_METHODS, method), config, seed=3)
        == want
    )
    assert (
        planned_key(ds.content_hash(), ds.name, lambda: head, variant(DISCOVERY_METHODS, method), config, seed=4)
        != want
    )
    assert planned_key("0" * 32, ds.name, lambda: head, variant(DISCOVERY_METHODS, method), config, seed=3) != want


def test_a_statistical_key_reads_no_metadata():
    def no_header():
        raise AssertionError("the header was read")

    ds = load_spec("cancer", n=120, seed=0)
    assert planned_key(
        ds.content_hash(), "cancer", no_header, variant(DISCOVERY_METHODS, "pc"), DiscoveryConfig()
    ) == discovery_key(ds, variant(DISCOVERY_METHODS, "pc"), DiscoveryConfig())
