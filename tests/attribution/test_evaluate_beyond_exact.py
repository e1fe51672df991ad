"""Evaluation beyond exact match (#21 item 5): DCFA's Hit@1/3/5 (±1/±3/±5 steps), top-3 over candidates for
methods that rank, Who&When's published substring rule, per subset with raw counts."""

from __future__ import annotations

import pandas as pd
import pytest

from agentcausal.attribution.evaluate import evaluate_frame, whowhen_agent_match, whowhen_step_match
from agentcausal.attribution.results import results_frame
from agentcausal.report.accuracy import accuracy_display
from agentcausal.report.attribution import markdown_report
from agentcausal.traces.model import Attribution, Candidate, Label, Step, Trace


def _trace(i: int, true_step: int, subset: str, n: int = 30) -> Trace:
    return Trace(
        id=f"{subset}/{i}",
        source=subset,
        question="q",
        ground_truth="a",
        steps=[Step(index=k, agent=f"Agent{k % 3}", content=f"s{k}") for k in range(n)],
        label=Label(agent=f"Agent{true_step % 3}", step=true_step),
    )


def _ranked(t: Trace, steps: list[int]) -> list[Candidate]:
    return [
        Candidate(step=s, agent=t.steps[s].agent, role="decision" if i == 0 else "pivot") for i, s in enumerate(steps)
    ]


@pytest.fixture
def frame():
    # labelled step 1 everywhere; predictions at distance 0, 1, 3, 5, 9 (AG: 0, 1, 3; HC: 5, 9) and a failure
    ts = [
        _trace(0, 1, "AG"),
        _trace(1, 1, "AG"),
        _trace(2, 1, "AG"),
        _trace(3, 1, "HC"),
        _trace(4, 1, "HC"),
        _trace(5, 1, "HC"),
    ]
    preds = [1, 2, 4, 6, 10, None]
    atts = []
    for t, p in zip(ts, preds):
        if p is None:
            atts += [
                Attribution(trace_id=t.id, method=m, error="StructuredOutputError: bad")
                for m in ("dcfa", "all_at_once")
            ]
            continue
        # dcfa ranks: the labelled step 1 is second in its candidates on HC/3 and third on HC/4
        second = {"HC/3": [p, 1], "HC/4": [p, 7, 1]}.get(t.id, [p])
        atts.append(
            Attribution(trace_id=t.id, method="dcfa", step=p, agent=t.steps[p].agent, candidates=_ranked(t, second))
        )
        atts.append(
            Attribution(
                trace_id=t.id,
                method="all_at_once",
                step=p,
                agent=t.steps[p].agent,
                candidates=[Candidate(step=p, role="answer")],
            )
        )
    return results_frame(atts, ts)


def test_hit_at_k_windows_top3_and_whowhen_rule(frame):
    ov = evaluate_frame(frame).overall.set_index("method")
    d = ov.loc["dcfa"]
    assert (d.labelled, d.step_k, d.hit1_k, d.hit3_k, d.hit5_k) == (6, 1, 2, 3, 4)  # |e| = 0, 1, 3, 5, 9, failed
    assert d.hit3_acc == pytest.approx(3 / 6)
    assert d.top3_k == 3  # AG/0 (first), HC/3 (second), HC/4 (third)
    # Who&When's substring rule: a labelled 1 matches a blamed 10 (and 1); exact match does not
    assert (d.ww_step_k, d.step_k) == (2, 1)
    a = ov.loc["all_at_once"]
    assert pd.isna(a.top3_k) and pd.isna(a.top3_acc)  # a single-answer method is not ranked
    assert a.hit5_k == d.hit5_k


def test_per_subset_raw_counts_and_display(frame):
    ev = evaluate_frame(frame)
    sub = ev.by_subset.set_index(["method", "subset"])
    assert (sub.loc[("dcfa", "AG"), "hit1_k"], sub.loc[("dcfa", "HC"), "hit5_k"]) == (2, 1)
    shown = accuracy_display(ev.by_subset, ("subset",)).set_index(["method", "subset"])
    assert shown.loc[("dcfa", "HC"), "Hit@5 (±5)"] == "1/3 (33.3%)"
    assert shown.loc[("dcfa", "HC"), "top-3 (candidates)"] == "2/3 (66.7%)"
    assert shown.loc[("all_at_once", "HC"), "top-3 (candidates)"] == "not ranked"
    assert shown.loc[("dcfa", "AG"), "step (Who&When substring rule)"] == "1/3 (33.3%)"
    md = markdown_report(ev)
    for col in ("Hit@1 (±1 step)", "Hit@3 (±3)", "Hit@5 (±5)", "top-3 (candidates)", "step (Who&When substring rule)"):
        assert col in md
    assert "DCFA's released evaluate.py" in md and "Who&When's released evaluate.py" in md


def test_top3_column_absent_when_no_method_ranks(frame):
    only = frame[frame["method"] == "all_at_once"]
    shown = accuracy_display(evaluate_frame(only).overall)
    assert "top-3 (candidates)" not in shown.columns and "Hit@1 (±1 step)" in shown.columns


def test_unlabelled_rows_leave_accuracy_out_of_the_report():
    t = Trace(id="u/1", question="q", ground_truth="", steps=[Step(index=0, agent="A", content="x")])
    ev = evaluate_frame(results_frame([Attribution(trace_id="u/1", method="m", step=0, agent="A")], [t]))
    md = markdown_report(ev)
    assert "## Accuracy" not in md and "## Per subset" not in md and "accuracy sections are left out" in md


def test_whowhen_rules_as_published():
    assert whowhen_step_match(12, 2) and whowhen_step_match(21, 1) and not whowhen_step_match(2, 12)
    assert whowhen_agent_match("WebSurfer (thought)", "WebSurfer") and not whowhen_agent_match("Web", "WebSurfer")


def test_row_hits_read_once_score_as_the_candidates_do(frame):
    """A report reading results.parquet a batch at a time keeps each row's hits, not its candidates: the same tables."""
    from agentcausal.attribution.costs import StageTotals, usage_by_stage
    from agentcausal.attribution.evaluate import candidate_hits

    hits = [candidate_hits(c, t) for c, t in zip(frame["candidates"], frame["true_step"])]
    slim = frame.drop(columns=["candidates", "usage_json"]).assign(
        ranks=[r for r, _ in hits], top3_hit=[h for _, h in hits]
    )
    totals = StageTotals()
    for m, blob in zip(frame["method"], frame["usage_json"]):
        totals.add(m, blob)
    stages = totals.frame(frame.groupby("method")["trace_id"].nunique().to_dict())
    pd.testing.assert_frame_equal(stages, usage_by_stage(frame))
    whole, kept = evaluate_frame(frame), evaluate_frame(slim, cost_by_stage=stages)
    for name, table in whole._asdict().items():
        pd.testing.assert_frame_equal(getattr(kept, name), table, obj=name)
