"""The API server Prefect asks for without ``PREFECT_API_URL``: the shared local one, or a temporary one bound to
its run.

**Shared** (the default, :mod:`flows.shared_api`): :meth:`ParentBoundASGIServer.start` asks for the local server
the commands under the same ``PREFECT_HOME`` share, started by the first of them and ended by its own idle
timeout, and points Prefect's clients at it; nothing is started when one is running. ``AGENTCAUSAL_SHARED_API=0``
turns this off; a lease of another Prefect version or other server settings is left to its own commands. Then:

**Temporary.** Without ``PREFECT_API_URL`` Prefect starts a temporary ("ephemeral") API server for the process, a
``uvicorn`` child process (``prefect.server.api.server.SubprocessASGIServer``), and stops it at exit
(``atexit``). A run killed with ``kill -9`` (or SIGTERM, the OOM killer, a CI timeout) never runs its
``atexit`` handlers, so the server was left behind, listening, about 250 MB each.

:func:`install` puts :class:`ParentBoundASGIServer` in Prefect's place before anything asks for the
server (``SubprocessASGIServer()`` is a per-port singleton, so Prefect's own clients get this one). It
starts the same ``uvicorn`` command through a small launcher that

1. starts a new process group for the server (so a signal meant for it reaches everything it starts,
   and a Ctrl-C at the terminal no longer stops the server before the run has finished reporting), and
2. watches its parent: every :data:`WATCH_INTERVAL_S` seconds it compares ``os.getppid()`` with the pid
   that started it, and when the parent is gone (the server was re-parented) it kills its own process
   group with SIGKILL.

A watchdog rather than ``PR_SET_PDEATHSIG``: the parent-death signal fires when the *thread* that forked
the child exits, and Prefect may start its server from a worker thread of the run, which ends long
before the process does. Normal exits still stop the server through Prefect's ``atexit`` handler.

Its stderr goes to a log file of its own (:attr:`ParentBoundASGIServer.log_path`, a temporary file removed
when the server stops), not to the run's console: when the run ends, uvicorn's shutdown of a server that
still has connections open (Prefect's event and log clients) printed a 100-odd-line traceback after a
successful run. A server that fails to start is still named: the start-up error carries the log's tail.

A server at ``PREFECT_API_URL`` (``prefect server start``, a deployment's) is not touched. Linux and
macOS (POSIX process groups); elsewhere :func:`install` does nothing.

**Flow-run heartbeats** (:func:`unwatched_heartbeats_off`): Prefect emits a heartbeat event per flow run every
``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` seconds (default 180) for an automation that marks runs whose process
died (Prefect's "detect zombie flows", which asks users to set that variable). Its sync flow engine joins the
heartbeat thread at every flow's end, and the thread sleeps in whole seconds, so each flow waits up to a
second after its last work (Prefect 3.9.1). On the servers of this module, with no frequency set by the user,
flows run without them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

import prefect
import prefect.context
from prefect.server.api.server import SubprocessASGIServer
from prefect.settings import (
    PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    Settings,
    get_current_settings,
)

from flows import shared_api

__all__ = ["WATCH_INTERVAL_S", "ParentBoundASGIServer", "install", "LAUNCHER", "unwatched_heartbeats_off"]

#: seconds between the server's checks that its parent is alive (how long it outlives a killed run at most)
WATCH_INTERVAL_S = 0.5

#: the launcher run by ``python -c``: argv = [parent pid, interval, uvicorn's arguments...]
LAUNCHER = """\
import os, runpy, signal, sys, threading, time
parent, interval = int(sys.argv[1]), float(sys.argv[2])
os.setpgid(0, 0)
if os.getppid() != parent:
    os._exit(1)
def _watch():
    while os.getppid() == parent:
        time.sleep(interval)
    os.killpg(0, signal.SIGKILL)
threading.Thread(target=_watch, name="parent-watch", daemon=True).start()
sys.argv = ["uvicorn", *sys.argv[3:]]
runpy.run_module("uvicorn", run_name="__main__", alter_sys=True)
"""


class _LeasedServer:
    """Stands for the shared server's process where Prefect expects its own child (``server_process``): Prefect's
    clients only check that there is one; stopping it is left to the server's idle timeout."""

    def __init__(self, pid: int) -> None:
        self.pid, self.returncode = pid, None

    def poll(self) -> None:
        return None


