"""The MAC paper's analyses on scored frames: rounds sweep, mean ranks, win/tie/loss, cost multiples;
and the rounds variants' names, keys and settings."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from agentcausal.discovery import analyses as A
from agentcausal.discovery import ranks as R
from agentcausal.discovery import scope as S
from agentcausal.discovery.cache_key import discovery_key
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.datasets import load_dataset
from agentcausal.discovery.jobs import run_discovery
from agentcausal.discovery.mac import MACSettings
from agentcausal.discovery.method_settings import mac_settings, method_handler, method_settings
from agentcausal.discovery.variants import MethodVariant, expand_rounds, resolve_methods, variant
from agentcausal.exceptions import ConfigError
from agentcausal.registry import DISCOVERY_METHODS
from tests.discovery.conftest import mac_responder


def frame(rows: list[tuple[str, int, str, float, float, float]], reversal_cost: int = 1) -> pd.DataFrame:
    """A scored frame from (dataset, seed, method, shd, nhd, f1) rows; the paper's SHD (``shd2``) = ``shd``."""
    df = pd.DataFrame(rows, columns=["dataset", "seed", "method", "shd", "nhd", "f1"])
    return df.assign(shd_reversal_cost=reversal_cost, shd2=df["shd"])


#: two datasets x two seeds; mac beats pc on SHD everywhere, ties zero-shot on earthquake
TWO_BY_TWO = frame(
    [
        ("earthquake", 0, "mac", 0, 0.0, 1.0),
        ("earthquake", 1, "mac", 2, 0.08, 0.75),
        ("earthquake", 0, "pc", 3, 0.12, 0.5),
        ("earthquake", 1, "pc", 3, 0.12, 0.5),
        ("earthquake", 0, "llm_zero_shot", 1, 0.04, 0.9),
        ("earthquake", 1, "llm_zero_shot", 1, 0.04, 0.85),
        ("cancer", 0, "mac", 1, 0.1, 0.8),
        ("cancer", 1, "mac", 1, 0.1, 0.8),
        ("cancer", 0, "pc", 2, 0.2, 0.6),
        ("cancer", 1, "pc", np.nan, np.nan, np.nan),  # seed 1 failed
        ("cancer", 0, "llm_zero_shot", 0, 0.0, 1.0),
        ("cancer", 1, "llm_zero_shot", 0, 0.0, 1.0),
    ]
)


def test_mean_ranks_rank_seed_means_per_dataset_with_average_ties():
    res = R.mean_ranks(TWO_BY_TWO)
    ranks = res.table.set_index("method")
    # earthquake SHD means: mac 1, pc 3, zero-shot 1 -> mac and zero-shot share ranks 1 and 2 (1.5), pc 3;
    # cancer: zero-shot 0 (1), mac 1 (2), pc 2 (3, its one scored seed)
    assert ranks.loc["mac", "shd2"] == pytest.approx((1.5 + 2) / 2)
    assert ranks.loc["llm_zero_shot", "shd2"] == pytest.approx((1.5 + 1) / 2)
    assert ranks.loc["pc", "shd2"] == 3.0 and (ranks["points"] == 2).all()
    assert (ranks["shd"] == ranks["shd2"]).all()  # the reversal-once SHD, ranked beside (equal here)
    # F1 ranks higher first: earthquake mac 0.875 vs zero-shot 0.875 tie -> 1.5 each
    assert ranks.loc["mac", "f1"] == pytest.approx((1.5 + 2) / 2)
    assert res.n == "2 datasets × 2 seeds" and "reversed edge counts twice" in res.convention
    assert "beside it, SHD with a reversed edge counted once" in res.convention
    assert list(res.table["method"]) == ["llm_zero_shot", "mac", "pc"]  # sorted by mean SHD rank


def test_mean_ranks_over_backbones_make_each_backbone_dataset_pair_a_point():
    worse = TWO_BY_TWO["shd"].where(TWO_BY_TWO["method"] != "mac", 9.0)
    other = TWO_BY_TWO.assign(shd=worse, shd2=worse)
    stacked = S.stack_backbones({"gpt-4o": TWO_BY_TWO, "gemini-2.0-flash": other})
    res = R.mean_ranks(stacked)
    assert S.evaluation_points(stacked) == ["backbone", "dataset"]
    assert res.table.set_index("method").loc["mac", "points"] == 4
    # on the second backbone mac is last on both datasets: (1.75 * 2 + 3 * 2) / 4
    assert res.table.set_index("method").loc["mac", "shd2"] == pytest.approx((1.5 + 2 + 3 + 3) / 4)
    assert res.n == "2 datasets × 2 seeds × 2 backbones"


