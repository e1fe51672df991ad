"""What an attribution report keeps of ``results.parquet`` when it reads it a batch at a time
(:class:`ResultsDigest`), and the shown traces read from the plan's items: the same tables, sections and counts as
from the whole frame, in memory bounded by what the report lists."""

from __future__ import annotations

import pandas as pd
import pytest

import agentcausal.report.attribution_load as load
from agentcausal.attribution.evaluate import evaluate_frame
from agentcausal.attribution.method_settings import resolve_methods
from agentcausal.attribution.plan import attribute_plan
from agentcausal.attribution.results import iter_results, load_results, save_run
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.repeats import mark_repeat
from agentcausal.report.attribution import dependency_graphs_markdown, ranked_markdown, report_run, write_report
from agentcausal.report.attribution_load import ResultsDigest, shown_traces
from agentcausal.report.attribution_tables import ranked_candidates
from agentcausal.report.blamed import blamed_frame, blamed_markdown
from agentcausal.runs.plan import write_plan
from agentcausal.traces.jsonl import write_jsonl
from agentcausal.traces.model import Attribution, Candidate, Label, Step, Trace

N_TRACES = 7


def _trace(i: int) -> Trace:
    return Trace(
        id=f"t/{i}",
        question=f"question {i}",
        ground_truth="a",
        label=Label(agent="Agent1", step=1) if i % 3 else None,  # some unlabelled
        steps=[Step(index=k, agent=f"Agent{k % 2}", content=f"content {i}.{k}") for k in range(3)],
    )


def _attributions(i: int) -> list[Attribution]:
    usage = {"baseline": {"calls": 1, "requests": 1, "prompt_tokens": 100 + i, "completion_tokens": 5, "seconds": 0.1}}
    ranked = [Candidate(step=1, role="decision", score=0.5), Candidate(step=0, role="hypothesis")]
    dcfa = {"n_steps": 3, "deviations": [], "edges": [[0, 1]], "decision": {"step": 1}}
    out = [
        Attribution(trace_id=f"t/{i}", method="all_at_once", step=i % 3, agent="Agent1", reason=f"r{i}", usage=usage),
        mark_repeat(
            Attribution(
                trace_id=f"t/{i}", method="all_at_once", step=1, agent="Agent1", reason=f"again {i}", usage=usage
            ),
            1,
        ),
        Attribution(trace_id=f"t/{i}", method="dcfa", step=1, agent="Agent1", candidates=ranked, details=dcfa),
    ]
    if i == 4:
        out.append(Attribution(trace_id="t/4", method="echo", error="EndpointUnreachableError: down"))
    return out


@pytest.fixture
def run(tmp_path):
    """A run folder of seven traces (labelled and not), three methods, repeats, a failure; its plan's items."""
    traces = [_trace(i) for i in range(N_TRACES)]
    corpus = tmp_path / "corpus.jsonl"
    write_jsonl(traces, corpus)
    d = tmp_path / "run"
    atts = [a for i in (5, 0, 3, 6, 1, 4, 2) for a in _attributions(i)]  # not in id order
    save_run(atts, traces, d, {"corpus": [str(corpus)], "traces": N_TRACES})
    plan = attribute_plan(
        [str(corpus)],
        [ATTRIBUTION_METHODS["all_at_once"]],
        resolved=resolve_methods(ATTRIBUTION_METHODS, ["all_at_once"], preset="small"),
        preset="small",
        routing="default",
        items_file=d / "plan.items.jsonl",
    )
    write_plan(plan, d)
    return d


def test_batches_read_the_frame_load_results_reads(run):
    whole = load_results(run, without=("settings_json",))
    parts = list(iter_results(run, without=("settings_json",), rows=4))
    assert [len(p) for p in parts] == [4, 4, 4, 4, 4, 2]
    joined = pd.concat(parts, ignore_index=True)
    pd.testing.assert_frame_equal(joined, whole)


