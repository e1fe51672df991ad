"""report.html read back with a real HTML parser: per-trace rows, highlighted blamed steps, SVG graphs,
the discovery report's shared layout, legend and chart, and the DOT / CSV graph files."""

from __future__ import annotations

import csv
import re
from html.parser import HTMLParser

import pandas as pd
import pytest

from agentcausal.attribution.results import load_results, save_run
from agentcausal.discovery.evaluate import score_run
from agentcausal.discovery.graphs.graph import CausalGraph, Edge, Mark
from agentcausal.discovery.outcome import DiscoveryOutcome, save_outcomes
from agentcausal.report import plots
from agentcausal.report.attribution import report_run
from agentcausal.report.discovery import write_report as write_discovery_report
from agentcausal.report.html import human_number
from agentcausal.traces.jsonl import write_jsonl
from agentcausal.traces.model import Attribution, Label, Step, Trace


def save_discovery_run(outcomes, run_dir, meta):
    """``outcomes.jsonl``, ``run.json`` and the scored ``results.parquet``, as a discover run writes them."""
    save_outcomes(outcomes, run_dir, meta)
    score_run(run_dir)


class Tree(HTMLParser):
    """Minimal DOM: a list of (tag, attrs, path of ancestors' (tag, attrs)) and text per element."""

    VOID = {"meta", "br", "img", "input", "hr", "link"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, dict[str, str], list[str]]] = []
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []

    def handle_starttag(self, tag, attrs):
        el = (tag, {k: v or "" for k, v in attrs}, [])
        self.elements.append((el[0], el[1], el[2]))
        if tag not in self.VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, {k: v or "" for k, v in attrs}, []))

    def handle_endtag(self, tag):
        while self.stack:
            t, _, _ = self.stack.pop()
            if t == tag:
                break

    def handle_data(self, data):
        for _, _, texts in self.stack:
            texts.append(data)

    def find(self, tag, **attrs):
        out = []
        for t, a, texts in self.elements:
            if t == tag and all(
                v in a.get(k.rstrip("_"), "").split() if k.endswith("_") else a.get(k) == v for k, v in attrs.items()
            ):
                out.append((a, "".join(texts)))
        return out


def parse(text: str) -> Tree:
    tree = Tree()
    tree.feed(text)
    return tree


def _traces() -> list[Trace]:
    def steps(n):
        return [Step(index=k, agent=f"Agent{k % 2}", content=f"content of step {k}") for k in range(n)]

    return [
        Trace(
            id="ww/1",
            source="Hand-Crafted",
            question="q1",
            ground_truth="a",
            steps=steps(4),
            label=Label(agent="Agent0", step=2),
        ),
        Trace(
            id="ww/2",
            source="Hand-Crafted",
            question="q2",
            ground_truth="a",
            steps=steps(5),
            label=Label(agent="Agent1", step=3),
        ),
        Trace(id="ww/3", source="Algorithm-Generated", question="q3", ground_truth="a", steps=steps(3)),
    ]


def _dcfa_details(n: int, final: int) -> dict:
    return {
        "n_steps": n,
        "edges": [[0, 1], [1, final]],
        "deviations": [{"step": 1, "reason": "r"}],
        "hypothesis": {"step": 1, "agent": "Agent1"},
        "final": {"step": final, "agent": "Agent0"},
        "lce": {
            "path": [{"pivot": 1, "step": final, "direction": "forward", "delta_s": 0.4}],
            "scores": [{"step": final, "s": 0.9}],
        },
        "step_agents": [f"Agent{k % 2}" for k in range(n)],
    }


@pytest.fixture
def attribution_run(tmp_path):
    traces = _traces()
    corpus = write_jsonl(traces, tmp_path / "corpus.jsonl")
    usage = {"baseline": {"calls": 1, "requests": 1, "prompt_tokens": 1200, "completion_tokens": 40, "seconds": 0.5}}
    atts = [
        Attribution(
            trace_id="ww/1", method="all_at_once", step=2, agent="Agent0", reason="it <b>broke</b>", usage=usage
        ),
        Attribution(trace_id="ww/2", method="all_at_once", step=0, agent="Agent0", reason="guess", usage=usage),
        Attribution(trace_id="ww/3", method="all_at_once", step=1, agent="Agent1", reason="unlabelled", usage=usage),
        Attribution(trace_id="ww/1", method="dcfa", step=2, agent="Agent0", details=_dcfa_details(4, 2)),
        Attribution(trace_id="ww/2", method="dcfa", error="EndpointUnreachableError: down"),
        Attribution(trace_id="ww/3", method="dcfa", step=2, agent="Agent0", details=_dcfa_details(3, 2)),
    ]
    run = tmp_path / "run"
    save_run(
        atts,
        traces,
        run,
        {"corpus": [str(corpus)], "methods": {"all_at_once": {}, "dcfa": {}}, "routing": "default", "traces": 3},
    )
    return run


