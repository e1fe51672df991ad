"""The discovery report reads ``outcomes.jsonl`` once and keeps per (dataset, method) only its first seed; the SHD
plot's size does not grow with the datasets."""

from __future__ import annotations

import struct

import pandas as pd

from agentcausal.discovery.analyses import cost_frame
from agentcausal.discovery.evaluate import run_notes, score_run
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.outcome import DiscoveryOutcome, load_outcomes, save_outcomes
from agentcausal.report import discovery as report_discovery
from agentcausal.report import plots
from agentcausal.report.discovery import OutcomeDigest, write_report
from agentcausal.report.plots import SHD_BARS_MAX_DATASETS, discovery_stage_usage, shd_png

V = ("A", "B", "C")
TRUE = CausalGraph.from_edges(V, [("A", "B"), ("B", "C")])


def _outcomes() -> list[DiscoveryOutcome]:
    outs = []
    for seed in (0, 1, 2):
        for ds, truth in (("chain", TRUE), ("untrue", None)):
            for m in ("pc", "llm_zero_shot"):
                failed = m == "pc" and ds == "chain" and seed == 0  # the first seed with a graph is seed 1
                outs.append(
                    DiscoveryOutcome(
                        dataset=ds,
                        seed=seed,
                        n=50,
                        method=m,
                        graph=None if failed else CausalGraph.from_edges(V, [("A", "B")] if seed else [("B", "A")]),
                        true_graph=truth,
                        error="RuntimeError: boom" if failed else None,
                        usage={} if m == "pc" else {"llm.call": {"prompt_tokens": 10 + seed, "calls": 1}},
                        seconds=1.0 + seed,
                    )
                )
    return outs


def _png_width(path) -> int:
    return struct.unpack(">I", path.read_bytes()[16:20])[0]  # IHDR: width, then height


def test_digest_keeps_the_first_seed_of_each_dataset_and_method_and_sums_as_the_frames_do():
    outs = _outcomes()
    digest = OutcomeDigest().read(iter(outs))
    assert digest.outcomes == 12 and len(digest.first) == 4
    assert {k: r.seed for k, r in digest.first.items()} == {k: 0 for k in digest.first}
    assert digest.first[("chain", "pc")].graph is None  # a failed first seed stays the first seed
    assert digest.notes() == run_notes(outs)
    pd.testing.assert_frame_equal(digest.stage_usage.frame(), discovery_stage_usage(outs))
    pd.testing.assert_frame_equal(digest.costs(), cost_frame(outs))
    assert digest.costs()["prompt_tokens"].sum() == 2 * (10 + 11 + 12)  # llm_zero_shot on two datasets
    headings = [line for line in digest.sections if line.startswith("### ")]
    assert headings == [
        "### chain / llm_zero_shot (seed 0)",
        "### untrue / pc (seed 0)",
        "### untrue / llm_zero_shot (seed 0)",
    ]


def test_write_report_reads_the_outcomes_once_and_draws_each_first_graph(tmp_path, monkeypatch):
    save_outcomes(_outcomes(), tmp_path, {"methods": ["pc", "llm_zero_shot"]})
    score_run(tmp_path)
    reads = []

    def counted(run_dir):
        reads.append(run_dir)
        yield from load_outcomes(run_dir)

    monkeypatch.setattr(report_discovery, "iter_outcomes", counted)
    files = write_report(tmp_path)
    assert len(reads) == 1
    pngs = sorted(p.name for p in (tmp_path / "graphs").glob("*.png"))
    assert pngs == ["chain__llm_zero_shot.png", "chain__pc.png", "untrue__llm_zero_shot.png", "untrue__pc.png"]
    md = files.report.read_text()
    assert "### chain / pc" not in md  # its first seed failed: no section, yet seed 1's PNG is drawn
    assert "untrue has no true graph" in md
    dots = {p.name for p in (tmp_path / "graphs").glob("*.dot")}
    assert "chain__pc__seed0.dot" not in dots and {"chain__pc__seed1.dot", "chain__truth.dot"} <= dots
    assert "untrue__truth.dot" not in dots and len(dots) == 12  # 11 graphs, 1 truth


def test_a_second_report_copies_the_graph_pngs_it_drew_and_draws_a_changed_graph(tmp_path, monkeypatch):
    from agentcausal.report import discovery_graphs

    drawn: list[str] = []
    draw = discovery_graphs.draw_graph_png

    def counted(pred, true, path, *, title=""):
        drawn.append(title)
        return draw(pred, true, path, title=title)

    monkeypatch.setattr(discovery_graphs, "draw_graph_png", counted)
    plotted: list[str] = []
    for name in ("shd_png", "stage_cost_png"):
        real = getattr(plots, name)
        monkeypatch.setattr(
            plots, name, lambda frame, path, real=real, name=name: (plotted.append(name), real(frame, path))[1]
        )
    cache = tmp_path / "cache"
    runs = [tmp_path / "first", tmp_path / "second", tmp_path / "changed"]
    outs = _outcomes()
    changed = [
        o.model_copy(update={"graph": CausalGraph.from_edges(V, [("C", "A")])})
        if (o.dataset, o.method, o.seed) == ("chain", "llm_zero_shot", 0)
        else o
        for o in outs
    ]
    for run, these in zip(runs, (outs, outs, changed), strict=True):
        save_outcomes(these, run, {"methods": ["pc", "llm_zero_shot"]})
        score_run(run)
    write_report(runs[0], cache_dir=cache)
    assert len(drawn) == 4 and plotted == ["shd_png", "stage_cost_png"]
    write_report(runs[1], cache_dir=cache)
    assert len(drawn) == 4 and len(plotted) == 2  # the same four drawings and two plots: copied
    assert (runs[1] / "shd.png").read_bytes() == (runs[0] / "shd.png").read_bytes()
    for png in (runs[0] / "graphs").glob("*.png"):
        assert (runs[1] / "graphs" / png.name).read_bytes() == png.read_bytes()
    write_report(runs[2], cache_dir=cache)
    assert drawn[4:] == ["chain / llm_zero_shot (seed 0)"]  # only the graph that changed is drawn again
    assert plotted[2:] == ["shd_png"]  # its SHD changed; the stage costs did not
    write_report(runs[2])  # no cache: every graph drawn
    assert len(drawn) == 9


def test_shd_png_does_not_widen_past_the_bar_limit(tmp_path):
    def frame(datasets: int) -> pd.DataFrame:
        rows = [
            {"dataset": f"d{i}", "method": m, "seed": s, "shd": float((i + s) % 4)}
            for i in range(datasets)
            for m in ("pc", "mac")
            for s in (0, 1)
        ]
        return pd.DataFrame(rows)

    few = _png_width(shd_png(frame(3), tmp_path / "few.png"))
    at_limit = _png_width(shd_png(frame(SHD_BARS_MAX_DATASETS), tmp_path / "limit.png"))
    above = _png_width(shd_png(frame(SHD_BARS_MAX_DATASETS + 1), tmp_path / "above.png"))
    many = _png_width(shd_png(frame(20 * SHD_BARS_MAX_DATASETS), tmp_path / "many.png"))
    assert few < at_limit  # a bar group per dataset up to the limit
    assert above == many and many < few  # above it: a box per method, as wide for 41 datasets as for 800
