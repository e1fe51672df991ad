"""Records across flow runs, on the fake server (test double) and Prefect's ephemeral API: every trace keeps its
own record (``../shared/cases/dup_content_traces``), discovery is scored against the current truth
(``stale_truth``), failures of the run are never cached (``t3.json`` + one 401; PC with a tiny timeout), content
failures are cached and marked and ``--retry-failed`` recomputes them, and reused rows cost this run nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.runs.options import RunOptions
from agentcausal.settings import RunSettings

CASES = Path(__file__).resolve().parents[3] / "shared" / "cases"
GOOD = {
    "AllAtOnceReply": {"reason": "wrong product", "agent": "Math_Expert", "step": 0},
    "StepVerdict": {"reason": "yes", "decisive": True},
    "StepErrorVerdict": {"error": True, "reason": "yes"},
    "HalfChoice": {"reason": "r", "part": "first"},
    "PaperHalfChoice": {"half": "upper half", "reason": "r"},
}


def _good(body):
    fmt = body["response_format"]["json_schema"]
    reply = dict(GOOD[fmt["name"]])
    agent = fmt["schema"]["properties"].get("agent", {})
    choices = next((a["enum"] for a in agent.get("anyOf", [agent]) if "enum" in a), None)
    if choices and reply["agent"] not in choices:  # the agent enum lists the trace's own agents
        reply["agent"] = choices[0]
    return json.dumps(reply)


@pytest.fixture
def cases() -> Path:
    if not (CASES / "t3.json").is_file():
        pytest.skip("../shared/cases not found")
    return CASES


@pytest.fixture
def settings(fake_server, tmp_path) -> RunSettings:
    fake_server.responder = _good
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        'max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
    )
    return RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / "cache"))


def _rows(run_dir: str) -> pd.DataFrame:
    return pd.read_parquet(Path(run_dir) / "results.parquet").sort_values(["trace_id", "method"]).reset_index(drop=True)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_same_content_traces_keep_their_own_records_on_first_run_and_rerun(cases, settings, fake_server, tmp_path):
    from flows.attribute import attribute

    corpus = [str(cases / "dup_content_traces")]
    for k in (1, 2):
        df = _rows(
            attribute(
                AttributionRequest(paths=corpus, methods=["all_at_once"]),
                RunOptions(out_dir=str(tmp_path / f"r{k}")),
                settings=settings,
            )
        )
        assert len(df) == 2 and df["trace_id"].nunique() == 2, df[["trace_id", "true_step"]]
        labels = dict(zip(df["trace_id"].str.rsplit("/", n=1).str[-1], zip(df["true_step"], df["true_agent"])))
        assert labels == {"copyA": (0, "Math_Expert"), "copyB": (1, "Check_Expert")}
        # the same answer, scored against each trace's own label
        assert df["step_correct"].tolist() == [True, False]
        # first run on a fresh cache: one paid request, the other trace's identical prompt served by the entry
        # this run wrote (not reuse of an earlier run: reused 0); rerun: both from the earlier run
        assert df["reused"].sum() == (0 if k == 1 else 2)
    assert fake_server.count == 1  # identical prompts: one paid request


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_transient_401_is_not_cached_and_the_next_run_retries_it(cases, settings, fake_server, tmp_path):
    from flows.attribute import attribute
    from flows.engine import run_dir_of

    fake_server.inject(401)
    df1 = _rows(  # a row failed: the flow run ends Failed (flows.engine.FailedRows), its run folder written
        run_dir_of(
            lambda: attribute(
                AttributionRequest(paths=[str(cases / "t3.json")], methods=["all_at_once"]),
                RunOptions(out_dir=str(tmp_path / "r1")),
                settings=settings,
            )
        )
    )
    assert df1.loc[0, "status"] == "failed" and "401" in df1.loc[0, "error"] and fake_server.count == 1

    df2 = _rows(
        attribute(
            AttributionRequest(paths=[str(cases / "t3.json")], methods=["all_at_once"]),
            RunOptions(out_dir=str(tmp_path / "r2")),
            settings=settings,
        )
    )
    assert fake_server.count == 2 and df2.loc[0, "requests"] == 1  # retried, not replayed
    assert df2.loc[0, "status"] == "complete" and df2.loc[0, "pred_step"] == 0 and pd.isna(df2.loc[0, "error"])
    assert not df2.loc[0, "reused"] and df2.loc[0, "run_requests"] == 1


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_content_failure_is_cached_and_marked_and_retry_failed_recomputes_it(settings, fake_server, tmp_path):
    from flows.attribute import attribute

    examples = Path(__file__).resolve().parents[2] / "data" / "examples"
    corpus = [str(examples / "wrong_unit_at_step_2.json"), str(examples / "bad_plan_at_step_0.json")]
    fake_server.responder = lambda body: (
        _good(body) if "HalfChoice" not in json.dumps(body["response_format"]) else "never JSON"
    )
    methods = ["all_at_once", "binary_search"]
    request = AttributionRequest(paths=corpus, methods=methods)
    df1 = _rows(attribute(request, RunOptions(out_dir=str(tmp_path / "r1")), settings=settings))
    bs1 = df1[df1.method == "binary_search"]
    assert (bs1["status"] == "content_failed").all() and bs1["error"].str.startswith("StructuredOutputError").all()
    n1 = fake_server.count

    # a plain rerun reuses everything, the content failures included, marked as such
    df2 = _rows(attribute(request, RunOptions(out_dir=str(tmp_path / "r2")), settings=settings))
    assert fake_server.count == n1 and df2["reused"].all() and (df2["run_requests"] == 0).all()
    assert df2["status"].tolist() == df1["status"].tolist()
    report = (tmp_path / "r2" / "report.md").read_text()
    assert "## Cost: this run vs original" in report

    # --retry-failed recomputes only the content failures; the complete rows are still reused
    fake_server.responder = _good
    df3 = _rows(
        attribute(
            AttributionRequest(paths=corpus, methods=methods),
            RunOptions(out_dir=str(tmp_path / "r3")),
            settings=settings.model_copy(update={"retry_failed": True}),
        )
    )
    bs3, aao3 = df3[df3.method == "binary_search"], df3[df3.method == "all_at_once"]
    assert (bs3["status"] == "complete").all() and bs3["pred_step"].notna().all() and not bs3["reused"].any()
    assert aao3["reused"].all() and (aao3["run_requests"] == 0).all()
    assert fake_server.count > n1
    n3 = fake_server.count
    # the recomputed records replaced the old ones under the same keys: a plain run reuses them
    df4 = _rows(attribute(request, RunOptions(out_dir=str(tmp_path / "r4")), settings=settings))
    assert fake_server.count == n3 and (df4["status"] == "complete").all() and df4["reused"].all()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_discovery_is_scored_against_the_current_truth(cases, settings, tmp_path):
    from flows.discover import discover

    work = tmp_path / "data"
    work.mkdir()
    shutil.copy(cases / "stale_truth" / "chain.csv", work / "chain.csv")
    shutil.copy(cases / "stale_truth" / "meta_before.json", work / "chain.json")
    spec = str(work / "chain.csv")
    df1 = pd.read_parquet(
        Path(
            discover(
                DiscoveryRequest(datasets=[spec], methods=["pc"]),
                RunOptions(out_dir=str(tmp_path / "r1")),
                settings=settings,
            )
        )
        / "results.parquet"
    )
    shutil.copy(cases / "stale_truth" / "meta_after.json", work / "chain.json")
    df2 = pd.read_parquet(
        Path(
            discover(
                DiscoveryRequest(datasets=[spec], methods=["pc"]),
                RunOptions(out_dir=str(tmp_path / "r2")),
                settings=settings,
            )
        )
        / "results.parquet"
    )
    before = json.loads((cases / "stale_truth" / "meta_before.json").read_text())["true_edges"]
    after = json.loads((cases / "stale_truth" / "meta_after.json").read_text())["true_edges"]
    assert df1.loc[0, "n_true_edges"] == len(before) and df2.loc[0, "n_true_edges"] == len(after)
    assert df1.loc[0, "edges"] == df2.loc[0, "edges"] and bool(df2.loc[0, "reused"])  # same graph, from the cache
    # scored against the new truth without --refresh
    from agentcausal.discovery.graphs.metrics import evaluate_graph
    from agentcausal.discovery.outcome import load_outcomes

    pred = load_outcomes(tmp_path / "r2")[0].graph
    for df, edges in ((df1, before), (df2, after)):
        m = evaluate_graph(CausalGraph.from_edges("XYZ", [tuple(e) for e in edges]), pred)
        assert (df.loc[0, "shd"], df.loc[0, "f1"], df.loc[0, "skeleton_f1"]) == pytest.approx(
            (m.shd, m.f1, m.skeleton_f1), nan_ok=True
        )
    assert df1.loc[0, "skeleton_f1"] != df2.loc[0, "skeleton_f1"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_algorithm_timeout_is_not_cached(settings, tmp_path):
    """Exact Search on Child (20 variables) takes minutes (FACTS.md), so a 0.5 s timeout always fires, however
    loaded the machine is (PC on a 3-variable chain can finish inside even 1 ms)."""
    from agentcausal.discovery.outcome import DiscoveryOutcome
    from agentcausal.runs.store import ResultStore
    from flows.discover import discover
    from flows.engine import run_dir_of

    config = DiscoveryConfig(algorithm_timeout_s=0.5)
    for k in (1, 2):
        df = pd.read_parquet(
            Path(
                run_dir_of(  # its row failed: the flow run ends Failed (flows.engine.FailedRows), its folder written
                    lambda: discover(
                        DiscoveryRequest(datasets=["child"], methods=["exact_search"], n=300, config=config),
                        RunOptions(out_dir=str(tmp_path / f"r{k}")),  # noqa: B023 (called at once)
                        settings=settings,
                    )
                )
            )
            / "results.parquet"
        )
        assert df.loc[0, "status"] == "failed" and "timed out" in df.loc[0, "error"]
        assert not df.loc[0, "reused"]  # recomputed on the rerun, never replayed
    assert len(ResultStore(settings.cache_dir, "discover", DiscoveryOutcome)) == 0  # nothing stored, twice
