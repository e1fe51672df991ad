"""Prefect UI artifacts of an ``attribute`` flow run, read back from the Prefect API by key: the progress bar
(at 100 %), the accuracy table and the markdown report with its text charts; keys per corpus; the flow run's
name and tags."""

import pytest

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.runs.options import RunOptions
from tests.conftest import EXAMPLES, METHODS, settings_at


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_attribute_run_creates_progress_table_and_report_artifacts(scripted_server, profiles_file, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    from flows.attribute import attribute

    state = attribute(
        AttributionRequest(paths=[str(EXAMPLES)], methods=METHODS[:2]),
        RunOptions(out_dir=str(tmp_path / "run")),
        settings=settings_at(profiles_file, tmp_path / "c"),
        return_state=True,
    )
    assert state.is_completed()
    run_id = state.state_details.flow_run_id
    keys = ["attribute-progress-examples", "attribution-accuracy-examples", "attribution-report-examples"]
    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=keys), flow_run_id=ArtifactFilterFlowRunId(any_=[run_id])
            )
        )
        flow_run = client.read_flow_run(run_id)
    assert flow_run.name == "examples · all_at_once+step_by_step · default"
    assert {"method:all_at_once", "method:step_by_step", "routing:default"} <= set(flow_run.tags)
    assert any(t.startswith("subset:") for t in flow_run.tags)
    by_key = {a.key: a for a in arts}
    assert set(by_key) == set(keys)
    assert (
        by_key["attribute-progress-examples"].type == "progress"
        and float(by_key["attribute-progress-examples"].data) == 100.0
    )
    table = by_key["attribution-accuracy-examples"]
    assert table.type == "table" and {row["method"] for row in _rows(table.data)} == set(METHODS[:2])
    report = by_key["attribution-report-examples"]
    assert report.type == "markdown" and "## Accuracy" in report.data and "## Plots" in report.data
    assert "█" in report.data  # the charts render as text in the UI
    assert "](report.html)" not in report.data and ".png)" not in report.data  # no relative links in the UI
    assert str((tmp_path / "run").resolve()) in report.data


def _rows(data):
    import json

    return json.loads(data) if isinstance(data, str) else data
