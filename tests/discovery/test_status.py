"""Result status and cache keys of discovery outcomes (no Prefect): an algorithm timeout is a failure of the run
(raised for a retry, never cached), the metadata that enters MAC's prompts is in the key, the truth is not,
and a MAC fallback is marked degraded."""

import dataclasses

import pytest

from agentcausal.discovery.cache_key import discovery_key
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.dataset_model import DatasetMetadata, VariableInfo
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.jobs import run_discovery
from agentcausal.discovery.outcome import degradation
from agentcausal.discovery.variants import variant
from agentcausal.exceptions import AlgorithmError
from agentcausal.registry import DISCOVERY_METHODS


@pytest.fixture(scope="module")
def child_dataset():
    """Child (20 variables): unrestricted Exact Search takes minutes on it (FACTS.md), so a 0.5 s timeout always
    fires however loaded the machine is (PC on a 3-variable collider can finish inside even 1 ms)."""
    from agentcausal.discovery.data.datasets import load_dataset

    return load_dataset("child", n=300, seed=0)


def test_algorithm_timeout_is_raised_for_a_retry_or_recorded_as_failed(child_dataset):
    config = DiscoveryConfig(algorithm_timeout_s=0.5)
    with pytest.raises(AlgorithmError) as info:
        run_discovery(variant(DISCOVERY_METHODS, "exact_search"), child_dataset, None, config, raise_transient=True)
    assert info.value.transient and "timed out" in str(info.value)
    out = run_discovery(variant(DISCOVERY_METHODS, "exact_search"), child_dataset, None, config)
    assert out.status == "failed" and out.status_detail == "AlgorithmError" and out.graph is None


def test_a_complete_statistical_run_is_complete_and_not_reused(collider_dataset):
    out = run_discovery(
        variant(DISCOVERY_METHODS, "pc"), collider_dataset, None, DiscoveryConfig(), raise_transient=True
    )
    assert out.status == "complete" and out.graph is not None and not out.reused


def test_metadata_is_in_the_key_of_llm_methods_and_the_truth_in_no_key(collider_dataset, make_gateway, fake_server):
    gw = make_gateway(fake_server)
    meta = DatasetMetadata(
        title="collider",
        domain="toy",
        variables={
            "X": VariableInfo(description="cause one"),
            "Y": VariableInfo(description="cause two"),
            "Z": VariableInfo(description="final outcome (edited)"),
        },
    )
    edited = dataclasses.replace(collider_dataset, metadata=meta)
    retruthed = dataclasses.replace(collider_dataset, true_graph=CausalGraph.from_edges("XYZ", [("Z", "Y")]))
    config = DiscoveryConfig()
    for method in ("mac", "llm_zero_shot"):
        assert discovery_key(collider_dataset, variant(DISCOVERY_METHODS, method), config, gw) != discovery_key(
            edited, variant(DISCOVERY_METHODS, method), config, gw
        )
        assert discovery_key(collider_dataset, variant(DISCOVERY_METHODS, method), config, gw) == discovery_key(
            retruthed, variant(DISCOVERY_METHODS, method), config, gw
        )
    # statistical methods never read the metadata: their cached graph stays valid
    assert discovery_key(collider_dataset, variant(DISCOVERY_METHODS, "pc"), config) == discovery_key(
        edited, variant(DISCOVERY_METHODS, "pc"), config
    )
    assert discovery_key(collider_dataset, variant(DISCOVERY_METHODS, "pc"), config) == discovery_key(
        retruthed, variant(DISCOVERY_METHODS, "pc"), config
    )


def test_mac_fallbacks_are_degraded():
    details = {
        "dcm": {"execution": {"fallback_reason": "coding failed after 2 attempt(s): boom"}, "debate": {"notes": []}},
        "mdm": {"debate": {"notes": ["Judge reply invalid (x); Affirmative wins"]}},
    }
    why = degradation(details)
    assert "coding failed" in why and "Judge reply invalid" in why
    assert degradation({"dcm": {"execution": {"fallback_reason": ""}, "debate": {"notes": []}}}) is None


@pytest.mark.parametrize(
    "kind, role",
    [
        ("AlgorithmProposalReply", "Affirmative"),
        ("AlgorithmProposalReply", "Negative"),
        ("AlgorithmVerdictReply", None),
        ("GraphProposal", "Affirmative"),
        ("GraphProposal", "Negative"),
        ("GraphVerdictReply", None),
    ],
)
def test_every_unreadable_mac_reply_gives_a_marked_row(fake_server, make_gateway, kind, role):
    # each MAC fallback fills its typed result with values of the declared types: a row is marked
    # (degraded, or content_failed where no fallback exists), never a crashed task
    from agentcausal.discovery.data.datasets import load_dataset
    from agentcausal.discovery.mac import MACSettings
    from tests.discovery.conftest import mac_responder, reply_kind

    base = mac_responder()

    def respond(body):
        name, who = reply_kind(body)
        return "no json here" if name == kind and role in (None, who) else base(body)

    fake_server.responder = respond
    out = run_discovery(
        variant(DISCOVERY_METHODS, "mac"),
        load_dataset("earthquake", n=300, seed=0),
        make_gateway(fake_server),
        DiscoveryConfig(mac=MACSettings(executor="typed")),
    )
    assert out.status in ("degraded", "content_failed"), (out.status, out.status_detail)
    assert out.status_detail