def test_attribution_report_has_per_trace_rows_highlighted_steps_and_svg_graphs(attribution_run):
    report_run(attribution_run)
    tree = parse((attribution_run / "report.html").read_text())
    headings = [t for _, t in tree.find("h2")]
    assert headings[0] == "Blamed steps"  # the page opens on what was blamed, the settings folded
    assert (
        headings.index("Blamed steps")
        < headings.index("Accuracy")
        < headings.index("Per trace")
        < headings.index("Traces")
    )
    assert tree.find("details", class_="facts")
    table = tree.find("table", id="per-trace")
    assert table and "sortable" in table[0][0]["class"]
    assert tree.find("input", **{"data-table": "per-trace"})
    rows = [t for a, t in tree.find("tr") if "ww/" in t and "all_at_once" in t or "dcfa" in t]
    per_trace = load_results(attribution_run)
    # every row's trace links to its section, once from the blamed steps and once from the per-trace table
    assert len([1 for _, t in tree.find("a") if t.startswith("ww/")]) == 2 * len(per_trace) == 12
    assert rows
    verdicts = [t for _, t in tree.find("td", class_="right")]
    assert verdicts.count("right") == 2  # ww/1 by both methods
    assert [t for _, t in tree.find("td", class_="failed")] == ["failed"]
    assert any("unlabelled" == t for _, t in tree.find("td"))
    # the section of ww/2: all_at_once blamed step 0 (highlighted), the annotated step 3 marked
    sec = tree.find("section", id="t-ww-2")
    assert sec and "content of step 0" in sec[0][1]
    blamed = [t for _, t in tree.find("tr", class_="blamed")]
    assert any(t.startswith("0Agent0all_at_once") for t in blamed)
    assert any(t.startswith("3Agent1annotated") for _, t in tree.find("tr", class_="truth"))
    # the unlabelled trace still shows its blamed steps
    sec3 = tree.find("section", id="t-ww-3")[0][1]
    assert "unlabelled" in sec3 and "all_at_once" in sec3
    # DCFA graphs as inline SVG with the decisive step and the LCE move
    svgs = tree.find("svg", class_="g")
    graphs = [t for a, t in svgs if "dependency graph of" in t]
    assert len(graphs) == 2
    assert tree.find("rect", class_="decisive") and tree.find("path", class_="search")
    assert "ΔS=+0.40" in graphs[0]
    page = (attribution_run / "report.html").read_text()
    assert "<b>broke</b>" not in page and "&lt;b&gt;broke" in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched from a network


def test_attribution_report_without_corpus_lists_blamed_steps(attribution_run, tmp_path):
    (tmp_path / "corpus.jsonl").unlink()
    report_run(attribution_run)
    tree = parse((attribution_run / "report.html").read_text())
    sec = tree.find("section", id="t-ww-2")[0][1]
    assert "Trace text not available" in sec
    assert len([1 for _ in tree.find("tr", class_="blamed")]) >= 3


def test_report_html_caps_the_blamed_table_at_the_traces_it_shows(attribution_run, monkeypatch):
    import agentcausal.report.attribution_load as shown

    monkeypatch.setattr(shown, "MAX_SHOWN_TRACES", 2)  # read by shown_rows at each call
    report_run(attribution_run)
    tree = parse((attribution_run / "report.html").read_text())
    table = parse((attribution_run / "report.html").read_text().split('id="blamed"', 1)[1].split("</table>", 1)[0])
    listed = {t for _, t in table.find("a")}
    assert listed == {"ww/1", "ww/2"}  # the first two traces by id, each method's row; ww/3 left out
    note = next(t for _, t in tree.find("p", class_="note") if "decisive step" in t)
    assert "first 2 of 3 traces" in note and "results.parquet" in note


