"""The shared local Prefect API server (:mod:`flows.shared_api`): commands under one ``PREFECT_HOME`` share one
server, a stale lease is replaced, the server ends itself when idle, and a set ``PREFECT_API_URL`` is left alone.

Each test has a ``PREFECT_HOME`` of its own (``tmp_path``) and stops what it started. A "command" is a child
interpreter that runs a one-task Prefect flow through :mod:`flows.api_server`, as the CLI's flows do.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from agentcausal.exceptions import ConfigError
from flows import shared_api

REPO = Path(__file__).resolve().parents[2]

#: a command: a tiny flow run on whatever API Prefect is given; prints the API it used and the lease it held
COMMAND = """
import json
from flows import api_server
api_server.install()
from prefect import flow
from prefect.server.api.server import SubprocessASGIServer
from prefect.settings import PREFECT_API_URL

@flow
def tiny() -> int:
    return 1

assert tiny() == 1
server = SubprocessASGIServer()
lease = getattr(server, "shared", None)
print(json.dumps({"setting": PREFECT_API_URL.value(), "lease_url": lease.api_url if lease else None}))
"""

#: a client that takes the lease (without Prefect) and exits: the server's last client gone
ACQUIRE_AND_EXIT = """
import json, os, sys
from pathlib import Path
from flows import shared_api
lease = shared_api.acquire(Path(sys.argv[1]), key="k", env=dict(os.environ), startup_timeout_s=240, idle_s=float(sys.argv[2]))
print(json.dumps({"pid": lease.pid, "url": lease.api_url, "healthy": shared_api.healthy(lease.api_url)}))
"""


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", shared_api.ENABLED_ENV)}
    env.update(PREFECT_HOME=str(home), PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def _run(code: str, env: dict[str, str], *args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _servers(home: Path) -> list[int]:
    """Pids of the live shared servers of ``home`` (their command line names the serve entry point and home)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"from flows.shared_api import serve" in a for a in argv) and str(home).encode() in argv:
            if shared_api._process_start(int(entry.name)) is not None:
                found.append(int(entry.name))
    return found


