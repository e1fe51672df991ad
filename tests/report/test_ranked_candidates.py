"""Ranked candidates in report.md and report.html (#28 item 6): per trace the steps a ranking method weighed, best
first, with their roles and scores; single-answer methods are left out."""

from __future__ import annotations

from agentcausal.attribution.results import save_run
from agentcausal.report.attribution import report_run
from agentcausal.traces.model import Attribution, Candidate, Step, Trace
from tests.report.test_html_report import parse


def test_reports_list_the_ranked_candidates_of_the_methods_that_rank(tmp_path):
    t = Trace(
        id="u/1", question="q", ground_truth="", steps=[Step(index=k, agent=f"A{k}", content="x") for k in range(4)]
    )
    what = "ΔS(i) = S(i) - S(i-1), S cosine"
    dcfa = Attribution(
        trace_id=t.id,
        method="dcfa",
        step=2,
        agent="A2",
        candidates=[
            Candidate(step=2, role="decision", score=0.5, score_is=what),
            Candidate(step=1, role="hypothesis", score_is=what),
            Candidate(step=3, role="neighbour", score=-0.25, score_is=what),
        ],
    )
    aao = Attribution(trace_id=t.id, method="all_at_once", step=1, agent="A1", candidates=[Candidate(step=1)])
    save_run([dcfa, aao], [t], tmp_path, {"preset": "paper"})
    md = report_run(tmp_path).markdown
    section = md.split("## Ranked candidates (1)")[1].split("\n## ")[0]
    assert "| u/1 | dcfa | 2 | 2 (decision, ΔS +0.500) · 1 (hypothesis) · 3 (neighbour, ΔS -0.250) |" in section
    assert "all_at_once" not in section  # one answer, nothing ranked
    assert md.index("## Blamed steps") < md.index("## Ranked candidates")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    parse(page)  # well-formed
    table = (
        page.split("id='ranked-candidates'")[1]
        if "id='ranked-candidates'" in page
        else page.split('id="ranked-candidates"')[1]
    )
    assert "2 (decision, ΔS +0.500)" in table.split("</table>")[0]
