"""Test services of the tracer tests: the virtual environments scripts/setup.sh makes, a real Phoenix server.

The Phoenix server and the agent SDKs live in their own virtual environments (``.venv-phoenix``,
``.venv-agents``; see the test-services block of scripts/setup.sh). A test that needs one skips only when
setup was told to leave them out (``AGENTCAUSAL_TEST_SERVICES=0``, recorded in ``.test-services-skipped``);
a missing environment without that record fails, so CI cannot pass without running these tests.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

#: helper scripts run in the test-service environments, not modules of this test process
collect_ignore = ["sdk_runs", "phoenix_serve.py"]

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = ROOT / ".test-services-skipped"


def service_python(venv: str) -> Path:
    """The Python of a test-service virtual environment (``.venv-phoenix`` / ``.venv-agents``), or skip/fail."""
    py = ROOT / venv / "bin" / "python"
    if SKIPPED.is_file():
        pytest.skip(f"{venv} not installed: {SKIPPED.read_text().strip()} (scripts/setup.sh test services)")
    if not py.is_file():
        pytest.fail(
            f"{venv} is missing: run `bash scripts/setup.sh` (it installs the test services; "
            "AGENTCAUSAL_TEST_SERVICES=0 leaves them out and these tests skip)"
        )
    return py


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PhoenixServer:
    """A Phoenix server started for a test: SQLite in ``workdir``, HTTP and gRPC on free loopback ports."""

    def __init__(self, python: Path, workdir: Path) -> None:
        self.http_port, self.grpc_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.log = workdir / "phoenix.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
        env.update(
            PHOENIX_HOST="127.0.0.1",
            PHOENIX_PORT=str(self.http_port),
            PHOENIX_GRPC_PORT=str(self.grpc_port),
            PHOENIX_WORKING_DIR=str(workdir),
            PHOENIX_TELEMETRY_ENABLED="false",
            PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
        )
        self._log = self.log.open("w")
        self.proc = subprocess.Popen(
            [str(python), str(Path(__file__).with_name("phoenix_serve.py"))],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )

    def wait(self, timeout_s: float = 180.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Phoenix exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"Phoenix not up after {timeout_s} s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory) -> Iterator[PhoenixServer]:
    """A running Phoenix server (module scope: one start for the module's tests)."""
    server = PhoenixServer(service_python(".venv-phoenix"), tmp_path_factory.mktemp("phoenix"))
    try:
        server.wait()
        yield server
    finally:
        server.stop()


def run_sdk(script: str, base_url: str, out: Path, *args: str, timeout_s: float = 180) -> None:
    """Run a recording script of ``tests/tracers/sdk_runs`` in the agent-SDK environment; fail with its output."""
    py = service_python(".venv-agents")
    home = out.parent / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        CREWAI_DISABLE_TELEMETRY="true",
        CREWAI_TRACING_ENABLED="false",
        OTEL_SDK_DISABLED="false",
        HOME=str(home),
        CREWAI_STORAGE_DIR=str(home / "crewai"),
        OPENAI_API_KEY="test-key",
        PYTHONPATH=str(Path(__file__).with_name("sdk_runs")),
    )
    r = subprocess.run(
        [str(py), str(Path(__file__).with_name("sdk_runs") / script), base_url, str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if r.returncode:
        pytest.fail(f"{script} failed ({r.returncode}): {r.stderr[-3000:]}")


__all__ = ["PhoenixServer", "free_port", "run_sdk", "service_python"]
