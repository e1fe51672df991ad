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
  terminal injection) and ``--die-with-parent``. The wrapper shell is the
  init of a PID namespace of its own (``unshare --pid --fork``), so every
  process of a sandbox, bubblewrap's own init included, is dead and reaped
  when :func:`run_sandboxed` returns: no zombie is left for the machine's
  init to reap later, where it would count against the sandbox uid's
  ``RLIMIT_NPROC`` until then. When the Python parent dies (``kill -9``
  included) ``unshare`` gets ``SIGKILL`` (``PR_SET_PDEATHSIG``), the wrapper
  shell ``SIGTERM`` (``--kill-child``); it kills bubblewrap, unmounts its
  tmpfs and removes the host's temporary folder. The network namespace has
  only a down loopback: no TCP/UDP route anywhere, 127.0.0.1 included, and
  no abstract Unix sockets of the host. ``/proc`` is a fresh mount of the new
  PID namespace: no host process, so no ``/proc/<ppid>/environ`` and no
  ``/proc/<ppid>/ns/*`` to ``setns`` into (and no capability to do so).
* **Kernel keyrings.** The sandbox starts in a new, empty session keyring
  (``KEYCTL_JOIN_SESSION_KEYRING`` before bubblewrap), and the seccomp filter
  refuses ``add_key``, ``request_key`` and ``keyctl``: no keyring of the
  parent (session, user or a key by its serial) can be read or written, and
  ``/proc/keys`` and ``/proc/key-users`` read as empty.
* **System calls.** A seccomp filter (built with libseccomp through
  ``pyseccomp``, loaded by ``bwrap --seccomp``;
  :data:`agentcausal.discovery.mac.sandbox_command.DENIED_SYSCALLS`)
  answers ``EPERM`` to the calls a causal-learn script never needs: keyrings;
  memory outside the caps (``memfd_create``, System V and POSIX message
  queues and shared memory); kernel buffers no watchdog sees (``socket`` and
  ``socketpair`` of every family: socket buffers are kernel memory outside
  any RSS, and a socket could pass descriptors on; ``vmsplice``, ``splice``,
  ``tee``, ``inotify_init*``; ``fcntl(F_SETPIPE_SZ)``, so a pipe keeps its
  default 16 pages); other processes and the kernel (``ptrace``,
  ``process_vm_*``, ``bpf``, ``perf_event_open``, ``userfaultfd``,
  ``io_uring``, handles, modules, ``kexec``, clocks, swap, ``reboot``);
  namespaces and mounts (``unshare``, ``setns``, ``clone`` with a namespace
  flag, the mount API). ``clone3`` answers ``ENOSYS`` (its flags cannot be
  inspected; the C library falls back to ``clone``). Pipes stay (a script's
  subprocesses and ``multiprocessing`` with ``fork`` use them; its
  ``Pipe(duplex=True)``, managers and ``asyncio`` need sockets and fail). A system call of another
  ABI (i386, x32) kills the process. The filter is a deny list: a system call
  newer than the installed libseccomp is allowed.
* **File system.** A fresh root with read-only binds of only ``/usr`` (and the
  ``/bin``, ``/lib*``, ``/sbin`` links or dirs), the dynamic-linker files of
  ``/etc``, the Python installation (``sys.base_prefix``) and the virtual
  environment (``sys.prefix``); nothing else of the host: no ``/root`` or
  home, no repository, no caches, no ``/etc/shadow``, no sockets on disk.
  **The one writable file system** is a tmpfs of ``disk_mb`` MiB and
  ``max_files`` inodes, mounted by the parent in a private mount namespace:
  ``/sandbox`` (the working directory, with the script and its inputs bound
  read-only into it), ``/tmp`` and ``/dev/shm`` are folders of it, so every
  byte written anywhere, unlinked-but-open files included, and every file or
  directory created counts against one cap (``ENOSPC`` beyond it). The
  sandbox's own root and ``/dev`` are read-only. Installations outside
  world-readable paths (pyenv under ``/root``) are bound through that mount
  namespace, never by widening modes. Requested output files are copied out
  by the parent's wrapper after every sandboxed process is dead (regular
  files only, never through a symlink, up to ``file_size_mb``).
* **Environment.** Empty but for ``PATH``, ``HOME``/``TMPDIR`` (``/tmp``),
  ``LANG``, single-thread BLAS settings and ``MPLBACKEND``; ``python -I -B``.
* **Limits.** ``RLIMIT_NPROC`` (at most ``max_processes``, default 300, new
  processes and threads: as root, of the sandbox uid beyond those it already
  runs; not root, of the sandbox's own user namespace, set by ``prlimit`` on
  bubblewrap so the wrapper's cleanup never runs short of forks),
  ``RLIMIT_FSIZE`` (largest file), ``RLIMIT_AS`` (address space per process),
  ``RLIMIT_NOFILE`` (open descriptors, so pipes, per process), ``RLIMIT_CPU``,
  ``RLIMIT_SIGPENDING``, ``RLIMIT_MSGQUEUE``, ``RLIMIT_MEMLOCK``, no core files.
  **Memory** (``memory_mb``) is every byte the tree pins: its processes'
  memory, the pages held by its tmpfs, and its kernel buffers. Through a
  cgroup v2 ``memory.max`` where one is writable (the kernel charges every
  page, socket and pipe buffers and page tables included) and always through
  a watchdog that every 50 ms sums the tree's resident memory (RSS, confirmed
  by PSS so pages shared after ``fork`` count once), the tmpfs's used pages,
  64 KiB for every distinct pipe or FIFO a process of the tree holds open and
  each process's page tables (:func:`~agentcausal.discovery.mac.sandbox_watch.kernel_bytes`),
  and kills the tree past the cap (a mapped tmpfs page counts twice and a
  pipe counts full: the cap errs low). :func:`memory_accounting` says which
  applies on this machine; each result's ``memory_limit`` says which applied.
  ``memfd``, System V memory and sockets, which no watchdog sees, are refused
  by the filter, and with no socket no descriptor can be passed along. The watchdog also kills the tree when its tmpfs is full
  (``killed_for="disk"``). Captured stdout/stderr: the last ``output_bytes``
  of each are kept. At the timeout, or when a limit trips, the whole tree is
  killed: every descendant by pid, and the namespace's init, whose death kills
  the rest.
* **Output.** stdout and stderr are passed through
  :func:`agentcausal.redact.redact` (each secret and its common encodings)
  before they leave.

Where bubblewrap, util-linux (``unshare``, ``mount``; ``setpriv`` as root),
libseccomp/``pyseccomp``, the kernel's seccomp or a private mount namespace is
missing, the sandbox fails closed: :func:`sandbox_available` says which piece
in one line and :func:`run_sandboxed` raises :class:`SandboxError`; it never
runs the script with weaker isolation. A cgroup v2 is optional (the watchdog
caps memory without one).

Limits that remain: the process cap is counted per uid by the kernel, so
sandboxes started at the same time share it; CPU time beyond ``RLIMIT_CPU`` is
not shared fairly; without a cgroup v2, small kernel objects the watchdog does
not count (task structures and kernel stacks, epoll, eventfd and timer
descriptors, inodes) are bounded only by the process, file and inode caps, and
a pipe slot filled by ``sendfile`` from a read-only host file refers to the
host's page cache; a cgroup v1 memory controller is not used; the kernel is
shared (a kernel exploit escapes any namespace sandbox).

The command line and the seccomp filter are built in :mod:`agentcausal.discovery.mac.sandbox_command`
(with :class:`~agentcausal.discovery.mac.sandbox_command.SandboxLimits`); the watch over the running tree
(memory, tmpfs, cgroup, kill) is :mod:`agentcausal.discovery.mac.sandbox_watch`.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.4
(the Causal Coding Executor writes, runs and debugs code). Bubblewrap:
https://github.com/containers/bubblewrap. libseccomp: https://github.com/seccomp/libseccomp
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from agentcausal.discovery.mac.sandbox_command import (
    SANDBOX_UID,
    SandboxLimits,
    bwrap_path,
    join_new_session_keyring,
    sandbox_command,
    seccomp_filter,
)
from agentcausal.discovery.mac.sandbox_watch import (
    OutputTail,
    cgroup_v2,
    final_usage,
    kill_tree,
    make_cgroup,
    over_memory,
    remove_cgroup,
    tasks_of,
    tmpfs_usage,
)
from agentcausal.exceptions import SandboxError

__all__ = ["SandboxResult", "sandbox_available", "memory_accounting", "run_sandboxed"]

_POLL_S = 0.05
#: per-process limits a causal-learn script never comes near: queued signals (POSIX timers too), POSIX message
#: queue bytes (the calls are refused anyway), locked memory
_SMALL_RLIMITS = (
    (resource.RLIMIT_SIGPENDING, 256),
    (resource.RLIMIT_MSGQUEUE, 0),
    (resource.RLIMIT_MEMLOCK, 64 * 1024),
)


class SandboxResult(NamedTuple):
    """What a sandboxed script did.

    Attributes
    ----------
    returncode : int, the script's exit status (negative: killed by that signal)
    stdout, stderr : str, the last ``output_bytes`` of each, secrets redacted
    outputs : dict file name -> bytes of the requested output files it wrote
    timed_out : bool, killed at the wall-clock timeout (or the CPU limit)
    seconds : float, wall-clock seconds
    killed_for : str, "" or the limit that stopped the tree ("timeout", "memory", "disk": its file system filled)
    memory_limit : str, what capped its memory: "cgroup v2 memory.max and the watchdog", or "the watchdog"
        (no writable cgroup v2 with a memory controller here; :func:`memory_accounting`)
    """

    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, bytes]
    timed_out: bool
    seconds: float
    killed_for: str = ""
    memory_limit: str = ""


# --------------------------------------------------------------------------------------- availability


def _probe() -> str | None:
    bwrap = bwrap_path()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if os.geteuid() == 0:
        for tool in ("setpriv", "unshare", "mount"):
            if shutil.which(tool, path="/usr/bin:/bin:/usr/sbin:/sbin") is None:
                return f"running as root needs {tool!r} (util-linux) to drop privileges; not found"
    for tool in ("unshare", "mount", "prlimit"):
        if shutil.which(tool, path="/usr/bin:/bin:/usr/sbin:/sbin") is None:
            return f"the sandbox needs {tool!r} (util-linux) for its private tmpfs; not found"
    filt = seccomp_filter()
    if filt.error:
        return filt.error
    limits = SandboxLimits(memory_mb=1024, disk_mb=16)
    try:
        res = _run(bwrap, _PROBE.replace("KEYCTL_NR", str(filt.keyctl_nr)), {}, (), 30.0, limits, cpu_s=30)
    except (OSError, SandboxError) as exc:
        return f"bubblewrap cannot start here: {exc}"
    if res.returncode != 0 or not res.stdout.strip():
        detail = (res.stderr.strip().splitlines() or [f"exit code {res.returncode}"])[-1][:300]
        return f"the sandbox cannot start here (bubblewrap: {detail})"
    got = res.stdout.split()
    if got[:1] != ["2"]:
        return "the seccomp filter did not load in the sandbox (Seccomp: " + (got[0] if got else "?") + ")"
    if got[1:2] != [str(errno.EPERM)]:
        return "the seccomp filter did not refuse keyctl in the sandbox"
    if got[2:3] != [str(limits.disk_mb * 2**20)]:
        return "the sandbox's working directory is not its size-capped tmpfs"
    return None


#: what the probe checks inside: the seccomp mode (2: a filter), keyctl's errno, the working directory's size
_PROBE = """
import ctypes, os
mode = [ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('Seccomp:')]
libc = ctypes.CDLL(None, use_errno=True)
nr = KEYCTL_NR
err = str(ctypes.get_errno()) if nr >= 0 and libc.syscall(nr, 0, -3, 0) < 0 else 'none'
st = os.statvfs('/sandbox')
print(*(mode or ['0']), err, st.f_blocks * st.f_frsize)
"""


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


def memory_accounting() -> str:
    """One line saying what caps a sandbox's memory on this machine: a cgroup v2 ``memory.max`` (where a
    writable cgroup v2 delegates the memory and pids controllers; the kernel then charges every page, socket
    and pipe buffers and page tables included) and always the watchdog, or the watchdog alone."""
    parent = cgroup_v2()
    if parent is not None:
        return f"cgroup v2 memory.max under {parent} (every page the kernel charges) and the 50 ms watchdog"
    return (
        "the 50 ms watchdog (no writable cgroup v2 with the memory and pids controllers here): processes' memory, "
        "tmpfs pages, 64 KiB per open pipe, page tables; sockets refused"
    )


# --------------------------------------------------------------------------------------- running


#: tasks of a non-root sandbox's user namespace that are not the script's: unshare (waiting on its forked child),
#: the wrapper shell, bubblewrap, its init
_WRAPPER_TASKS = 4


def _task_budget(limits: SandboxLimits, root: bool) -> int:
    """The ``RLIMIT_NPROC`` of one sandbox.

    As root the limit is set on the whole chain (root's wrapper is exempt) and the kernel counts every
    task of the sandbox uid on the machine, so ``max_processes`` is allowed beyond those running now.
    Not root, ``prlimit`` sets it on bubblewrap alone inside the sandbox's own user namespace, where the
    kernel counts that namespace's tasks: ``max_processes`` plus ``unshare``, the wrapper shell, bubblewrap
    and its init (:data:`_WRAPPER_TASKS`). The user's other processes, concurrent sandboxes included, never
    take from it, and the wrapper's cleanup always has the forks it needs.
    """
    if root:
        return limits.max_processes + tasks_of(SANDBOX_UID)
    return limits.max_processes + _WRAPPER_TASKS


def _preexec(
    limits: SandboxLimits, cpu_s: int, cg: Path | None, nproc: int | None, keyctl_nr: int
):  # pragma: no cover - in the child
    libc = ctypes.CDLL(None, use_errno=True)

    def apply() -> None:
        os.setsid()
        # PR_SET_PDEATHSIG: when this process dies, unshare dies (it blocks SIGTERM while it waits) and its
        # --kill-child sends the wrapper SIGTERM, whose trap kills the sandbox and removes its folder
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
        join_new_session_keyring(libc, keyctl_nr)
        if cg is not None:
            try:  # best effort: the watchdog caps memory without it
                with open(cg / "cgroup.procs", "w") as f:
                    f.write(str(os.getpid()))
            except OSError:
                pass
        mem = limits.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if nproc is not None:  # not root: prlimit sets it on bubblewrap (see _task_budget)
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        fsize = limits.file_size_mb * 2**20
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.max_open_files, limits.max_open_files))
        for rlimit, value in _SMALL_RLIMITS:
            resource.setrlimit(rlimit, (value, value))

    return apply


def _read_output(work: Path, name: str, cap: int) -> bytes | None:
    """A regular file the wrapper copied out, never following a symlink; None if absent, not a plain file or
    larger than ``cap`` bytes."""
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


def _run(
    bwrap: str,
    script: str,
    inputs: Mapping[str, bytes],
    output_names: tuple[str, ...],
    timeout_s: float,
    limits: SandboxLimits,
    *,
    cpu_s: int,
) -> SandboxResult:
    for name in (*inputs, *output_names):
        if Path(name).name != name or name.startswith(".") or name == "script.py":
            raise SandboxError(f"file name {name!r} must be a plain file name")
    filt = seccomp_filter()
    if filt.error:
        raise SandboxError(filt.error)
    root = os.geteuid() == 0
    with tempfile.TemporaryDirectory(prefix="agentcausal-sandbox-", ignore_cleanup_errors=True) as tmp:
        host_tmp = Path(tmp)
        os.chmod(host_tmp, 0o711)
        ro = host_tmp / "in"
        ro.mkdir(mode=0o755)
        (host_tmp / "fs").mkdir(mode=0o755)
        (host_tmp / "filter.bpf").write_bytes(filt.bpf)
        ro_files = {}
        for name, blob in {**inputs, "script.py": script.encode()}.items():
            (ro / name).write_bytes(blob)
            os.chmod(ro / name, 0o444)
            ro_files[name] = ro / name
        nproc = _task_budget(limits, root)
        cmd = sandbox_command(
            bwrap,
            host_tmp,
            ro_files,
            [sys.executable, "-I", "-B", "script.py"],
            limits,
            output_names,
            nproc=None if root else nproc,
        )
        cg = make_cgroup(limits)
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(
                cmd,
                env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8"},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                preexec_fn=_preexec(limits, cpu_s, cg, nproc if root else None, filt.keyctl_nr),
                cwd="/",
            )
        except (OSError, subprocess.SubprocessError) as exc:
            remove_cgroup(cg)
            raise SandboxError(f"the sandbox cannot start: {exc}") from exc
        out, err = OutputTail(proc.stdout, limits.output_bytes), OutputTail(proc.stderr, limits.output_bytes)
        killed_for = ""
        mem_cap, disk_cap = limits.memory_mb * 2**20, limits.disk_mb * 2**20
        fs = host_tmp / "fs"
        try:
            while proc.poll() is None:
                usage = tmpfs_usage(proc.pid, fs, disk_cap)
                if time.perf_counter() - t0 >= timeout_s:
                    killed_for = "timeout"
                elif usage.full:
                    killed_for = "disk"
                elif over_memory(proc.pid, mem_cap, usage.used):
                    killed_for = "memory"
                if killed_for:
                    kill_tree(proc)
                    break
                time.sleep(_POLL_S)
        finally:
            if proc.poll() is None and not killed_for:  # interrupted (KeyboardInterrupt...): never leave it running
                kill_tree(proc)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL'd processes do not linger
                kill_tree(proc)
                proc.wait()
            out.thread.join(timeout=5)
            err.thread.join(timeout=5)
            remove_cgroup(cg)
        seconds = time.perf_counter() - t0
        if not killed_for and final_usage(host_tmp, disk_cap).full:
            killed_for = "disk"  # it stopped itself at the cap (ENOSPC) before the watchdog looked
        timed_out = killed_for == "timeout" or (
            proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU, 128 + signal.SIGKILL)
            and not killed_for
            and seconds >= timeout_s * 0.9
        )
        cap = limits.file_size_mb * 2**20
        outputs = {}
        for name in output_names:
            got = _read_output(host_tmp / "out", name, cap)
            if got is not None:
                outputs[name] = got
        stderr = err.text()
        if killed_for == "memory":
            stderr += (
                f"\n[sandbox: killed, the process tree, its files and its pipes used more than {limits.memory_mb} MiB "
                "of memory]"
            )
        elif killed_for == "disk":
            stderr += (
                f"\n[sandbox: stopped, its {limits.disk_mb} MiB / {limits.max_files} files file system "
                "(/sandbox, /tmp, /dev/shm) is full]"
            )
    memory_limit = "cgroup v2 memory.max and the watchdog" if cg is not None else "the watchdog"
    return SandboxResult(proc.returncode, out.text(), stderr, outputs, timed_out, seconds, killed_for, memory_limit)


def run_sandboxed(
    script: str,
    inputs: Mapping[str, bytes] | None = None,
    *,
    output_names: tuple[str, ...] = (),
    timeout_s: float = 60.0,
    memory_mb: int | None = None,
    limits: SandboxLimits | None = None,
) -> SandboxResult:
    """Run a Python script in the sandbox and collect named output files.

    Parameters
    ----------
    script : str, Python source, run as ``python -I -B script.py`` in ``/sandbox``
    inputs : mapping file name -> bytes, bound read-only into ``/sandbox``
    output_names : plain file names to read back from ``/sandbox`` after the run
        (absent ones, symlinks, non-regular files and files over ``file_size_mb`` are skipped)
    timeout_s : float, wall-clock seconds before the whole tree is killed
        (the CPU limit is the same number of seconds, rounded up)
    memory_mb : int, optional, MiB of memory for the whole tree and its files (and
        of address space per process); overrides ``limits.memory_mb`` (default 2048)
    limits : SandboxLimits, optional, the other limits (defaults otherwise)

    Returns
    -------
    SandboxResult; ``timed_out`` is True when the wall or CPU limit killed it,
    ``killed_for`` says which limit stopped the tree ("disk": its file system
    filled). stdout and stderr are redacted.

    Raises
    ------
    SandboxError if the sandbox is unavailable here (fails closed, naming the
    missing piece), or an input or output name is not a plain file name.
    """
    reason = sandbox_available()
    if reason is not None:
        raise SandboxError(reason)
    bwrap = bwrap_path()
    assert bwrap is not None
    lim = limits or SandboxLimits()
    if memory_mb is not None:
        lim = lim._replace(memory_mb=memory_mb)
    return _run(bwrap, script, inputs or {}, output_names, timeout_s, lim, cpu_s=int(timeout_s) + 1)
