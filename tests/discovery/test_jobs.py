"""The discovery half of the run engine samples each (dataset, seed) once per job run: the plan carries the
content hash of each seed's rows, the orchestrator keys a job from it (same key as from the sampled rows),
a job refuses rows that hash otherwise, and the sink scores each outcome as it comes against the true graph
read from the network or file, writing ``outcomes.jsonl`` and ``results.parquet`` in one pass."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from agentcausal.discovery.data import datasets
from agentcausal.discovery.data.datasets import load_spec
from agentcausal.discovery.evaluate import outcomes_frame
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.outcome import DiscoveryOutcome, load_outcomes
from agentcausal.discovery.plan import plan_discovery
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.exceptions import ItemChangedError
from agentcausal.registry import DISCOVERY, DISCOVERY_METHODS
from agentcausal.settings import RunSettings


@pytest.fixture
def user_csv(tmp_path):
    """A continuous user table of three variables without a true graph."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=120)
    y = x + rng.normal(size=120)
    pd.DataFrame({"x": x, "y": y, "z": y + rng.normal(size=120)}).to_csv(tmp_path / "user.csv", index=False)
    meta = {"title": "t", "domain": "d", "variables": {"x": "x", "y": "y", "z": "z"}}
    (tmp_path / "user.json").write_text(json.dumps(meta))
    return str(tmp_path / "user.csv")


@pytest.fixture
def settings(tmp_path):
    return RunSettings(cache_dir=str(tmp_path / "cache"))


def _no_sampling(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a network was sampled")

    monkeypatch.setattr(datasets, "_load_bnlearn", refuse)


def test_the_plan_holds_each_seeds_data_hash(user_csv, settings):
    plan = plan_discovery(
        DiscoveryRequest(datasets=["cancer", "auto_mpg", user_csv], methods=["pc"], seeds=[0, 3], n=150),
        settings,
        DISCOVERY_METHODS,
    )
    for item in plan.iter_items():
        for seed in (0, 3):
            want = load_spec(item.spec or item.id, n=150, seed=seed, name=item.id).content_hash()
            assert item.data_hash(seed) == want
    cancer = next(plan.iter_items())
    assert cancer.data_hash(0) != cancer.data_hash(3) and cancer.data_hash(1) is None


def test_the_orchestrator_keys_every_job_from_the_plan_without_sampling(user_csv, settings, monkeypatch):
    plan = plan_discovery(
        DiscoveryRequest(datasets=["cancer", user_csv], methods=["pc", "llm_zero_shot"], seeds=[0, 1], n=150),
        settings,
        DISCOVERY_METHODS,
    )
    unhashed = plan.model_copy(update={"items": [i.model_copy(update={"data_hashes": None}) for i in plan.items]})
    sampled = DISCOVERY.keyer(unhashed, settings)  # a plan written without the hashes: rows sampled to key
    want = [sampled(j) for j in DISCOVERY.jobs(unhashed)]
    _no_sampling(monkeypatch)
    key = DISCOVERY.keyer(plan, settings)
    got = [key(j) for j in DISCOVERY.submission_order(plan)]
    order = list(DISCOVERY.submission_order(plan))
    assert [key(j) for j in DISCOVERY.jobs(plan)] == want  # the keys of the sampled rows: old caches still hit
    assert sorted(got) == sorted(want) and len(set(want)) == len(want) == 8
    assert [j.method for j in order[:4]] == ["llm_zero_shot"] * 4  # LLM methods submitted first


def test_a_job_refuses_rows_that_are_not_the_plans(settings):
    plan = plan_discovery(
        DiscoveryRequest(datasets=["cancer"], methods=["pc"], seeds=[0], n=150), settings, DISCOVERY_METHODS
    )
    item = plan.items[0].model_copy(update={"data_hashes": ((0, "0" * 32),)})
    job = next(DISCOVERY.jobs(plan.model_copy(update={"items": [item]})))
    with pytest.raises(ItemChangedError, match="rows of seed 0 hash to"):
        DISCOVERY.run(job, plan, settings)


def test_the_sink_scores_each_outcome_as_it_comes_against_the_networks_truth(user_csv, settings, tmp_path, monkeypatch):
    plan = plan_discovery(
        DiscoveryRequest(datasets=["cancer", user_csv], methods=["pc", "ges"], seeds=[0, 1], n=150),
        settings,
        DISCOVERY_METHODS,
    )
    cancer = load_spec("cancer", n=150)
    stale = CausalGraph.from_edges(cancer.variables, [])  # what the records were scored against when cached
    jobs = list(DISCOVERY.jobs(plan))
    records = []
    for j in jobs:
        variables = cancer.variables if j.item.id == "cancer" else ("x", "y", "z")
        graph = CausalGraph.from_edges(variables, [variables[:2]]) if j.method == "pc" else None
        records.append(
            DiscoveryOutcome(
                dataset=j.item.id,
                seed=j.seed,
                n=150,
                method=j.method,
                graph=graph,
                true_graph=stale if j.item.id == "cancer" else None,
                error=None if graph else "AlgorithmError: x",
                status="complete" if graph else "content_failed",
            )
        )
    _no_sampling(monkeypatch)
    sink = DISCOVERY.sink(plan, tmp_path / "run", {"reversal_cost": 2})
    for j, r in zip(jobs, records, strict=True):
        sink.add(j, r)
    meta = sink.close()
    truth = {"cancer": cancer.true_graph, "user": None}
    want = [r.model_copy(update={"true_graph": truth[r.dataset]}) for r in records]
    assert load_outcomes(tmp_path / "run") == want
    expected = tmp_path / "expected.parquet"
    outcomes_frame(want, reversal_cost=2).to_parquet(expected, index=False)
    got = pd.read_parquet(tmp_path / "run" / "results.parquet")
    pd.testing.assert_frame_equal(got, pd.read_parquet(expected))
    assert got.loc[got.method == "pc", "n_true_edges"].tolist() == [len(cancer.true_graph.edges)] * 2 + [0, 0]
    assert (
        meta["notes"] == ['user has no true graph (no "true_edges" in its metadata): SHD, NHD and F1 are shown as -']
        and meta["reversal_cost"] == 2
    )
