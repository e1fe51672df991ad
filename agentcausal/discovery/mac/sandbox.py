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
  terminal injection) and ``--die-with-parent`` (and the first process dies
  with the Python parent, ``PR_SET_PDEATHSIG``). The network namespace has
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
  ``pyseccomp``, loaded by ``bwrap --seccomp``; :data:`DENIED_SYSCALLS`)
  answers ``EPERM`` to the calls a causal-learn script never needs: keyrings;
  memory outside the caps (``memfd_create``, System V and POSIX message
  queues and shared memory); other processes and the kernel (``ptrace``,
  ``process_vm_*``, ``bpf``, ``perf_event_open``, ``userfaultfd``,
  ``io_uring``, handles, modules, ``kexec``, clocks, swap, ``reboot``);
  namespaces and mounts (``unshare``, ``setns``, ``clone`` with a namespace
  flag, the mount API). ``clone3`` answers ``ENOSYS`` (its flags cannot be
  inspected; the C library falls back to ``clone``); a socket of any family
  but Unix, IPv4, IPv6 and netlink answers ``EAFNOSUPPORT`` (no ``AF_VSOCK``
  to a hypervisor, no ``AF_PACKET``, no ``AF_ALG``). A system call of another
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
  processes and threads of the sandbox uid beyond those it already runs),
  ``RLIMIT_FSIZE`` (largest file), ``RLIMIT_AS`` (address space per process),
  ``RLIMIT_NOFILE``, ``RLIMIT_CPU``, no core files. **Memory** (``memory_mb``)
  is the tree's process memory plus the pages held by its tmpfs: through a
  cgroup v2 ``memory.max`` where one is writable (the kernel counts every
  page, kernel memory included) and always through a watchdog that every
  50 ms sums the tree's resident memory (RSS, confirmed by PSS so pages
  shared after ``fork`` count once) and the tmpfs's used pages, and kills the
  tree past the cap (a mapped tmpfs page counts twice: the cap errs low).
  ``memfd`` and System V memory, which no watchdog sees, are refused by the
  filter. The watchdog also kills the tree when its tmpfs is full
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
not shared fairly; without a cgroup v2, kernel memory (pipe and socket
buffers, inodes, page tables) is bounded only by the process, file and inode
caps; the kernel is shared (a kernel exploit escapes any namespace sandbox).

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

__all__ = ["SandboxResult", "SandboxLimits", "sandbox_available", "run_sandboxed", "SANDBOX_UID",
           "DENIED_SYSCALLS"]

#: uid and gid a root parent drops to (``nobody``)
SANDBOX_UID = 65534
#: where the working directory appears inside the sandbox
WORKDIR = "/sandbox"
_POLL_S = 0.05
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
#: the file descriptor the wrapper hands the compiled seccomp filter to bubblewrap on
_SECCOMP_FD = 9

