"""Cheap reruns of the ``attribute`` flow on the fake server (test double): a finished corpus reruns without a
task run per item and without a request; adding a method runs only that method; ``--retry-failed`` recomputes
content failures; chunk tasks give the same rows as one task per item."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import agentcausal.attribution.jobs as jobs_mod
import agentcausal.runs.scheduling as scheduling
from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.runs.options import RunOptions
from agentcausal.settings import RunSettings
from agentcausal.traces.io import load_traces
from tests.conftest import EXAMPLES, REPLIES, write_profiles

CORPUS = [str(EXAMPLES / "wrong_unit_at_step_2.json"), str(EXAMPLES / "bad_plan_at_step_0.json")]
KEY = ["trace_id", "method"]


def _responder(body):
    """The scripted reply, its agent one the schema allows (the reply schema lists each trace's agents)."""
    schema = body["response_format"]["json_schema"]
    reply = dict(REPLIES[schema["name"]])
    enums = re.findall(r'"enum": \[("[^"]+")', json.dumps(schema))  # the agent enum, wherever the schema nests it
    if "agent" in reply and enums and json.dumps(reply["agent"]) not in enums:
        reply["agent"] = json.loads(enums[0])
    return json.dumps(reply)


@pytest.fixture
def settings(fake_server, tmp_path):
    fake_server.responder = _responder
    return RunSettings(
        profiles_path=write_profiles(tmp_path / "profiles.toml", fake_server.base_url),
        cache_dir=str(tmp_path / "cache"),
    )


class Spy:
    """Stands in for a flow's chunk task: records the method of every job it is given, then delegates."""

    def __init__(self, task):
        self.task, self.methods = task, []

    def submit(self, chunk, *a, **kw):
        c = chunk.unquote() if hasattr(chunk, "unquote") else chunk
        self.methods += [c.method] * len(c.jobs)
        return self.task.submit(chunk, *a, **kw)


def _frame(run_dir) -> pd.DataFrame:
    return pd.read_parquet(Path(run_dir) / "results.parquet").sort_values(KEY).reset_index(drop=True)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_finished_corpus_reruns_without_task_runs_or_requests(fake_server, settings, tmp_path, monkeypatch):
    import flows.attribute as fa

    run1 = fa.attribute(
        AttributionRequest(paths=CORPUS, methods=["all_at_once", "binary_search"]),
        RunOptions(out_dir=str(tmp_path / "r1"), chunk_size=1),
        settings=settings,
    )
    first = fake_server.count
    assert first > 0
    spy_chunk = Spy(fa.attribute_chunk)
    monkeypatch.setattr(fa, "attribute_chunk", spy_chunk)

    def no_reread(item):
        raise AssertionError(f"trace {item.id} read again to score it: the plan holds its facts")

    with monkeypatch.context() as m:  # scoring the rerun reads the plan's facts of each trace, no trace file
        m.setattr(jobs_mod, "load_trace_item", no_reread)
        run2 = fa.attribute(
            AttributionRequest(paths=CORPUS, methods=["all_at_once", "binary_search"]),
            RunOptions(out_dir=str(tmp_path / "r2"), chunk_size=1),
            settings=settings,
        )
    assert fake_server.count == first and spy_chunk.methods == []
    a, b = _frame(run1), _frame(run2)
    assert not a["reused"].any() and b["reused"].all()
    traces = {t.id: t for t in load_traces(CORPUS)}  # the facts scored as the traces themselves score
    for r in b.itertuples():
        t = traces[r.trace_id]
        assert (r.n_steps, r.true_step, r.true_agent, r.subset, r.trace_hash) == (
            len(t),
            t.label.step,
            t.label.agent,
            t.source,
            t.content_hash(),
        )
    paid = ["reused"] + [c for c in a.columns if c.startswith("run_")]  # what this run paid: nothing now
    assert (b["run_requests"] == 0).all()
    pd.testing.assert_frame_equal(a.drop(columns=paid), b.drop(columns=paid))

    # one method more: only that method is submitted, and only its requests are made
    run3 = fa.attribute(
        AttributionRequest(paths=CORPUS, methods=["all_at_once", "binary_search", "step_by_step"]),
        RunOptions(out_dir=str(tmp_path / "r3"), chunk_size=1),
        settings=settings,
    )
    assert spy_chunk.methods == ["step_by_step", "step_by_step"]
    new = fake_server.chat_requests[first:]
    assert len(new) == 2 and all(r["response_format"]["json_schema"]["name"] == "StepVerdict" for r in new)
    c = _frame(run3)
    assert len(c) == 6 and set(c[c.reused]["method"]) == {"all_at_once", "binary_search"}
    assert not c[c.method == "step_by_step"]["reused"].any()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_retry_failed_recomputes_content_failures_and_chunks_match_items(fake_server, settings, tmp_path, monkeypatch):
    import flows.attribute as fa
    from flows.attribute import attribute

    monkeypatch.setattr(scheduling, "chunk_length", lambda n, size: size)  # chunks even of a 2-trace corpus
    spy = Spy(fa.attribute_chunk)
    monkeypatch.setattr(fa, "attribute_chunk", spy)

    fake_server.responder = lambda body: "no JSON here"
    run1 = attribute(
        AttributionRequest(paths=CORPUS, methods=["all_at_once"]),
        RunOptions(out_dir=str(tmp_path / "r1"), chunk_size=4),
        settings=settings,
    )
    assert set(_frame(run1)["status"]) == {"content_failed"} and spy.methods == ["all_at_once"] * 2
    fake_server.responder = _responder
    plain = attribute(
        AttributionRequest(paths=CORPUS, methods=["all_at_once"]),
        RunOptions(out_dir=str(tmp_path / "r2"), chunk_size=4),
        settings=settings,
    )
    p = _frame(plain)
    assert set(p["status"]) == {"content_failed"} and p["reused"].all()  # a plain rerun reuses them
    n = fake_server.count
    retry = settings.model_copy(update={"retry_failed": True})
    run3 = attribute(
        AttributionRequest(paths=CORPUS, methods=["all_at_once"]),
        RunOptions(out_dir=str(tmp_path / "r3"), chunk_size=4),
        settings=retry,
    )
    r = _frame(run3)
    assert set(r["status"]) == {"complete"} and not r["reused"].any() and fake_server.count == n + 2
    # per-item tasks on a fresh cache give the same rows as the chunk tasks
    fresh = settings.model_copy(update={"cache_dir": str(tmp_path / "cache2")})
    items = _frame(
        attribute(
            AttributionRequest(paths=CORPUS, methods=["all_at_once"]),
            RunOptions(out_dir=str(tmp_path / "r4"), chunk_size=1),
            settings=fresh,
        )
    )
    cols = ["trace_id", "method", "pred_step", "pred_agent", "status", "requests"]
    pd.testing.assert_frame_equal(r[cols], items[cols])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_finished_discovery_reruns_without_task_runs(fake_server, tmp_path, monkeypatch):
    import flows.discover as fd
    from tests.discovery.conftest import mac_responder

    edges = (("Burglary", "Alarm"), ("Earthquake", "Alarm"), ("Alarm", "JohnCalls"), ("Alarm", "MaryCalls"))
    fake_server.responder = mac_responder(affirmative_edges=edges, negative_edges=edges[:2])
    settings = RunSettings(
        profiles_path=write_profiles(tmp_path / "profiles.toml", fake_server.base_url),
        cache_dir=str(tmp_path / "cache"),
    )
    kw = dict(datasets=["earthquake"], seeds=[0], n=300)
    run1 = fd.discover(
        DiscoveryRequest(methods=["llm_zero_shot", "pc"], **kw),
        RunOptions(out_dir=str(tmp_path / "r1")),
        settings=settings,
    )
    first = fake_server.count
    spy = Spy(fd.discover_chunk)
    monkeypatch.setattr(fd, "discover_chunk", spy)
    run2 = fd.discover(
        DiscoveryRequest(methods=["llm_zero_shot", "pc", "ges"], **kw),
        RunOptions(out_dir=str(tmp_path / "r2")),
        settings=settings,
    )
    assert spy.methods == ["ges"] and fake_server.count == first
    a = pd.read_parquet(Path(run1) / "results.parquet").set_index("method")
    b = pd.read_parquet(Path(run2) / "results.parquet").set_index("method")
    assert b.loc[["llm_zero_shot", "pc"], "reused"].all() and not b.loc["ges", "reused"]
    assert (a["shd"] == b.loc[a.index, "shd"]).all() and (a["seconds"] == b.loc[a.index, "seconds"]).all()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_401_inside_a_chunk_fails_one_row_and_the_next_run_repeats_only_it(
    fake_server, settings, tmp_path, monkeypatch
):
    import flows.attribute as fa
    from flows.engine import run_dir_of

    monkeypatch.setattr(scheduling, "chunk_length", lambda n, size: size)  # one chunk of both traces
    fake_server.inject(401)  # the first request: not retried (retry_transport), never cached
    r1 = _frame(  # a row failed: the flow run ends Failed (flows.engine.FailedRows), its run folder written
        run_dir_of(
            lambda: fa.attribute(
                AttributionRequest(paths=CORPUS, methods=["all_at_once"]),
                RunOptions(out_dir=str(tmp_path / "r1"), chunk_size=2),
                settings=settings,
            )
        )
    )
    assert sorted(r1["status"]) == ["complete", "failed"] and fake_server.count == 2
    ok = r1.loc[r1.status == "complete", "trace_id"].item()
    r2 = _frame(
        fa.attribute(
            AttributionRequest(paths=CORPUS, methods=["all_at_once"]),
            RunOptions(out_dir=str(tmp_path / "r2"), chunk_size=2),
            settings=settings,
        )
    )
    assert set(r2["status"]) == {"complete"} and fake_server.count == 3  # only the failed trace asked again
    assert r2.set_index("trace_id")["reused"].to_dict() == {t: t == ok for t in r2["trace_id"]}