def test_win_tie_loss_counts_mac_against_each_baseline_per_metric():
    res = R.win_tie_loss(TWO_BY_TWO.assign(shd_reversal_cost=2))
    t = res.table.set_index("baseline")
    assert list(t.index) == ["pc", "llm_zero_shot"] and set(res.table["mac"]) == {"mac"}
    assert t.loc["pc", "shd2"] == "2/0/0" and t.loc["pc", "f1"] == "2/0/0"
    assert t.loc["llm_zero_shot", "shd2"] == "0/1/1"  # tie on earthquake (mean 1 each), loss on cancer
    assert t.loc["llm_zero_shot", "f1"] == "0/1/1" and t.loc["pc", "shd2_points"] == 2
    assert "reversed edge counts twice" in res.convention


def test_win_tie_loss_leaves_out_mac_ablations_as_baselines_and_counts_rounds_variants_as_mac():
    df = frame(
        [
            ("a", 0, "mac (rounds 1)", 1, 0.1, 0.9),
            ("a", 0, "mac (rounds 2)", 3, 0.3, 0.5),
            ("a", 0, "mdm_only", 2, 0.2, 0.7),
            ("a", 0, "ges", 2, 0.2, 0.7),
        ]
    )
    t = R.win_tie_loss(df).table
    assert list(zip(t["mac"], t["baseline"])) == [("mac (rounds 1)", "ges"), ("mac (rounds 2)", "ges")]
    assert list(t["shd2"]) == ["1/0/0", "0/0/1"]


def test_mean_rank_ranks_mac_and_its_baselines_only_and_the_ablations_apart():
    """MAC's rank does not move when ablations and variants join the run: they are ranked apart, each in
    MAC's place against the same baselines (the paper's Fig. 2 ranks MAC and its nine baselines)."""
    extra = frame(
        [
            (ds, s, m, 0, 0.0, 1.0)  # every ablation and variant perfect everywhere: they would rank first
            for ds in ("earthquake", "cancer")
            for s in (0, 1)
            for m in ("dcm_only", "mdm_only", "mac_single", "mac (rounds 2)", "mac@names", "llm_zero_shot@names")
        ]
    )
    alone = R.mean_ranks(TWO_BY_TWO).table.set_index("method")
    res = R.mean_ranks(pd.concat([TWO_BY_TWO, extra], ignore_index=True))
    t = res.table.set_index("method")
    assert set(t.index) == {"mac", "pc", "llm_zero_shot"}
    pd.testing.assert_frame_equal(t.sort_index(), alone.sort_index())
    v = R.variant_ranks(pd.concat([TWO_BY_TWO, extra], ignore_index=True)).table.set_index("method")
    assert set(v.index) == {"dcm_only", "mdm_only", "mac_single", "mac (rounds 2)", "mac@names"}
    # each perfect variant: first against pc and zero-shot alone; on earthquake it ties nothing, on cancer
    # it ties zero-shot (SHD 0 each): (1 + 1.5) / 2
    assert v.loc["dcm_only", "shd2"] == pytest.approx(1.25) and (v["points"] == 2).all()


def test_first_places_count_mac_first_on_k_of_the_dataset_metric_points_per_backbone():
    res = R.first_places(TWO_BY_TWO)
    row = res.table.set_index("method").loc["mac"]
    # earthquake: SHD mac 1 = zero-shot 1 (tie, first), NHD .04 = .04 (tie, first), F1 .875 = .875 (tie, first);
    # cancer: zero-shot is first on all three, mac second
    assert (row["first"], row["second"], row["ties"], row["points"]) == (3, 3, 3, 6)
    assert row["text"] == "first on 3 of 6, second on 3" and "tie for first counts as first" in res.convention
    stacked = R.first_places(S.stack_backbones({"gpt-4o": TWO_BY_TWO, "r1": TWO_BY_TWO}))
    assert list(stacked.table["backbone"]) == ["gpt-4o", "r1"] and list(stacked.table["points"]) == [6, 6]
    # an ablation never takes a first place from mac: ranked in its own row, against the baselines only
    with_ablation = pd.concat([TWO_BY_TWO, frame([("cancer", 0, "dcm_only", 0, 0, 1.0)])], ignore_index=True)
    assert R.first_places(with_ablation).table.set_index("method").loc["mac", "first"] == 3


