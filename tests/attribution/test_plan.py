"""``--dry-run``: one JSON plan per verb, for every method and routing, with no request and no API key."""

import json
from pathlib import Path

import pytest

from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal_cli import main

ROOT = Path(__file__).resolve().parents[2]
ROUTINGS = ["default", "embedded-1_5b", "paper", "openai"]
PAPER_ROUTINGS = {"paper", "openai"}
#: per method, the small-model caps: None (no cap) under ``paper``, set under ``small``
SMALL_CAPS = {
    "dcfa": (
        "max_edges",
        "max_deviations",
        "max_iterations",
        "max_corrected_step_chars",
        "max_reason_chars",
        "hg_max_tokens",
        "simulation_max_tokens",
        "ded_max_tokens",
        "judge_max_tokens",
    ),
    "all_at_once": ("max_tokens", "reason_chars"),
    "step_by_step": ("max_tokens", "reason_chars"),
    "binary_search": ("max_tokens", "reason_chars"),
    "a2p": ("max_tokens", "field_chars"),
    "echo": ("max_tokens", "max_candidates", "field_chars", "l2_chars", "l3_chars", "l4_chars"),
}
SMALL_CAPS["dcfa_gca_only"] = SMALL_CAPS["dcfa"]
#: caps the released code itself has: their ``paper`` value is that code's (DCFA's search moves at most 5 times)
RELEASED_CAPS = {"dcfa": {"max_iterations": 5}, "dcfa_gca_only": {"max_iterations": 5}}


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
@pytest.mark.parametrize("method", sorted(ATTRIBUTION_METHODS))
def test_attribute_dry_run_every_method_and_routing(method, routing, capsys, monkeypatch):
    import agentcausal.llm.gateway as gateway

    def forbidden(*a, **k):
        raise AssertionError("a dry run must not build a gateway")

    monkeypatch.setattr(gateway.Gateway, "__init__", forbidden)
    plan = _dry(["attribute", "data/examples", "-m", method, "--routing", routing, "--dry-run"], capsys)
    assert plan["kind"] == "attribute" and plan["repeats"] == 1
    assert {"id", "path", "offset", "sha256", "file_sha256", "facts"} == set(plan["items"][0]) and len(
        plan["items"]
    ) == 4
    assert all(i["facts"]["sha256"] == i["sha256"] and i["facts"]["n_steps"] > 0 for i in plan["items"])
    assert plan["item_count"] == 4
    assert all(Path(i["path"]).is_file() and Path(i["path"]).parent == ROOT / "data/examples" for i in plan["items"])
    m = plan["methods"][method]
    assert plan["routing"] == routing and plan["preset"] == m["preset"]
    assert set(m) == {"preset", "variant", "settings", "stages", "profile_params"} and m["variant"] == "with_truth"
    assert m["preset"] == ("paper" if routing in PAPER_ROUTINGS else "small")
    assert all(":" in v for v in m["stages"].values())
    assert plan["missing_keys"] == (["OPENAI_API_KEY"] if routing in PAPER_ROUTINGS else [])
    caps = {c: m["settings"][c] for c in SMALL_CAPS[method]}
    if routing in PAPER_ROUTINGS:
        released = RELEASED_CAPS.get(method, {})
        assert all(v == released.get(c) for c, v in caps.items()), caps  # paper: no cap the paper's code lacks
    else:
        assert all(v is not None for v in caps.values()), caps  # small keeps them


def test_every_small_cap_is_pinned_and_paper_adds_no_numeric_cap():
    """Every numeric field ``small`` sets is a listed cap, and ``paper`` sets no number of its own."""
    assert set(SMALL_CAPS) == set(ATTRIBUTION_METHODS)
    for method in sorted(ATTRIBUTION_METHODS):
        spec = ATTRIBUTION_METHODS[method]
        small_numbers = {k for k, v in spec.presets["small"].items() if isinstance(v, int) and not isinstance(v, bool)}
        assert small_numbers <= set(SMALL_CAPS[method]) | {"max_tokens"}, (method, small_numbers)
        assert not [k for k, v in spec.presets.get("paper", {}).items() if isinstance(v, int)], method


