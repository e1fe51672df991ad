"""What a discovery report says beside its table: datasets without a true graph, how DCM ran its
algorithm (coding agent or typed, and why a fallback), and LLM samples that were one answer repeated."""

from __future__ import annotations

import json

from agentcausal.discovery.evaluate import outcomes_frame, run_notes, score_run
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.outcome import DiscoveryOutcome, save_outcomes
from agentcausal.report.discovery import executor_lines, write_report
from agentcausal.report.discovery_tables import IDENTICAL_NOTE, summary_table, summary_text


def save_run(outcomes, run_dir, meta):
    """``outcomes.jsonl``, ``run.json`` and the scored ``results.parquet``, as a discover run writes them."""
    save_outcomes(outcomes, run_dir, meta)
    score_run(run_dir)


V = ("A", "B", "C")
TRUE = CausalGraph.from_edges(V, [("A", "B"), ("B", "C")])


def _dcm(mode: str, fallback: str = "") -> dict:
    return {
        "dcm": {
            "execution": {"mode": mode, "fallback_reason": fallback, "choice": {"algorithm": "pc"}},
            "debate": {"notes": []},
        }
    }


def _outcome(method: str, seed: int, edges, *, truth=TRUE, details=None, dataset="toy") -> DiscoveryOutcome:
    return DiscoveryOutcome(
        dataset=dataset,
        seed=seed,
        n=100,
        method=method,
        graph=CausalGraph.from_edges(V, edges),
        true_graph=truth,
        details=details or {},
    )


def test_identical_temperature_zero_samples_are_flagged_not_silent():
    outs = [_outcome("llm_zero_shot", s, [("A", "B")], details={"sample": s, "temperature": None}) for s in (0, 1)]
    outs += [_outcome("react", s, [("A", "B")], details={"sample": s, "temperature": 0.7}) for s in (0, 1)]
    outs += [_outcome("pc", s, [("A", "B")]) for s in (0, 1)]
    outs += [
        _outcome("mdm_only", s, [("A", "B")] if s else [("B", "C")], details={"temperature": None}) for s in (0, 1)
    ]
    s = summary_table(outcomes_frame(outs))
    flagged = {m for (_, m), r in s.iterrows() if r["identical_samples"]}
    # sampled at 0.7 and still one answer: an honest std of 0; a statistical method: the data varied
    assert flagged == {"llm_zero_shot"}
    text = summary_text(outcomes_frame(outs))
    row = next(line for line in text.splitlines() if "llm_zero_shot" in line)
    legend = text.splitlines()[len(summary_table(outcomes_frame(outs))) + 1 :]  # after the header and the rows
    assert IDENTICAL_NOTE in row and "temperature 0" in " ".join(legend)
    assert len(legend) > 1 and max(map(len, legend)) <= 110  # wrapped to a terminal's width, not one long line
    one = summary_text(outcomes_frame(outs[:1]))
    assert IDENTICAL_NOTE not in one  # a single sample has no std to qualify


def test_executor_lines_count_coding_typed_and_each_fallback_reason():
    outs = [
        _outcome("mac", 0, [("A", "B")], details=_dcm("coding")),
        _outcome("mac", 1, [("A", "B")], details=_dcm("typed", "coding failed after 3 attempt(s): boom")),
        _outcome(
            "dcm_only",
            0,
            [("A", "B")],
            details={
                **_dcm("typed"),
                "executor_fallback": "executor auto: the coding sandbox cannot run here (bwrap missing)",
            },
        ),
        _outcome("pc", 0, [("A", "B")]),
    ]
    df = outcomes_frame(outs)
    assert list(df["executor"]) == ["coding", "typed", "typed", ""]
    lines = executor_lines(df)
    mac = next(line for line in lines if line.startswith("- mac:"))
    assert "coding 1, typed 1 of 2 runs; fallbacks 1: coding failed after 3 attempt(s): boom (1x)" in mac
    dcm = next(line for line in lines if line.startswith("- dcm_only:"))
    assert "fallbacks 1" in dcm and "bwrap missing" in dcm
    assert not any(line.startswith("- pc") for line in lines)
    assert executor_lines(outcomes_frame(outs[-1:])) == []


def test_no_true_graph_note_reaches_report_md(tmp_path):
    outs = [_outcome("pc", 0, [("A", "B")], truth=None, dataset="mine"), _outcome("pc", 0, [("A", "B")])]
    assert run_notes(outs) == [
        'mine has no true graph (no "true_edges" in its metadata): SHD, NHD and F1 are shown as -'
    ]
    save_run(outs, tmp_path, {"methods": ["pc"], "notes": run_notes(outs)})
    report = write_report(tmp_path, draw=False).report.read_text()
    assert "## Notes" in report and report.count("mine has no true graph") == 1
    assert json.loads((tmp_path / "run.json").read_text())["notes"] == run_notes(outs)