def test_the_paper_scope_keeps_its_five_datasets_and_names_the_others():
    df = pd.concat([TWO_BY_TWO, TWO_BY_TWO.assign(dataset="asia")], ignore_index=True)
    kept, note = S.paper_scope(df)
    assert set(kept["dataset"]) == {"earthquake", "cancer"} and "left out: asia (not among the paper's" in note
    assert "2 of the paper's 5 datasets" in note and "× 3 metrics = 6 per backbone" in note
    assert "not run: survey, auto_mpg, child" in note
    user, why = S.paper_scope(TWO_BY_TWO.assign(dataset="mine"))
    assert len(user) == len(TWO_BY_TWO) and "none of the paper's five" in why
    out = A.paper_analyses(df)
    assert out["scope"] == note and out["mean_ranks"].n == "2 datasets × 2 seeds"


def test_ranks_use_the_papers_shd_and_show_the_reversal_once_one_beside():
    # mac reverses an edge (shd 1, shd2 2), pc misses one (shd 1, shd2 1): the paper's SHD puts pc first
    df = frame([("a", 0, "mac", 1, 0.1, 0.5), ("a", 0, "pc", 1, 0.1, 0.5)]).assign(shd2=[2.0, 1.0])
    t = R.mean_ranks(df).table.set_index("method")
    assert t.loc["pc", "shd2"] == 1.0 and t.loc["mac", "shd2"] == 2.0
    assert t.loc["mac", "shd"] == t.loc["pc", "shd"] == 1.5  # tied under the reversal-once SHD
    twice = R.mean_ranks(df.assign(shd=df["shd2"], shd_reversal_cost=2).drop(columns="shd2"))
    assert "shd" not in twice.table and twice.table.set_index("method").loc["pc", "shd2"] == 1.0


def test_rounds_curve_reads_the_variants_and_ignores_other_methods():
    df = frame(
        [(ds, s, f"mac (rounds {r})", float(r + s), 0.1, 1 / r) for ds in ("a", "b") for s in (0, 1) for r in (1, 2, 3)]
        + [("a", 0, "pc", 5, 0.5, 0.5), ("a", 0, "mac", 1, 0.1, 0.9)]
    )
    res = A.rounds_curve(df)
    t = res.table
    assert set(t["method"]) == {"mac"} and list(t["rounds"][:3]) == [1, 2, 3] and len(t) == 6
    row = t[(t.dataset == "a") & (t.rounds == 2)].iloc[0]
    assert row.shd == 2.5 and row.shd_std == pytest.approx(math.sqrt(0.5)) and row.seeds == 2
    assert res.n == "2 datasets × 2 seeds"
    assert A.rounds_curve(TWO_BY_TWO).table.empty


def test_cost_multiples_against_zero_shot_in_tokens_and_dollars():
    costs = pd.DataFrame(
        {
            "dataset": ["a", "a", "b", "b", "a"],
            "seed": [0] * 5,
            "method": ["llm_zero_shot", "mac", "llm_zero_shot", "mac", "pc"],
            "prompt_tokens": [80.0, 1500, 120, 2500, 0],
            "completion_tokens": [20.0, 100, 30, 300, 0],
            "tokens": [100.0, 1600, 150, 2800, 0],
            "cost_usd": [0.001, 0.02, 0.0015, 0.03, 0],
            "calls": [1, 7, 1, 7, 0],
            "requests": [1, 7, 1, 7, 0],
            "cache_hits": [0, 0, 0, 2, 0],
            "models": ["fake:m", "fake:m", "fake:m", "fake:m", ""],
        }
    )
    res = A.cost_multiples(costs)
    t = res.table.set_index("method")
    assert t.loc["mac", "tokens_x_range"] == f"{2200 / 125:.1f}–{2200 / 125:.1f}"  # zero-shot the one reference
    assert "llm_zero_shot" in res.convention and "its own cached replies" in res.convention
    assert "pc" not in t.index and t.loc["llm_zero_shot", "tokens_x"] == 1.0
    assert t.loc["mac", "tokens_x"] == pytest.approx(2200 / 125) and t.loc["mac", "cost_x"] == pytest.approx(20.0)
    assert t.loc["mac", "runs"] == 2 and t.loc["mac", "models"] == "fake:m" and res.n == "2 datasets × 1 seeds"
    assert t.loc["mac", "cached_runs"] == 1 and t.loc["llm_zero_shot", "cached_runs"] == 0
    unpriced = A.cost_multiples(costs.assign(cost_usd=0.0)).table.set_index("method")
    assert math.isnan(unpriced.loc["mac", "cost_x"]) and unpriced.loc["mac", "tokens_x"] > 1
    alone = A.cost_multiples(costs[costs.method != "llm_zero_shot"]).table
    assert alone["tokens_x"].isna().all()