def _outcomes() -> list[DiscoveryOutcome]:
    asia_true = CausalGraph.from_edges(["A", "S", "T", "L"], [("A", "T"), ("S", "L"), ("T", "L")])
    cancer_true = CausalGraph.from_edges(["P", "S", "C"], [("P", "C"), ("S", "C")])
    pc_asia = CausalGraph(
        nodes=["A", "S", "T", "L"],
        edges=[
            Edge("A", "T"),
            Edge("L", "S"),
            Edge("T", "L", Mark.TAIL, Mark.TAIL),
            Edge("A", "S", Mark.ARROW, Mark.ARROW),
        ],
    )
    mac_asia = CausalGraph.from_edges(["A", "S", "T", "L"], [("A", "T"), ("S", "L"), ("A", "L")])
    pc_cancer = CausalGraph.from_edges(["P", "S", "C"], [("P", "C")])
    return [
        DiscoveryOutcome(dataset="asia", seed=0, n=100, method="pc", graph=pc_asia, true_graph=asia_true),
        DiscoveryOutcome(
            dataset="asia", seed=0, n=100, method="mac", graph=mac_asia, true_graph=asia_true, seconds=1740.5
        ),
        DiscoveryOutcome(dataset="cancer", seed=0, n=100, method="pc", graph=pc_cancer, true_graph=cancer_true),
    ]


def test_discovery_report_leads_with_table_shares_layouts_and_writes_graph_files(tmp_path, monkeypatch):
    captured = {}
    real_save = plots._save

    def spy(fig, path):
        captured[str(path)] = [
            (c.get_label(), len(c.patches)) for ax in fig.axes for c in ax.containers if hasattr(c, "patches")
        ]
        return real_save(fig, path)

    monkeypatch.setattr(plots, "_save", spy)
    save_discovery_run(
        _outcomes(),
        tmp_path,
        {
            "datasets": ["asia", "cancer"],
            "methods": ["pc", "mac"],
            "config": {"mac": {"rounds": 2}},
            "wall_seconds": 1740.25,
        },
    )
    write_discovery_report(tmp_path)
    text = (tmp_path / "report.html").read_text()
    tree = parse(text)
    headings = [t for _, t in tree.find("h2")]
    assert headings[0].startswith("Results") and headings.index("Graphs (first seed)") > 0
    assert "{" not in "".join(t for _, t in tree.find("table", class_="facts"))  # no dict reprs
    assert "1,740" in text and "e+03" not in text
    legend = tree.find("p", class_="legend")[0][1]
    for word in ("correct", "missing", "extra", "reversed", "undirected"):
        assert word in legend
    # every drawing of asia places each node at the same spot (the true graph's layout)
    asia = re.search(r"<section id='g-asia'>(.*?)</section>", text, re.S).group(1)
    svgs = re.findall(r"<svg class=\"g\".*?</svg>", asia, re.S)
    assert len(svgs) == 3  # truth, pc, mac
    spots = [re.findall(r'<rect class="[^"]*" x="([\d.]+)" y="([\d.]+)"', s) for s in svgs]
    assert spots[0] == spots[1] == spots[2]
    pc_svg = parse(svgs[1])
    for cls in ("correct", "reversed", "undirected", "other"):
        assert pc_svg.find("line", class_=cls), cls
    assert parse(svgs[2]).find("line", class_="extra") and parse(svgs[2]).find("line", class_="missing")
    # SHD chart: MAC ran on asia only -> one MAC bar, none on cancer (never a zero bar)
    bars = dict(captured[str(tmp_path / "shd.png")])
    assert bars["mac"] == 1 and bars["pc"] == 2
    # graphs out: DOT and edge-list CSV
    rows = list(csv.DictReader(open(tmp_path / "graphs" / "asia__pc__seed0.csv")))
    assert {(r["source"], r["target"], r["type"]) for r in rows} == {
        ("A", "T", "directed"),
        ("L", "S", "directed"),
        ("T", "L", "undirected"),
        ("A", "S", "bidirected"),
    }
    dot = (tmp_path / "graphs" / "asia__pc__seed0.dot").read_text()
    assert '"A" -> "T";' in dot and "arrowtail=normal, arrowhead=normal" in dot
    assert (tmp_path / "graphs" / "cancer__truth.csv").is_file()


def test_human_number_never_prints_exponents_for_ordinary_values():
    assert human_number(1.74e3) == "1,740" and human_number(0.5) == "0.5" and human_number(float("nan")) == "–"
    assert human_number(pd.NA) == "–" and human_number(123456789) == "123,456,789"
