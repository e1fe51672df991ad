"""``agentcausal tables dcfa RUN...``: DCFA's Table 1 and Figure 3 over several runs, every cell with its n and
the published number it corresponds to (hand-built runs, and attribute runs on the fake server, a test double)."""

import json
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.attribution.results import results_frame, save_results
from agentcausal.attribution.table1 import DCFA_TABLE1, table1_averages, table1_backbone, table1_cells
from agentcausal.traces.model import Attribution, Label, Step, Trace
from agentcausal_cli import main

ROOT = Path(__file__).resolve().parents[2]


def _trace(tid: str, source: str, step: int, n: int = 10) -> Trace:
    steps = [Step(index=i, agent=f"A{i % 2}", content=f"c{i}") for i in range(n)]
    return Trace(
        id=tid, source=source, question="q", ground_truth="a", steps=steps, label=Label(agent=f"A{step % 2}", step=step)
    )


def _run(model: str, truth: bool, preds: dict[str, tuple[int | None, str | None]]) -> pd.DataFrame:
    traces = [
        _trace("h/1", "Hand-Crafted", 2),
        _trace("h/2", "Hand-Crafted", 3),
        _trace("a/1", "Algorithm-Generated", 1),
    ]
    atts = [
        Attribution(
            trace_id=t.id,
            method=m,
            step=preds[m][0] if t.id != "h/2" else 0,
            agent=preds[m][1],
            settings={"with_ground_truth": truth},
            models={"baseline" if m != "dcfa" else "dcfa.gca": model, "dcfa.lce": "vllm:qwen3-coder-30b"},
        )
        for t in traces
        for m in preds
    ]
    return results_frame(atts, traces)


def test_table1_cells_name_their_published_number_and_n():
    runs = {
        "gpt5": _run("openai-gpt5:gpt-5", True, {"dcfa": (2, "A0"), "step_by_step": (2, None)}),
        "r1": _run("vllm-deepseek-r1:deepseek-ai/DeepSeek-R1", True, {"dcfa": (2, "A1")}),
        "gpt5-nt": _run("openai-gpt5:gpt-5", False, {"dcfa": (2, "A0")}),
    }
    cells = table1_cells(runs)
    hc = cells[(cells["subset"] == "Hand-Crafted") & (cells["method"] == "dcfa")].set_index("run")
    # h/1 labelled step 2 agent A0: gpt5 right on both; r1 right on the step only; h/2 wrong everywhere
    assert (hc.loc["gpt5", "n"], hc.loc["gpt5", "agent_and_step_k"], hc.loc["gpt5", "step_k"]) == (2, 1, 1)
    assert (hc.loc["r1", "agent_and_step_k"], hc.loc["r1", "step_k"]) == (0, 1)
    assert hc.loc["gpt5", "published"] == DCFA_TABLE1[("GPT-5", "Hand-Crafted", "dcfa")] == 24.14
    assert hc.loc["r1", "backbone"] == "DeepSeek-R1-671B" and hc.loc["r1", "published"] == 22.41
    assert pd.isna(hc.loc["gpt5-nt", "published"]) and "ground truth" in hc.loc["gpt5-nt", "published_cell"]
    sbs = cells[(cells["method"] == "step_by_step") & (cells["subset"] == "Hand-Crafted")].iloc[0]
    assert (sbs["agent_and_step_k"], sbs["step_k"]) == (0, 1)  # no agent: the step alone scores
    avg = table1_averages(cells)
    a = avg[(avg["subset"] == "Hand-Crafted") & (avg["truth"] == "with truth") & (avg["method"] == "dcfa")].iloc[0]
    assert a["backbones"] == 2 and a["agent_and_step_mean"] == pytest.approx(0.25) and a["published"] == 20.69


def test_backbone_rows_are_recognised_in_table_order():
    assert table1_backbone("x:deepseek-ai/DeepSeek-R1-Distill-Qwen-32B") == "DeepSeek-R1-32B"
    assert table1_backbone("gemini-2.5-pro:gemini-2.5-pro") == "Gemini-2.5-pro"
    assert table1_backbone("fake:fake-model") is None


