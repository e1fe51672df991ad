"""The ``attribute`` flow end to end on the fake server (test double) and Prefect's ephemeral API:
results, report, artifacts, and cache reuse across two flow runs."""

import json
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.runs.options import RunOptions
from agentcausal.settings import RunSettings

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"

REPLIES = {
    "AllAtOnceReply": {"reason": "wrong conversion", "agent": "Conversion_Expert", "step": 2},
    "StepVerdict": {"reason": "yes", "decisive": True},
    "StepErrorVerdict": {"error": True, "reason": "yes"},
    "HalfChoice": {"reason": "r", "part": "first"},
    "PaperHalfChoice": {"half": "upper half", "reason": "r"},
}


def _responder(body):
    fmt = body["response_format"]["json_schema"]
    reply = dict(REPLIES[fmt["name"]])
    agents = fmt["schema"]["properties"].get("agent", {})
    choices = next((a["enum"] for a in agents.get("anyOf", [agents]) if "enum" in a), None)
    if choices and reply.get("agent") not in choices:  # the agent enum lists the trace's own agents
        reply["agent"] = choices[0]
    return json.dumps(reply)


@pytest.fixture
def fake_settings(fake_server, tmp_path):
    """RunSettings routing every stage to the fake server, caches in a temp folder."""
    fake_server.responder = _responder
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        'max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
    )
    return RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / "cache"))


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_attribute_flow_writes_run_and_reuses_cache(fake_server, fake_settings, tmp_path):
    from flows.attribute import attribute

    corpus = [str(EXAMPLES / "wrong_unit_at_step_2.json"), str(EXAMPLES / "bad_plan_at_step_0.json")]
    methods = ["all_at_once", "step_by_step", "binary_search"]
    run1 = attribute(
        AttributionRequest(paths=corpus, methods=methods),
        RunOptions(out_dir=str(tmp_path / "run1")),
        settings=fake_settings,
    )
    first = fake_server.count
    # all_at_once 1 + step_by_step 1 (first yes at step 0) + binary_search ceil(log2 n) per trace
    assert first == 2 * (1 + 1) + 3 + 2

    df = pd.read_parquet(Path(run1) / "results.parquet")
    assert len(df) == 6 and set(df["method"]) == set(methods)
    row = df[(df.method == "all_at_once") & (df.trace_id == "examples/wrong_unit_at_step_2")].iloc[0]
    assert bool(row["both_correct"]) and row["requests"] == 1
    report = (Path(run1) / "report.md").read_text()
    assert "## Accuracy" in report and "all_at_once" in report

    # second run, new run folder: every attribution comes from Prefect's persisted cache
    run2 = attribute(
        AttributionRequest(paths=corpus, methods=methods),
        RunOptions(out_dir=str(tmp_path / "run2")),
        settings=fake_settings,
    )
    assert fake_server.count == first, "second run made LLM requests"
    df2 = pd.read_parquet(Path(run2) / "results.parquet")
    # identical records (same seconds, requests > 0): the task did not rerun, not even from the LLM cache
    key = ["trace_id", "method"]
    pd.testing.assert_frame_equal(
        df.sort_values(key)[["seconds", "requests", "pred_step"]].reset_index(drop=True),
        df2.sort_values(key)[["seconds", "requests", "pred_step"]].reset_index(drop=True),
    )

    # changing a setting changes the key: all_at_once reruns (served by the LLM cache or the server)
    run3 = attribute(
        AttributionRequest(paths=corpus, methods=["all_at_once"], with_ground_truth=False),
        RunOptions(out_dir=str(tmp_path / "run3")),
        settings=fake_settings,
    )
    df3 = pd.read_parquet(Path(run3) / "results.parquet")
    assert fake_server.count == first + 2
    assert all(json.loads(s)["with_ground_truth"] is False for s in df3["settings_json"])


def test_flow_rejects_unknown_method_before_any_call(fake_server, fake_settings, tmp_path):
    from agentcausal.exceptions import ConfigError
    from flows.attribute import attribute

    with pytest.raises(ConfigError, match="unknown attribution method"):
        attribute.fn(
            AttributionRequest(paths=[str(EXAMPLES)], methods=["nope"]),
            RunOptions(out_dir=str(tmp_path / "r")),
            settings=fake_settings,
        )
    assert fake_server.count == 0