class ParentBoundASGIServer(SubprocessASGIServer):
    """The shared local API server when :func:`flows.shared_api.enabled`, else Prefect's temporary API server (the
    same command, settings and start-up checks) started through :data:`LAUNCHER` so that it dies with the process
    that started it."""

    _log: IO[bytes] | None = None
    #: the shared server's lease while this process uses it (None: a temporary server of its own, or none yet)
    shared: shared_api.Lease | None = None

    @property
    def log_path(self) -> Path | None:
        """The server's stderr while it runs (None before it starts and after it stops)."""
        return Path(self._log.name) if self._log is not None else None

    def start(self, timeout: int | None = None) -> None:
        """The shared server (started if none runs), else Prefect's start (health checked); a failed start
        carries the server's own last lines.

        Raises
        ------
        RuntimeError
            If the server does not answer in time (Prefect's message, then the server's log tail).
        ConfigError
            If ``AGENTCAUSAL_SHARED_API`` or ``AGENTCAUSAL_SHARED_API_IDLE_S`` is invalid.
        """
        if not self.running and shared_api.enabled():
            env, home = self._server_env(), Path(get_current_settings().home)
            try:
                lease = shared_api.acquire(
                    home,
                    key=shared_api.server_key(prefect.__version__, env),
                    env=env,
                    startup_timeout_s=float(timeout or PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()),
                    idle_s=shared_api.idle_seconds(),
                )
            except OSError as exc:  # PREFECT_HOME without room for the lease: a temporary server of its own
                logging.getLogger(__name__).warning("no shared Prefect API server under %s (%s)", home, exc)
                lease = None
            if lease is not None:
                self.port, self.shared, self.running = lease.port, lease, True
                self.server_process = cast("subprocess.Popen[Any]", _LeasedServer(lease.pid))  # Prefect asserts one
                return
        try:
            super().start(timeout)
        except RuntimeError as exc:
            tail = self._log_tail()
            raise RuntimeError(f"{exc}{' server log: ' + tail if tail else ''}") from exc

    def stop(self) -> None:
        """Prefect's stop, then the log file is closed and removed (what it holds is the shutdown's noise).
        The shared server is left running for the next command (it ends by its idle timeout)."""
        if self.shared is not None:
            self.shared, self.server_process = None, None
        try:
            super().stop()
        finally:
            log, self._log = self._log, None
            if log is not None:
                log.close()
                Path(log.name).unlink(missing_ok=True)

    def _log_tail(self, chars: int = 3000) -> str:
        if self._log is None:
            return ""
        try:
            return Path(self._log.name).read_text(encoding="utf-8", errors="replace")[-chars:].strip()
        except OSError:
            return ""

    def _run_uvicorn_command(self) -> subprocess.Popen[Any]:
        server_env = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
        uvicorn_args = [
            "--app-dir",
            str(prefect.__module_path__.parent),
            "--factory",
            "prefect.server.api.server:create_app",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-level",
            "error",
            "--lifespan",
            "on",
        ]
        if self._log is None:  # one file for the process's server (a retried port reuses it)
            self._log = tempfile.NamedTemporaryFile(prefix="agentcausal-prefect-api-", suffix=".log", delete=False)
        return subprocess.Popen(
            args=[sys.executable, "-c", LAUNCHER, str(os.getpid()), repr(WATCH_INTERVAL_S), *uvicorn_args],
            env={**self._server_env(), **server_env},
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )

    @staticmethod
    def _server_env() -> dict[str, str]:
        """The environment a server is started with: this process's, with its Prefect settings."""
        return {**os.environ, **get_current_settings().to_environment_variables(exclude_unset=True)}


def install() -> SubprocessASGIServer | None:
    """Make :class:`ParentBoundASGIServer` the process's temporary API server, unless one is already made.

    Returns
    -------
    The instance Prefect will use (None on a platform without ``os.setpgid``). Starts nothing: Prefect
    starts it when a run first needs the API and no ``PREFECT_API_URL`` is set.
    """
    if not hasattr(os, "setpgid"):
        return None
    current = SubprocessASGIServer._instances.get(None)
    if current is None:
        current = ParentBoundASGIServer()  # registered in Prefect's per-port singleton table, key None
    return current


@contextlib.contextmanager
def unwatched_heartbeats_off() -> Iterator[None]:
    """Flows run inside send no Prefect flow-run heartbeats where the user asked for none on a server of this module.

    Off when ``PREFECT_API_URL`` is unset (the flows report to the shared local server or a temporary one) and
    no ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` is set (environment or Prefect profile); anything else is left as
    it is. Heartbeats serve Prefect's zombie-flow detection, which asks for that variable, so a user who relies
    on them keeps them. With them on, Prefect's sync engine joins its heartbeat thread, which sleeps in whole
    seconds, at every flow's end: up to a second per flow (``bench/README.md``, "Where a rerun's second goes").
    """
    context = prefect.context.get_settings_context()
    settings = context.settings
    if settings.api.url is not None or "heartbeat_frequency" in settings.flows.model_fields_set:
        yield
        return
    with prefect.context.SettingsContext(profile=context.profile, settings=_without_heartbeats(settings)):
        yield


#: (the settings, the ``PREFECT_*`` environment, the same settings without heartbeats): the last one made
_WITHOUT_HEARTBEATS: list[tuple[Settings, tuple[tuple[str, str], ...], Settings]] = []


def _without_heartbeats(settings: Settings) -> Settings:
    """``settings`` with ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` unset, made once per settings object and ``PREFECT_*``
    environment: Prefect's ``copy_with_update`` validates every setting again and reads the environment, about
    30 ms of CPU a call, which a flow run would otherwise pay each time."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PREFECT_")))
    for base, base_env, off in list(_WITHOUT_HEARTBEATS):
        if base is settings and base_env == env:
            return off
    off = settings.copy_with_update(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})
    _WITHOUT_HEARTBEATS[:] = [(settings, env, off)]
    return off
