"""deploy/prefect.yaml: it loads, names real flow entrypoints, and its parameters fit those flows;
``agentcausal serve`` lists it and refuses to serve without a Prefect server."""

from pathlib import Path

import pytest

from agentcausal.exceptions import ConfigError
from flows.serve import DEFAULT_FILE, load_flow, load_specs, runner_deployments

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
deployments:
  - name: tiny
    entrypoint: flows/attribute.py:attribute
    parameters: {plan: {paths: ["data/examples"], methods: ["all_at_once"], limit: 1}}
    schedules: [{cron: "*/5 * * * *"}]
"""


def test_shipped_file_names_real_flows_with_fitting_parameters():
    specs = load_specs(DEFAULT_FILE)  # imports every flow, validates parameters and cron expressions
    by_flow = {}
    for s in specs:
        assert (ROOT / s.entrypoint.split(":")[0]).is_file(), s.entrypoint
        by_flow.setdefault(load_flow(s).name, []).append(s)
        assert s.schedules, f"{s.name} has no schedule"
    assert set(by_flow) == {"attribute", "discover", "nightly"}
    nightly = next(s for s in by_flow["attribute"] if s.name == "who-and-when-nightly")
    assert nightly.parameters["plan"]["methods"] == ["all_at_once", "step_by_step", "binary_search"]
    paper = next(s for s in by_flow["attribute"] if s.name == "dcfa-paper-weekly")
    assert paper.parameters["settings"]["routing"] == "paper" and not paper.schedules[0].active
    # the parameters become the flow's typed arguments (RunSettings from the mapping, a request to plan from)
    validated = load_flow(paper).validate_parameters(dict(paper.parameters))
    assert type(validated["settings"]).__name__ == "RunSettings" and validated["settings"].routing == "paper"
    assert type(validated["plan"]).__name__ == "AttributionRequest" and validated["plan"].methods == [
        "dcfa",
        "all_at_once",
    ]
    weekly = by_flow["discover"][0]
    assert type(load_flow(weekly).validate_parameters(dict(weekly.parameters))["plan"]).__name__ == "DiscoveryRequest"


def test_runner_deployments_carry_schedules_parameters_and_module_entrypoints():
    deps = runner_deployments(load_specs(DEFAULT_FILE))
    names = {d.name for d in deps}
    assert {"who-and-when-nightly", "dcfa-paper-weekly", "bnlearn-weekly"} <= names
    nightly = next(d for d in deps if d.name == "who-and-when-nightly")
    assert nightly.entrypoint == "flows.attribute.attribute"
    assert nightly.schedules[0].schedule.cron == "0 2 * * *" and nightly.schedules[0].active
    assert nightly.parameters["plan"]["paths"] == []  # resolved from the settings when the run starts
    only = runner_deployments(load_specs(DEFAULT_FILE), only=["discover/bnlearn-weekly"])
    assert [d.name for d in only] == ["bnlearn-weekly"]


def test_unknown_only_name_lists_known_deployments():
    with pytest.raises(ConfigError, match="attribute/who-and-when-nightly"):
        runner_deployments(load_specs(DEFAULT_FILE), only=["nope"])


@pytest.mark.parametrize(
    "text, match",
    [
        (GOOD.replace("limit: 1", "limitt: 1"), "parameters do not fit"),
        (GOOD.replace('methods: ["all_at_once"]', "methods: 3"), "parameters do not fit"),
        (GOOD.replace("*/5 * * * *", "every five minutes"), "bad schedule"),
        (GOOD.replace("flows/attribute.py:attribute", "flows/attribute.py:nope"), "not found"),
        (GOOD.replace("flows/attribute.py:attribute", "flows/attribute.py:run_attribute"), "not a Prefect flow"),
        ("deployments: []\n", "no deployments"),
        ("deployments:\n  - entrypoint: flows/attribute.py:attribute\n", "malformed"),
        ("deployments: [\n", "cannot read"),
    ],
)
def test_bad_deployment_file_is_rejected(tmp_path, text, match):
    f = tmp_path / "prefect.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_specs(f)


def test_good_custom_file_loads(tmp_path):
    f = tmp_path / "prefect.yaml"
    f.write_text(GOOD)
    (spec,) = load_specs(f)
    assert spec.module == "flows.attribute" and spec.schedules[0].timezone == "UTC"


def test_missing_file_is_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_specs(tmp_path / "absent.yaml")


def test_cli_serve_list_prints_every_deployment(capsys, tmp_path, monkeypatch):
    from agentcausal_cli import main

    monkeypatch.setenv("AGENTCAUSAL_WHO_AND_WHEN_DIR", str(tmp_path))  # an existing folder: every input there
    assert main(["serve", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("attribute/who-and-when-nightly", "attribute/dcfa-paper-weekly", "discover/bnlearn-weekly"):
        assert name in out
    assert "(inactive)" in out and "0 2 * * * UTC" in out


def test_cli_serve_without_api_url_explains_how_to_start_a_server(capsys):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from agentcausal_cli import main

    with temporary_settings(updates={PREFECT_API_URL: None}):
        assert main(["serve", "--only", "who-and-when-nightly"]) == 2
    assert "prefect server start" in capsys.readouterr().err


def test_serve_without_api_url_raises():
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.serve import serve

    with temporary_settings(updates={PREFECT_API_URL: None}), pytest.raises(ConfigError, match="PREFECT_API_URL"):
        serve(DEFAULT_FILE)


def test_empty_paths_resolve_from_the_who_and_when_setting_and_serve_list_checks_inputs(tmp_path, monkeypatch, capsys):
    from agentcausal.settings import RunSettings
    from agentcausal_cli import main
    from flows.naming import corpus_paths
    from flows.serve import check_inputs

    ww = tmp_path / "ww"
    monkeypatch.setenv("AGENTCAUSAL_WHO_AND_WHEN_DIR", str(ww))
    specs = {s.name: s for s in load_specs(DEFAULT_FILE)}
    assert specs["who-and-when-nightly"].parameters["plan"]["paths"] == []
    # at run time: the environment's folder, also under a deployment `settings` mapping naming only the routing
    assert corpus_paths([], RunSettings.model_validate({"routing": "paper"})) == [str(ww)]
    assert corpus_paths([], RunSettings(who_and_when_dir="elsewhere")) == ["elsewhere"]
    assert corpus_paths(["x"], None) == ["x"]
    (check,) = check_inputs(specs["who-and-when-nightly"])
    assert check.value == str(ww) and not check.exists
    assert main(["serve", "--list"]) == 2  # bad input: nothing would run
    captured = capsys.readouterr()
    assert f"corpus {ww}: MISSING" in captured.out and "who-and-when-nightly" in captured.err
    assert "dataset asia: ok" in captured.out
    ww.mkdir()
    assert main(["serve", "--list"]) == 0
    bad = tmp_path / "p.yaml"
    bad.write_text(
        GOOD + "  - name: d\n    entrypoint: flows/discover.py:discover\n"
        "    parameters: {plan: {datasets: [nosuchnet, missing.csv]}}\n"
    )
    checks = [c for s in load_specs(bad) for c in check_inputs(s)]
    assert [(c.value, c.exists) for c in checks if c.kind == "dataset"] == [
        ("nosuchnet", False),
        ("missing.csv", False),
    ]


def test_a_deployment_with_the_flat_parameters_says_where_each_one_moves(tmp_path):
    """A prefect.yaml written for the flat ``attribute`` parameters is rejected naming ``plan.`` and ``run.``."""
    f = tmp_path / "prefect.yaml"
    f.write_text(
        "deployments:\n  - name: old\n    entrypoint: flows/attribute.py:attribute\n"
        '    parameters:\n      paths: ["traces"]\n      methods: ["all_at_once"]\n      out_dir: runs/x\n'
        "      max_cost: 2.0\n"
    )
    with pytest.raises(ConfigError) as err:
        load_specs(f)
    msg = str(err.value)
    assert "paths -> plan.paths" in msg and "methods -> plan.methods" in msg
    assert "out_dir -> run.out_dir" in msg and "max_cost -> run.max_cost" in msg
