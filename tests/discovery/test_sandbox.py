"""The coding sandbox: real subprocesses, no LLM. Refuses network, kills runaways, caps memory, fails closed."""

from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path

import numpy as np
import pytest

from agentcausal.discovery.mac import sandbox
from agentcausal.discovery.mac.executor import validate_adjacency
from agentcausal.discovery.mac.sandbox import run_sandboxed, sandbox_available
from agentcausal.exceptions import SandboxError

needs_sandbox = pytest.mark.skipif(sandbox_available() is not None, reason=f"{sandbox_available()}")


@needs_sandbox
def test_sandbox_refuses_network_even_to_loopback():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    try:
        script = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
            "    print('CONNECTED')\n"
            "except OSError as e:\n"
            "    print('REFUSED', e.errno)\n"
        )
        res = run_sandboxed(script, timeout_s=20)
    finally:
        srv.close()
    assert res.returncode == 0 and res.stdout.startswith("REFUSED") and "CONNECTED" not in res.stdout


@needs_sandbox
def test_sandbox_kills_a_runaway_script():
    res = run_sandboxed("while True:\n    pass\n", timeout_s=1.5)
    assert res.timed_out and res.returncode != 0
    assert res.seconds < 10


@needs_sandbox
def test_sandbox_limits_memory():
    res = run_sandboxed("x = bytearray(3 * 1024 ** 3)\nprint('allocated')", timeout_s=20, memory_mb=512)
    assert res.returncode != 0 and "MemoryError" in res.stderr and "allocated" not in res.stdout


@needs_sandbox
def test_sandbox_scrubs_the_environment_and_round_trips_files(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    script = ("import os\nprint(sorted(os.environ))\nopen('out.txt', 'w').write(open('in.txt').read().upper())")
    res = run_sandboxed(script, {"in.txt": b"hello"}, output_names=("out.txt", "missing.txt"), timeout_s=20)
    assert res.returncode == 0, res.stderr
    assert "OPENAI_API_KEY" not in res.stdout and "sk-secret" not in res.stdout
    assert res.outputs == {"out.txt": b"HELLO"}


def test_sandbox_fails_closed_without_bubblewrap(monkeypatch):
    monkeypatch.setattr(sandbox, "_bwrap", lambda: None)
    sandbox._cached_probe.cache_clear()
    try:
        assert "bubblewrap" in sandbox.sandbox_available()
        with pytest.raises(SandboxError, match="bubblewrap"):
            run_sandboxed("print(1)")
    finally:
        sandbox._cached_probe.cache_clear()


def test_sandbox_fails_closed_when_bwrap_cannot_start(monkeypatch):
    folder = Path(tempfile.mkdtemp())  # readable by the uid a root parent drops to (pytest's tmp_path is not)
    folder.chmod(0o755)
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sandbox, "_bwrap", lambda: str(fake))
    sandbox._cached_probe.cache_clear()
    try:
        reason = sandbox.sandbox_available()
        assert reason is not None and "No permissions to create new namespace" in reason
        with pytest.raises(SandboxError, match="namespace"):
            run_sandboxed("print(1)")
    finally:
        sandbox._cached_probe.cache_clear()
        shutil.rmtree(folder, ignore_errors=True)


@needs_sandbox
def test_sandbox_rejects_path_like_input_names():
    with pytest.raises(SandboxError, match="plain file name"):
        run_sandboxed("print(1)", {"../x": b""})


def _npy(a: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_validate_adjacency():
    assert validate_adjacency(_npy(np.array([[0, 2], [0, 0]])), 2).tolist() == [[0, 1], [0, 0]]
    with pytest.raises(SandboxError, match="shape"):
        validate_adjacency(_npy(np.zeros((3, 3))), 2)
    with pytest.raises(SandboxError, match="diagonal"):
        validate_adjacency(_npy(np.eye(2)), 2)
    with pytest.raises(SandboxError, match="NaN"):
        validate_adjacency(_npy(np.array([[0, np.nan], [0, 0]])), 2)
    with pytest.raises(SandboxError, match="unreadable"):
        validate_adjacency(b"not numpy", 2)
