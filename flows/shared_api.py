"""One local Prefect API server for the commands that run back to back, ended by its own idle timeout.

Without ``PREFECT_API_URL`` every command used to start Prefect's temporary API server (20-40 s on 2 cores) and
stop it at exit. Instead, the first command starts a **shared local server** and later commands use it:

* **The server.** Prefect's API app (``prefect.server.api.server.create_app``, the temporary server's settings:
  no UI, its database under ``PREFECT_HOME``, SQLite by default) under ``uvicorn`` on 127.0.0.1 and a free port,
  as a detached process (a session of its own: no terminal signal and no process-group kill meant for the
  command reaches it). Its stderr goes to ``PREFECT_HOME/agentcausal-api.log``.
* **The lease.** ``PREFECT_HOME/agentcausal-api.json``: the server's pid (and start time, so a reused pid is not
  taken for it), port, URL, Prefect version and server settings, idle timeout, and the pids of its clients (the
  processes that asked for it). Every read-and-write of it happens under an exclusive lock on
  ``PREFECT_HOME/agentcausal-api.lock`` (``fcntl.flock``), so commands started at the same moment share one
  server: the first starts it while the others wait on the lock, then find its lease.
* **Reuse or replace.** A command uses the leased server when its pid is alive and ``GET /api/health`` answers
  200 within :data:`HEALTH_TIMEOUT_S`; it adds its own pid to the lease's clients. A stale lease (dead pid, or
  a port that does not answer) is replaced by a new server; a server that is alive but does not answer is not
  killed (it may be busy serving its own clients), it only loses the lease and ends by its idle timeout. A lease
  of another Prefect version or other server settings is left alone and the command uses a temporary server of
  its own (:mod:`flows.api_server`).
* **No orphan.** The server ends itself when, for ``AGENTCAUSAL_SHARED_API_IDLE_S`` seconds (default
  :data:`DEFAULT_IDLE_S`), no client process has been alive and no request or websocket has been open; it
  removes its lease under the lock, so a command arriving then starts a new one rather than a dying one. A
  command killed with ``kill -9`` is a dead client like any other. ``python -m flows.shared_api stop`` stops it
  at once; ``python -m flows.shared_api status`` prints the lease.
* **Opt-out.** ``AGENTCAUSAL_SHARED_API=0`` (false/no/off): every command starts its own temporary server, as
  before. A user-set ``PREFECT_API_URL`` (``prefect server start``, a deployment's) is never touched: this
  module is only asked when Prefect would start its temporary server. Linux and macOS (``fcntl``, sessions);
  elsewhere always the temporary server.

The client half (:func:`acquire`, :func:`read_lease`, :func:`stop`) imports no Prefect: the test suite and the
CLI read a lease without Prefect's start-up cost. :func:`serve` is the server process's entry point.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from agentcausal.exceptions import ConfigError
from agentcausal.settings import parse_bool

__all__ = [
    "DEFAULT_IDLE_S",
    "HEALTH_TIMEOUT_S",
    "Lease",
    "acquire",
    "enabled",
    "healthy",
    "idle_seconds",
    "lease_path",
    "read_lease",
    "serve",
    "server_key",
    "stop",
]

#: seconds without a live client or an open request after which the server ends itself
DEFAULT_IDLE_S = 600.0
#: seconds a health check waits for the server's answer (a busy server on 2 cores answers in well under this)
HEALTH_TIMEOUT_S = 10.0
#: seconds a server asked to stop gets to end cleanly before it is killed
STOP_GRACE_S = 20.0
ENABLED_ENV = "AGENTCAUSAL_SHARED_API"
IDLE_ENV = "AGENTCAUSAL_SHARED_API_IDLE_S"
LEASE_FILE, LOCK_FILE, LOG_FILE = "agentcausal-api.json", "agentcausal-api.lock", "agentcausal-api.log"
#: environment given to the server, as Prefect gives its temporary server
SERVER_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
#: settings (environment prefixes) that make a server different: a lease made with others is not reused
SERVER_SETTINGS = ("PREFECT_HOME", "PREFECT_API_DATABASE_", "PREFECT_SERVER_DATABASE_", "PREFECT_SERVER_API_")
#: the server's launcher: it forks, prints the server's pid and exits, so the server is no child of the command
#: (no zombie, no process-tree kill meant for the command); argv = [import root of ``flows``, PREFECT_HOME,
#: listening socket's fd, idle seconds]
SERVER_MAIN = """\
import os, sys
pid = os.fork()
if pid:
    print(pid, flush=True)
    os._exit(0)
