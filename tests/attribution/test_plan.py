"""``--dry-run``: one JSON plan per verb, for every method and routing, with no request and no API key."""

import json
from pathlib import Path

import pytest

from agentcausal.attribution.registry import method_names
from agentcausal.cli import main

ROOT = Path(__file__).resolve().parents[2]
ROUTINGS = ["default", "embedded-1_5b", "paper", "openai"]
PAPER_ROUTINGS = {"paper", "openai"}
SMALL_CAPS = ("max_edges", "max_deviations", "max_iterations", "max_corrected_step_chars")


def _dry(argv, capsys):
    assert main(argv) == 0
    out = capsys.readouterr().out
    return json.loads(out)  # exactly one JSON object on stdout


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    monkeypatch.chdir(ROOT)
    for var in ("OPENAI_API_KEY", "VLLM_API_KEY", "AGENTCAUSAL_ROUTING", "AGENTCAUSAL_PROFILES"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize("routing", ROUTINGS)
@pytest.mark.parametrize("method", method_names())
def test_attribute_dry_run_every_method_and_routing(method, routing, capsys, monkeypatch):
    import agentcausal.llm.gateway as gateway

    def forbidden(*a, **k):
        raise AssertionError("a dry run must not build a gateway")

    monkeypatch.setattr(gateway.Gateway, "__init__", forbidden)
    plan = _dry(["attribute", "data/examples", "-m", method, "--routing", routing, "--dry-run"], capsys)
    assert plan["kind"] == "attribute" and plan["repeats"] == 1
    assert {"id", "path", "sha256"} == set(plan["items"][0]) and len(plan["items"]) == 4
    m = plan["methods"][method]
    assert set(m) == {"preset", "variant", "settings", "stages"} and m["variant"] == "with_truth"
    assert m["preset"] == ("paper" if routing in PAPER_ROUTINGS else "small")
    assert all(":" in v for v in m["stages"].values())
    assert plan["missing_keys"] == (["OPENAI_API_KEY"] if routing in PAPER_ROUTINGS else [])
    if method.startswith("dcfa"):
        caps = [m["settings"][c] for c in SMALL_CAPS]
        assert all(c is None for c in caps) if routing in PAPER_ROUTINGS else all(c is not None for c in caps)


def test_attribute_dry_run_preset_set_repeats_and_no_truth(capsys):
    plan = _dry(["attribute", "data/examples", "-m", "dcfa", "--preset", "paper", "--set", "dcfa.max_edges=12",
                 "--repeats", "3", "--no-ground-truth", "--limit", "2", "--dry-run"], capsys)
    m = plan["methods"]["dcfa"]
    assert m["preset"] == "paper" and m["settings"]["max_edges"] == 12 and m["settings"]["max_iterations"] is None
    assert m["variant"] == "no_truth" and "dcfa.embed" not in m["stages"]  # S(i) from a judge, no embedder
    assert plan["repeats"] == 3 and len(plan["items"]) == 2


def test_attribute_dry_run_unknown_preset_is_one_line_exit_2(capsys):
    assert main(["attribute", "data/examples", "--preset", "huge", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown preset 'huge'" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("routing", ROUTINGS)
def test_discover_dry_run(routing, capsys):
    plan = _dry(["discover", "--dataset", "asia", "--dataset", "auto_mpg", "-m", "mac", "-m", "pc",
                 "--routing", routing, "--dry-run"], capsys)
    assert plan["kind"] == "discover" and plan["anonymise"] == []
    items = {i["id"]: i for i in plan["items"]}
    assert items["asia"]["d"] == 8 and items["asia"]["n"] == 1000 and items["auto_mpg"]["d"] == 5
    assert len(items["asia"]["sha256"]) == 64
    assert set(plan["methods"]) == {"mac", "pc"} and plan["methods"]["pc"]["stages"] == {}
    assert plan["methods"]["mac"]["preset"] == ("paper" if routing in PAPER_ROUTINGS else "small")
    assert plan["missing_keys"] == (["OPENAI_API_KEY"] if routing in PAPER_ROUTINGS else [])


def test_demo_unknown_preset_fails_before_any_work(capsys, monkeypatch):
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_EMBEDDED_THREADS", "1")  # the demo sets it otherwise
    assert main(["demo", "--preset", "huge"]) == 2
    assert "unknown preset 'huge'" in capsys.readouterr().err


def test_attribute_dry_run_on_an_imported_format_writes_nothing(tmp_path, capsys):
    from tests.traces.importers.conftest import genai_spans, otlp_json

    f = tmp_path / "spans.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    out = tmp_path / "run"
    plan = _dry(["attribute", str(f), "-m", "dcfa", "--no-ground-truth", "--out", str(out), "--dry-run"], capsys)
    assert len(plan["items"]) == 1 and plan["items"][0]["path"] == str(f)
    assert plan["methods"]["dcfa"]["variant"] == "no_truth"
    assert not out.exists()  # a dry run imports in memory only
