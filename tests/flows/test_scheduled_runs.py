"""Runs people schedule on their own traces (the fake server, a test double, answers and counts the LLM calls).

* The ``my-traces-nightly`` template of deploy/prefect.yaml, run twice with its own parameters over a folder in
  which one trace was added and one changed between the runs: the second run sends exactly two requests and
  its results cover every trace; the CLI's ``--resume`` over the same folder sends none, and without
  ``--resume`` the CLI refuses the folder.
* A CLI run without a terminal: "starting Prefect" first, heartbeat lines with the calls and tokens so far on
  a short interval, ``--name`` in run.json and as the Prefect flow-run name.
"""

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from agentcausal.settings import RunSettings
from agentcausal_cli import main
from flows.serve import DEFAULT_FILE, load_flow, load_specs
from tests.conftest import EXAMPLES

CLI = "import sys; from agentcausal_cli import main; sys.exit(main(sys.argv[1:]))"


def _changed(path):
    trace = json.loads(path.read_text())
    trace["history"][0]["content"] += " (edited)"
    path.write_text(json.dumps(trace))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_nightly_template_computes_only_added_and_changed_traces(scripted_server, profiles_file, tmp_path, capsys):
    (spec,) = [s for s in load_specs(DEFAULT_FILE) if s.name == "my-traces-nightly"]
    params = dict(spec.parameters)
    assert params["out_dir"] and not params.get("settings", {}).get("refresh")  # one folder, the store answers
    folder = tmp_path / "traces"
    folder.mkdir()
    names = sorted(p.name for p in EXAMPLES.glob("*.json"))
    for n in names[:-1]:
        shutil.copy(EXAMPLES / n, folder / n)
    run_dir = tmp_path / "runs" / "my-traces-nightly"
    settings = RunSettings(profiles_path=profiles_file, cache_dir=str(tmp_path / "cache"))
    flow = load_flow(spec)
    # the fake profile has no price: the template's max_cost over it is refused (tests/flows/test_spend.py)
    run = {**params, "paths": [str(folder)], "out_dir": str(run_dir), "settings": settings, "max_cost": None}

    flow(**run)
    first = len(scripted_server.chat_requests)
    assert first == len(names) - 1  # all_at_once: one request per trace
    shutil.copy(EXAMPLES / names[-1], folder / names[-1])  # one trace added
    _changed(folder / names[0])  # one trace changed
    flow(**run)
    assert len(scripted_server.chat_requests) - first == 2
    df = pd.read_parquet(run_dir / "results.parquet")
    assert len(df) == len(names) and df["error"].isna().all()
    assert df["reused"].sum() == len(names) - 2
    assert json.loads((run_dir / "run.json").read_text())["name"] == "my-traces-nightly"

    cli = [
        "attribute",
        str(folder),
        "-m",
        "all_at_once",
        "--no-ground-truth",
        "--profiles",
        profiles_file,
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(run_dir),
        "--no-progress",
    ]
    assert main(cli) == 2  # an existing run folder: refused without --resume
    assert "--resume" in capsys.readouterr().err
    assert main([*cli, "--resume"]) == 0
    assert len(scripted_server.chat_requests) - first == 2  # nothing new: nothing sent


@pytest.mark.slow
@pytest.mark.timeout(500)
def test_unattended_cli_run_says_prefect_is_starting_beats_and_carries_its_name(scripted_server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from tests.conftest import write_profiles

    scripted_server.latency_s = 0.5  # 4 traces, one request at a time: about 2 s of LLM calls
    profiles = write_profiles(tmp_path / "profiles.toml", scripted_server.base_url, max_concurrency=1)
    api = SubprocessASGIServer()
    api.start(timeout=180)
    env = dict(os.environ, PREFECT_API_URL=api.api_url)
    name = f"nightly-{tmp_path.name}"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CLI,
            "attribute",
            str(EXAMPLES),
            "-m",
            "all_at_once",
            "--profiles",
            profiles,
            "--cache-dir",
            str(tmp_path / "c"),
            "--out",
            str(tmp_path / "run"),
            "--name",
            name,
            "--heartbeat",
            "0.2",
            "--no-progress",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )  # stderr a pipe: no terminal
    assert proc.returncode == 0, proc.stderr[-3000:]
    err = proc.stderr.splitlines()
    assert err[0].startswith("agentcausal: starting Prefect")
    beats = [line for line in err if line.startswith("attribute: heartbeat: ")]
    assert len(beats) >= 3, proc.stderr[-2000:]
    assert "/4 items done" in beats[-1] and beats[-1].endswith("tokens so far")
    assert any(not line.endswith(" 0 LLM calls, 0 tokens so far") for line in beats)  # calls counted as they come
    assert json.loads((tmp_path / "run" / "run.json").read_text())["name"] == name
    with temporary_settings(updates={PREFECT_API_URL: api.api_url}), get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
        assert [r.name for r in runs] == [name]
