"""``agentcausal serve`` end to end: it registers a deployment file's deployments with a Prefect API and runs
a flow run triggered through that API (the fake server, a test double, answers the LLM calls)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import EXAMPLES

TINY = """
deployments:
  - name: tiny
    entrypoint: flows/attribute.py:attribute
    parameters:
      plan: {{paths: ["{trace}"], methods: ["all_at_once"]}}
      run: {{out_dir: "{out}"}}
      settings: {{profiles_path: "{profiles}", cache_dir: "{cache}"}}
    schedules:
      - cron: "0 0 1 1 *"
"""


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_serve_registers_deployments_and_runs_a_triggered_flow_run(scripted_server, profiles_file, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL, temporary_settings

    api = SubprocessASGIServer()
    api.start(timeout=180)
    spec = tmp_path / "prefect.yaml"
    spec.write_text(
        TINY.format(
            trace=EXAMPLES / "wrong_unit_at_step_2.json",
            out=tmp_path / "run",
            profiles=profiles_file,
            cache=tmp_path / "cache",
        )
    )
    env = dict(os.environ, PREFECT_API_URL=api.api_url, PREFECT_RUNNER_POLL_FREQUENCY="1")
    code = "import sys; from agentcausal_cli import main; sys.exit(main(sys.argv[1:]))"
    with open(tmp_path / "serve.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", "--file", str(spec)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        with temporary_settings(updates={PREFECT_API_URL: api.api_url}):
            deadline = time.monotonic() + 180
            with get_client(sync_client=True) as client:
                while True:
                    assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
                    assert time.monotonic() < deadline, "deployment never registered"
                    try:
                        dep = client.read_deployment_by_name("attribute/tiny")
                        break
                    except Exception:  # not registered yet
                        time.sleep(1)
            assert dep.schedules and dep.schedules[0].schedule.cron == "0 0 1 1 *"
            run = run_deployment("attribute/tiny", timeout=240)
        assert run.state.is_completed(), (run.state, (tmp_path / "serve.log").read_text()[-3000:])
        assert (tmp_path / "run" / "results.parquet").is_file() and (tmp_path / "run" / "report.html").is_file()
        assert scripted_server.count == 1
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.timeout(500)
def test_shipped_nightly_deployment_reads_the_who_and_when_setting(scripted_server, profiles_file, tmp_path):
    """The shipped nightly deployment (``paths: []``), served, runs on a two-trace copy of the benchmark at a
    non-default ``AGENTCAUSAL_WHO_AND_WHEN_DIR``."""
    import shutil

    from prefect.deployments import run_deployment
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from tests.conftest import WHO_AND_WHEN

    src = sorted((WHO_AND_WHEN / "Algorithm-Generated").glob("*.json"), key=lambda p: p.stat().st_size)[:2]
    if len(src) < 2:
        pytest.skip("the Who&When benchmark is not available")
    ww = tmp_path / "ww copy" / "Algorithm-Generated"
    ww.mkdir(parents=True)
    for p in src:
        shutil.copy(p, ww / p.name)
    api = SubprocessASGIServer()
    api.start(timeout=180)
    env = dict(
        os.environ,
        PREFECT_API_URL=api.api_url,
        PREFECT_RUNNER_POLL_FREQUENCY="1",
        AGENTCAUSAL_WHO_AND_WHEN_DIR=str(ww.parent),
        AGENTCAUSAL_PROFILES=profiles_file,
        AGENTCAUSAL_CACHE_DIR=str(tmp_path / "cache"),
    )
    code = "import sys; from agentcausal_cli import main; sys.exit(main(sys.argv[1:]))"
    with open(tmp_path / "serve.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", "--only", "attribute/who-and-when-nightly"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        with temporary_settings(updates={PREFECT_API_URL: api.api_url}):
            from prefect.client.orchestration import get_client

            deadline = time.monotonic() + 180
            with get_client(sync_client=True) as client:
                while True:
                    assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
                    assert time.monotonic() < deadline, "deployment never registered"
                    try:
                        client.read_deployment_by_name("attribute/who-and-when-nightly")
                        break
                    except Exception:  # not registered yet
                        time.sleep(1)
            run = run_deployment(
                "attribute/who-and-when-nightly", parameters={"run": {"out_dir": str(tmp_path / "run")}}, timeout=300
            )
        assert run.state.is_completed(), (run.state, (tmp_path / "serve.log").read_text()[-3000:])
        assert run.name.startswith("who-and-when-nightly · all_at_once+step_by_step+binary_search")
        import pandas as pd

        df = pd.read_parquet(tmp_path / "run" / "results.parquet")
        assert df["trace_id"].nunique() <= 2 and len(df) >= 1
        assert str(ww.parent) in (tmp_path / "run" / "run.json").read_text()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