def _flow_runs(api_url: str) -> int:
    req = urllib.request.Request(
        f"{api_url}/flow_runs/count", data=b"{}", headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=30) as reply:
        return int(json.loads(reply.read()))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_gone(pid: int, start: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while shared_api._alive(pid, start) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not shared_api._alive(pid, start)


needs_proc = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds servers through /proc")


@needs_proc
@pytest.mark.slow  # three interpreters that import Prefect and run a flow
@pytest.mark.timeout(600)
def test_commands_share_one_server_and_a_set_api_url_is_left_alone(tmp_path, capsys):
    home, other_home = tmp_path / "home", tmp_path / "other-home"
    env = _env(home, **{shared_api.IDLE_ENV: "300"})
    try:
        first = _run(COMMAND, env)
        lease = shared_api.read_lease(home)
        assert lease is not None and first == {"setting": None, "lease_url": lease.api_url}
        assert _servers(home) == [lease.pid]
        second = _run(COMMAND, env)
        assert second == first  # the same server, not a second one
        assert _servers(home) == [lease.pid] and shared_api.read_lease(home).pid == lease.pid
        assert _flow_runs(lease.api_url) == 2  # both commands' runs in its database
        assert shared_api._main(["status", "--home", str(home)]) == 0
        assert json.loads(capsys.readouterr().out) | {"clients": None} == {
            **dataclasses.asdict(lease),
            "clients": None,
            "api_url": lease.api_url,
            "alive": True,
        }

        # a user's PREFECT_API_URL (here: that server) is used as it is; no lease, no server under the command's home
        third = _run(COMMAND, _env(other_home, PREFECT_API_URL=lease.api_url))
        assert third == {"setting": lease.api_url, "lease_url": None}
        assert shared_api.read_lease(other_home) is None and _servers(other_home) == []
        assert _flow_runs(lease.api_url) == 3
    finally:
        shared_api.stop(home)
    assert _servers(home) == [] and shared_api.read_lease(home) is None


@needs_proc
@pytest.mark.slow  # starts a Prefect API server
@pytest.mark.timeout(400)
def test_commands_started_together_share_one_server_which_ends_once_idle(tmp_path):
    home = tmp_path / "home"
    cmd = [sys.executable, "-c", ACQUIRE_AND_EXIT, str(home), "2"]  # each client exits at once
    procs = [subprocess.Popen(cmd, env=_env(home), stdout=subprocess.PIPE, text=True, cwd=REPO) for _ in range(2)]
    got = [json.loads(p.communicate(timeout=300)[0].strip().splitlines()[-1]) for p in procs]
    lease = shared_api.read_lease(home)
    try:
        assert got[0] == got[1] and got[0]["healthy"]  # the second waited on the lock and found the first's server
        assert lease is not None and lease.pid == got[0]["pid"] and lease.idle_s == 2
        assert {pid for pid, _ in lease.clients} == {p.pid for p in procs}
        assert _wait_gone(lease.pid, lease.pid_start, 120), "the idle server did not end"
        assert shared_api.read_lease(home) is None  # its lease went with it: the next command starts a new one
        assert not shared_api.healthy(got[0]["url"], timeout=2)
    finally:
        shared_api.stop(home)


@needs_proc
@pytest.mark.slow  # starts a Prefect API server
def test_a_server_whose_home_was_removed_ends_once_idle(tmp_path):
    home = tmp_path / "home"  # a temporary PREFECT_HOME, removed by its command as it ends (as the bench's are)
    got = _run(ACQUIRE_AND_EXIT, _env(home), str(home), "5")
    lease = shared_api.read_lease(home)
    assert got["healthy"] and lease is not None
    shutil.rmtree(home)
    assert _wait_gone(lease.pid, lease.pid_start, 120), "a server whose home is gone was left running"


@needs_proc
@pytest.mark.slow  # starts a Prefect API server
@pytest.mark.timeout(400)
@pytest.mark.parametrize("stale", ["dead pid", "port not answering"])
def test_a_stale_lease_is_replaced_by_a_new_server(stale, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if stale == "dead pid":
        holder.kill()
        holder.wait()
    start = shared_api._process_start(holder.pid) or ""
    old = shared_api.Lease(pid=holder.pid, pid_start=start, port=_free_port(), key="k", idle_s=60)
    shared_api._write_lease(home, old)
    try:
        lease = shared_api.acquire(home, key="k", env=_env(home), startup_timeout_s=240, idle_s=60)
        assert lease is not None and lease.pid != old.pid and lease.port != old.port
        assert shared_api.read_lease(home) == lease and shared_api.healthy(lease.api_url)
        assert lease.clients == ((os.getpid(), shared_api._process_start(os.getpid())),)
        if stale == "port not answering":  # a live process that does not answer loses the lease, is not killed
            assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()
        shared_api.stop(home)


def test_a_live_server_of_other_settings_is_left_to_its_own_commands(tmp_path):
    me = os.getpid()  # alive: stands for a server started with other settings
    other = shared_api.Lease(
        pid=me, pid_start=shared_api._process_start(me) or "", port=_free_port(), key="x", idle_s=9
    )
    shared_api._write_lease(tmp_path, other)
    assert shared_api.acquire(tmp_path, key="k", env={}, startup_timeout_s=1, idle_s=60) is None
    assert shared_api.read_lease(tmp_path) == other  # untouched; the caller starts a temporary server of its own


def test_the_server_key_changes_with_prefect_and_the_database_not_with_the_rest():
    env = {"PREFECT_HOME": "/h", "PREFECT_LOGGING_LEVEL": "INFO", "PATH": "/bin"}
    key = shared_api.server_key("3.9.1", env)
    assert shared_api.server_key("3.9.1", {**env, "PREFECT_LOGGING_LEVEL": "DEBUG", "PATH": "/x"}) == key
    assert shared_api.server_key("3.9.2", env) != key
    assert shared_api.server_key("3.9.1", {**env, "PREFECT_API_DATABASE_CONNECTION_URL": "sqlite:///x"}) != key
    assert shared_api.server_key("3.9.1", {**env, "PREFECT_HOME": "/other"}) != key


@pytest.mark.parametrize(("raw", "expected"), [("", True), ("1", True), ("off", False), ("FALSE", False)])
def test_the_shared_server_can_be_turned_off(raw, expected):
    assert shared_api.enabled({shared_api.ENABLED_ENV: raw}) is (expected and hasattr(os, "setsid"))


def test_bad_settings_are_one_clear_error():
    with pytest.raises(ConfigError, match=r"\$AGENTCAUSAL_SHARED_API must be a boolean"):
        shared_api.enabled({shared_api.ENABLED_ENV: "maybe"})
    for raw in ("0", "-5", "soon", "inf"):
        with pytest.raises(ConfigError, match=r"\$AGENTCAUSAL_SHARED_API_IDLE_S must be a positive number"):
            shared_api.idle_seconds({shared_api.IDLE_ENV: raw})
    assert shared_api.idle_seconds({}) == shared_api.DEFAULT_IDLE_S
    assert shared_api.idle_seconds({shared_api.IDLE_ENV: "90"}) == 90.0


def test_a_stop_without_a_server_stops_nothing(tmp_path):
    assert shared_api.stop(tmp_path / "missing") is None
    assert shared_api.stop(tmp_path) is None


def test_the_console_names_the_api_the_run_will_use(tmp_path, monkeypatch, capsys):
    from agentcausal_cli.run_folder_options import starting_prefect

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv(shared_api.ENABLED_ENV, raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    starting_prefect()  # no lease: this command starts the server
    assert "and its local API server, which later commands reuse until it is idle for 600 s" in capsys.readouterr().err
    me = os.getpid()  # alive: stands for the leased server
    lease = shared_api.Lease(pid=me, pid_start=shared_api._process_start(me) or "", port=4321, key="k", idle_s=9)
    shared_api._write_lease(tmp_path, lease)
    starting_prefect()
    assert "(the shared local API server at http://127.0.0.1:4321/api)" in capsys.readouterr().err
    monkeypatch.setenv(shared_api.ENABLED_ENV, "off")
    starting_prefect()
    assert "its temporary API server takes a while to start" in capsys.readouterr().err
    monkeypatch.setenv("PREFECT_API_URL", "http://10.0.0.5:4200/api")
    starting_prefect()
    assert "(API at http://10.0.0.5:4200/api)" in capsys.readouterr().err
    monkeypatch.delenv("PREFECT_API_URL")
    monkeypatch.setenv(shared_api.ENABLED_ENV, "maybe")
    with pytest.raises(ConfigError, match="AGENTCAUSAL_SHARED_API"):
        starting_prefect()  # before Prefect starts: the CLI's one line and exit 2


def test_status_and_stop_from_the_command_line_without_a_server(tmp_path, capsys):
    assert shared_api._main(["status", "--home", str(tmp_path)]) == 1
    assert capsys.readouterr().out.strip() == f"no shared Prefect API server running (no lease under {tmp_path})"
    assert shared_api._main(["stop", "--home", str(tmp_path)]) == 0
    assert "no shared Prefect API server running" in capsys.readouterr().out