def test_attribute_dry_run_preset_set_repeats_and_no_truth(capsys):
    plan = _dry(
        [
            "attribute",
            "data/examples",
            "-m",
            "dcfa",
            "--preset",
            "paper",
            "--set",
            "dcfa.max_edges=12",
            "--repeats",
            "3",
            "--no-ground-truth",
            "--limit",
            "2",
            "--dry-run",
        ],
        capsys,
    )
    m = plan["methods"]["dcfa"]
    assert m["preset"] == "paper" and m["settings"]["max_edges"] == 12 and m["settings"]["max_iterations"] == 5
    assert m["variant"] == "no_truth" and "dcfa.embed" not in m["stages"]  # S(i) from a judge, no embedder
    assert plan["repeats"] == 3 and len(plan["items"]) == 2


def test_attribute_dry_run_unknown_preset_is_one_line_exit_2(capsys):
    assert main(["attribute", "data/examples", "--preset", "huge", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown preset 'huge'" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("routing", ROUTINGS)
def test_discover_dry_run(routing, capsys):
    plan = _dry(
        [
            "discover",
            "--dataset",
            "asia",
            "--dataset",
            "auto_mpg",
            "-m",
            "mac",
            "-m",
            "pc",
            "--routing",
            routing,
            "--dry-run",
        ],
        capsys,
    )
    assert plan["kind"] == "discover" and plan["anonymise"] == ["none"]  # not asked: --anonymise's default
    items = {i["id"]: i for i in plan["items"]}
    assert items["asia"]["d"] == 8 and items["asia"]["n"] == 1000 and items["auto_mpg"]["d"] == 5
    assert len(items["asia"]["sha256"]) == 64
    assert set(plan["methods"]) == {"mac", "pc"} and plan["methods"]["pc"]["stages"] == {}
    assert plan["methods"]["mac"]["preset"] == ("paper" if routing in PAPER_ROUTINGS else "small")
    assert plan["missing_keys"] == (["OPENAI_API_KEY"] if routing in PAPER_ROUTINGS else [])
    assert plan["routing"] == routing and plan["preset"] == plan["methods"]["mac"]["preset"]
    assert plan["seeds"] == [0] and plan["n"] == 1000 and plan["repeats"] == 1
    assert all(Path(i["path"]).is_absolute() and Path(i["path"]).is_file() for i in plan["items"])


def test_discover_dry_run_shows_each_variant_and_baseline_as_it_runs(capsys):
    from agentcausal.discovery.config import DiscoveryConfig
    from agentcausal.discovery.method_settings import mac_settings
    from agentcausal.discovery.variants import variant
    from agentcausal.registry import DISCOVERY_METHODS

    LLM_METHODS = [m for m in DISCOVERY_METHODS if DISCOVERY_METHODS[m].needs_llm]

    plan = _dry(
        [
            "discover",
            "-d",
            "earthquake",
            *[a for m in LLM_METHODS for a in ("-m", m)],
            "--seeds",
            "3",
            "4",
            "--n",
            "500",
            "--repeats",
            "2",
            "--dry-run",
        ],
        capsys,
    )
    assert plan["seeds"] == [3, 4] and plan["n"] == 500 and plan["repeats"] == 2
    s = {m: x["settings"] for m, x in plan["methods"].items()}
    assert (s["mac"]["stages"], s["mac"]["single_agent"]) == ("full", False)
    assert (s["mac_single"]["stages"], s["mac_single"]["single_agent"]) == ("full", True)
    assert s["dcm_only"]["stages"] == "dcm_only" and s["mdm_only"]["stages"] == "mdm_only"
    # every LLM method adds the temperature its calls use in this run (seeds x repeats > 1: the preset's)
    assert all(s[m].pop("temperature_used") == (0.7 if m != "llm_scd" else s[m]["temperature"]) for m in LLM_METHODS)
    assert all(s[m].pop("temperature_from").startswith("setting") for m in LLM_METHODS)
    # what the paper leaves unspecified is named with its value (MAC and ReAct)
    assert all(
        "paper: unspecified" in v
        for m in ("mac", "mac_single", "dcm_only", "mdm_only", "react")
        for v in s[m].pop("paper_unspecified").values()
    )
    for m in ("mac", "mac_single", "dcm_only", "mdm_only"):  # what the run hands run_mac
        assert s[m] == mac_settings(
            variant(DISCOVERY_METHODS, m),
            DiscoveryConfig(mac=DiscoveryConfig.model_fields["mac"].annotation(**{k: v for k, v in s["mac"].items()})),
        ).model_dump(mode="json")
    for m in ("react", "llm_scd", "ils_csl"):
        assert set(s[m]) == set(DiscoveryConfig.model_fields[m].annotation.model_fields) and "rounds" not in s[m]
    assert set(s["llm_zero_shot"]) == {"max_tokens_scale", "edges_per_variable", "sampling_temperature"}


def test_discover_dry_run_anonymised_method_names_its_mode(capsys):
    plan = _dry(["discover", "-d", "earthquake", "-m", "react", "--anonymise", "names", "--dry-run"], capsys)
    assert plan["methods"]["react@names"]["settings"]["anonymise"] == "names"


def test_discover_set_reaches_the_plan_and_checks_names(capsys):
    plan = _dry(
        [
            "discover",
            "-d",
            "earthquake",
            "-m",
            "dcm_only",
            "-m",
            "react",
            "--set",
            "mac.rounds=2",
            "--set",
            "react.max_steps=6",
            "--dry-run",
        ],
        capsys,
    )
    assert plan["methods"]["dcm_only"]["settings"]["rounds"] == 2
    assert plan["methods"]["react"]["settings"]["max_steps"] == 6
    for bad, words in (
        ("mac.nope=1", "valid: prompts, stages"),
        ("pc.alpha=1", "mac, react"),
        ("mac.rounds=9", "rounds"),
        ("mac.executor=coding", "--executor"),
    ):
        assert main(["discover", "-d", "earthquake", "--set", bad, "--dry-run"]) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1


def test_attribute_plan_file_hash_tells_relabelled_copies_apart(tmp_path, capsys):
    src = json.loads((ROOT / "data/examples/wrong_unit_at_step_2.json").read_text())
    for name, agent in (("a", "Math_Expert"), ("b", "Conversion_Expert")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "t.json").write_text(json.dumps({**src, "mistake_agent": agent}))
    one = _dry(["attribute", str(tmp_path / "a"), "--dry-run"], capsys)["items"][0]
    two = _dry(["attribute", str(tmp_path / "b" / "t.json"), "--dry-run"], capsys)["items"][0]
    assert one["path"] == str(tmp_path / "a" / "t.json") and two["path"] == str(tmp_path / "b" / "t.json")
    assert one["sha256"] == two["sha256"]  # the trace's content: the label is not part of it
    assert one["file_sha256"] != two["file_sha256"]


def test_attribute_dry_run_jsonl_items_name_the_file(tmp_path, capsys):
    from agentcausal.traces.io import load_traces
    from agentcausal.traces.jsonl import write_jsonl

    f = write_jsonl(load_traces(["data/examples"])[:2], tmp_path / "two.jsonl")
    items = _dry(["attribute", "data/examples/wrong_unit_at_step_2.json", str(f), "--dry-run"], capsys)["items"]
    # absolute although given relative (the cwd is ROOT): run.json read from elsewhere still names the file
    assert [i["path"] for i in items] == [str(ROOT / "data/examples/wrong_unit_at_step_2.json"), str(f), str(f)]
    assert items[1]["file_sha256"] == items[2]["file_sha256"] != items[1]["sha256"]


def _truthless(tmp_path):
    from agentcausal.traces.io import load_traces
    from agentcausal.traces.jsonl import write_jsonl

    t = load_traces(["data/examples"])[0]
    return write_jsonl([t.model_copy(update={"ground_truth": ""})], tmp_path / "nogt.jsonl")


def test_dry_run_refuses_traces_without_ground_truth_like_the_run(tmp_path, capsys):
    f = _truthless(tmp_path)
    assert main(["attribute", str(f), "-m", "all_at_once", "--dry-run"]) == 2
    dry = capsys.readouterr()
    assert dry.out == "" and "have no ground truth" in dry.err and len(dry.err.strip().splitlines()) == 1
    out = tmp_path / "run"
    assert main(["attribute", str(f), "-m", "all_at_once", "--out", str(out)]) == 2
    assert capsys.readouterr().err == dry.err and not out.exists()
    assert _dry(["attribute", str(f), "-m", "all_at_once", "--no-ground-truth", "--dry-run"], capsys)["items"]


def test_refused_imported_run_leaves_no_run_folder(tmp_path, capsys):
    from agentcausal_fakes.spans import genai_spans, otlp_json

    f = tmp_path / "spans.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    out = tmp_path / "run"
    assert main(["attribute", str(f), "-m", "all_at_once", "--dry-run"]) == 2
    assert "have no ground truth" in capsys.readouterr().err
    assert main(["attribute", str(f), "-m", "all_at_once", "--out", str(out)]) == 2
    assert "have no ground truth" in capsys.readouterr().err and not out.exists()


def test_demo_unknown_preset_fails_before_any_work(capsys, monkeypatch):
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_EMBEDDED_THREADS", "1")  # the demo sets it otherwise
    assert main(["demo", "--preset", "huge"]) == 2
    assert "unknown preset 'huge'" in capsys.readouterr().err


def test_attribute_dry_run_on_an_imported_format_writes_nothing(tmp_path, capsys):
    from agentcausal_fakes.spans import genai_spans, otlp_json

    f = tmp_path / "spans.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    out = tmp_path / "run"
    plan = _dry(["attribute", str(f), "-m", "dcfa", "--no-ground-truth", "--out", str(out), "--dry-run"], capsys)
    assert len(plan["items"]) == 1 and plan["items"][0]["path"] == str(f)
    assert plan["methods"]["dcfa"]["variant"] == "no_truth"
    assert not out.exists()  # a dry run imports in memory only


def test_imported_corpus_records_its_source_and_labels_files(tmp_path, capsys, monkeypatch):
    import hashlib

    import flows.attribute
    from agentcausal_fakes.spans import genai_spans, otlp_json

    f = tmp_path / "spans.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    from agentcausal.traces.importers import import_traces

    tid = import_traces([f])[0].id
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"trace_id": tid, "ground_truth": "71 C", "mistake_step": 1}) + "\n")
    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (f, labels)}
    dry = _dry(["attribute", str(f), "--labels", str(labels), "-m", "all_at_once", "--dry-run"], capsys)
    assert dry["sources"] == [{"path": str(f), "sha256": sha[f], "format": "otel"}]
    assert dry["labels"] == {"path": str(labels), "sha256": sha[labels], "format": "labels"}
    calls = {}

    def fake_run(plan, run, **kw):  # the plan.json, the run options
        calls.update(plan=plan, **kw)
        return run.out_dir

    monkeypatch.setattr(flows.attribute, "run_attribute", fake_run)
    monkeypatch.setattr("agentcausal_cli.attribute.print_attribution_run", lambda run_dir: 0)
    run = tmp_path / "run"
    assert main(["attribute", str(f), "--labels", str(labels), "-m", "all_at_once", "--out", str(run)]) == 0
    from agentcausal.plans import read_any_plan

    plan = read_any_plan(calls["plan"]).to_json_dict()  # the plan.json the run reads; what run.json stores as "plan"
    assert plan["items"][0]["path"] == str(run / "traces.jsonl")  # the run reads the imported copy
    assert plan["sources"] == dry["sources"] and plan["labels"] == dry["labels"]
    # a corpus that is not imported has neither key
    assert not {"sources", "labels"} & set(_dry(["attribute", "data/examples", "--dry-run"], capsys))


