"""A sandbox for LLM-written Python built on bubblewrap: a security boundary on root and non-root alike.

What a script run by :func:`run_sandboxed` gets, and what it cannot do:

* **Identity.** It runs as an unprivileged uid. Run as root, the parent drops
  to ``nobody`` (uid/gid 65534, no supplementary groups, no capabilities)
  *before* bubblewrap starts, so the kernel counts and limits its processes
  (``RLIMIT_NPROC`` does not bind root); run as another user, it keeps that
  uid. Inside it is mapped to the same uid in a new user namespace that
  cannot create further user namespaces (``--disable-userns``).
* **Namespaces.** New user, network, PID, mount, IPC, UTS and cgroup
  namespaces (``bwrap --unshare-all --unshare-user``), ``--new-session`` (no
  terminal injection) and ``--die-with-parent``. The network namespace has
  only a down loopback: no TCP/UDP route anywhere, 127.0.0.1 included, and
  no abstract Unix sockets of the host. ``/proc`` is a fresh mount of the new
  PID namespace: no host process, so no ``/proc/<ppid>/environ`` and no
  ``/proc/<ppid>/ns/*`` to ``setns`` into (and no capability to do so).
* **File system.** A fresh root with read-only binds of only ``/usr`` (and the
  ``/bin``, ``/lib*``, ``/sbin`` links or dirs), the dynamic-linker files of
  ``/etc``, the Python installation (``sys.base_prefix``) and the virtual
  environment (``sys.prefix``); nothing else of the host: no ``/root`` or
  home, no repository, no caches, no ``/etc/shadow``, no sockets on disk.
  The script and its input files are bound read-only into ``/sandbox``, its
  working directory and the one writable host directory (a fresh temp dir,
  removed afterwards); ``/tmp`` and ``/dev/shm`` are size-capped private
  tmpfs mounts; the sandbox's own root and ``/dev`` are read-only. Installations
  outside world-readable paths (pyenv under ``/root``) are bound through a
  private mount namespace the root parent prepares, never by widening modes.
* **Environment.** Empty but for ``PATH``, ``HOME``/``TMPDIR`` (``/tmp``),
  ``LANG``, single-thread BLAS settings and ``MPLBACKEND``; ``python -I -B``.
* **Limits.** ``RLIMIT_NPROC`` (at most ``max_processes``, default 300, new
  processes and threads of the sandbox uid beyond those it already runs),
  ``RLIMIT_FSIZE`` (largest file), ``RLIMIT_AS`` (address space per process),
  ``RLIMIT_CPU``, no core files; the memory of the whole process tree
  (``memory_mb``) through a cgroup v2 where one is writable and always through
  a watchdog that sums the tree's resident memory every 50 ms (RSS, confirmed
  by PSS so pages shared after ``fork`` count once) and kills the tree past
  the cap; the bytes written to the working directory; captured
  stdout/stderr (the last ``output_bytes`` of each are kept). At the timeout,
  or when a limit trips, the whole tree is killed: every descendant by pid
  (``setsid`` does not help, they stay in the PID namespace whose init is
  bwrap's child), and the namespace's init, whose death kills the rest.
* **Output.** stdout and stderr are passed through
  :func:`agentcausal.redact.redact` before they leave; output files are read
  only if they are regular files (no symlinks), up to ``file_size_mb``.

Where bubblewrap is missing or cannot create its namespaces the sandbox fails
closed: :func:`sandbox_available` says why and :func:`run_sandboxed` raises
:class:`SandboxError`; it never runs the script with weaker isolation.

Limits that remain: the process cap is counted per uid by the kernel, so
sandboxes started at the same time share it; CPU time beyond ``RLIMIT_CPU`` is
not shared fairly; the kernel is shared (a kernel exploit escapes any
namespace sandbox).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.4
(the Causal Coding Executor writes, runs and debugs code). Bubblewrap:
https://github.com/containers/bubblewrap
"""

from __future__ import annotations

import functools
import os
import resource
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import psutil

from agentcausal.exceptions import SandboxError
from agentcausal.redact import redact

__all__ = ["SandboxResult", "SandboxLimits", "sandbox_available", "run_sandboxed", "SANDBOX_UID"]

