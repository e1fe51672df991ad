"""``agentcausal compare``: paired tests, flipped traces, refusal of runs with nothing in common."""

from __future__ import annotations

import pytest

from agentcausal.attribution.results import save_run
from agentcausal.discovery.evaluate import score_run
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.outcome import DiscoveryOutcome, save_outcomes
from agentcausal.report.compare import compare_runs, mcnemar_exact
from agentcausal.traces.model import Attribution, Label, Step, Trace
from agentcausal_cli import main


def save_discovery(outcomes, run_dir, meta):
    """``outcomes.jsonl``, ``run.json`` and the scored ``results.parquet``, as a discover run writes them."""
    save_outcomes(outcomes, run_dir, meta)
    score_run(run_dir)


def _traces(n: int, prefix: str = "ww") -> list[Trace]:
    return [
        Trace(
            id=f"{prefix}/{i}",
            question="q",
            ground_truth="a",
            label=Label(agent="A", step=1),
            steps=[Step(index=k, agent="A" if k == 1 else "B", content=f"s{k}") for k in range(3)],
        )
        for i in range(n)
    ]


def _run(path, traces, right: set[int], tokens: int) -> None:
    usage = {"baseline": {"calls": 1, "requests": 1, "prompt_tokens": tokens, "completion_tokens": 10}}
    atts = [
        Attribution(
            trace_id=t.id,
            method="all_at_once",
            step=1 if i in right else 2,
            agent="A" if i in right else "B",
            usage=usage,
        )
        for i, t in enumerate(traces)
    ]
    save_run(atts, traces, path, {"corpus": [], "methods": {"all_at_once": {}}})


def test_compare_attribution_runs_pins_flips_and_mcnemar(tmp_path, capsys):
    ts = _traces(6)
    _run(tmp_path / "a", ts, right={0, 1, 2, 3}, tokens=100)  # 4 of 6 right
    _run(tmp_path / "b", ts, right={3, 4}, tokens=300)  # ww/0-2 flipped to wrong, ww/4 to right
    c = compare_runs(tmp_path / "a", tmp_path / "b")
    step = c.metrics.set_index("metric").loc["step accuracy"]
    assert (step.a_only, step.b_only, step.n) == (3, 1, 6)
    # exact McNemar: two-sided binomial of 3 vs 1 discordant pairs = 2 * P(X <= 1 | 4, 1/2) = 2 * 5/16
    assert step.p_value == pytest.approx(0.625)
    flipped = c.flipped[c.flipped.metric == "step accuracy"]
    assert sorted(flipped.trace_id) == ["ww/0", "ww/1", "ww/2", "ww/4"]
    assert dict(zip(flipped.trace_id, flipped.b))["ww/4"] == "right"
    assert c.cost.iloc[0].diff_tokens == pytest.approx(200)

    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out, err = capsys.readouterr()
    assert "| all_at_once | step accuracy | 6 | 66.7% | 33.3% | -33.3 pp |" in out
    assert "| 0.625 |" in out
    assert "| all_at_once | ww/4 | wrong → right | wrong → right | wrong → right |" in out  # one row per trace
    assert str(tmp_path / "b" / "compare.html") in err and (tmp_path / "b" / "compare.html").is_file()


def test_compare_refuses_runs_without_shared_items(tmp_path, capsys):
    _run(tmp_path / "a", _traces(2, "x"), right={0}, tokens=1)
    _run(tmp_path / "b", _traces(2, "y"), right={0}, tokens=1)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "share no" in err


def test_compare_discovery_runs_uses_wilcoxon_on_shd(tmp_path):
    true = CausalGraph.from_edges("ABC", [("A", "B"), ("B", "C")])
    good, bad = CausalGraph.from_edges("ABC", [("A", "B"), ("B", "C")]), CausalGraph.from_edges("ABC", [("C", "A")])
    for name, g in (("a", good), ("b", bad)):
        save_discovery(
            [DiscoveryOutcome(dataset="toy", seed=s, n=10, method="pc", graph=g, true_graph=true) for s in range(6)],
            tmp_path / name,
            {},
        )
    c = compare_runs(tmp_path / "a", tmp_path / "b")
    shd = c.metrics.set_index("metric").loc["SHD"]
    assert shd.a == 0 and shd.b == 3 and shd.test == "Wilcoxon"
    assert shd.p_value == pytest.approx(2 / 2**6)  # exact: all six differences positive
    assert len(c.flipped) == 6
    assert mcnemar_exact(0, 0) == 1.0