def test_tables_dcfa_prints_every_cell_with_n_and_published(tmp_path, capsys):
    for name, model, truth in (("gpt5", "openai-gpt5:gpt-5", True), ("gpt5-nt", "openai-gpt5:gpt-5", False)):
        save_results(
            _run(model, truth, {"dcfa": (2, "A0"), "all_at_once": (1, "A1")}), tmp_path / name / "results.parquet"
        )
    assert main(["tables", "dcfa", str(tmp_path / "gpt5"), str(tmp_path / "gpt5-nt")]) == 0
    out = capsys.readouterr().out
    assert "## Hand-Crafted, with truth" in out and "## Hand-Crafted, without truth" in out
    assert "| GPT-5 (gpt5) | **0.00% (0/2)** · step-only 0.00% (0/2) · pub. 3.45 | **50.00% (1/2)**" in out
    assert "- GPT-5 (gpt5), Hand-Crafted, with truth, dcfa: Table 1, GPT-5, Hand-crafted, DCFA: 24.14" in out
    assert "pub. none" in out and "Figure 3" in out and "| Level 1 |" in out


def test_tables_dcfa_refuses_a_folder_without_results_in_one_line(tmp_path, capsys):
    assert main(["tables", "dcfa", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "results.parquet" in err and len(err.strip().splitlines()) == 1


@pytest.fixture
def fake_profiles(fake_server, tmp_path, monkeypatch):
    from agentcausal_fakes.responders import BenchResponder

    monkeypatch.chdir(ROOT)
    for var in ("AGENTCAUSAL_ROUTING", "AGENTCAUSAL_PROFILES"):
        monkeypatch.delenv(var, raising=False)
    fake_server.responder = BenchResponder()
    paths = {}
    for name, model in (("gpt5", "gpt-5"), ("r1", "deepseek-ai/DeepSeek-R1")):
        toml = tmp_path / f"{name}.toml"
        toml.write_text(
            f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "{model}"\n'
            'max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
        )
        paths[name] = str(toml)
    return paths


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_tables_dcfa_on_two_fake_server_runs(fake_profiles, tmp_path, capsys):
    runs = []
    for name, toml in fake_profiles.items():
        run = tmp_path / name
        args = ["attribute", "data/examples", "-m", "all_at_once", "-m", "step_by_step", "--profiles", toml]
        args += ["--preset", "dcfa_paper", "--cache-dir", str(tmp_path / "cache"), "--out", str(run), "--no-progress"]
        assert main(args) == 0
        runs.append(str(run))
    capsys.readouterr()
    assert main(["tables", "dcfa", *runs]) == 0
    out = capsys.readouterr().out
    n = len(list((ROOT / "data" / "examples").glob("*.json")))
    assert out.count(f"/{n})") >= 2 * 2 * 2  # 2 runs x 2 methods x (agent-and-step, step-only)
    assert "GPT-5 (gpt5)" in out and "DeepSeek-R1-671B (r1)" in out and "Step-by-Step dcfa_paper" in out
    rows = pd.read_parquet(Path(runs[0]) / "results.parquet")
    assert json.loads(rows[rows["method"] == "step_by_step"]["settings_json"].iloc[0])["variant"] == "dcfa"


def test_console_and_report_accuracy_tables_lead_with_agent_and_step():
    from agentcausal.attribution.results import AttributionSummary
    from agentcausal.report.accuracy import accuracy_display
    from agentcausal.report.attribution_tables import accuracy_text, headline_first

    overall = pd.DataFrame({"method": ["m"], "n": [4], "labelled": [4], "step_k": [2], "agent_k": [3], "both_k": [1]})
    cols = list(headline_first(accuracy_display(overall)).columns)
    assert cols.index("step and agent") == cols.index("labelled") + 1 < cols.index("step (exact)")
    head = accuracy_text(AttributionSummary(overall, pd.DataFrame())).splitlines()[0].split()
    assert head.index("both") < head.index("step") < head.index("agent")
