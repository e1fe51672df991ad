"""The DCFA paper's tables from a hand-built results frame (no LLM)."""

import json

import pandas as pd
import pytest

from agentcausal.attribution.paper_tables import (
    WHO_WHEN_LEVELS,
    accuracy_by_level,
    accuracy_over_repeats,
    dcfa_accuracy,
    gca_only_accuracy,
    graph_stats,
    lce_diagnostics,
    lce_effect,
    outside_levels,
    signed_step_error_histogram,
    speaker_mismatches,
    who_when_level,
    with_parsed_details,
)
from agentcausal.attribution.results import results_frame
from agentcausal.report.attribution_paper_tables import paper_tables_markdown
from agentcausal.traces.model import Attribution, Label, Step, Trace


def _trace(tid, n, step, agent=None):
    steps = [Step(index=i, agent=f"A{i % 2}", content=f"c{i}") for i in range(n)]
    return Trace(
        id=tid,
        source="Hand-Crafted",
        question="q",
        ground_truth="a",
        steps=steps,
        label=Label(agent=agent or f"A{step % 2}", step=step),
    )


def _dcfa(tid, hyp, final, *, label_in=True, path=1, capped=0, repeat=0, edges=((0, 1), (1, 2))):
    lce = {
        "path": [{}] * path,
        "evaluated": [{}] * (path + 1),
        "outcomes": [{}] * 2,
        "stopped": {"forward": "no_positive", "backward": "no_neighbours"},
        "decision": {"skipped": False},
        "correct_fallback": None,
        "candidates": [hyp, final] if label_in else [hyp],
    }
    d = {
        "hypothesis": {"step": hyp},
        "lce": lce,
        "edges": [list(e) for e in edges],
        "deviations": [{"step": hyp, "reason": "r"}],
        "dropped_edges": {"capped": capped, "not_causal": 1},
    }
    if repeat:
        d["repeat"] = repeat
    return Attribution(trace_id=tid, method="dcfa", step=final, agent="A0", details=d)


@pytest.fixture
def frame():
    traces = [_trace("h/1", 10, 2), _trace("h/2", 40, 1), _trace("h/3", 10, 1)]
    atts = [
        _dcfa("h/1", hyp=1, final=2),
        _dcfa("h/2", hyp=1, final=0, capped=3),
        _dcfa("h/3", hyp=0, final=0, label_in=False),
    ]
    return results_frame(atts, traces), traces


def test_levels_are_the_released_scripts():
    # Automated_FA/evaluate_in_different_length.py: 5-17, 19-29, 31-49, 51-91, 93-130; 18, 30, 50, 92 in none
    assert [(lo, hi) for lo, hi, _ in WHO_WHEN_LEVELS] == [(5, 17), (19, 29), (31, 49), (51, 91), (93, 130)]
    assert [who_when_level(n) for n in (5, 17, 19, 29, 31, 49, 51, 91, 93, 130)] == [
        f"Level {i}" for i in (1, 1, 2, 2, 3, 3, 4, 4, 5, 5)
    ]
    assert [who_when_level(n) for n in (4, 18, 30, 50, 92, 131)] == [None] * 6


def test_gca_only_and_lce_effect(frame):
    df, _ = frame
    g = gca_only_accuracy(df).iloc[0]
    assert g["n"] == 3 and g["gca_step_acc"] == pytest.approx(1 / 3) and g["dcfa_step_acc"] == pytest.approx(1 / 3)
    assert (g["gca_step_k"], g["dcfa_step_k"]) == (1, 1)
    e = lce_effect(df).iloc[0]
    assert (e["fixed"], e["broken"], e["unchanged_right"], e["unchanged_wrong"]) == (1, 1, 0, 1)


def test_lce_diagnostics_and_graph_stats(frame):
    df, _ = frame
    d = lce_diagnostics(df).iloc[0]
    assert d["traces"] == 3 and d["expansions_m"] == 1 and d["simulations"] == 2
    assert d["label_in_candidates"] == pytest.approx(2 / 3) and d["label_on_edge"] == pytest.approx(1.0)
    assert d["stop_no_positive"] == 3
    gs = graph_stats(df).iloc[0]
    assert gs["edges_mean"] == 2 and gs["cap_hits"] == 1 and gs["capped_mean"] == 1


