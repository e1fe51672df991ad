"""The nightly deployments of deploy/prefect.yaml against a real Phoenix server (.venv-phoenix); the fake OpenAI
server (a test double) answers; Prefect's ephemeral API.

* ``my-phoenix-nightly``, run with its own parameters (the window opened, since the test spans carry a fixed
  2024 clock), attributes the project's traces into one run folder; after one more trace reaches Phoenix the
  next run computes that trace only (the results store answers the first).
* ``my-traces-nightly`` over a folder of OTLP JSON, four nights in subprocesses (their whole console captured):
  night 1 twenty traces, a non-UTF-8 file and a trace whose root span is missing (both named, twenty attributed
  and annotated in Phoenix); night 2 nothing new (no request); night 3 five new traces under a spend cap below
  their cost (some computed, the rest held back, never stored); night 4 the rest, nothing paid twice; no
  traceback on any night's console."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.settings import RunSettings
from agentcausal.tracers.phoenix import PhoenixQuery, load_phoenix, read_annotations
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from agentcausal_fakes.spans import genai_spans, openinference_spans, otlp_json
from flows.serve import DEFAULT_FILE, load_flow, load_specs

ROOT = Path(__file__).resolve().parents[2]


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
            "max_cost": None,  # the fake profile has no price: the template's cap over it is refused
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


# --- three nights of the my-traces-nightly deployment: a folder of OTLP JSON, blame annotated in Phoenix ---

NIGHT = """\
import json, sys
from agentcausal.settings import RunSettings
from flows.serve import DEFAULT_FILE, load_flow, load_specs
spec = next(s for s in load_specs(DEFAULT_FILE) if s.name == sys.argv[1])
params = {**spec.parameters, **json.loads(sys.argv[2])}
params["settings"] = RunSettings(**params["settings"])
print("SUMMARY " + json.dumps(load_flow(spec)(**params)))
"""

#: USD per 1000 tokens of the fake profile: one trace's request is about $0.003 (289 + 13 tokens reported)
PRICES = 'price_prompt_per_1k = 0.01\nprice_completion_per_1k = 0.02\nprices_as_of = "2026-01-01"\n'


def _run_doc(i: int) -> dict:
    """One recorded run as an OTLP JSON document (protobuf JSON, base64 ids), its texts numbered so every trace
    renders its own prompt (the reply cache answers none of them for another)."""
    doc = otlp_json(genai_spans(), hex_ids=False)
    for sp in (sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]):
        for a in sp.get("attributes", []):
            v = a.get("value", {})
            if "stringValue" in v:
                v["stringValue"] = v["stringValue"].replace("Plan: 1.", f"Plan (run {i}): 1.")
    return doc


def _post(url: str, doc: dict) -> None:
    """Send an OTLP JSON document to Phoenix as its collector does (OTLP/HTTP protobuf)."""
    import httpx
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    body = ParseDict(doc, ExportTraceServiceRequest()).SerializeToString()
    r = httpx.post(f"{url}/v1/traces", content=body, headers={"content-type": "application/x-protobuf"}, timeout=30)
    assert r.status_code == 200, r.text


def _record(folder, url: str, first: int, n: int) -> list[str]:
    """``n`` runs written to ``folder`` (one OTLP JSON file each) and sent to Phoenix; their trace ids."""
    ids = []
    for i in range(first, first + n):
        doc = _run_doc(i)
        (folder / f"run-{i:02d}.json").write_text(json.dumps(doc))
        _post(url, doc)
        ids.append(base64.b64decode(doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]).hex())
    return ids


def _night(tmp_path, params: dict) -> tuple[dict, str]:
    r = subprocess.run(
        [sys.executable, "-c", NIGHT, "my-traces-nightly", json.dumps(params)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "PREFECT_LOGGING_LEVEL": "INFO",  # a deployment's default: the whole night's console is checked
            "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO",  # whatever an earlier test left in os.environ
        },
    )
    assert r.returncode == 0, r.stderr[-3000:]
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("SUMMARY ")]
    return json.loads(line.removeprefix("SUMMARY ")), r.stdout + r.stderr


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_three_nights_of_the_nightly_deployment_read_skip_attribute_annotate_and_cap(phoenix, tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    night1_ids = _record(folder, phoenix.url, 0, 20)
    (folder / "latin1.json").write_bytes('{"note": "caf\xe9"}'.encode("latin-1"))  # not UTF-8
    rootless = _run_doc(99)  # the run's root span left out of the export: its children name a parent not there
    for ss in (ss for rs in rootless["resourceSpans"] for ss in rs["scopeSpans"]):
        ss["spans"] = [sp for sp in ss["spans"] if sp.get("parentSpanId")]
    (folder / "rootless.json").write_text(json.dumps(rootless))
    _wait(phoenix.url, 20)
    reply = json.dumps({"reason": "took the summit pressure as the boiling point", "agent": "researcher", "step": 2})
    with FakeOpenAIServer(responder=lambda body: reply) as srv:
        toml = tmp_path / "profiles.toml"
        toml.write_text(
            f'[profiles.fake]\nkind = "chat"\nbase_url = "{srv.base_url}"\nmodel = "fake-model"\n'
            f"max_concurrency = 1\ntimeout_s = 5\ncontext_window = 8192\n{PRICES}\n"
            '[routings.default]\ndefault = "fake"\n'
        )
        run_dir = tmp_path / "runs" / "my-traces-nightly"
        params = {
            "paths": [str(folder)],
            "out_dir": str(run_dir),
            "write_back": "phoenix",
            "annotate_url": phoenix.url,
            "chunk_size": 1,  # the cap gates job by job
            "settings": {"profiles_path": str(toml), "cache_dir": str(tmp_path / "cache")},
        }

        # night 1: 20 traces attributed and annotated; the non-UTF-8 file and the rootless trace named, not run
        s1, out1 = _night(tmp_path, params)
        assert (s1["read"], s1["skipped"], s1["new"], s1["attributed"], s1["not_run"]) == (20, 2, 20, 20, 0)
        assert s1["blamed"] == 20 and s1["written"] == 20 and s1["spent_usd"] > 0
        assert len(srv.chat_requests) == 20
        assert f"skipped {folder / 'latin1.json'}: not UTF-8" in out1
        assert "rootless.json trace " in out1 and "is not in the trace" in out1
        spans = _blamed_span_ids(run_dir)
        anns = read_annotations(phoenix.url, "default", spans.values(), names=["decisive_error.all_at_once"])
        assert {a["span_id"] for a in anns} == set(spans.values()) and set(spans) == set(night1_ids)

        # night 2: nothing new: nothing sent, the run folder as it was
        s2, out2 = _night(tmp_path, params)
        assert len(srv.chat_requests) == 20 and s2["attributed"] == 0 and s2["new"] == 0
        assert "nothing new since " in out2

        # night 3: five new traces under a cap below their cost: some computed, the rest held back, not stored
        night3_ids = _record(folder, phoenix.url, 20, 5)
        cap = 0.008  # about 2.5 traces' actual cost; the five cost about $0.016
        s3, out3 = _night(tmp_path, {**params, "max_cost": cap})
        sent3 = len(srv.chat_requests) - 20
        assert s3["new"] == 5 and 1 <= s3["attributed"] < 5 and s3["not_run"] == 5 - s3["attributed"]
        assert sent3 == s3["attributed"] and s3["spent_usd"] <= cap

        # night 4, no cap: the rest, nothing paid twice
        s4, out4 = _night(tmp_path, params)
        assert len(srv.chat_requests) - 20 - sent3 == s3["not_run"] == s4["attributed"]
        assert s4["not_run"] == 0 and s4["blamed"] == 25 and s4["written"] == 25
        assert set(_blamed_span_ids(run_dir)) == set(night1_ids) | set(night3_ids)
    for out in (out1, out2, out3, out4):
        assert "Traceback" not in out  # a successful night's console carries no traceback
    job_usd = s3["spent_usd"] / s3["attributed"]  # the gate admits by each job's expected cost (runs/budget.py)
    assert s3["spent_usd"] >= cap - job_usd, f"night 3 stopped at ${s3['spent_usd']:.4f} of ${cap}, over a job short"


def _blamed_span_ids(run_dir) -> dict[str, str]:
    """trace id -> blamed span id of a run folder's results."""
    df = pd.read_parquet(run_dir / "results.parquet")
    df = df[df["span_id"].notna()]
    return dict(zip(df["trace_id"], df["span_id"], strict=True))