#: system calls the seccomp filter answers with EPERM, by why a causal-learn script never needs them
DENIED_SYSCALLS: dict[str, tuple[str, ...]] = {
    "kernel keyrings": ("add_key", "request_key", "keyctl"),
    "memory no watchdog counts": ("memfd_create", "memfd_secret", "shmget", "shmat", "shmctl", "msgget", "msgsnd",
                                  "msgrcv", "msgctl", "semget", "semop", "semctl", "semtimedop", "mq_open",
                                  "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"),
    "other processes and the kernel": ("ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
                                       "pidfd_getfd", "perf_event_open", "bpf", "userfaultfd", "io_uring_setup",
                                       "io_uring_enter", "io_uring_register", "lookup_dcookie", "fanotify_init",
                                       "open_by_handle_at", "name_to_handle_at", "init_module", "finit_module",
                                       "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
                                       "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "settimeofday",
                                       "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
                                       "iopl", "ioperm", "vhangup", "uselib", "nfsservctl", "_sysctl"),
    "namespaces and mounts": ("unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree",
                              "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"),
}
#: socket families a script may open (Unix, IPv4, IPv6, netlink; the network namespace has no route anyway)
_SOCKET_FAMILIES = (1, 2, 10, 16)
#: clone flags that make a namespace (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET)
_CLONE_NEW = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)


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
    memory_mb : int, memory of the whole process tree plus the pages of its tmpfs, MiB; also the
        address-space limit of each process
    max_processes : int, new processes and threads of the sandbox uid (RLIMIT_NPROC above the current count)
    file_size_mb : int, largest file the script may write, MiB (RLIMIT_FSIZE); also the largest output read back
    disk_mb : int, size of the one writable file system (``/sandbox``, ``/tmp``, ``/dev/shm``), MiB
    max_files : int, files and directories it may hold (tmpfs ``nr_inodes``)
    max_open_files : int, open file descriptors per process (RLIMIT_NOFILE)
    output_bytes : int, kept tail of stdout and of stderr, bytes each
    """

    memory_mb: int = 2048
    max_processes: int = 300
    file_size_mb: int = 256
    disk_mb: int = 1024
    max_files: int = 10_000
    max_open_files: int = 256
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


def _hidden_proc_files() -> list[str]:
    """Cover ``/proc/keys`` and ``/proc/key-users``: they list the descriptions of keys the uid may view
    (a non-root parent's own keys, when the sandbox runs as its uid)."""
    args: list[str] = []
    for f in ("/proc/keys", "/proc/key-users"):
        if os.path.exists(f):
            args += ["--ro-bind", "/dev/null", f]
    return args


def _sandbox_env() -> list[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg",
           "PYTHONDONTWRITEBYTECODE": "1"}
    args = ["--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return args


def _wrapper_script(host_tmp: Path, limits: SandboxLimits, uid: int, gid: int, root: bool,
                    staged: list[tuple[str, str]], output_names: tuple[str, ...]) -> str:
    """The shell run in the private mount namespace: mount the one tmpfs, run "$@" (bubblewrap), copy outputs out.

    The copies happen after bubblewrap returned, so every process of the sandbox's PID
    namespace is dead; only regular files are copied, never through a symlink.
    """
    q = shlex.quote
    fs = host_tmp / "fs"
    dirs = " ".join(q(str(fs / d)) for d in ("work", "tmp", "shm"))
    lines = ["set -e",
             f"mount -t tmpfs -o size={limits.disk_mb}m,nr_inodes={limits.max_files},mode=0755,nosuid,nodev "
             f"agentcausal-sandbox {q(str(fs))}",
             f"mkdir -m 0700 {dirs}"]
    if root:
        lines.append(f"chown {uid}:{gid} {dirs}")
    lines += [f"mount --bind -o ro {q(a)} {q(b)}" for a, b in staged]
    out = host_tmp / "out"
    lines += ["set +e", f'"$@" {_SECCOMP_FD}< {q(str(host_tmp / "filter.bpf"))}', "rc=$?",
              f"stat -f -c '%b %f %S %c %d' {q(str(fs))} > {q(str(host_tmp / 'usage'))} 2>/dev/null",
              f"mkdir -m 0700 {q(str(out))} || exit 125"]
    cap = limits.file_size_mb * 2 ** 20 + 1
    for name in output_names:
        src, dst = q(str(fs / "work" / name)), q(str(out / name))
        lines.append(f"if [ -f {src} ] && [ ! -L {src} ]; then head -c {cap} -- {src} > {dst}; fi")
    lines.append('exit "$rc"')
    return "\n".join(lines)


def _command(bwrap: str, host_tmp: Path, ro_files: Mapping[str, Path], argv: list[str], limits: SandboxLimits,
             output_names: tuple[str, ...] = ()) -> list[str]:
    """The full command line: unshare (a private mount namespace; a user namespace when not root) running the
    wrapper shell, which runs [root: setpriv] bwrap ... argv."""
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
    fs = host_tmp / "fs"
    cmd = ["unshare", "--mount", "--propagation", "private"]
    if not root:  # mounting the tmpfs needs a mount namespace of our own user namespace
        cmd += ["--user", "--map-root-user"]
    cmd += ["/bin/sh", "-c", _wrapper_script(host_tmp, limits, uid, gid, root, staged, output_names), "sh"]
    if root:
        cmd += ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--"]
    cmd += [bwrap, "--unshare-all", "--unshare-user"]
    if _bwrap_supports_disable_userns(bwrap):
        cmd += ["--disable-userns"]
    cmd += ["--die-with-parent", "--new-session", "--uid", str(uid), "--gid", str(gid),
            *_system_binds(),
            "--proc", "/proc", *_hidden_proc_files(), "--dev", "/dev", "--bind", str(fs / "tmp"), "/tmp",
            *binds,  # after /tmp: a venv reached through /tmp stays visible
            "--bind", str(fs / "work"), WORKDIR]
    for name, path in ro_files.items():
        cmd += ["--ro-bind", str(path), f"{WORKDIR}/{name}"]
    # the root and /dev are tmpfs mounts of bwrap's: read-only once set up, so only the one
    # size-capped tmpfs (/sandbox, /tmp, /dev/shm) takes writes
    cmd += ["--bind", str(fs / "shm"), "/dev/shm", "--remount-ro", "/dev", "--remount-ro", "/",
            "--seccomp", str(_SECCOMP_FD)]
    cmd += ["--chdir", WORKDIR, *_sandbox_env(), "--", *argv]
    return cmd


# --------------------------------------------------------------------------------------- seccomp, keyring


class _Filter(NamedTuple):
    bpf: bytes  # the compiled filter, or b"" when it cannot be built
    keyctl_nr: int  # the native number of keyctl (-1 unknown)
    error: str  # why it cannot be built ("" when it can)


@functools.lru_cache(maxsize=1)
def _seccomp_filter() -> _Filter:
    """The seccomp filter of :data:`DENIED_SYSCALLS` compiled to BPF for ``bwrap --seccomp``, built once."""
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as exc:  # RuntimeError: pyseccomp found no libseccomp
        return _Filter(b"", -1, "the seccomp filter needs libseccomp and pyseccomp (apt-get install libseccomp2; "
                                f"pip install pyseccomp): {exc}")
    try:
        f = sc.SyscallFilter(sc.ALLOW)
        f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
        for names in DENIED_SYSCALLS.values():
            for name in names:
                if sc.resolve_syscall(sc.Arch.NATIVE, name) >= 0:  # unknown to this libseccomp: not on this arch
                    f.add_rule(sc.ERRNO(errno.EPERM), name)
        for flag in _CLONE_NEW:
            f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
        top = max(_SOCKET_FAMILIES)
        for call in ("socket", "socketpair"):
            for fam in range(top):
                if fam not in _SOCKET_FAMILIES:
                    f.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), call, sc.Arg(0, sc.EQ, fam))
            f.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), call, sc.Arg(0, sc.GT, top))
        with tempfile.TemporaryFile() as fh:
            f.export_bpf(fh)
            fh.seek(0)
            bpf = fh.read()
        return _Filter(bpf, sc.resolve_syscall(sc.Arch.NATIVE, "keyctl"), "")
    except (OSError, ValueError, RuntimeError) as exc:
        return _Filter(b"", -1, f"the seccomp filter cannot be built here: {exc}")


