"""The Prefect UI tells the truth: a flow run whose rows were not all computed ends Failed (its message counts
them, its run folder complete), so an automation on failed flow runs alerts; a clean one ends Completed. Prefect's
temporary API in the test process; the fake server (test double) refuses the key, then accepts it."""

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType

from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.runs.options import RunOptions
from flows.attribute import attribute, run_attribute
from flows.engine import FailedRows
from tests.conftest import EXAMPLES, settings_at, write_profiles

TRACE = str(EXAMPLES / "wrong_unit_at_step_2.json")


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_failed_rows_end_the_flow_run_failed_and_a_clean_rerun_completed(scripted_server, tmp_path):
    scripted_server.api_key = "right"  # every chat request without it: HTTP 401, a row not computed
    settings = settings_at(write_profiles(tmp_path / "profiles.toml", scripted_server.base_url), tmp_path / "c")
    out = str(tmp_path / "run")
    state = attribute(
        AttributionRequest(paths=[TRACE], methods=["all_at_once"]),
        RunOptions(out_dir=out),
        settings=settings,
        return_state=True,
    )
    assert state.is_failed(), state
    assert state.message.startswith("1 of 1 (trace, method) results not computed (1 failed, 0 not run); run folder")
    exc = state.result(raise_on_failure=False)
    assert isinstance(exc, FailedRows) and exc.run_dir == out
    assert (tmp_path / "run" / "results.parquet").is_file() and (tmp_path / "run" / "report.md").is_file()
    with get_client(sync_client=True) as client:  # what the UI and an automation see
        recorded = client.read_flow_run(state.state_details.flow_run_id).state
    assert recorded.type is StateType.FAILED and recorded.message == state.message
    assert (
        run_attribute(
            AttributionRequest(paths=[TRACE], methods=["all_at_once"]), RunOptions(out_dir=out), settings=settings
        )
        == out
    )  # the CLI's entry: the folder

    scripted_server.api_key = None  # the key fixed: the next run computes the row and completes
    state = attribute(
        AttributionRequest(paths=[TRACE], methods=["all_at_once"]),
        RunOptions(out_dir=out),
        settings=settings,
        return_state=True,
    )
    assert state.is_completed(), state
    assert state.result() == out