def test_rounds_variants_are_named_checked_and_expanded():
    methods = resolve_methods(DISCOVERY_METHODS, ["mac", "mac@names", "mac_single", "llm_zero_shot", "pc"])
    assert [v.name for v in expand_rounds(methods, [1, 2, 2])] == [
        "mac (rounds 1)",
        "mac (rounds 2)",
        "mac@names (rounds 1)",
        "mac@names (rounds 2)",
        "mac_single",
        "llm_zero_shot",
        "pc",
    ]
    mac = [variant(DISCOVERY_METHODS, "mac")]
    assert expand_rounds(mac, [3]) == mac == expand_rounds(mac, [])
    with pytest.raises(ConfigError, match="1-5"):
        expand_rounds(mac, [1, 6])
    with pytest.raises(ConfigError, match="debate rounds"):
        variant(DISCOVERY_METHODS, "pc (rounds 2)")
    v = variant(DISCOVERY_METHODS, "mac@names (rounds 2)")
    assert (v.base, v.anonymise, v.rounds, v.spec) == ("mac", "names", 2, DISCOVERY_METHODS["mac"])
    assert MethodVariant.parse("dcm_only (rounds 4)").base == "dcm_only"
    assert [v.name for v in resolve_methods(DISCOVERY_METHODS, ["MAC (rounds 2)", "mac@none (rounds 3)"])] == [
        "mac (rounds 2)",
        "mac (rounds 3)",
    ]
    mdm4 = variant(DISCOVERY_METHODS, "mdm_only (rounds 4)")
    config = method_handler(mdm4, DiscoveryConfig())[1]
    assert config.mac.rounds == 4 and mac_settings(mdm4, DiscoveryConfig()).stages == "mdm_only"
    assert method_settings(variant(DISCOVERY_METHODS, "mac (rounds 3)"), DiscoveryConfig())["rounds"] == 3


@pytest.fixture(scope="module")
def earthquake():
    return load_dataset("earthquake", n=300, seed=0)


def test_each_rounds_value_is_its_own_row_and_cache_key(fake_server, make_gateway, earthquake):
    fake_server.responder = mac_responder()
    gw = make_gateway(fake_server)
    config = DiscoveryConfig(mac=MACSettings(executor="typed"))
    keys = {
        r: discovery_key(earthquake, variant(DISCOVERY_METHODS, f"mac (rounds {r})"), config, gw) for r in (1, 2, 3)
    }
    assert len(set(keys.values())) == 3 and keys[1] != discovery_key(
        earthquake, variant(DISCOVERY_METHODS, "mac"), config, gw
    )
    # the variant's key does not depend on the run's own mac.rounds
    assert keys[2] == discovery_key(
        earthquake,
        variant(DISCOVERY_METHODS, "mac (rounds 2)"),
        config.model_copy(update={"mac": config.mac.model_copy(update={"rounds": 5})}),
        gw,
    )
    out = run_discovery(
        variant(DISCOVERY_METHODS, "mdm_only (rounds 2)"), earthquake, make_gateway(fake_server, cache=False), config
    )
    assert out.method == "mdm_only (rounds 2)" and out.status == "complete"
    assert len(out.details["mdm"]["debate"]["rounds"]) == 2