#: uid and gid a root parent drops to (``nobody``)
SANDBOX_UID = 65534
#: where the working directory appears inside the sandbox
WORKDIR = "/sandbox"
_POLL_S = 0.05
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")


class SandboxResult(NamedTuple):
    """What a sandboxed script did.

    Attributes
    ----------
    returncode : int, the script's exit status (negative: killed by that signal)
    stdout, stderr : str, the last ``output_bytes`` of each, secrets redacted
    outputs : dict file name -> bytes of the requested output files it wrote
    timed_out : bool, killed at the wall-clock timeout (or the CPU limit)
    seconds : float, wall-clock seconds
    killed_for : str, "" or why the tree was killed ("timeout", "memory", "disk")
    """

    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, bytes]
    timed_out: bool
    seconds: float
    killed_for: str = ""


class SandboxLimits(NamedTuple):
    """Resource limits of one sandboxed run (see the module docstring for how each is enforced).

    Attributes
    ----------
    memory_mb : int, resident memory of the whole process tree, MiB; also the
        address-space limit of each process
    max_processes : int, new processes and threads of the sandbox uid (RLIMIT_NPROC above the current count)
    file_size_mb : int, largest file the script may write, MiB (RLIMIT_FSIZE)
    disk_mb : int, bytes written to the working directory in total, MiB
    tmpfs_mb : int, size of the private ``/tmp``, MiB
    output_bytes : int, kept tail of stdout and of stderr, bytes each
    """

    memory_mb: int = 2048
    max_processes: int = 300
    file_size_mb: int = 256
    disk_mb: int = 1024
    tmpfs_mb: int = 256
    output_bytes: int = 200_000


# --------------------------------------------------------------------------------------- command building


def _bwrap() -> str | None:
    return shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin:" + os.environ.get("PATH", ""))


@functools.lru_cache(maxsize=1)
def _bwrap_supports_disable_userns(bwrap: str) -> bool:
    try:
        r = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--disable-userns" in r.stdout + r.stderr


def _world_reachable(path: str) -> bool:
    """True when any user can reach and read ``path`` (every ancestor o+x, the path o+r)."""
    p = Path(path)
    try:
        for anc in [*reversed(p.parents), p]:
            mode = anc.stat().st_mode
            if not mode & stat.S_IXOTH:
                return False
        return bool(p.stat().st_mode & stat.S_IROTH)
    except OSError:
        return False


def _python_roots() -> list[tuple[str, str]]:
    """(real path, path inside) of the Python installation and the virtual environment.

    Each is bound at its real path and, where a symlink leads to it, also at the
    path Python knows it by (``sys.prefix`` decides whether the venv is active).
    Trees under ``/usr`` are already bound; trees inside another are dropped.
    """
    pairs = []
    for p in (sys.base_prefix, sys.prefix, os.path.dirname(sys.executable)):
        rp = os.path.realpath(p)
        if rp == "/usr" or rp.startswith("/usr/") or not os.path.isdir(rp):
            continue
        pairs += [(rp, rp), (rp, os.path.abspath(p))]
    pairs = sorted(set(pairs))
    dests = [d for _, d in pairs]
    return [(src, d) for src, d in pairs if not any(d != o and d.startswith(o + "/") for o in dests)]


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for f in _ETC_FILES:
        if os.path.exists(f):
            args += ["--ro-bind", f, f]
    return args


