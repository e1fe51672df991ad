"""The algorithm pool: defaults by data type, runs in a worker process, timeouts, failures."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from agentcausal.discovery.statistical.algorithms import (
    ALGORITHMS,
    ExactSearchParams,
    PCParams,
    default_choice,
    parse_choice,
    run_algorithm,
)
from agentcausal.exceptions import AlgorithmError


def test_defaults_follow_the_data_type_and_bound_exact_search():
    assert default_choice("pc", "discrete", 5).indep_test == "chisq"
    assert default_choice("fci", "continuous", 5).indep_test == "fisherz"
    assert default_choice("ges", "discrete", 5).score_func == "local_score_BDeu"
    assert default_choice("ges", "continuous", 5).score_func == "local_score_BIC"
    small, big = default_choice("exact_search", "discrete", 8), default_choice("exact_search", "discrete", 20)
    assert small.max_parents == big.max_parents == 2
    assert (small.super_graph, big.super_graph) == ("none", "pc_skeleton")
    with pytest.raises(AlgorithmError, match="not in the pool"):
        default_choice("notears", "continuous", 3)


def test_parse_choice_validates_parameters():
    assert parse_choice({"algorithm": "pc", "alpha": 0.01}) == PCParams(alpha=0.01)
    with pytest.raises(ValidationError):
        parse_choice({"algorithm": "pc", "alpha": 2})
    with pytest.raises(ValidationError):
        parse_choice({"algorithm": "exact_search", "max_parents": 9})


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_pool_algorithm_runs_in_a_worker_on_a_collider(collider_dataset, algorithm):
    ds = collider_dataset
    res = run_algorithm(ds.data, ds.variables, default_choice(algorithm, ds.data_type, ds.d), timeout_s=60)
    assert res.graph.nodes == ds.variables
    assert res.graph.skeleton() >= {frozenset("XZ"), frozenset("YZ")}
    if algorithm in ("pc", "ges", "exact_search", "direct_lingam"):
        assert {("X", "Z"), ("Y", "Z")} <= res.graph.directed_edges()


def test_fci_stdout_is_silenced(collider_dataset, capfd):
    ds = collider_dataset
    run_algorithm(ds.data, ds.variables, default_choice("fci", "continuous", 3), timeout_s=60)
    assert capfd.readouterr().out == ""


def test_a_run_past_its_timeout_is_killed():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 16))
    x[:, 1:] += x[:, :-1]
    with pytest.raises(AlgorithmError, match="timed out after 0.5 s"):
        run_algorithm(x, [f"v{i}" for i in range(16)], ExactSearchParams(max_parents=4), timeout_s=0.5)


def test_failures_and_shape_mismatch_raise_algorithm_error():
    with pytest.raises(AlgorithmError, match="does not match"):
        run_algorithm(np.zeros((10, 2)), ["a", "b", "c"], PCParams())
    bogus = PCParams.model_construct(algorithm="pc", indep_test="bogus", alpha=0.05)  # bypasses validation
    with pytest.raises(AlgorithmError, match="pc: failed: .*bogus"):
        run_algorithm(np.random.default_rng(0).normal(size=(50, 3)), ["a", "b", "c"], bogus, timeout_s=60)


def _discrete_collider(n: int = 3000, seed: int = 0) -> np.ndarray:
    """Binary X -> Z <- Y with Z = X or Y, 5% noise; strong enough for any score to see."""
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, 2, n), rng.integers(0, 2, n)
    z = (x | y) ^ (rng.random(n) < 0.05)
    return np.c_[x, y, z].astype(float)


def test_exact_search_scores_discrete_data_with_a_discrete_score_up_to_ten_nodes():
    assert default_choice("exact_search", "discrete", 5).score == "bic_discrete"
    assert default_choice("exact_search", "discrete", 20).score == "bic_gaussian"
    assert default_choice("exact_search", "continuous", 5).score == "bic_gaussian"


@pytest.mark.parametrize("score", ["bic_discrete", "bdeu", "k2"])
def test_discrete_exact_search_finds_a_collider(score):
    data = _discrete_collider()
    run = run_algorithm(data, ("X", "Y", "Z"), ExactSearchParams(score=score, equivalent_sample_size=1.0))
    assert run.graph.directed_edges() == {("X", "Z"), ("Y", "Z")}


def test_pc_background_knowledge_forbids_and_requires_directions():
    data = _discrete_collider()
    free = run_algorithm(data, ("X", "Y", "Z"), PCParams(indep_test="chisq"))
    assert free.graph.directed_edges() == {("X", "Z"), ("Y", "Z")}
    bk = run_algorithm(data, ("X", "Y", "Z"), PCParams(indep_test="chisq", forbidden=((0, 2),), required=((2, 1),)))
    assert ("X", "Z") not in bk.graph.directed_edges() and ("Z", "Y") in bk.graph.directed_edges()