def test_signed_histogram_and_levels(frame):
    df, _ = frame
    h = signed_step_error_histogram(df).loc["dcfa"]
    assert h["0"] == 1 and h["-1"] == 2 and h["1"] == 0  # h/2 and h/3 predicted one step early
    lv = accuracy_by_level(df).set_index("level")
    assert set(lv.index) == {"Level 1", "Level 3"}  # 10 steps, 40 steps
    assert (lv.loc["Level 1", "n"], lv.loc["Level 1", "step_k"]) == (2, 1)  # h/1 right, h/3 wrong
    assert (lv.loc["Level 3", "n"], lv.loc["Level 3", "step_k"]) == (1, 0)


def test_dcfa_step_accuracy_is_agent_and_step_as_its_evaluate_py():
    traces = [
        _trace("h/1", 10, 2, agent="Orchestrator"),
        _trace("h/2", 10, 1, agent="WebSurfer"),
        _trace("h/3", 18, 1, agent="A1"),
        _trace("h/4", 10, 3, agent="A1"),
    ]
    atts = [
        Attribution(trace_id="h/1", method="m", step=2, agent="Orchestrator (thought)"),  # first word: right
        Attribution(trace_id="h/2", method="m", step=1, agent="websurfer"),  # exact match: case counts
        Attribution(trace_id="h/3", method="m", step=1, agent="A1"),
        Attribution(trace_id="h/4", method="m", step=None, agent=None),
    ]  # no prediction: wrong
    df = results_frame(atts, traces)
    r = dcfa_accuracy(df).iloc[0]
    assert (r["n"], r["agent_and_step_k"], r["step_k"]) == (4, 2, 3)
    assert r["agent_and_step_acc"] == pytest.approx(0.5) and r["step_acc"] == pytest.approx(0.75)
    assert outside_levels(df) == 1  # h/3 has 18 steps: between Level 1 and Level 2, left out
    assert set(accuracy_by_level(df)["n"]) == {3}
    md = paper_tables_markdown(df)
    assert "| m | Hand-Crafted | 4 | 50.00% (2/4) | 75.00% (3/4) |" in md
    assert "Traces of a length in no level: 1" in md


def test_repeats_mean_std():
    traces = [_trace("h/1", 10, 2)]
    atts = [_dcfa("h/1", 1, 2), _dcfa("h/1", 1, 1, repeat=1)]
    rep = accuracy_over_repeats(results_frame(atts, traces)).iloc[0]
    assert rep["repeats"] == 2 and rep["step_acc_mean"] == pytest.approx(0.5)
    assert rep["step_acc_std"] == pytest.approx(0.7071, abs=1e-3)


def test_speaker_mismatch_flagged_in_report(frame):
    df, traces = frame
    odd = _trace("h/9", 4, 1, agent="A0")  # step 1 is spoken by A1
    mism = speaker_mismatches([*traces, odd])
    assert mism == [{"trace_id": "h/9", "step": 1, "labelled_agent": "A0", "speaker": "A1"}]
    md = paper_tables_markdown(df, {"speaker_mismatch": mism})
    assert "not the speaker of the labelled step (1 traces)" in md and "DCFA without LCE" in md


def test_parsed_details_give_the_same_tables_and_the_report_parses_each_record_once(frame, monkeypatch):
    import agentcausal.attribution.paper_tables as paper_tables

    df, _ = frame
    parsed = with_parsed_details(df)
    assert isinstance(df["details_json"].iloc[0], str)  # the caller's frame is left as it was
    for table in (gca_only_accuracy, lce_effect, lce_diagnostics, graph_stats, accuracy_over_repeats):
        pd.testing.assert_frame_equal(table(parsed), table(df))
    loads = []
    counting = type("Json", (), {"loads": staticmethod(lambda s: loads.append(s) or json.loads(s))})
    monkeypatch.setattr(paper_tables, "json", counting)
    text = paper_tables_markdown(df)
    assert "What LCE did" in text and "LCE diagnostics" in text and "edges per trace" in text
    assert len(loads) == len(df)  # four tables read DCFA's record: one parse of each