def _sandbox_env() -> list[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg",
           "PYTHONDONTWRITEBYTECODE": "1"}
    args = ["--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return args


def _command(bwrap: str, host_tmp: Path, work: Path, ro_files: Mapping[str, Path], argv: list[str],
             limits: SandboxLimits) -> list[str]:
    """The full command line: [root: unshare -m staging + setpriv] bwrap ... argv."""
    root = os.geteuid() == 0
    uid, gid = (SANDBOX_UID, SANDBOX_UID) if root else (os.getuid(), os.getgid())
    staged: list[tuple[str, str]] = []  # (host path, staging mount point)
    binds: list[str] = []
    for i, (rp, dest) in enumerate(_python_roots()):
        src = rp
        if root and not _world_reachable(rp):
            src = str(host_tmp / "stage" / str(i))
            os.makedirs(src, mode=0o755)
            staged.append((rp, src))
        binds += ["--ro-bind", src, dest]
    cmd: list[str] = []
    if staged:
        script = " && ".join(f"mount --bind -o ro {shlex.quote(a)} {shlex.quote(b)}" for a, b in staged)
        cmd += ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script + ' && exec "$@"', "sh"]
    if root:
        cmd += ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--"]
    cmd += [bwrap, "--unshare-all", "--unshare-user"]
    if _bwrap_supports_disable_userns(bwrap):
        cmd += ["--disable-userns"]
    cmd += ["--die-with-parent", "--new-session", "--uid", str(uid), "--gid", str(gid),
            *_system_binds(),
            "--proc", "/proc", "--dev", "/dev", "--size", str(limits.tmpfs_mb * 2 ** 20), "--tmpfs", "/tmp",
            *binds,  # after /tmp: a venv reached through /tmp stays visible
            "--bind", str(work), WORKDIR]
    for name, path in ro_files.items():
        cmd += ["--ro-bind", str(path), f"{WORKDIR}/{name}"]
    # the root and /dev are tmpfs mounts of bwrap's: read-only once set up, so only the
    # size-capped /tmp, /dev/shm and the working directory take writes
    cmd += ["--size", str(limits.tmpfs_mb * 2 ** 20), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            "--remount-ro", "/"]
    cmd += ["--chdir", WORKDIR, *_sandbox_env(), "--", *argv]
    return cmd


# --------------------------------------------------------------------------------------- availability


def _probe() -> str | None:
    bwrap = _bwrap()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if os.geteuid() == 0:
        for tool in ("setpriv", "unshare", "mount"):
            if shutil.which(tool, path="/usr/bin:/bin:/usr/sbin:/sbin") is None:
                return f"running as root needs {tool!r} (util-linux) to drop privileges; not found"
    try:
        res = _run(bwrap, "import sys; print('ok')", {}, (), 30.0, SandboxLimits(memory_mb=1024), cpu_s=30)
    except (OSError, SandboxError) as exc:
        return f"bubblewrap cannot start here: {exc}"
    if res.returncode != 0 or res.stdout.strip() != "ok":
        detail = (res.stderr.strip().splitlines() or [f"exit code {res.returncode}"])[-1][:300]
        return f"the sandbox cannot start here (bubblewrap: {detail})"
    return None


@functools.lru_cache(maxsize=1)
def _cached_probe() -> str | None:
    return _probe()


def sandbox_available() -> str | None:
    """None when the sandbox can run here; else the one-line reason it cannot.

    The first call runs a trivial script through the full sandbox (about
    0.2 s) and the answer is cached for the process.
    """
    if sys.platform != "linux":
        return f"the sandbox needs Linux namespaces (bubblewrap); this is {sys.platform}"
    return _cached_probe()


# --------------------------------------------------------------------------------------- running


class _Tail:
    """Drains a pipe on a thread and keeps its last ``cap`` bytes."""

    def __init__(self, pipe, cap: int) -> None:
        self.buf = bytearray()
        self.cap = cap
        self.dropped = 0
        self.thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self.thread.start()

    def _drain(self, pipe) -> None:
        try:
            while chunk := pipe.read1(65536):
                self.buf += chunk
                if len(self.buf) > 2 * self.cap:
                    cut = len(self.buf) - self.cap
                    self.dropped += cut
                    del self.buf[:cut]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        data = bytes(self.buf[-self.cap:])
        dropped = self.dropped + len(self.buf) - len(data)
        head = f"[... {dropped} earlier bytes dropped ...]\n" if dropped else ""
        return redact(head + data.decode(errors="replace"))


def _tree(pid: int) -> list[psutil.Process]:
    try:
        top = psutil.Process(pid)
        return [top, *top.children(recursive=True)]
    except psutil.Error:
        return []


