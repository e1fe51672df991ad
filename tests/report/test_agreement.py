"""Agreement of blamed steps without labels (#21 item 4): the statistics, the "what differs" table, method pairs."""

from __future__ import annotations

import pytest

from agentcausal.attribution.results import save_run
from agentcausal.report.agreement import agreement_stats, run_differences
from agentcausal.report.compare import compare_runs
from agentcausal.report.compare_pages import comparison_markdown
from agentcausal.traces.model import Attribution, Step, Trace


def _traces(n: int, steps: int = 5) -> list[Trace]:
    return [
        Trace(
            id=f"u/{i}",
            question="q",
            ground_truth="",
            steps=[Step(index=k, agent=f"A{k}", content=f"s{k}") for k in range(steps)],
        )
        for i in range(n)
    ]


def test_agreement_kappa_and_chance_from_step_counts():
    s = agreement_stats([0, 1, 2, 3], [0, 1, 2, 0], [2, 4, 4, 10])
    chance = (1 / 2 + 1 / 4 + 1 / 4 + 1 / 10) / 4
    assert (s.n, s.k, s.agreement) == (4, 3, 0.75) and s.chance == pytest.approx(chance)
    assert s.kappa == pytest.approx((0.75 - chance) / (1 - chance))
    assert 0 <= s.low <= s.agreement <= s.high <= 1 and s.kappa_low <= s.kappa <= s.kappa_high
    assert agreement_stats([1], [1], [4]) == agreement_stats([1], [1], [4])  # fixed seed: repeats exactly
    one_step = agreement_stats([0, 0], [0, 0], [1, 1])
    assert one_step.chance == 1.0 and one_step.kappa != one_step.kappa  # NaN: chance agreement is certain
    none = agreement_stats([None, 1], [2, None], [3, 3])
    assert (none.n, none.not_compared) == (0, 2)


def test_run_differences_flatten_settings_and_ignore_run_times():
    a = {
        "preset": "small",
        "methods": {"dcfa": {"prompts": "small", "max_edges": 10}},
        "started": "t1",
        "models": {"dcfa": {"dcfa.gca": "fake:a"}},
    }
    b = {
        "preset": "paper",
        "methods": {"dcfa": {"prompts": "paper", "max_edges": None}},
        "started": "t2",
        "models": {"dcfa": {"dcfa.gca": "fake:b"}},
    }
    d = run_differences(a, b)
    assert list(zip(d["what"], d["key"])) == [
        ("preset", "preset"),
        ("settings", "dcfa.max_edges"),
        ("settings", "dcfa.prompts"),
        ("models", "dcfa.dcfa.gca"),
    ]
    assert d.set_index("key").loc["dcfa.max_edges", "B"] == "none"
    assert run_differences(a, dict(a, started="t3")).empty


def _save(path, traces, steps: dict[str, list[int | None]], preset: str):
    atts = [
        Attribution(trace_id=t.id, method=m, step=s[i], agent=None if s[i] is None else f"A{s[i]}")
        for m, s in steps.items()
        for i, t in enumerate(traces)
    ]
    save_run(
        atts,
        traces,
        path,
        {"preset": preset, "methods": {m: {"prompts": preset} for m in steps}, "corpus": ["u.jsonl"]},
    )


def test_compare_unlabelled_runs_agreement_and_changed_traces(tmp_path):
    ts = _traces(6)
    _save(tmp_path / "a", ts, {"m1": [0, 1, 2, 3, 4, None], "m2": [0, 1, 2, 0, 0, 0]}, "small")
    _save(tmp_path / "b", ts, {"m1": [0, 1, 3, 3, 0, 2], "m2": [0, 1, 2, 0, 0, 0]}, "paper")
    c = compare_runs(tmp_path / "a", tmp_path / "b")
    m1 = c.agreement.set_index("method").loc["m1"]
    assert (m1.n, m1.k, m1.not_compared) == (5, 3, 1) and m1.chance == pytest.approx(0.2)
    assert m1.kappa == pytest.approx((0.6 - 0.2) / 0.8)
    assert c.agreement.set_index("method").loc["m2"].kappa == pytest.approx(1.0)
    changed = c.blame_changed
    assert list(zip(changed.method, changed.trace_id)) == [("m1", "u/2"), ("m1", "u/4"), ("m1", "u/5")]
    within = c.method_agreement.set_index("run")
    assert (within.loc["A"].n, within.loc["A"].k, within.loc["B"].n, within.loc["B"].k) == (5, 3, 6, 3)
    md = comparison_markdown(c)
    assert "| preset | preset | small | paper |" in md and "| settings | m1.prompts | small | paper |" in md
    assert "| m1 | u/5 | none | 2 (A2) |" in md and "No shared trace is labelled" in md
    assert "## Metrics" not in md and "McNemar" not in md


def test_compare_opens_on_agreement_with_the_settings_folded_and_no_interval_below_ten(tmp_path):
    """#28 item 6: agreement, κ (with a word) and the changed traces come before the settings, which are one line
    and a folded table; with n < 10 an interval cell says it is not meaningful instead of drawing one."""
    from agentcausal.report.compare_pages import comparison_html

    few, many = _traces(6), _traces(12)
    _save(tmp_path / "a", few, {"m1": [0, 1, 2, 3, 4, 0]}, "small")
    _save(tmp_path / "b", few, {"m1": [0, 1, 3, 3, 0, 0]}, "paper")
    md = comparison_markdown(compare_runs(tmp_path / "a", tmp_path / "b"))
    assert md.index("## Agreement of blamed steps") < md.index("## Blamed step changed") < md.index("<details>")
    assert "Settings that differ (2): preset preset, m1.prompts." in md.split("## Agreement")[0]
    row = next(ln for ln in md.splitlines() if ln.startswith("| m1 |"))
    assert row.count("not meaningful (n < 10)") == 2 and "%" in row.split("|")[3]
    kappa = (4 / 6 - 0.2) / 0.8
    assert f"{kappa:.2f} (moderate)" in row
    html = comparison_html(compare_runs(tmp_path / "a", tmp_path / "b"))
    assert html.index("Agreement of blamed steps") < html.index("<details><summary>What differs")
    assert "not meaningful (n &lt; 10)" in html

    _save(tmp_path / "c", many, {"m1": [i % 5 for i in range(12)]}, "small")
    _save(tmp_path / "d", many, {"m1": [i % 5 if i % 4 else 0 for i in range(12)]}, "small")
    md = comparison_markdown(compare_runs(tmp_path / "c", tmp_path / "d"))
    row = next(ln for ln in md.splitlines() if ln.startswith("| m1 |"))
    assert "not meaningful" not in row and "% – " in row  # n = 12: the interval is drawn
    assert "Nothing differs" in md and "<details>" not in md