def _join_new_session_keyring(libc, keyctl_nr: int) -> None:  # pragma: no cover - in the child
    """Give the calling process a new, empty, anonymous session keyring (``KEYCTL_JOIN_SESSION_KEYRING``).

    Raises OSError when the kernel refuses it (a kernel without keyrings, ENOSYS, has nothing to hide).
    """
    if keyctl_nr < 0:
        return
    if libc.syscall(keyctl_nr, 1, None) < 0:
        err = ctypes.get_errno()
        if err != errno.ENOSYS:
            raise OSError(err, f"cannot join a new session keyring: {os.strerror(err)}")


# --------------------------------------------------------------------------------------- availability


def _probe() -> str | None:
    bwrap = _bwrap()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if os.geteuid() == 0:
        for tool in ("setpriv", "unshare", "mount"):
            if shutil.which(tool, path="/usr/bin:/bin:/usr/sbin:/sbin") is None:
                return f"running as root needs {tool!r} (util-linux) to drop privileges; not found"
    for tool in ("unshare", "mount"):
        if shutil.which(tool, path="/usr/bin:/bin:/usr/sbin:/sbin") is None:
            return f"the sandbox needs {tool!r} (util-linux) for its private tmpfs; not found"
    filt = _seccomp_filter()
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
    if got[2:3] != [str(limits.disk_mb * 2 ** 20)]:
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


def _over_memory(pid: int, cap: int, tmpfs_bytes: int) -> bool:
    """True when the tree's memory plus its tmpfs pages exceed ``cap`` bytes: cheap RSS sum first, confirmed by PSS."""
    procs = _tree(pid)
    return _rss_bytes(procs) + tmpfs_bytes > cap and _pss_bytes(procs) + tmpfs_bytes > cap


class _Usage(NamedTuple):
    used: int  # bytes of pages the tmpfs holds
    full: bool  # no room left (under 64 KiB free, or no free inode)


#: a tmpfs with less room than this is full
_FULL_BYTES = 64 * 1024


def _usage(st_blocks: int, st_bfree: int, frsize: int, st_ffree: int) -> _Usage:
    return _Usage((st_blocks - st_bfree) * frsize, st_bfree * frsize < _FULL_BYTES or st_ffree <= 0)


def _tmpfs_usage(pid: int, fs: Path, size: int) -> _Usage:
    """The sandbox tmpfs's usage, seen through the wrapper's mount namespace (``/proc/<pid>/root``).

    Zero until the wrapper has mounted it (the path shows the host's file system until then:
    told apart by its size).
    """
    try:
        st = os.statvfs(f"/proc/{pid}/root{fs}")
    except OSError:
        return _Usage(0, False)
    if st.f_blocks * st.f_frsize != size:
        return _Usage(0, False)
    return _usage(st.f_blocks, st.f_bfree, st.f_frsize, st.f_ffree)