@pytest.mark.parametrize("routing", ["paper", "default"])
def test_plan_shows_what_the_profile_applies_where_a_setting_is_null(routing, capsys):
    from agentcausal.llm.profiles import load_profiles

    profiles = load_profiles(None, routing)
    plan = _dry(
        [
            "discover",
            "-d",
            "earthquake",
            "-m",
            "mac",
            "-m",
            "llm_zero_shot",
            "-m",
            "pc",
            "--seeds",
            "0",
            "1",
            "--routing",
            routing,
            "--dry-run",
        ],
        capsys,
    )
    for name in ("mac", "llm_zero_shot"):
        m = plan["methods"][name]
        stage_profiles = [profiles.profile_for(st) for st in m["stages"]]
        assert m["profile_params"] == {
            st: {
                "temperature": p.temperature if p.temperature_allowed else None,
                "max_output_tokens": p.max_output_tokens,
                **p.dialect(),
            }
            for st, p in zip(m["stages"], stage_profiles)
        }
        if m["settings"]["sampling_temperature"] is not None:  # small: the preset samples at its own value
            assert m["settings"]["temperature_used"] == m["settings"]["sampling_temperature"]
            assert m["settings"]["temperature_from"].startswith("setting")
        else:  # paper: the profile's temperature, named as such (never a bare null)
            assert m["settings"]["temperature_from"] == "profile"
            assert m["settings"]["temperature_used"] == stage_profiles[0].temperature
    assert "temperature_used" not in plan["methods"]["pc"]["settings"] and plan["methods"]["pc"]["profile_params"] == {}
    att = _dry(["attribute", "data/examples", "-m", "all_at_once", "--routing", routing, "--dry-run"], capsys)
    m = att["methods"]["all_at_once"]
    for st, params in m["profile_params"].items():  # the ceiling a null max_tokens leaves
        assert params["max_output_tokens"] == profiles.profile_for(st).max_output_tokens
    assert set(m["profile_params"]) == set(m["stages"])
