"""The blamed step first, end to end (#21 items 2 and 4) on the OTel GenAI and OpenInference example files, the fake
server (test double) and Prefect's ephemeral API: `attribute … --no-ground-truth` prints each trace's blamed step,
agent, span id, confidence and reason; `show` prints a trace with evidence and fix; report.md and report.html open
on the blamed steps; `compare` on two unlabelled runs with different presets prints the differing settings, κ and
the traces whose blamed step changed."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from agentcausal.traces.importers import import_traces
from agentcausal_cli import main
from agentcausal_fakes.evidence import EvidenceResponder
from agentcausal_fakes.spans import genai_spans, openinference_spans, otlp_json
from tests.report.test_html_report import parse


def _profiles(tmp, base_url):
    toml = tmp / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{base_url}"\nmodel = "fake-model"\n'
        'max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[profiles.emb]\nkind = "embedding"\n'
        f'base_url = "{base_url}"\nmodel = "fake-embed"\n\n[routings.default]\ndefault = "fake"\n'
        'embed = "emb"\n'
    )
    return toml


def _writer_blamed(inner):
    """All-at-Once blames the writer's last step (4); every other reply as ``inner`` gives it."""
    from agentcausal_fakes.responders import schema_name

    def respond(body):
        if schema_name(body) == "AllAtOnceReply":
            return json.dumps({"agent": "writer", "step": 4, "reason": "the writer reported 71 C without a check"})
        return inner(body)

    return respond


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from agentcausal_fakes.fake_openai import FakeOpenAIServer
    from agentcausal_fakes.responders import BenchResponder

    tmp = tmp_path_factory.mktemp("blamed")
    otel, oi = tmp / "otel.json", tmp / "openinference.json"
    otel.write_text(json.dumps(otlp_json(genai_spans())))
    oi.write_text(json.dumps(otlp_json(openinference_spans())))
    out = {"traces": import_traces([otel, oi])}
    with FakeOpenAIServer(responder=EvidenceResponder(BenchResponder())) as srv:
        toml = _profiles(tmp, srv.base_url)
        common = [
            str(otel),
            str(oi),
            "-m",
            "dcfa",
            "-m",
            "all_at_once",
            "--no-ground-truth",
            "--profiles",
            str(toml),
            "--cache-dir",
            str(tmp / "cache"),
            "--no-progress",
        ]
        import contextlib
        import io

        for name, preset, extra in (
            ("a", "small", ["--set", "dcfa.quote_evidence=true", "--set", "all_at_once.quote_evidence=true"]),
            ("b", "paper", []),
        ):
            if name == "b":
                srv.responder = _writer_blamed(srv.responder)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = main(["attribute", *common, "--preset", preset, "--out", str(tmp / name), *extra])
            assert rc == 0
            out[name] = (tmp / name, buf.getvalue())
    return out


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_console_lists_blamed_step_agent_span_confidence_and_reason(runs):
    run, printed = runs["a"]
    df = pd.read_parquet(run / "results.parquet")
    assert df["true_step"].isna().all() and "Accuracy on the labelled traces" not in printed
    assert re.search(r"trace\s+method\s+step\s+agent\s+span id\s+confidence", printed)
    for r in df.itertuples():
        assert r.trace_id in printed and r.span_id in printed and r.pred_agent in printed
        assert r.reason.split()[0] in printed
    dcfa = df[df["method"] == "dcfa"].iloc[0]
    assert dcfa["confidence"] is not pd.NA and f"{dcfa['confidence']:.2f}" in printed
    assert pd.isna(df[df["method"] == "all_at_once"]["confidence"]).all()  # no confidence invented
    assert {t.id for t in runs["traces"]} == set(df["trace_id"])


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_show_prints_one_trace_with_evidence_and_fix(runs, capsys):
    run, _ = runs["a"]
    df = pd.read_parquet(run / "results.parquet")
    dcfa = df[df["method"] == "dcfa"].iloc[0]
    tid = str(dcfa["trace_id"])
    assert main(["show", str(run), tid[:10], "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"trace {tid} · 5 steps · unlabelled")
    assert f"evidence: “{dcfa['evidence']}” (verbatim in step {dcfa['pred_step']})" in out
    fix = json.loads(dcfa["corrected_action"])
    assert "fix:" in out and fix["content"][:20] in out and "outcome:" in out
    assert f"span {dcfa['span_id']}" in out and "ranked:" in out
    assert "At 34 kPa water boils at about 71 C." in out  # the step text
    assert main(["show", str(run)]) == 0
    listing = capsys.readouterr().out
    assert all(t in listing for t in df["trace_id"])
    assert main(["show", str(run), "no-such-trace"]) == 2


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_reports_open_on_the_blamed_steps(runs):
    run, _ = runs["a"]
    md = (run / "report.md").read_text()
    assert md.index("## Blamed steps") < md.index("<details><summary>Run settings") < md.index("## Cost per trace")
    assert "## Accuracy" not in md and "## Per subset" not in md
    tree = parse((run / "report.html").read_text())
    headings = [t for _, t in tree.find("h2")]
    assert headings[0] == "Blamed steps" and "Accuracy" not in headings and "Per subset" not in headings
    assert tree.find("details", class_="facts") and tree.find("table", id="blamed")
    assert tree.find("tr", class_="blame") and tree.find("mark")  # beside the blamed step: reason, evidence, fix


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_compare_unlabelled_runs_with_different_presets(runs, capsys):
    a, _ = runs["a"]
    b, _ = runs["b"]
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| preset | preset | small | paper |" in out
    assert "| settings | dcfa.prompts | small | paper |" in out and "all_at_once.quote_evidence | yes | no" in out
    assert "corpus |" not in out.split("## Agreement")[0]  # the same source files: no corpus difference
    assert "| method | n | same step | 95% CI | chance | κ |" in out
    section = out.split("## Blamed step changed (2)")[1].split("##")[0]
    for t in runs["traces"]:
        assert f"| all_at_once | {t.id} | 0 (planner) | 4 (writer) |" in section
    assert "No shared trace is labelled" in out and "## Metrics" not in out
    page = (b / "compare.html").read_text()
    t0 = runs["traces"][0].id
    assert f"../a/report.html#t-{t0}" in page and f"report.html#t-{t0}" in page