def _final_usage(host_tmp: Path, size: int) -> _Usage:
    """The tmpfs's usage when the sandbox ended, as the wrapper wrote it (``stat -f``: blocks free size files ffree)."""
    try:
        blocks, bfree, frsize, _files, ffree = (int(x) for x in (host_tmp / "usage").read_text().split())
    except (OSError, ValueError):
        return _Usage(0, False)
    if blocks * frsize != size:
        return _Usage(0, False)
    return _usage(blocks, bfree, frsize, ffree)


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
        (cg / "memory.max").write_text(str(limits.memory_mb * 2 ** 20))  # tmpfs pages are charged here too
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


def _preexec(limits: SandboxLimits, cpu_s: int, cg: Path | None, nproc: int,
             keyctl_nr: int):  # pragma: no cover - in the child
    libc = ctypes.CDLL(None, use_errno=True)

    def apply() -> None:
        os.setsid()
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: the wrapper dies with this process
        _join_new_session_keyring(libc, keyctl_nr)
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
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.max_open_files, limits.max_open_files))

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


def _run(bwrap: str, script: str, inputs: Mapping[str, bytes], output_names: tuple[str, ...], timeout_s: float,
         limits: SandboxLimits, *, cpu_s: int) -> SandboxResult:
    for name in (*inputs, *output_names):
        if Path(name).name != name or name.startswith(".") or name == "script.py":
            raise SandboxError(f"file name {name!r} must be a plain file name")
    filt = _seccomp_filter()
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
        cmd = _command(bwrap, host_tmp, ro_files, [sys.executable, "-I", "-B", "script.py"], limits, output_names)
        cg = _make_cgroup(limits)
        # the kernel counts every task of the uid on the machine: allow max_processes beyond those running now
        nproc = limits.max_processes + _tasks_of(SANDBOX_UID if root else os.getuid())
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(cmd, env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8"},
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    preexec_fn=_preexec(limits, cpu_s, cg, nproc, filt.keyctl_nr), cwd="/")
        except (OSError, subprocess.SubprocessError) as exc:
            _remove_cgroup(cg)
            raise SandboxError(f"the sandbox cannot start: {exc}") from exc
        out, err = _Tail(proc.stdout, limits.output_bytes), _Tail(proc.stderr, limits.output_bytes)
        killed_for = ""
        mem_cap, disk_cap = limits.memory_mb * 2 ** 20, limits.disk_mb * 2 ** 20
        fs = host_tmp / "fs"
        try:
            while proc.poll() is None:
                usage = _tmpfs_usage(proc.pid, fs, disk_cap)
                if time.perf_counter() - t0 >= timeout_s:
                    killed_for = "timeout"
                elif usage.full:
                    killed_for = "disk"
                elif _over_memory(proc.pid, mem_cap, usage.used):
                    killed_for = "memory"
                if killed_for:
                    _kill_tree(proc)
                    break
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
        if not killed_for and _final_usage(host_tmp, disk_cap).full:
            killed_for = "disk"  # it stopped itself at the cap (ENOSPC) before the watchdog looked
        timed_out = killed_for == "timeout" or (
            proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU, 128 + signal.SIGKILL)
            and not killed_for and seconds >= timeout_s * 0.9)
        cap = limits.file_size_mb * 2 ** 20
        outputs = {}
        for name in output_names:
            got = _read_output(host_tmp / "out", name, cap)
            if got is not None:
                outputs[name] = got
        stderr = err.text()
        if killed_for == "memory":
            stderr += (f"\n[sandbox: killed, the process tree and its files used more than {limits.memory_mb} "
                       "MiB of memory]")
        elif killed_for == "disk":
            stderr += (f"\n[sandbox: stopped, its {limits.disk_mb} MiB / {limits.max_files} files file system "
                       "(/sandbox, /tmp, /dev/shm) is full]")
    return SandboxResult(proc.returncode, out.text(), stderr, outputs, timed_out, seconds, killed_for)


def run_sandboxed(script: str, inputs: Mapping[str, bytes] | None = None, *, output_names: tuple[str, ...] = (),
                  timeout_s: float = 60.0, memory_mb: int | None = None,
                  limits: SandboxLimits | None = None) -> SandboxResult:
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
    bwrap = _bwrap()
    assert bwrap is not None
    lim = limits or SandboxLimits()
    if memory_mb is not None:
        lim = lim._replace(memory_mb=memory_mb)
    return _run(bwrap, script, inputs or {}, output_names, timeout_s, lim, cpu_s=int(timeout_s) + 1)
