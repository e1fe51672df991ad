"""Each discovery method reads only the LLM replies it cached itself: in one run with ``mac``, ``dcm_only``
and ``mdm_only``, every method's requests and tokens equal a run of that method alone (MAC arXiv:2407.15073
§4.3-§4.4 cost each method alone), with and without ``refresh``; attribution's keys are unchanged."""

from __future__ import annotations

import pytest

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.datasets import load_dataset
from agentcausal.discovery.jobs import run_discovery
from agentcausal.discovery.mac import MACSettings
from agentcausal.discovery.variants import variant
from agentcausal.llm import dialect
from agentcausal.registry import DISCOVERY_METHODS
from tests.discovery.conftest import mac_responder

METHODS = ("mac", "dcm_only", "mdm_only")
CONFIG = DiscoveryConfig(mac=MACSettings(executor="typed"))


@pytest.fixture(scope="module")
def earthquake():
    return load_dataset("earthquake", n=300, seed=0)


def _requests(outcome) -> int:
    return int(sum(s.get("requests", 0) for s in outcome.usage.values()))


def _tokens(outcome) -> int:
    return int(sum(s.get("prompt_tokens", 0) + s.get("completion_tokens", 0) for s in outcome.usage.values()))


def _alone(fake_server, make_gateway, tmp_path, ds, method) -> tuple[int, int]:
    """Requests the fake server received, and the tokens recorded, for ``method`` alone on an empty cache."""
    before = fake_server.count
    out = run_discovery(
        variant(DISCOVERY_METHODS, method),
        ds,
        make_gateway(fake_server, cache_dir=tmp_path / f"alone-{method}"),
        CONFIG,
    )
    assert out.status == "complete", out.error
    return fake_server.count - before, _tokens(out)


@pytest.mark.parametrize("refresh", [False, True])
def test_each_method_in_one_run_pays_what_it_pays_alone(fake_server, make_gateway, tmp_path, earthquake, refresh):
    fake_server.responder = mac_responder()
    alone = {m: _alone(fake_server, make_gateway, tmp_path, earthquake, m) for m in METHODS}
    # the ablations share prompts with mac (dcm_only: the algorithm debate; mdm_only: the graph debate's form)
    assert all(n > 0 for n, _ in alone.values()) and alone["mac"][0] > alone["dcm_only"][0]
    gw = make_gateway(fake_server, cache_dir=tmp_path / "one-run")
    gw.refresh = refresh  # --refresh: earlier entries unread; this run's own still readable, per method only
    before = fake_server.count
    outs = {m: run_discovery(variant(DISCOVERY_METHODS, m), earthquake, gw, CONFIG) for m in METHODS}
    assert fake_server.count - before == sum(n for n, _ in alone.values())
    for m, out in outs.items():
        assert out.status == "complete" and not out.reused
        assert (_requests(out), _tokens(out)) == alone[m], m
    # a second run of the same methods on the same cache reads each method's own replies back
    again = fake_server.count
    outs2 = {
        m: run_discovery(
            variant(DISCOVERY_METHODS, m), earthquake, make_gateway(fake_server, cache_dir=tmp_path / "one-run"), CONFIG
        )
        for m in METHODS
    }
    assert fake_server.count == again and all(o.reused for o in outs2.values())


def test_the_namespace_enters_the_key_only_when_given():
    payload = {"messages": [{"role": "user", "content": "hi"}], "params": {"temperature": 0.0}}
    plain = dialect.cache_key("http://x/v1", "m", payload)
    assert plain == dialect.cache_key("http://x/v1", "m", payload, None)  # attribution's keys: unchanged
    keys = {dialect.cache_key("http://x/v1", "m", payload, variant(DISCOVERY_METHODS, m).name) for m in METHODS}
    assert len(keys) == 3 and plain not in keys
    assert variant(DISCOVERY_METHODS, "mac (rounds 2)").name != variant(DISCOVERY_METHODS, "mac").name


def test_a_namespaced_view_shares_the_ledger_and_store(fake_server, make_gateway):
    gw = make_gateway(fake_server)
    view = gw.namespaced("dcm_only")
    assert view.usage is gw.usage and view.cache is gw.cache and gw.namespace is None
    fake_server.push('{"a": 1}')
    view.chat("mac.debate", [{"role": "user", "content": "q"}])
    fake_server.push('{"a": 2}')
    assert gw.chat("mac.debate", [{"role": "user", "content": "q"}]) == '{"a": 2}'  # not the view's reply
    assert fake_server.count == 2


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_one_discover_run_of_mac_and_its_ablations_pays_each_methods_own_calls(fake_server, tmp_path, capsys):
    """``discover -m mac -m dcm_only -m mdm_only``: no method's call is served by another's reply (each
    outcome's requests are its calls, none a cache hit), the server gets exactly their sum, and a
    ``--refresh`` run on the warm cache pays every method's calls again, the same number each."""
    from agentcausal.discovery.outcome import load_outcomes
    from agentcausal_cli import main

    fake_server.responder = mac_responder()
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        "max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n"
        '[routings.default]\npreset = "small"\ndefault = "fake"\n'
    )
    args = ["discover", "-d", "earthquake", *[a for m in METHODS for a in ("-m", m)], "--n", "300"]
    args += ["--profiles", str(toml), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    paid = {}
    for run, extra in (("first", []), ("refreshed", ["--refresh"])):
        before = fake_server.count
        assert main([*args, "--out", str(tmp_path / run), *extra]) == 0
        outs = {o.method: o for o in load_outcomes(tmp_path / run)}
        assert set(outs) == set(METHODS) and all(o.status == "complete" for o in outs.values())
        assert all(sum(s.get("cache_hits", 0) for s in o.usage.values()) == 0 for o in outs.values())
        paid[run] = {m: _requests(o) for m, o in outs.items()}
        assert fake_server.count - before == sum(paid[run].values())
    assert paid["first"] == paid["refreshed"] and all(n > 0 for n in paid["first"].values())
    capsys.readouterr()