os.setsid()
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
sys.path.insert(0, sys.argv[1])
from flows.shared_api import serve
serve(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
"""


@dataclasses.dataclass(frozen=True)
class Lease:
    """What ``agentcausal-api.json`` says about the shared server.

    Attributes
    ----------
    pid, pid_start : the server process and its start time (``/proc``'s clock ticks; "" where not known)
    port : int, on 127.0.0.1
    key : :func:`server_key` of the settings it was started with
    idle_s : float, its idle timeout in seconds
    clients : tuple of (pid, start time) of the processes that asked for it
    """

    pid: int
    pid_start: str
    port: int
    key: str
    idle_s: float
    clients: tuple[tuple[int, str], ...] = ()

    @property
    def api_url(self) -> str:
        """``http://127.0.0.1:PORT/api``, what ``PREFECT_API_URL`` would be."""
        return f"http://127.0.0.1:{self.port}/api"

    def server_alive(self) -> bool:
        """Whether the leased server process is still running (and is the one that was leased)."""
        return _alive(self.pid, self.pid_start)


def enabled(env: Mapping[str, str] = os.environ) -> bool:
    """Whether commands share one server (``AGENTCAUSAL_SHARED_API``, default true, POSIX only).

    Raises
    ------
    ConfigError
        If ``AGENTCAUSAL_SHARED_API`` is not a boolean.
    """
    raw = env.get(ENABLED_ENV, "").strip()
    on = parse_bool(raw, name=f"${ENABLED_ENV}") if raw else True
    return on and hasattr(os, "setsid") and _has_flock()


def idle_seconds(env: Mapping[str, str] = os.environ) -> float:
    """The idle timeout in seconds (``AGENTCAUSAL_SHARED_API_IDLE_S``, default :data:`DEFAULT_IDLE_S`).

    Raises
    ------
    ConfigError
        If it is not a positive number.
    """
    raw = env.get(IDLE_ENV, "").strip()
    if not raw:
        return DEFAULT_IDLE_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"${IDLE_ENV} must be a positive number of seconds, got {raw!r}")
    return value


def server_key(prefect_version: str, env: Mapping[str, str]) -> str:
    """What must match for a command to use a leased server: Prefect's version and the server's settings.

    Parameters
    ----------
    prefect_version : ``prefect.__version__`` of the command
    env : the environment the command would start a server with (its :data:`SERVER_SETTINGS` count)

    Returns
    -------
    A 16-hex-digit digest.
    """
    picked = sorted((k, v) for k, v in env.items() if k.startswith(SERVER_SETTINGS))
    return hashlib.sha256(json.dumps([prefect_version, picked]).encode()).hexdigest()[:16]


def lease_path(home: Path) -> Path:
    """``PREFECT_HOME/agentcausal-api.json``."""
    return Path(home) / LEASE_FILE


def read_lease(home: Path) -> Lease | None:
    """The lease under ``home`` (a ``PREFECT_HOME``), or None when there is none or it cannot be read."""
    try:
        raw = json.loads(lease_path(home).read_text(encoding="utf-8"))
        return Lease(
            pid=int(raw["pid"]),
            pid_start=str(raw["pid_start"]),
            port=int(raw["port"]),
            key=str(raw["key"]),
            idle_s=float(raw["idle_s"]),
            clients=tuple((int(p), str(s)) for p, s in raw.get("clients", [])),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def healthy(api_url: str, timeout: float = HEALTH_TIMEOUT_S) -> bool:
    """Whether ``GET {api_url}/health`` answers 200 within ``timeout`` seconds (no proxy is asked)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{api_url}/health", timeout=timeout) as reply:
            return bool(reply.status == 200)
    except (OSError, ValueError):
        return False


def acquire(home: Path, *, key: str, env: Mapping[str, str], startup_timeout_s: float, idle_s: float) -> Lease | None:
    """The shared server under ``home``, started if there is none alive; this process becomes one of its clients.

    Parameters
    ----------
    home : Path, ``PREFECT_HOME`` (created if missing)
    key : :func:`server_key` of this process
    env : the server's environment when one is started (``SERVER_ENV`` is added)
    startup_timeout_s : seconds to wait for a new server's health check
    idle_s : the idle timeout of a new server

    Returns
    -------
    The lease, or None when the leased server is alive but was started with another ``key`` (the caller then
    starts a temporary server of its own).

    Raises
    ------
    RuntimeError
        If a new server exits or does not answer within ``startup_timeout_s`` (with its log's last lines).
    """
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    me = (os.getpid(), _process_start(os.getpid()) or "")
    with _locked(home):
        lease = read_lease(home)
        if lease is not None and lease.server_alive() and lease.key != key:
            return None
        if lease is None or not (lease.server_alive() and healthy(lease.api_url)):
            lease = _start_server(home, key=key, env=env, startup_timeout_s=startup_timeout_s, idle_s=idle_s)
        clients = tuple(c for c in lease.clients if _alive(*c) and c != me) + (me,)
        lease = dataclasses.replace(lease, clients=clients)
        _write_lease(home, lease)
        return lease


def stop(home: Path, timeout: float = STOP_GRACE_S) -> int | None:
    """Stop the shared server under ``home`` now and remove its lease; its clients lose their API.

    Returns
    -------
    The pid stopped, or None when no live server was leased. SIGTERM first, SIGKILL to its process group
    after ``timeout`` seconds.
    """
    home = Path(home)
    if not home.is_dir():
        return None
    with _locked(home):
        lease = read_lease(home)
        lease_path(home).unlink(missing_ok=True)
    if lease is None or not lease.server_alive():
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(lease.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while lease.server_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    if lease.server_alive():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(lease.pid, signal.SIGKILL)
    return lease.pid


# -- processes and files --------------------------------------------------------------------------------------


def _has_flock() -> bool:
    try:
        import fcntl  # noqa: F401  (POSIX only)
    except ImportError:  # pragma: no cover - not POSIX
        return False
    return True


def _process_start(pid: int) -> str | None:
    """A process's start time ("" where ``/proc`` is missing), None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
        try:  # no /proc (macOS): alive or not, without a start time
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def _alive(pid: int, start: str) -> bool:
    now = _process_start(pid)
    return now is not None and (not start or not now or now == start)


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    import fcntl

    with open(Path(home) / LOCK_FILE, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _write_lease(home: Path, lease: Lease) -> None:
    path = lease_path(home)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(dataclasses.asdict(lease)), encoding="utf-8")
    os.replace(tmp, path)


def _log_tail(home: Path, chars: int = 3000) -> str:
    try:
        return (Path(home) / LOG_FILE).read_text(encoding="utf-8", errors="replace")[-chars:].strip()
    except OSError:
        return ""


def _start_server(home: Path, *, key: str, env: Mapping[str, str], startup_timeout_s: float, idle_s: float) -> Lease:
    """Start a detached server on a socket bound here (so its port is known before it runs); wait for health."""
    log_file = home / LOG_FILE
    log_file.unlink(missing_ok=True)  # a replaced server still running keeps writing to its own (unlinked) file
    root = str(Path(__file__).resolve().parents[1])
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, open(log_file, "wb") as log:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        launcher = subprocess.run(
            [sys.executable, "-c", SERVER_MAIN, root, str(home), str(sock.fileno()), repr(idle_s)],
            env={**env, **SERVER_ENV},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=str(home),
            pass_fds=(sock.fileno(),),
            start_new_session=True,  # detached: a session and process group of its own
            timeout=startup_timeout_s,
            check=False,
        )
    try:
        pid = int(launcher.stdout.strip())
    except ValueError:
        raise RuntimeError(f"the shared Prefect API server did not start: {_log_tail(home)}") from None
    lease = Lease(pid=pid, pid_start=_process_start(pid) or "", port=port, key=key, idle_s=idle_s)
    deadline = time.monotonic() + startup_timeout_s
    while time.monotonic() < deadline:
        if not lease.server_alive():
            raise RuntimeError(f"the shared Prefect API server exited: {_log_tail(home)}")
        if healthy(lease.api_url, timeout=2.0):
            return lease
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    raise RuntimeError(
        f"the shared Prefect API server did not answer within {startup_timeout_s:g} s: {_log_tail(home)}"
    )


# -- the server process -------------------------------------------------------------------------------------------


class _Activity:
    """Requests and websockets open now, and when the last one closed (ASGI middleware around Prefect's app)."""

    def __init__(self) -> None:
        self.open = 0
        self.last = time.monotonic()
        self._lock = threading.Lock()

    def wrap(self, app: Callable[..., Any]) -> Callable[..., Any]:
        async def counted(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] not in ("http", "websocket"):
                await app(scope, receive, send)
                return
            with self._lock:
                self.open += 1
            try:
                await app(scope, receive, send)
            finally:
                with self._lock:
                    self.open -= 1
                    self.last = time.monotonic()

        return counted


def _idle_watch(home: Path, idle_s: float, activity: _Activity, server: Any) -> None:
    """Set ``server.should_exit`` once, for ``idle_s`` seconds, no client has been alive and nothing open; then
    also where ``home`` is gone (a temporary ``PREFECT_HOME`` removed: no command can find this server any more),
    and if the watch fails: a server is never left unwatched."""
    me = os.getpid()
    clients: set[tuple[int, str]] = set()
    busy_at = time.monotonic()
    interval = min(5.0, max(0.05, idle_s / 10))

    def busy() -> bool:
        lease = read_lease(home)
        if lease is not None and lease.pid == me:  # clients register in the lease while it is this server's
            clients.update(lease.clients)
        clients.difference_update({c for c in clients if not _alive(*c)})
        return bool(clients) or activity.open > 0

    try:
        while not server.should_exit:
            time.sleep(interval)
            now = time.monotonic()
            if busy():
                busy_at = now
            if now - max(busy_at, activity.last) < idle_s:
                continue
            if not home.is_dir():
                break
            with _locked(home):  # a command asking for the server now either registered already, or finds no lease
                if busy():
                    busy_at = now
                    continue
                _release(home)
            break
    finally:
        server.should_exit = True
        hard = threading.Timer(STOP_GRACE_S, os._exit, args=(0,))  # the hard stop, should uvicorn hang
        hard.daemon = True
        hard.start()


def _release(home: Path) -> None:
    lease = read_lease(home)
    if lease is not None and lease.pid == os.getpid():
        lease_path(home).unlink(missing_ok=True)


def serve(home: str, fd: int, idle_s: float) -> None:
    """The shared server process: Prefect's API app on the listening socket ``fd`` until it is idle.

    Parameters
    ----------
    home : ``PREFECT_HOME`` holding the lease
    fd : a socket bound to 127.0.0.1 (inherited from the command that started this process)
    idle_s : seconds without a live client or an open request before it ends itself
    """
    os.environ.update(SERVER_ENV)
    import uvicorn
    from prefect.server.api.server import create_app

    activity = _Activity()
    sock = socket.socket(fileno=fd)
    config = uvicorn.Config(
        activity.wrap(create_app()), log_level="error", lifespan="on", timeout_graceful_shutdown=int(STOP_GRACE_S)
    )
    server = uvicorn.Server(config)
    threading.Thread(
        target=_idle_watch, args=(Path(home), idle_s, activity, server), name="idle-watch", daemon=True
    ).start()
    try:
        server.run(sockets=[sock])
    finally:
        with contextlib.suppress(OSError), _locked(Path(home)):
            _release(Path(home))


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m flows.shared_api", description="The shared local Prefect API server: its lease, or stop it."
    )
    parser.add_argument("action", choices=["status", "stop"])
    parser.add_argument("--home", default=os.environ.get("PREFECT_HOME", str(Path.home() / ".prefect")))
    args = parser.parse_args(argv)
    lease = read_lease(Path(args.home))
    if args.action == "status":
        alive = lease is not None and lease.server_alive()
        if lease is None:  # a sentence, not JSON's null
            print(f"no shared Prefect API server running (no lease under {args.home})")
            return 1
        print(json.dumps({**dataclasses.asdict(lease), "api_url": lease.api_url, "alive": alive}))
        return 0 if alive else 1
    pid = stop(Path(args.home))
    print(f"stopped the shared Prefect API server (pid {pid})" if pid else "no shared Prefect API server running")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
