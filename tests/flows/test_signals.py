"""Stop on request: SIGTERM or SIGINT to ``discover`` during Exact Search and to ``attribute`` mid-corpus, and a
Prefect cancellation of a deployment's flow run, end the run within 10 s, leave no process of it, release its
run folder, and a ``--resume`` (a second flow run) finishes the rest without asking a finished call again.

The CLI runs in a session of its own without ``PREFECT_API_URL`` and with ``AGENTCAUSAL_SHARED_API=0`` (it starts
Prefect's temporary API server, which must end with it).
Its processes are found by walking the process tree from the CLI's pid (and its session) just before the
signal; after the exit none may be alive. The fake server (test double) answers the LLM calls.
"""

import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from agentcausal.runs import stop
from agentcausal_fakes.processes import alive, process_tree, reap
from tests.conftest import EXAMPLES, METHODS, requests_by_prompt, write_profiles

CLI = "import sys; from agentcausal_cli import main; sys.exit(main(sys.argv[1:]))"
STOP_WITHIN_S = 10.0
STATUS = {signal.SIGTERM: 143, signal.SIGINT: 130}


@pytest.fixture
def stopped():
    """The process's stop flag, cleared again after the test."""
    yield stop
    stop.reset()


def test_a_stop_ends_a_chunk_wait_without_waiting_for_its_items(stopped, tmp_path):
    import threading

    from agentcausal.registry import ATTRIBUTION
    from agentcausal.runs.engine import result_store
    from agentcausal.runs.scheduling import run_items
    from agentcausal.settings import RunSettings

    store = result_store(RunSettings(cache_dir=str(tmp_path)), "attribute", ATTRIBUTION.record_type)
    release = threading.Event()
    threading.Timer(0.3, stopped.request_stop).start()
    t0 = time.monotonic()
    with pytest.raises(stop.RunStopped):
        run_items([("k1", lambda: release.wait(30))], store, workers=2)
    assert time.monotonic() - t0 < 3
    release.set()


def test_a_stop_kills_a_running_algorithm_worker_and_its_forkserver(stopped):
    import multiprocessing.forkserver as forkserver
    import threading

    import numpy as np

    from agentcausal.discovery.statistical import algorithms as alg

    rng = np.random.default_rng(0)  # 24 variables driven by 3 latent factors: A* runs for minutes here
    data = rng.normal(size=(500, 3)) @ rng.normal(size=(3, 24)) + 0.5 * rng.normal(size=(500, 24))
    choice = alg.ExactSearchParams(max_parents=2)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            alg.run_algorithm(data, [f"x{i}" for i in range(24)], choice, timeout_s=300)
        except BaseException as exc:  # what the run ended with
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    deadline = time.monotonic() + 120
    while not alg._LIVE and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alg._LIVE, "no worker started"
    (worker,) = alg._LIVE
    time.sleep(1)
    assert worker.is_alive(), "the search ended before the stop"
    server = forkserver._forkserver._forkserver_pid
    assert server and psutil.pid_exists(server)
    t0 = time.monotonic()
    stopped.request_stop()
    t.join(10)
    assert not t.is_alive() and time.monotonic() - t0 < 5
    assert isinstance(errors[0], stop.RunStopped)
    assert not worker.is_alive() and not alive([server])
    with pytest.raises(stop.RunStopped):  # no new worker while the stop holds
        alg.run_algorithm(data[:, :3], ["a", "b", "c"], alg.PCParams())


STUCK = """
import signal, sys, threading, time
from agentcausal.runs import stop
threading.Thread(target=time.sleep, args=(600,)).start()  # a thread that never ends: interpreter exit would wait
with stop.stop_on_signal(stop.StopSignal, message="stopped", after_s=float(sys.argv[1])):
    try:
        print("ready", flush=True)
        time.sleep(600)
    except stop.StopSignal:
        print("unwinding", flush=True)
        time.sleep(600)  # stuck on the way out: the watchdog ends it
"""


BLOCKED_HOOK = """
import os, sys, threading, time
from agentcausal.runs import stop
held = threading.Lock()
held.acquire()  # the main thread holds it, as a signal may interrupt it inside a lock a stop hook needs
def hook():
    print("watchdog armed" if stop._watchdog is not None else "watchdog not armed", flush=True)
    held.acquire()  # and blocks for good
stop.on_stop(hook)
with stop.stop_on_signal(stop.StopSignal, message="stopped"):
    try:
        print("ready", flush=True)
        time.sleep(600)
    except stop.StopSignal:
        time.sleep(600)
"""


def test_the_watchdog_is_armed_before_a_stop_hook_runs():
    """A hook that blocks (on a lock the interrupted main thread holds) costs at most HOOKS_WAIT_S inside the
    watchdog's HARD_EXIT_AFTER_S, never on top of it: the process ends within the 10 s a stop may take."""
    proc = subprocess.Popen([sys.executable, "-c", BLOCKED_HOOK], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGTERM)
        assert proc.stdout.readline().strip() == "watchdog armed"
        assert proc.wait(timeout=10) == 143
    finally:
        proc.kill()