def _rss_bytes(procs: list[psutil.Process]) -> int:
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _pss_bytes(procs: list[psutil.Process]) -> int:
    """Proportional set size of the tree (pages shared after ``fork`` counted once), from smaps_rollup."""
    total = 0
    for p in procs:
        try:
            with open(f"/proc/{p.pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError):
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
    return total


def _over_memory(pid: int, cap: int) -> bool:
    """True when the tree's memory exceeds ``cap`` bytes: cheap RSS sum first, confirmed by PSS."""
    procs = _tree(pid)
    return _rss_bytes(procs) > cap and _pss_bytes(procs) > cap


def _dir_bytes(path: Path, cap: int) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        for f in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
            except OSError:
                pass
            if total > cap:
                return total
    return total


def _kill_tree(proc: subprocess.Popen) -> None:
    procs = _tree(proc.pid)
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _cgroup_v2() -> Path | None:
    """A writable cgroup v2 directory whose children get memory and pids controllers, or None."""
    try:
        line = next(ln for ln in Path("/proc/self/cgroup").read_text().splitlines() if ln.startswith("0::"))
        mount = next(ln.split()[4] for ln in Path("/proc/self/mountinfo").read_text().splitlines()
                     if " - cgroup2 " in ln)
    except (OSError, StopIteration, IndexError):
        return None
    here = Path(mount) / line[3:].lstrip("/")
    try:
        controllers = set((here / "cgroup.subtree_control").read_text().split())
    except OSError:
        return None
    if not {"memory", "pids"} <= controllers or not os.access(here, os.W_OK):
        return None
    return here


def _make_cgroup(limits: SandboxLimits) -> Path | None:  # pragma: no cover - needs a delegated cgroup v2
    parent = _cgroup_v2()
    if parent is None:
        return None
    cg = parent / f"agentcausal-sandbox-{os.getpid()}-{threading.get_ident()}-{time.monotonic_ns()}"
    try:
        cg.mkdir()
        (cg / "memory.max").write_text(str(limits.memory_mb * 2 ** 20))
        (cg / "memory.swap.max").write_text("0") if (cg / "memory.swap.max").exists() else None
        (cg / "pids.max").write_text(str(limits.max_processes))
        return cg
    except OSError:
        try:
            cg.rmdir()
        except OSError:
            pass
        return None


def _remove_cgroup(cg: Path | None) -> None:  # pragma: no cover - needs a delegated cgroup v2
    if cg is None:
        return
    for _ in range(50):
        try:
            cg.rmdir()
            return
        except OSError:
            time.sleep(0.02)


def _tasks_of(uid: int) -> int:
    """Tasks (processes and threads) whose real uid is ``uid`` now: what RLIMIT_NPROC counts."""
    n = 0
    for p in psutil.process_iter(["uids", "num_threads"]):
        try:
            if p.info["uids"] is not None and p.info["uids"].real == uid:
                n += p.info["num_threads"] or 1
        except (psutil.Error, AttributeError):
            pass
    return n


def _preexec(limits: SandboxLimits, cpu_s: int, cg: Path | None, nproc: int):  # pragma: no cover - in the child
    def apply() -> None:
        os.setsid()
        if cg is not None:
            try:  # best effort: the watchdog caps memory without it
                with open(cg / "cgroup.procs", "w") as f:
                    f.write(str(os.getpid()))
            except OSError:
                pass
        mem = limits.memory_mb * 2 ** 20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        fsize = limits.file_size_mb * 2 ** 20
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return apply


def _read_output(work: Path, name: str, cap: int) -> bytes | None:
    """A regular file the script wrote, never following a symlink; None if absent or not a plain file."""
    try:
        fd = os.open(work / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(cap + 1)[:cap]
    finally:
        os.close(fd)


def _run(bwrap: str, script: str, inputs: Mapping[str, bytes], output_names: tuple[str, ...], timeout_s: float,
         limits: SandboxLimits, *, cpu_s: int) -> SandboxResult:
    for name in inputs:
        if Path(name).name != name or name.startswith(".") or name == "script.py":
            raise SandboxError(f"input name {name!r} must be a plain file name")
    root = os.geteuid() == 0
    with tempfile.TemporaryDirectory(prefix="agentcausal-sandbox-", ignore_cleanup_errors=True) as tmp:
        host_tmp = Path(tmp)
        os.chmod(host_tmp, 0o711)
        work, ro = host_tmp / "work", host_tmp / "in"
        work.mkdir()
        ro.mkdir(mode=0o755)
        ro_files = {}
        for name, blob in {**inputs, "script.py": script.encode()}.items():
            (ro / name).write_bytes(blob)
            os.chmod(ro / name, 0o444)
            ro_files[name] = ro / name
        if root:
            os.chown(work, SANDBOX_UID, SANDBOX_UID)
        os.chmod(work, 0o700)
        cmd = _command(bwrap, host_tmp, work, ro_files, [sys.executable, "-I", "-B", "script.py"], limits)
        cg = _make_cgroup(limits)
        # the kernel counts every task of the uid on the machine: allow max_processes beyond those running now
        nproc = limits.max_processes + _tasks_of(SANDBOX_UID if root else os.getuid())
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(cmd, env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8"},
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    preexec_fn=_preexec(limits, cpu_s, cg, nproc), cwd="/")
        except OSError:
            _remove_cgroup(cg)
            raise
        out, err = _Tail(proc.stdout, limits.output_bytes), _Tail(proc.stderr, limits.output_bytes)
        killed_for = ""
        mem_cap, disk_cap = limits.memory_mb * 2 ** 20, limits.disk_mb * 2 ** 20
        n = 0
        try:
            while proc.poll() is None:
                if time.perf_counter() - t0 >= timeout_s:
                    killed_for = "timeout"
                elif _over_memory(proc.pid, mem_cap):
                    killed_for = "memory"
                elif n % 20 == 0 and _dir_bytes(work, disk_cap) > disk_cap:
                    killed_for = "disk"
                if killed_for:
                    _kill_tree(proc)
                    break
                n += 1
                time.sleep(_POLL_S)
        finally:
            if proc.poll() is None and not killed_for:  # interrupted (KeyboardInterrupt...): never leave it running
                _kill_tree(proc)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL'd processes do not linger
                _kill_tree(proc)
                proc.wait()
            out.thread.join(timeout=5)
            err.thread.join(timeout=5)
            _remove_cgroup(cg)
        seconds = time.perf_counter() - t0
        timed_out = killed_for == "timeout" or (
            proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU, 128 + signal.SIGKILL)
            and not killed_for and seconds >= timeout_s * 0.9)
        cap = limits.file_size_mb * 2 ** 20
        outputs = {}
        for name in output_names:
            if Path(name).name == name:
                blob = _read_output(work, name, cap)
                if blob is not None:
                    outputs[name] = blob
        stderr = err.text()
        if killed_for == "memory":
            stderr += f"\n[sandbox: killed, the process tree used more than {limits.memory_mb} MiB]"
        elif killed_for == "disk":
            stderr += f"\n[sandbox: killed, more than {limits.disk_mb} MiB written]"
    return SandboxResult(proc.returncode, out.text(), stderr, outputs, timed_out, seconds, killed_for)


def run_sandboxed(script: str, inputs: Mapping[str, bytes] | None = None, *, output_names: tuple[str, ...] = (),
                  timeout_s: float = 60.0, memory_mb: int | None = None,
                  limits: SandboxLimits | None = None) -> SandboxResult:
    """Run a Python script in the sandbox and collect named output files.

    Parameters
    ----------
    script : str, Python source, run as ``python -I -B script.py`` in ``/sandbox``
    inputs : mapping file name -> bytes, bound read-only into ``/sandbox``
    output_names : file names to read back from ``/sandbox`` after the run
        (absent ones, symlinks and non-regular files are skipped)
    timeout_s : float, wall-clock seconds before the whole tree is killed
        (the CPU limit is the same number of seconds, rounded up)
    memory_mb : int, optional, MiB of resident memory for the whole tree (and
        of address space per process); overrides ``limits.memory_mb`` (default 2048)
    limits : SandboxLimits, optional, the other limits (defaults otherwise)

    Returns
    -------
    SandboxResult; ``timed_out`` is True when the wall or CPU limit killed it,
    ``killed_for`` says which limit killed the tree. stdout and stderr are redacted.

    Raises
    ------
    SandboxError if the sandbox is unavailable here (fails closed), or an
    input name is not a plain file name.
    """
    reason = sandbox_available()
    if reason is not None:
        raise SandboxError(reason)
    bwrap = _bwrap()
    assert bwrap is not None
    lim = limits or SandboxLimits()
    if memory_mb is not None:
        lim = lim._replace(memory_mb=memory_mb)
    return _run(bwrap, script, inputs or {}, output_names, timeout_s, lim, cpu_s=int(timeout_s) + 1)
