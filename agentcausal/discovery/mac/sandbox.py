"""A sandbox for LLM-written Python: no network, own temp dir, time and memory limits, scrubbed environment.

The script runs as ``unshare -rn python -I script.py`` (``unshare -n`` when
already root): a new network namespace with only a down loopback, so every
connection fails (ENETUNREACH), even to 127.0.0.1. Where neither form is
allowed the sandbox fails closed: :func:`sandbox_available` says why and
:func:`run_sandboxed` raises :class:`SandboxError` rather than run unisolated.

Limits, set in the child before ``exec``: ``RLIMIT_AS`` (address space; an
oversized allocation raises MemoryError) and ``RLIMIT_CPU`` (CPU seconds);
plus a wall-clock timeout after which the whole process group is killed. The
environment holds only ``PATH``, ``HOME`` (the temp dir), ``LANG`` and
single-thread settings for BLAS; ``python -I`` ignores ``PYTHON*`` variables and
the user site. The working directory is a fresh temp dir, removed afterwards.

This is isolation against accidents and casual misuse by a model, not a
security boundary against a determined attacker (the file system is still
readable).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.4
(the Causal Coding Executor writes, runs and debugs code).
"""

from __future__ import annotations

import functools
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from agentcausal.exceptions import SandboxError

__all__ = ["SandboxResult", "sandbox_available", "isolation_prefix", "run_sandboxed"]


class SandboxResult(NamedTuple):
    """What a sandboxed script did: exit code, captured output, files it wrote, timing."""

    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, bytes]
    timed_out: bool
    seconds: float


@functools.lru_cache(maxsize=1)
def isolation_prefix() -> tuple[str, ...] | None:
    """The ``unshare`` command that works here, or None."""
    candidates = [("unshare", "-n")] if os.geteuid() == 0 else []
    candidates.append(("unshare", "-rn"))
    for prefix in candidates:
        try:
            r = subprocess.run([*prefix, "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0:
            return prefix
    return None


def sandbox_available() -> str | None:
    """None when the sandbox can run; else the reason it cannot (for messages and records)."""
    if sys.platform != "linux":
        return f"network isolation needs Linux namespaces (unshare); this is {sys.platform}"
    if isolation_prefix() is None:
        return ("neither 'unshare -n' nor 'unshare -rn' is allowed here (no network namespaces); "
                "coding mode refused")
    return None


def _limits(memory_mb: int, cpu_s: int):  # pragma: no cover - runs in the child
    def apply() -> None:
        os.setsid()
        mem = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run_sandboxed(script: str, inputs: Mapping[str, bytes] | None = None, *, output_names: tuple[str, ...] = (),
                  timeout_s: float = 60.0, memory_mb: int = 2048) -> SandboxResult:
    """Run a Python script in the sandbox and collect named output files.

    Parameters
    ----------
    script : str, Python source
    inputs : mapping file name -> bytes, written into the temp dir first
    output_names : file names to read back after the run (absent ones are skipped)
    timeout_s : float, wall-clock seconds before the process group is killed
        (the CPU limit is the same number of seconds, rounded up)
    memory_mb : int, address-space limit in MiB

    Returns
    -------
    SandboxResult; ``timed_out`` is True when the wall or CPU limit killed it.

    Raises
    ------
    SandboxError if network isolation is unavailable (fails closed), or an
    input name is not a plain file name.
    """
    reason = sandbox_available()
    if reason is not None:
        raise SandboxError(reason)
    prefix = isolation_prefix()
    assert prefix is not None
    with tempfile.TemporaryDirectory(prefix="agentcausal-sandbox-") as tmp:
        work = Path(tmp)
        for name, blob in (inputs or {}).items():
            if Path(name).name != name or name.startswith("."):
                raise SandboxError(f"input name {name!r} must be a plain file name")
            (work / name).write_bytes(blob)
        (work / "script.py").write_text(script)
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8", "TMPDIR": tmp,
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "MPLBACKEND": "Agg"}
        cmd = [*prefix, sys.executable, "-I", "script.py"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, preexec_fn=_limits(memory_mb, int(timeout_s) + 1))
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
        seconds = time.perf_counter() - t0
        if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL) and not timed_out and seconds >= timeout_s * 0.9:
            timed_out = True
        outputs = {n: (work / n).read_bytes() for n in output_names
                   if Path(n).name == n and (work / n).is_file()}
    return SandboxResult(proc.returncode, out.decode(errors="replace")[-20000:],
                         err.decode(errors="replace")[-20000:], outputs, timed_out, seconds)