def test_cli_attribute_runs_flow_and_prints_table(fake_server, fake_settings, tmp_path, capsys):
    from agentcausal_cli import main

    rc = main(
        [
            "attribute",
            str(EXAMPLES),
            "-m",
            "all_at_once",
            "--limit",
            "2",
            "--profiles",
            fake_settings.profiles_path,
            "--cache-dir",
            fake_settings.cache_dir,
            "--out",
            str(tmp_path / "run"),
            "--no-ground-truth",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "all_at_once" in out and "Hit@1 ±1" in out and str(tmp_path / "run") in out
    assert fake_server.count == 2
    assert fake_server.chat_requests and all(
        "<answer>" not in r["messages"][1]["content"] for r in fake_server.chat_requests
    )


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_cli_repeats_send_sample_and_store_the_plan(fake_server, fake_settings, tmp_path, capsys):
    from agentcausal_cli import main

    rc = main(
        [
            "attribute",
            str(EXAMPLES / "wrong_unit_at_step_2.json"),
            "-m",
            "all_at_once",
            "--repeats",
            "2",
            "--profiles",
            fake_settings.profiles_path,
            "--cache-dir",
            fake_settings.cache_dir,
            "--out",
            str(tmp_path / "run"),
        ]
    )
    assert rc == 0
    assert fake_server.count == 2  # repeat 1 is a new request (sample=1 in its cache key), not a cache hit
    assert sorted(str(r.get("seed")) for r in fake_server.chat_requests) == ["1", "None"]  # seed = repeat index
    df = pd.read_parquet(tmp_path / "run" / "results.parquet")
    assert sorted(json.loads(d).get("repeat", 0) for d in df["details_json"]) == [0, 1]
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["repeats"] == 2 and meta["preset"] == "small"
    assert meta["plan"]["kind"] == "attribute" and meta["plan"]["repeats"] == 2
    assert meta["plan"]["methods"]["all_at_once"]["settings"]["prompts"] == "small"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_lce_transport_failure_keeps_the_hypothesis_and_is_not_cached(fake_server, fake_settings, tmp_path):
    """GCA answers; every LCE request fails in transport: the row is the GCA hypothesis, marked degraded,
    and the next run asks LCE again (a failure of the run is never cached)."""
    from agentcausal_fakes.responders import BenchResponder
    from flows.attribute import attribute
    from tests.attribution.dcfa.conftest import kind_of

    bench = BenchResponder()

    def responder(body):
        if kind_of(body) in ("correct", "simulation", "ded"):
            raise ConnectionError("LCE endpoint down")  # the fake server drops the connection
        return bench(body)

    fake_server.responder = responder
    toml = Path(fake_settings.profiles_path)
    toml.write_text(
        toml.read_text() + 'embed = "fake-embed"\n\n[profiles.fake-embed]\nkind = "embedding"\n'
        f'base_url = "{fake_server.base_url}"\nmodel = "fake-embed"\n'
    )
    corpus = [str(EXAMPLES / "wrong_unit_at_step_2.json")]
    df = pd.read_parquet(
        Path(
            attribute(
                AttributionRequest(paths=corpus, methods=["dcfa"]),
                RunOptions(out_dir=str(tmp_path / "r1")),
                settings=fake_settings,
            )
        )
        / "results.parquet"
    )
    row = df.iloc[0]
    assert row["status"] == "degraded" and pd.isna(row["error"])
    details = json.loads(row["details_json"])
    assert details["final"]["source"] == "hypothesis" and details["lce"]["cause"] == "run"
    assert row["pred_step"] == details["hypothesis"]["step"]
    lce_asked = sum(kind_of(b) == "correct" for b in fake_server.chat_requests)
    attribute(
        AttributionRequest(paths=corpus, methods=["dcfa"]),
        RunOptions(out_dir=str(tmp_path / "r2")),
        settings=fake_settings,
    )
    assert sum(kind_of(b) == "correct" for b in fake_server.chat_requests) > lce_asked  # not served from cache
