"""The MAC paper's analyses in report.md / report.html: rounds plot, mean ranks, win counts, cost multiples,
each with its n; end to end through ``discover --rounds 1 2 3`` on the fake server (test double)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from agentcausal.discovery.outcome import DiscoveryOutcome
from agentcausal.report.discovery_analyses import analyses_report, rank_sections
from tests.discovery.conftest import mac_responder

PRICE_PROMPT, PRICE_COMPLETION = 0.0025, 0.01  # test prices (USD per 1000 tokens) of the fake profile


def _outcome(ds: str, method: str, prompt: int, completion: int, cost: float) -> DiscoveryOutcome:
    usage = (
        {
            "mac.debate": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "requests": 1,
                "calls": 1,
                "cost_usd": cost,
            }
        }
        if prompt
        else {}
    )
    return DiscoveryOutcome(
        dataset=ds, seed=0, n=100, method=method, usage=usage, models={"mac.debate": "fake:m"} if prompt else {}
    )


def test_analyses_report_writes_each_section_with_its_n(tmp_path):
    rows = [
        ("a", "mac (rounds 1)", 1, 0.1, 0.9),
        ("a", "mac (rounds 2)", 2, 0.2, 0.8),
        ("a", "pc", 3, 0.3, 0.5),
        ("a", "llm_zero_shot", 2, 0.2, 0.7),
        ("b", "mac (rounds 1)", 0, 0, 1),
        ("b", "mac (rounds 2)", 1, 0.1, 0.9),
        ("b", "pc", 1, 0.1, 0.9),
        ("b", "llm_zero_shot", 2, 0.2, 0.6),
    ]
    df = pd.DataFrame(
        [
            {"dataset": d, "seed": 0, "method": m, "shd": s, "shd2": s, "nhd": n, "f1": f, "shd_reversal_cost": 1}
            for d, m, s, n, f in rows
        ]
    )
    outcomes = [
        _outcome(d, m, 0 if m == "pc" else (100 if m == "llm_zero_shot" else 1600), 10, 0.001) for d, m, *_ in rows
    ]
    rep = analyses_report(df, outcomes, tmp_path)
    md = "\n".join(rep.markdown)
    assert "### Rounds sweep" in md and "wins / ties / losses" in md
    assert "### Cost as a multiple of zero-shot" in md
    # rounds, mean ranks (the baselines; no plain mac here), variants ranked apart, first places, W/T/L, cost
    assert md.count("n = 2 datasets × 1 seeds") == 6 and "SHD: a reversed edge counts once" in md
    assert md.count("SHD as the paper defines it (App. B, over ordered pairs): a reversed edge counts twice") == 4
    assert "### Ablations and variants, ranked apart" in md and "### First places: MAC first on k of N" in md
    assert "| mac (rounds 2) | 6 | 0 | 5 | 6 | first on 6 of 6, second on 0 |" in md  # 5 of them shared
    assert (tmp_path / "rounds.png").stat().st_size > 1000 and rep.figures[0].key == "rounds"
    assert "| mac (rounds 1) | pc | 2/0/0 |" in md and "| mac (rounds 2) | pc | 1/1/0 |" in md  # SHD a, b
    assert "| mac (rounds 2) | 2 | 1,610 | 14.64 | 0.0010 | 1.00 | 14.6–14.6 | 0 | fake:m |" in md  # 1610 / 110
    assert any("Ablations and variants" in h for h in rep.html)
    # nothing to analyse: no section at all
    assert analyses_report(df.iloc[0:0], [], tmp_path).markdown == []
    assert rank_sections(df[df.method == "pc"]).markdown[0].startswith("## Mean rank")


def _any_dataset_responder():
    """MAC's responder with edges over whatever variables the request's schema names."""

    def respond(body: dict) -> str:
        schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
        names = schema.get("$defs", {}).get("Edge", {}).get("properties", {}).get("cause", {}).get("enum")
        v = names or ["x", "y", "z"]
        return mac_responder(affirmative_edges=((v[0], v[1]), (v[1], v[2])), negative_edges=((v[1], v[0]),))(body)

    return respond


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_discover_rounds_sweep_writes_the_paper_analyses(fake_server, tmp_path, capsys):
    from agentcausal_cli import main

    fake_server.responder = _any_dataset_responder()
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        f"max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\nprice_prompt_per_1k = {PRICE_PROMPT}\n"
        f'price_completion_per_1k = {PRICE_COMPLETION}\n\n[routings.default]\npreset = "small"\ndefault = "fake"\n'
    )
    out = tmp_path / "run"
    args = [
        "discover",
        "-d",
        "earthquake",
        "-d",
        "cancer",
        "-m",
        "mac",
        "-m",
        "llm_zero_shot",
        "-m",
        "pc",
        "--rounds",
        "1",
        "2",
        "3",
        "--n",
        "200",
        "--profiles",
        str(toml),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(args) == 0
    df = pd.read_parquet(out / "results.parquet")
    methods = ["mac (rounds 1)", "mac (rounds 2)", "mac (rounds 3)", "llm_zero_shot", "pc"]
    assert sorted(zip(df.dataset, df.method)) == sorted((d, m) for d in ("earthquake", "cancer") for m in methods)
    assert (df["status"] == "complete").all()
    from agentcausal.discovery.outcome import load_outcomes

    debated = {
        (o.dataset, o.method): len(o.details["mdm"]["debate"]["rounds"])
        for o in load_outcomes(out)
        if o.method.startswith("mac")
    }
    assert debated == {(d, f"mac (rounds {r})"): r for d in ("earthquake", "cancer") for r in (1, 2, 3)}
    plan = json.loads((out / "run.json").read_text())["plan"]
    assert [plan["methods"][f"mac (rounds {r})"]["settings"]["rounds"] for r in (1, 2, 3)] == [1, 2, 3]
    md = (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    for heading in (
        "Rounds sweep (paper §4.3, Fig. 4)",
        "Mean rank over datasets (paper Fig. 2)",
        "MAC against each baseline: wins / ties / losses",
        "Cost as a multiple of zero-shot (paper §4.4, Fig. 5)",
    ):
        assert heading in md and heading in page
    assert md.count("n = 2 datasets × 1 seeds") >= 4 and "SHD: a reversed edge counts once" in md
    assert (out / "rounds.png").stat().st_size > 1000 and "PNG: [rounds.png](rounds.png)" in md
    # each variant's graph files carry no space or bracket, so the report's links work
    assert (out / "graphs" / "cancer__mac_rounds2.png").is_file() and "(graphs/cancer__mac_rounds2.png)" in md
    assert (out / "graphs" / "cancer__mac_rounds3__seed0.dot").is_file()
    assert "SHD and F1 against debate rounds" in page and "data:image/png;base64" in page
    cost = md.split("### Cost as a multiple of zero-shot")[1]
    assert "| llm_zero_shot | 2 |" in cost and "No profile of this run has prices" not in cost
    assert all(f"| mac (rounds {r}) | 2 |" in cost for r in (1, 2, 3))  # one row per rounds value
    # a rerun reuses every (dataset, method, rounds value): cached per value
    before = fake_server.count
    assert main(args[:-3] + ["--out", str(tmp_path / "again"), "--no-progress"]) == 0
    assert fake_server.count == before
    again = pd.read_parquet(tmp_path / "again" / "results.parquet")
    assert again["reused"].all() and sorted(again.method.unique()) == sorted(methods)
    capsys.readouterr()


def test_compare_ranks_over_the_backbones_of_two_runs(tmp_path):
    from agentcausal.discovery.evaluate import score_run
    from agentcausal.discovery.graphs.graph import CausalGraph
    from agentcausal.discovery.outcome import save_outcomes
    from agentcausal.report.compare import compare_runs
    from agentcausal.report.compare_pages import comparison_html, comparison_markdown

    true = CausalGraph.from_edges("ABC", [("A", "B"), ("B", "C")])
    right, wrong = true, CausalGraph.from_edges("ABC", [("C", "A")])
    for run, model, mac_graph in (("gpt", "openai-gpt4o:gpt-4o", right), ("r1", "deepseek:deepseek-reasoner", wrong)):
        outs = [
            DiscoveryOutcome(dataset=ds, seed=0, n=10, method=m, graph=g, true_graph=true)
            for ds in ("toy1", "toy2")
            for m, g in (("mac", mac_graph), ("pc", right if ds == "toy1" else wrong))
        ]
        save_outcomes(outs, tmp_path / run, {"models": {"mac.debate": model}})
        score_run(tmp_path / run)  # results.parquet, as a discover run writes it
    c = compare_runs(tmp_path / "gpt", tmp_path / "r1")
    md = comparison_markdown(c)
    assert "## Mean rank over backbones and datasets (paper Fig. 2)" in md
    assert "n = 2 datasets × 1 seeds × 2 backbones" in md
    # mac's SHD ranks: gpt toy1 tie with pc (1.5), toy2 better (1); r1 toy1 worse (2), toy2 tie (1.5)
    assert "| mac | 1.50 |" in md and "| mac | pc | 1/2/1 |" in md
    assert "Mean rank over backbones and datasets" in comparison_html(c)


def test_cost_section_names_the_prices_and_their_date_when_the_plan_records_them(tmp_path):
    from agentcausal.report.discovery_analyses import price_notes

    meta = {
        "plan": {
            "methods": {
                "mac": {
                    "stages": {"mac.debate": "openai-gpt4o:gpt-4o"},
                    "profile_params": {
                        "mac.debate": {
                            "temperature": 0.0,
                            "price_prompt_per_1k": 0.0025,
                            "price_completion_per_1k": 0.01,
                            "prices_as_of": "2026-05-01",
                        }
                    },
                },
                "pc": {"stages": {}},
            }
        }
    }
    assert price_notes(meta) == [
        "openai-gpt4o:gpt-4o: 0.0025 / 0.01 USD per 1k prompt / completion tokens, prices as of 2026-05-01"
    ]
    assert price_notes({}) == [] and price_notes(None) == []
    df = pd.DataFrame(
        [
            {"dataset": "a", "seed": 0, "method": m, "shd": 1.0, "nhd": 0.1, "f1": 0.5, "shd_reversal_cost": 1}
            for m in ("mac", "llm_zero_shot")
        ]
    )
    outs = [_outcome("a", "mac", 1000, 10, 0.003), _outcome("a", "llm_zero_shot", 100, 10, 0.0004)]
    md = "\n".join(analyses_report(df, outs, tmp_path, meta).markdown)
    assert "Prices: openai-gpt4o:gpt-4o: 0.0025 / 0.01 USD per 1k" in md and "as of 2026-05-01" in md
    assert "does not record them" in "\n".join(analyses_report(df, outs, tmp_path).markdown)