def test_compare_cost_shows_this_run_and_original_for_a_reused_run(tmp_path, capsys):
    ts = _traces(3)
    _run(tmp_path / "a", ts, right={0}, tokens=100)
    usage = {"baseline": {"calls": 1, "requests": 1, "prompt_tokens": 100, "completion_tokens": 10}}
    atts = [Attribution(trace_id=t.id, method="all_at_once", step=1, agent="A", usage=usage, reused=True) for t in ts]
    save_run(atts, ts, tmp_path / "b", {"corpus": [], "methods": {"all_at_once": {}}})  # fully reused: 0 requests
    cost = compare_runs(tmp_path / "a", tmp_path / "b").cost.iloc[0]
    assert cost.b_run_tokens == 0 and cost.b_tokens == cost.a_tokens == 110
    assert cost.a_run_tokens == 110 and (cost.a_reused, cost.b_reused) == (0, 3)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "tokens B this run" in out and "tokens B original" in out
    assert "| all_at_once | 3 | 0 | 3 | 110 | 110 | 0 | 110 |" in out


def test_compare_discovery_lists_unpaired_methods_and_items_and_uses_metric_columns(tmp_path, capsys):
    from agentcausal.discovery.graphs.metrics import METRIC_COLUMNS

    true = CausalGraph.from_edges("ABC", [("A", "B"), ("B", "C")])
    g = CausalGraph.from_edges("ABC", [("B", "A")])
    a = [
        DiscoveryOutcome(dataset="toy", seed=s, n=10, method=m, graph=g, true_graph=true)
        for m in ("pc", "ges")
        for s in range(3)
    ]
    b = [
        DiscoveryOutcome(dataset="toy", seed=s, n=10, method=m, graph=g, true_graph=true)
        for m in ("pc", "fci")
        for s in range(2)
    ]
    save_discovery(a, tmp_path / "a", {})
    save_discovery(b, tmp_path / "b", {})
    c = compare_runs(tmp_path / "a", tmp_path / "b")
    assert list(dict.fromkeys(c.metrics.metric)) == list(METRIC_COLUMNS.values())  # SHD₂ included
    by = c.metrics.set_index("metric")
    assert by.loc["SHD₂"].a == 3 and by.loc["SHD"].a == 2  # the reversed A→B counts twice in SHD₂ only
    u = c.unpaired.set_index(["method", "only_in"])
    assert u.loc[("ges", "A")].whole_method and u.loc[("ges", "A")]["items"] == 3
    assert u.loc[("fci", "B")].whole_method and u.loc[("fci", "B")]["items"] == 2
    assert not u.loc[("pc", "A")].whole_method and u.loc[("pc", "A")]["items"] == 1
    assert "toy 2" in u.loc[("pc", "A")].which
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "## In one run only (3: not compared)" in out and "method not run in the other" in out


def test_compare_flags_pairs_whose_content_differs(tmp_path, capsys):
    ts = _traces(3)
    edited = [ts[0], ts[1].model_copy(update={"question": "q, edited"}), ts[2]]  # same id, new content
    assert edited[1].content_hash() != ts[1].content_hash()
    _run(tmp_path / "a", ts, right={0, 1, 2}, tokens=10)
    _run(tmp_path / "b", edited, right={0, 2}, tokens=10)
    c = compare_runs(tmp_path / "a", tmp_path / "b")
    assert c.shared == 3  # still paired
    assert list(c.content_differs.trace_id) == ["ww/1"]
    assert c.content_differs.iloc[0].b_hash == edited[1].content_hash()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out, err = capsys.readouterr()
    assert "warning: 1 pair differs in content" in err and "ww/1" in err
    assert "1 pair differs in content" in out and "## Same id, different content (1: paired anyway)" in out
    assert "| all_at_once | ww/1 | right → wrong | right → wrong | right → wrong | differs |" in out
    # the same contents: no warning, no section, no column
    _run(tmp_path / "c", ts, right={0}, tokens=10)
    assert compare_runs(tmp_path / "a", tmp_path / "c").content_differs.empty
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "c")]) == 0
    out, err = capsys.readouterr()
    assert "warning" not in err and "differ in content" not in out and "| same |" not in out


def test_compare_discovery_flags_different_data_under_one_name(tmp_path):
    true = CausalGraph.from_edges("AB", [("A", "B")])
    for name, h in (("a", "h1"), ("b", "h2")):
        save_discovery(
            [DiscoveryOutcome(dataset="toy", seed=0, n=10, method="pc", graph=true, true_graph=true, data_hash=h)],
            tmp_path / name,
            {},
        )
    c = compare_runs(tmp_path / "a", tmp_path / "b")
    assert len(c.content_differs) == 1 and "1 pair differs in content" in c.content_warning()