@pytest.mark.parametrize("second", [False, True], ids=["watchdog", "second-signal"])
def test_a_signal_ends_the_process_with_128_plus_signal_whatever_waits(second):
    proc = subprocess.Popen(
        [sys.executable, "-c", STUCK, "3" if not second else "60"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.stdout.readline().strip() == "unwinding"
        if second:
            proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 143
        assert time.monotonic() - t0 < (2 if second else 6)
    finally:
        proc.kill()


def _lock_free(run_dir: Path) -> bool:
    lock = run_dir / ".lock"
    if not lock.exists():
        return True
    with open(lock, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        fcntl.flock(fh, fcntl.LOCK_UN)
    return True


def _start(args: list[str], log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {"AGENTCAUSAL_SHARED_API": "0"}
    with open(log, "w") as fh:
        return subprocess.Popen(
            [sys.executable, "-c", CLI, *args],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop_and_check(proc: subprocess.Popen, sig: int, log: Path, run_dir: Path) -> dict[int, str]:
    """Send ``sig`` to the CLI; assert it exits within STOP_WITHIN_S with 128 + sig, leaving no process, the run
    folder unlocked and one line saying so. Returns the processes it had."""
    started = process_tree(proc.pid)
    t0 = time.monotonic()
    os.kill(proc.pid, sig)
    try:
        status = proc.wait(timeout=STOP_WITHIN_S)
    except subprocess.TimeoutExpired:
        left = process_tree(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        reap(started)
        pytest.fail(f"still running {STOP_WITHIN_S:g} s after {sig.name}; processes {left}")
    took = time.monotonic() - t0
    time.sleep(0.5)  # a killed child's exit is seen by psutil a moment later
    left = {pid: started[pid] for pid in alive(started)}
    left.update(process_tree(proc.pid))
    reap(left)
    assert status == STATUS[sig], (status, log.read_text()[-3000:])
    assert not left, f"processes of the stopped run still alive {took:.1f} s after {sig.name}: {left}"
    assert _lock_free(run_dir), "the run folder is still locked"
    assert "interrupted; finished work is kept" in log.read_text().splitlines()[-1]
    assert "Traceback" not in log.read_text()
    return started


def _wait_for(cond, proc: subprocess.Popen, log: Path, what: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"{what}: not reached in {timeout:g} s"
        time.sleep(0.1)


def _forkserver_worker(pid: int) -> bool:
    """Whether an algorithm worker (a child of the forkserver) runs under ``pid``."""
    procs = process_tree(pid)
    servers = {p for p, cmd in procs.items() if "multiprocessing.forkserver" in cmd}
    for p in procs:
        try:
            if psutil.Process(p).ppid() in servers:
                return True
        except psutil.Error:
            pass
    return False


def _stored(cache: Path, kind: str) -> int:
    db = cache / "results" / kind / "records.sqlite3"
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return int(con.execute("SELECT count(*) FROM records").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_discover_stops_during_exact_search_on_alarm(sig, tmp_path):
    """Exact Search on Alarm (37 nodes) runs for minutes here; the signal lands while its worker runs."""
    run_dir = tmp_path / "run"
    args = ["discover", "-d", "alarm", "-m", "exact_search", "--n", "2000", "--cache-dir", str(tmp_path / "cache")]
    proc = _start([*args, "--out", str(run_dir), "--no-progress"], tmp_path / "run.log")
    try:
        _wait_for(lambda: _forkserver_worker(proc.pid), proc, tmp_path / "run.log", "an algorithm worker")
        time.sleep(2)  # the algorithm runs
        _stop_and_check(proc, sig, tmp_path / "run.log", run_dir)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_discover_resume_after_sigterm_computes_only_the_unfinished_run(tmp_path):
    """Three of four runs finish, SIGTERM lands during Exact Search on Child (its slowest, ~20-30 s here);
    ``--resume`` reuses the three from the results store and computes the fourth."""
    cache, run_dir = tmp_path / "cache", tmp_path / "run"
    args = [
        "discover",
        *["-d", "earthquake", "-d", "child", "-m", "pc", "-m", "exact_search"],
        *["--cache-dir", str(cache), "--out", str(run_dir), "--no-progress"],
    ]
    proc = _start(args, tmp_path / "run.log")
    try:
        _wait_for(
            lambda: _stored(cache, "discover") >= 3 and _forkserver_worker(proc.pid),
            proc,
            tmp_path / "run.log",
            "three runs done and Exact Search on Child running",
        )
        _stop_and_check(proc, signal.SIGTERM, tmp_path / "run.log", run_dir)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    stored = _stored(cache, "discover")
    assert stored == 3, "the signal came after the last run finished"
    again = _start([*args, "--resume"], tmp_path / "resume.log")
    try:
        assert again.wait(timeout=400) == 0, (tmp_path / "resume.log").read_text()[-3000:]
    finally:
        if again.poll() is None:
            os.killpg(again.pid, signal.SIGKILL)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["rows"]["total"] == 4 and meta["rows"]["failed"] == 0
    assert meta["rows"]["from_store"] == stored  # what the stopped run finished was not computed again


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_attribute_stops_mid_corpus_and_resume_pays_nothing_twice(sig, scripted_server, tmp_path):
    scripted_server.latency_s = 1.0
    profiles = write_profiles(tmp_path / "profiles.toml", scripted_server.base_url, max_concurrency=1)
    run_dir = tmp_path / "run"
    args = [
        "attribute",
        str(EXAMPLES),
        *sum((["-m", m] for m in METHODS), []),
        *["--profiles", profiles, "--cache-dir", str(tmp_path / "cache"), "--out", str(run_dir), "--no-progress"],
    ]
    proc = _start(args, tmp_path / "run.log")
    try:
        _wait_for(lambda: scripted_server.count >= 3, proc, tmp_path / "run.log", "the run's LLM calls")
        _stop_and_check(proc, sig, tmp_path / "run.log", run_dir)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    asked_before = scripted_server.count
    scripted_server.latency_s = 0.0
    again = _start([*args, "--resume"], tmp_path / "resume.log")
    try:
        assert again.wait(timeout=400) == 0, (tmp_path / "resume.log").read_text()[-3000:]
    finally:
        if again.poll() is None:
            os.killpg(again.pid, signal.SIGKILL)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["rows"]["total"] == 4 * len(METHODS) and meta["rows"]["failed"] == 0
    twice = [k for k, n in requests_by_prompt(scripted_server).items() if n > 1]
    assert scripted_server.count > asked_before  # the rest was computed
    assert len(twice) <= 1, f"{len(twice)} calls asked again (only the one in flight at the signal may be)"


DEPLOYMENT = """
deployments:
  - name: slow
    entrypoint: flows/attribute.py:attribute
    parameters:
      plan: {{paths: ["{traces}"], methods: {methods}}}
      run: {{out_dir: "{out}"}}
      settings: {{profiles_path: "{profiles}", cache_dir: "{cache}"}}
"""


@pytest.mark.slow
@pytest.mark.timeout(700)
def test_cancelling_a_deployments_flow_run_ends_it_and_the_next_run_finishes(scripted_server, tmp_path):
    """``agentcausal serve`` runs a deployment's flow run in a process of its own; cancelled through the API mid-run,
    that process and its children are gone within 10 s, the run shows Cancelled, its folder is unlocked, and the
    next flow run completes asking no finished call again."""
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Cancelling

    scripted_server.latency_s = 1.0
    profiles = write_profiles(tmp_path / "profiles.toml", scripted_server.base_url, max_concurrency=1)
    run_dir = tmp_path / "run"
    spec = tmp_path / "prefect.yaml"
    spec.write_text(
        DEPLOYMENT.format(
            traces=EXAMPLES, methods=json.dumps(METHODS), out=run_dir, profiles=profiles, cache=tmp_path / "cache"
        )
    )
    api = SubprocessASGIServer()
    api.start(timeout=180)
    env = dict(os.environ, PREFECT_API_URL=api.api_url, PREFECT_RUNNER_POLL_FREQUENCY="1")
    with open(tmp_path / "serve.log", "w") as log:
        serve = subprocess.Popen(
            [sys.executable, "-c", CLI, "serve", "--file", str(spec)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    started: dict[int, str] = {}
    try:
        with temporary_settings(updates={PREFECT_API_URL: api.api_url}), get_client(sync_client=True) as client:
            deadline = time.monotonic() + 180
            while True:
                assert serve.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "deployment never registered"
                try:
                    client.read_deployment_by_name("attribute/slow")
                    break
                except Exception:  # not registered yet
                    time.sleep(1)
            run = run_deployment("attribute/slow", timeout=0)
            _wait_for(lambda: scripted_server.count >= 3, serve, tmp_path / "serve.log", "the flow run's LLM calls")
            started = process_tree(serve.pid)  # the flow run's process and its children
            assert started, "the flow run has no process of its own"
            t0 = time.monotonic()
            client.set_flow_run_state(run.id, Cancelling(), force=True)
            while alive(started) and time.monotonic() - t0 < STOP_WITHIN_S:
                time.sleep(0.1)
            took = time.monotonic() - t0
            left = {pid: started[pid] for pid in alive(started)}
            assert not left, f"processes of the cancelled flow run alive {took:.1f} s after the cancel: {left}"
            deadline = time.monotonic() + 30
            while not client.read_flow_run(run.id).state.is_final() and time.monotonic() < deadline:
                time.sleep(0.5)
            assert client.read_flow_run(run.id).state.is_cancelled(), client.read_flow_run(run.id).state
            assert _lock_free(run_dir), "the run folder is still locked"
            asked_before = scripted_server.count
            scripted_server.latency_s = 0.0
            again = run_deployment("attribute/slow", timeout=300)
            assert again.state.is_completed(), (again.state, (tmp_path / "serve.log").read_text()[-3000:])
        assert serve.poll() is None, "serve itself must keep serving"
        assert scripted_server.count > asked_before
        twice = [k for k, n in requests_by_prompt(scripted_server).items() if n > 1]
        assert len(twice) <= 1, f"{len(twice)} calls asked again (only the one in flight at the cancel may be)"
        assert json.loads((run_dir / "run.json").read_text())["rows"]["failed"] == 0
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
        reap(started)
