"""`agentcausal show` without Prefect: a trace whose file is gone, an ambiguous TRACE, a discovery run refused."""

from __future__ import annotations

from agentcausal.attribution.results import save_run
from agentcausal.traces.jsonl import write_jsonl
from agentcausal.traces.model import Attribution, Candidate, CorrectedAction, Step, Trace
from agentcausal_cli import main


def _run(tmp_path):
    traces = [
        Trace(
            id=f"ww/{i}",
            question="q?",
            ground_truth="",
            steps=[Step(index=k, agent=f"A{k}", content=f"step {k} says {k * 7}") for k in range(4)],
        )
        for i in (1, 12)
    ]
    corpus = write_jsonl(traces, tmp_path / "corpus.jsonl")
    fix = CorrectedAction(step=2, content="step 2 says 42", outcome="42", outcome_score=0.9, source="test")
    atts = [
        Attribution(
            trace_id="ww/1",
            method="dcfa",
            step=2,
            agent="A2",
            reason="multiplied wrong",
            confidence=0.9,
            evidence="says 14",
            corrected_action=fix,
            candidates=[
                Candidate(step=2, role="decision", score=0.5, score_is="ΔS(i) = …"),
                Candidate(step=1, role="hypothesis"),
            ],
        ),
        Attribution(trace_id="ww/12", method="dcfa", step=None, reason="undetermined"),
    ]
    save_run(atts, traces, tmp_path / "run", {"corpus": [str(corpus)]})
    return tmp_path / "run", corpus


def test_show_one_trace_marks_the_blamed_step_with_its_blame(tmp_path, capsys):
    run, _ = _run(tmp_path)
    assert main(["show", str(run), "ww/1", "--width", "100"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    blamed = next(i for i, ln in enumerate(lines) if ln.startswith("►") and "step 2 says 14" in ln)
    assert lines[blamed + 1].strip().startswith("└ dcfa: step 2, A2 · confidence 0.90")
    assert "evidence: “says 14” (verbatim in step 2)" in out and "fix:      “step 2 says 42”" in out
    assert "outcome:  “42” (S 0.90)" in out and "ranked:   2 (decision, ΔS +0.500), 1 (hypothesis)" in out


def test_show_without_the_trace_file_lists_blamed_steps_only(tmp_path, capsys):
    run, corpus = _run(tmp_path)
    corpus.unlink()
    assert main(["show", str(run), "ww/1"]) == 0
    out = capsys.readouterr().out
    assert "trace text not available" in out and "step 0 says" not in out and "└ dcfa: step 2" in out


def test_show_refuses_ambiguous_and_unknown_traces_and_discovery_runs(tmp_path, capsys):
    run, _ = _run(tmp_path)
    assert main(["show", str(run), "ww/"]) == 2
    assert "names 2 traces" in capsys.readouterr().err
    assert main(["show", str(run), "ww/12"]) == 0  # an exact id wins over longer ones containing it
    assert "no step blamed by dcfa: undetermined" in capsys.readouterr().out
    (tmp_path / "disc").mkdir()
    (tmp_path / "disc" / "outcomes.jsonl").write_text("")
    assert main(["show", str(tmp_path / "disc")]) == 2
    assert "is a discovery run" in capsys.readouterr().err


def test_show_refuses_a_method_the_run_did_not_run(tmp_path, capsys):
    run, _ = _run(tmp_path)
    for argv in (["show", str(run), "--method", "dcfaa"], ["show", str(run), "ww/1", "--method", "dcfaa"]):
        assert main(argv) == 2  # a typo is named, not taken for an empty run or a missing trace
        err = capsys.readouterr().err
        assert "no method 'dcfaa' in this run; its methods: " in err and "dcfa" in err.split("its methods: ")[1]
