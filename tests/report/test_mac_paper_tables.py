"""``agentcausal tables mac RUN...``: MAC's Tables 1-3, mean ranks, win counts and cost multiples over runs of
several backbones, every cell with its n and the published number it corresponds to (runs written as
``discover`` writes them: outcomes.jsonl, run.json, then scored)."""

import pytest

from agentcausal.discovery.evaluate import score_run
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.outcome import DiscoveryOutcome, save_outcomes
from agentcausal.report.mac_paper_tables import over_backbones, published_cell, table_cells
from agentcausal_cli import main

TRUE = CausalGraph.from_edges("ABC", [("A", "B"), ("B", "C")])
WRONG = CausalGraph.from_edges("ABC", [("C", "A")])


def _write(run, model, mac_graph, tokens):
    outs = [
        DiscoveryOutcome(
            dataset=ds,
            seed=seed,
            n=10,
            method=m,
            graph=g,
            true_graph=TRUE,
            usage={"mac.debate": {"calls": 1, "prompt_tokens": t, "completion_tokens": 0}} if t else {},
            models={"mac.debate": model} if t else {},
        )
        for ds in ("earthquake", "cancer")
        for seed in (0, 1)
        for m, g, t in (
            ("mac", mac_graph if seed == 0 else TRUE, tokens),
            ("dcm_only", WRONG, tokens // 2),
            ("llm_zero_shot", WRONG, 100),
            ("pc", TRUE, 0),
        )
    ]
    save_outcomes(outs, run, {"models": {"mac.debate": model}})
    score_run(run)


@pytest.fixture
def runs(tmp_path):
    _write(tmp_path / "gpt", "openai-gpt4o:gpt-4o", TRUE, 1600)
    _write(tmp_path / "gem", "gemini-2.0-flash:gemini-2.0-flash", WRONG, 2000)
    return [str(tmp_path / "gpt"), str(tmp_path / "gem")]


def test_cells_are_seed_means_with_n_and_average_over_backbones(runs):
    from agentcausal.report.discovery_load import load_scored

    frames = {"gpt": load_scored(runs[0]), "gem": load_scored(runs[1])}
    cells = table_cells(frames, ["mac"])
    gem = cells[(cells["backbone"] == "gem") & (cells["dataset"] == "earthquake") & (cells["metric"] == "shd2")].iloc[0]
    assert gem["n"] == 2 and gem["mean"] > 0 and gem["std"] > 0  # one seed wrong, one right
    avg = over_backbones(cells)
    a = avg[(avg["dataset"] == "earthquake") & (avg["metric"] == "shd2")].iloc[0]
    assert a["n"] == 2 and a["mean"] == pytest.approx(gem["mean"] / 2)


def test_published_cells_name_their_place_and_stated_values():
    assert published_cell("Table 2", "openai-gpt4o:gpt-4o (r)", "child", "mac", "nhd") == (
        "Table 2, GPT-4o, child, mac, NHD (value in the table image)"
    )
    assert published_cell("Table 2", "x:gemini-2.0-flash (r)", "earthquake", "exact_search", "shd2").endswith(
        ": 0.00 (stated in §4.2)"
    )
    assert published_cell("Table 2", "fake:fake-model (r)", "cancer", "mac", "f1").startswith("none: ")


def test_tables_mac_prints_tables_ranks_wins_and_costs_with_n(runs, capsys):
    assert main(["tables", "mac", *runs]) == 0
    out = capsys.readouterr().out
    assert "## Table 1" in out and "qualitative" in out
    assert "## Table 2: MAC and its baselines" in out and "## Table 3: MAC and its ablations" in out
    assert "### openai-gpt4o:gpt-4o (gpt)" in out and "Averaged over 2 backbones" in out
    assert "(n=2 seeds)" in out and "(n=2 backbones)" in out
    assert "- mac, earthquake, SHD: Table 2, GPT-4o, earthquake, mac, SHD (value in the table image)" in out
    table2 = out.split("## Table 2")[1].split("## Table 3")[0]
    assert "| dcm_only |" not in table2 and "| dcm_only |" in out.split("## Table 3")[1]
    assert "MAC with Gemini-2.0-Flash is first on 10 and second on 4 of 15" in out
    assert "n: 2 datasets × 2 seeds × 2 backbones" in out  # the mean ranks' sample
    assert "16x to 25x" in out and "| mac | 4 | 1600.00 | 16.00 |" in out  # cost multiple of zero-shot


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_tables_mac_on_two_fake_server_discover_runs(fake_server, tmp_path, capsys):
    from tests.report.test_discovery_analyses import _any_dataset_responder

    fake_server.responder = _any_dataset_responder()
    runs = []
    for name, model in (("gpt", "gpt-4o"), ("r1", "deepseek-ai/DeepSeek-R1")):
        toml = tmp_path / f"{name}.toml"
        toml.write_text(
            f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "{model}"\n'
            'max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[routings.default]\npreset = "small"\n'
            'default = "fake"\n'
        )
        run = tmp_path / name
        args = ["discover", "-d", "earthquake", "-m", "mac", "-m", "llm_zero_shot", "-m", "pc", "--n", "200"]
        args += ["--profiles", str(toml), "--cache-dir", str(tmp_path / f"cache-{name}"), "--out", str(run)]
        assert main([*args, "--no-progress"]) == 0
        runs.append(str(run))
    capsys.readouterr()
    assert main(["tables", "mac", *runs]) == 0
    out = capsys.readouterr().out
    assert "Table 2, GPT-4o, earthquake, mac, SHD" in out and "Table 2, DeepSeek-R1, earthquake, pc, F1" in out
    assert out.count("(n=1 seeds)") >= 2 * 3 * 3 and "(n=2 backbones)" in out
    assert "n: 1 datasets × 1 seeds × 2 backbones" in out and "| mac |" in out.split("Fig. 5")[1]