def test_digest_evaluates_as_the_whole_frame_does(run):
    whole = evaluate_frame(load_results(run))
    for rows in (3, 1000):
        ev = ResultsDigest.read(run, rows=rows).evaluation()
        for name, table in whole._asdict().items():
            pd.testing.assert_frame_equal(getattr(ev, name), table, check_dtype=False, obj=name)


def test_digest_keeps_only_the_first_traces_and_lists_as_the_whole_frame(run, monkeypatch):
    monkeypatch.setattr(load, "MAX_SHOWN_TRACES", 3)
    monkeypatch.setattr(load, "MAX_RANKED_ROWS", 2)
    monkeypatch.setattr(load, "MAX_GRAPHS", 2)
    whole = load_results(run)
    digest = ResultsDigest.read(run, rows=4)
    assert digest.shown_ids == {"t/0", "t/1", "t/2"} and digest.traces == N_TRACES
    assert set(digest.shown["trace_id"]) == digest.shown_ids
    assert len(digest.shown) == len(whole[whole["trace_id"].isin(digest.shown_ids)])
    # report.md's blamed steps: the first rows of every row's table, counted over every row
    shown = blamed_frame(digest.shown)
    md = blamed_markdown(digest.shown, max_rows=4, blamed=shown, whole=digest.blamed)
    assert md == blamed_markdown(whole, max_rows=4)
    assert "… 18 more row(s)" in md and "repeat" in md
    # the ranked candidates and DCFA's graphs: the first rows kept, the rest counted
    assert len(digest.ranked) == 2 and digest.ranked_total == N_TRACES
    full = ranked_candidates(whole)
    assert ranked_markdown(digest.ranked, max_rows=2, total=digest.ranked_total) == ranked_markdown(full, max_rows=2)
    assert len(digest.graphs) == 2
    assert dependency_graphs_markdown(digest.graphs, max_graphs=2) == dependency_graphs_markdown(whole, max_graphs=2)
    # only the paper tables' details are kept of every row
    kept = digest.scores["details_json"].dropna()
    assert set(digest.scores.loc[kept.index, "method"]) == {"dcfa"}
    assert digest.scores["repeat"].tolist().count(1) == N_TRACES


def test_report_of_a_frame_and_of_the_folder_are_the_same(run, tmp_path, monkeypatch):
    monkeypatch.setattr(load, "MAX_SHOWN_TRACES", 3)
    report_run(run)
    ev = evaluate_frame(load_results(run))
    other = tmp_path / "other"
    meta = {"corpus": [str(tmp_path / "corpus.jsonl")], "traces": N_TRACES, "run folder": str(run)}
    traces = dict(shown_traces(run, {}, [f"t/{i}" for i in range(3)]))
    write_report(ev, other, meta=meta, results=load_results(run), traces=traces, run_meta=meta)
    assert (other / "report.md").read_text() == (run / "report.md").read_text()
    assert (other / "report.html").read_text() == (run / "report.html").read_text()
    assert "The first 3 of 7 traces are shown" in (run / "report.html").read_text()


def test_shown_traces_come_from_the_plan_items_with_the_plan_hash(run, monkeypatch):
    shown = shown_traces(run, {}, ["t/1", "t/5", "nope"])
    assert sorted(shown) == ["t/1", "t/5"]
    assert shown.hashes["t/1"] == _trace(1).content_hash()
    # read when asked for, not hashed again: the page is written without computing any trace's hash
    monkeypatch.setattr(Trace, "content_hash", lambda self: pytest.fail("hashed again"))
    assert shown["t/5"].steps[2].content == "content 5.2"
    report_run(run)
    assert "content 5.2" in (run / "report.html").read_text()


def test_shown_traces_read_the_corpus_when_the_plan_files_changed(run, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    changed = [_trace(i).model_copy(update={"label": None}) for i in range(N_TRACES)]  # labels only: same content
    write_jsonl(changed, corpus)
    shown = shown_traces(run, {"corpus": [str(corpus)]}, ["t/2"])
    assert list(shown) == ["t/2"] and shown.hashes == {}
    assert shown["t/2"].label is None
    corpus.unlink()
    assert dict(shown_traces(run, {"corpus": [str(corpus)]}, ["t/2"])) == {}
