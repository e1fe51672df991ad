"""Flow-run names (flows/naming.py) of runs given a plan as the CLI gives it: the path of its plan.json."""

import pytest
from prefect import flow

from agentcausal.attribution.plan import plan_attribution
from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.discovery.plan import plan_discovery
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.registry import ATTRIBUTION_METHODS, DISCOVERY_METHODS
from agentcausal.runs.plan import write_plan
from agentcausal.settings import RunSettings
from flows import naming
from flows.engine import run_dir_of
from tests.conftest import EXAMPLES


@pytest.fixture
def params(monkeypatch):
    given: dict = {}
    monkeypatch.setattr(naming, "_params", lambda: dict(given))
    monkeypatch.setattr(naming, "_deployment_name", lambda: None)
    return given


def test_an_attribution_run_given_its_plan_file_is_named_by_its_methods(params, tmp_path):
    settings = RunSettings(routing="default")
    plan = plan_attribution(
        AttributionRequest(paths=[str(EXAMPLES)], methods=["all_at_once", "binary_search"]),
        settings,
        ATTRIBUTION_METHODS,
        run_dir=tmp_path,
    )
    params.update(plan=str(write_plan(plan, tmp_path)), run={"meta": {"corpus": [str(EXAMPLES)]}}, settings=settings)
    assert naming.attribute_run_name() == "examples · all_at_once+binary_search · default"


def test_a_discovery_run_given_its_plan_file_is_named_by_its_datasets_and_methods(params, tmp_path):
    settings = RunSettings(routing="default")
    plan = plan_discovery(
        DiscoveryRequest(datasets=["asia", "sachs"], methods=["pc"], seeds=[0, 1]), settings, DISCOVERY_METHODS
    )
    params.update(plan=str(write_plan(plan, tmp_path)), settings=settings)
    assert naming.discover_run_name() == "asia+sachs · pc · default"


def test_a_run_over_many_datasets_or_files_has_a_short_name(params):
    datasets = [f"/data/tables/ds{i}.csv" for i in range(1000)]
    params.update(plan=DiscoveryRequest(datasets=datasets, methods=["pc"], seeds=[0]), settings=RunSettings())
    assert naming.discover_run_name() == "ds0.csv+ds1.csv+ds2.csv+997 more · pc · default"
    files = [f"/corpus/part{i}.jsonl" for i in range(40)]
    params.update(plan=AttributionRequest(paths=files, methods=["all_at_once"]), run={"meta": {}})
    assert naming.attribute_run_name() == "part0+part1+part2+37 more · all_at_once · default"


def test_an_unreadable_plan_path_still_names_the_run(params, tmp_path):
    params.update(plan=str(tmp_path / "gone.json"), settings=RunSettings(routing="default"))
    assert "no-method" in naming.discover_run_name() and naming.attribute_run_name()


class _Runtime:
    """A stand-in for ``prefect.runtime.flow_run`` / ``deployment`` that counts the deployment lookups."""

    def __init__(self, run_id: str | None, name: str | None) -> None:
        self.id, self._name, self.lookups = run_id, name, 0

    @property
    def name(self) -> str | None:
        self.lookups += 1
        return self._name


def test_the_deployment_name_is_asked_once_per_flow_run(monkeypatch):
    runtime = _Runtime("run-1", "nightly")
    monkeypatch.setattr(naming, "_DEPLOYMENTS", {})
    monkeypatch.setattr(naming, "flow_run", runtime)
    monkeypatch.setattr(naming, "deployment", runtime)
    assert [naming.subject("corpus") for _ in range(3)] == ["nightly"] * 3
    assert runtime.lookups == 1
    runtime.id, runtime._name = "run-2", None  # another run, not from a deployment: asked again, then remembered
    assert [naming.subject("corpus") for _ in range(2)] == ["corpus"] * 2
    assert runtime.lookups == 2


def test_outside_a_flow_run_the_deployment_name_is_not_remembered(monkeypatch):
    runtime = _Runtime(None, None)
    monkeypatch.setattr(naming, "_DEPLOYMENTS", {})
    monkeypatch.setattr(naming, "flow_run", runtime)
    monkeypatch.setattr(naming, "deployment", runtime)
    assert naming.subject("corpus") == naming.subject("corpus") == "corpus"
    assert runtime.lookups == 2 and naming._DEPLOYMENTS == {}


@flow(name="naming-probe")
def _subject_probe() -> str:
    return naming.subject("corpus")


def test_a_flow_run_without_a_deployment_asks_the_api_nothing(monkeypatch):
    runtime = _Runtime("run-1", "not a deployment of this run")
    monkeypatch.setattr(naming, "_DEPLOYMENTS", {})
    monkeypatch.setattr(naming, "deployment", runtime)
    assert run_dir_of(_subject_probe) == "corpus"  # its FlowRunContext says: no deployment
    assert runtime.lookups == 0
