"""No orphans: the ``attribute`` CLI killed with SIGKILL in the middle of a run leaves no process behind.

The CLI runs (on the thread runner, and on a local Dask cluster) without ``PREFECT_API_URL`` and with
``AGENTCAUSAL_SHARED_API=0``, so it starts Prefect's temporary API server itself (a ``uvicorn`` child, through
:mod:`flows.api_server`). The test waits until the run is sending LLM requests to the fake server (test double),
records every process the CLI has started (its descendants, and everything in its session), kills only the CLI's
own process with SIGKILL, and checks that, after a short grace period, none of them is alive (a zombie waiting for
its new parent to reap it counts as gone).
"""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from agentcausal_fakes.processes import alive
from tests.conftest import EXAMPLES, METHODS, write_profiles

GRACE_S = 30.0  # the watchdogs poll every 0.5 s; interpreters shut down slowly on a loaded machine
CLI = "import sys; from agentcausal_cli import main; sys.exit(main(sys.argv[1:]))"


def _cmd(pid):
    try:
        p = psutil.Process(pid)
        return f"(parent {p.ppid()}) " + " ".join(p.cmdline())
    except psutil.Error:
        return ""


def _forkserver_children(cmds):
    servers = {pid for pid, c in cmds.items() if "multiprocessing.forkserver" in c}
    out = []
    for pid in cmds:
        try:
            if psutil.Process(pid).ppid() in servers:
                out.append(pid)
        except psutil.Error:
            pass
    return out


def _in_session(sid):
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getsid(p.pid) == sid and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p.pid)
        except (ProcessLookupError, PermissionError, psutil.Error):
            pass
    return out


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize("runner", ["thread", "dask"])
def test_sigkill_of_a_run_leaves_no_process_of_it(runner, scripted_server, tmp_path):
    if runner == "dask":
        pytest.importorskip("prefect_dask")
    scripted_server.latency_s = 0.5
    profiles = write_profiles(tmp_path / "profiles.toml", scripted_server.base_url, max_concurrency=1)
    # the run starts its own temporary API server, not the shared one
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {"AGENTCAUSAL_SHARED_API": "0"}
    args = [
        "attribute",
        str(EXAMPLES),
        *sum((["-m", m] for m in METHODS), []),
        "--profiles",
        profiles,
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
        "--runner",
        runner,
        *(["--dask-workers", "2"] if runner == "dask" else []),
    ]  # dask: a local cluster of worker processes
    with open(tmp_path / "run.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", CLI, *args], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )  # its own session: every process it starts is found
        try:
            deadline = time.monotonic() + 300
            while scripted_server.count < 3:
                assert proc.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the run never reached its LLM calls"
                time.sleep(0.05)
            for _ in range(50):  # the run's processes, once its API server is among them
                started = {c.pid: _cmd(c.pid) for c in psutil.Process(proc.pid).children(recursive=True)}
                started.update({pid: _cmd(pid) for pid in _in_session(proc.pid) if pid != proc.pid})
                if any("uvicorn" in cmd for cmd in started.values()):
                    break
                time.sleep(0.1)
            assert any("uvicorn" in cmd for cmd in started.values()), f"no API server among {started}"
            os.kill(proc.pid, signal.SIGKILL)  # the run's process only, as the OOM killer or `kill -9 PID` would
            assert proc.wait(timeout=30) == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + GRACE_S
    while (alive(started) or _in_session(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = {pid: started.get(pid, "") for pid in alive(started) + _in_session(proc.pid)}
    for pid in left:  # leave the machine clean whatever the verdict
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"processes of the killed run still alive after {GRACE_S:g} s: {left}"


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_sigkill_of_a_discover_run_mid_algorithm_leaves_no_worker(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {"AGENTCAUSAL_SHARED_API": "0"}
    args = [
        "discover",
        "--dataset",
        "alarm",
        "--method",
        "exact_search",
        "--n",
        "2000",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
    ]  # Exact Search on Alarm (37 nodes): still running after 3 min here, far past GRACE_S. On Child it ended
    # in under 30 s, so its worker, orphaned without PR_SET_PDEATHSIG, finished within the grace and passed
    with open(tmp_path / "run.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", CLI, *args], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 300
            started: dict[int, str] = {}
            # wait for a worker forked by the forkserver: the forkserver has finished importing its preload
            # (seconds on a loaded machine, during which it cannot notice its parent's death) and the
            # algorithm runs
            while not _forkserver_children(started):
                assert proc.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
                assert time.monotonic() < deadline, f"no algorithm worker started: {started}"
                time.sleep(0.2)
                started = {pid: _cmd(pid) for pid in _in_session(proc.pid) if pid != proc.pid}
            time.sleep(2)  # the algorithm is running in its worker
            started = {pid: _cmd(pid) for pid in _in_session(proc.pid) if pid != proc.pid}
            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait(timeout=30) == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + GRACE_S
    while (alive(started) or _in_session(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = {pid: started.get(pid, "") for pid in alive(started) + _in_session(proc.pid)}
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"processes of the killed run still alive after {GRACE_S:g} s: {left}"
