"""The ``my-phoenix-nightly`` template of deploy/prefect.yaml against a real Phoenix server (.venv-phoenix): run
with its own parameters (the window opened, since the test spans carry a fixed 2024 clock) it attributes the
project's traces into one run folder; after one more trace reaches Phoenix the next run computes that trace only
(the results store answers the first). The fake OpenAI server (a test double) answers; Prefect's ephemeral API."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from agentcausal.settings import RunSettings
from agentcausal.tracers.phoenix import PhoenixQuery, load_phoenix
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from agentcausal_fakes.spans import genai_spans, openinference_spans
from flows.serve import DEFAULT_FILE, load_flow, load_specs


def _send(url: str, spans: list) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    assert OTLPSpanExporter(endpoint=f"{url}/v1/traces").export(spans) == SpanExportResult.SUCCESS


def _wait(url: str, n: int) -> None:
    deadline = time.monotonic() + 30
    while len(load_phoenix(PhoenixQuery(url), skip_invalid=True)) < n:  # Phoenix inserts spans in the background
        assert time.monotonic() < deadline, f"Phoenix never held {n} traces"
        time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_phoenix_nightly_template_computes_only_new_traces(phoenix, tmp_path):
    (spec,) = [s for s in load_specs(DEFAULT_FILE) if s.name == "my-phoenix-nightly"]
    flow = load_flow(spec)
    _send(phoenix.url, genai_spans())
    _wait(phoenix.url, 1)
    reply = json.dumps({"reason": "took the summit pressure as the boiling point", "agent": "researcher", "step": 2})
    with FakeOpenAIServer(responder=lambda body: reply) as srv:
        toml = tmp_path / "profiles.toml"
        toml.write_text(
            f'[profiles.fake]\nkind = "chat"\nbase_url = "{srv.base_url}"\nmodel = "fake-model"\n'
            "max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n"
            '[routings.default]\ndefault = "fake"\n'
        )
        run_dir = tmp_path / "runs" / "phoenix-nightly"
        params = {
            **spec.parameters,
            "url": phoenix.url,
            "since": None,
            "span_filter": None,
            "out_dir": str(run_dir),
            "settings": RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / "cache")),
        }
        flow(**params)
        first = len(srv.chat_requests)
        assert first == 1
        _send(phoenix.url, openinference_spans())  # one more trace recorded since
        _wait(phoenix.url, 2)
        flow(**params)
        # the new trace renders to the same prompt as the first (the same run in the other convention), so the
        # LLM reply cache may answer it; the results store answered the first trace alone
        assert len(srv.chat_requests) - first <= 1
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["rows"]["total"] == 2 and meta["rows"]["from_store"] == 1
    df = pd.read_parquet(run_dir / "results.parquet")
    assert len(df) == 2 and set(df["pred_step"]) == {2} and df["trace_id"].nunique() == 2
    assert meta["name"] == "my-phoenix-nightly" and meta["phoenix"]["phoenix"] == phoenix.url
