"""A CLI run against a real local Prefect API: its INFO logs reach the API (the UI) while the console shows
no INFO lines, a plain progress line is printed when stderr is not a terminal, and the flow run carries its
name, tags and per-corpus artifact keys (the fake server, a test double, answers the LLM calls)."""

import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES


@pytest.mark.slow
@pytest.mark.timeout(500)
def test_cli_run_logs_to_the_api_quietly_with_name_tags_and_keys(scripted_server, profiles_file, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterName,
        LogFilter,
        LogFilterFlowRunId,
    )
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL, temporary_settings

    api = SubprocessASGIServer()
    api.start(timeout=180)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_LOGGING")}
    env.update(PREFECT_API_URL=api.api_url)
    code = "import sys; from agentcausal_cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "attribute",
            str(EXAMPLES),
            "--method",
            "all_at_once",
            "--profiles",
            profiles_file,
            "--cache-dir",
            str(tmp_path / "c"),
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert " INFO " not in proc.stderr and "| INFO" not in proc.stderr, proc.stderr[-2000:]
    assert "attribute: " in proc.stderr and "(100%)" in proc.stderr  # the plain progress line
    with temporary_settings(updates={PREFECT_API_URL: api.api_url}), get_client(sync_client=True) as client:
        # the session's Prefect database may hold same-named runs of other tests: ours is the one writing tmp_path/run
        named = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=["examples · all_at_once · default"]))
        )
        (run,) = [r for r in named if str(tmp_path / "run") in str((r.parameters.get("run") or {}).get("out_dir"))]
        assert {"method:all_at_once", "routing:default"} <= set(run.tags)
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
        assert any(log.level == 20 for log in logs)  # INFO reached the API
        keys = {
            a.key
            for a in client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run.id]))
            )
        }
        assert {"attribution-report-examples", "attribution-accuracy-examples"} <= keys
