"""The sandbox's command line and its seccomp filter: what :func:`agentcausal.discovery.mac.sandbox.run_sandboxed`
starts (see :mod:`agentcausal.discovery.mac.sandbox` for the isolation as a whole).

:func:`sandbox_command` builds ``unshare`` (a private mount namespace, and a PID namespace whose init is the
wrapper shell, so every process of the sandbox is reaped before ``unshare`` exits) running a wrapper shell that mounts
the one size- and inode-capped tmpfs, runs bubblewrap (``[root: setpriv] bwrap ... argv``) and copies the
requested outputs out; :func:`seccomp_filter` compiles :data:`DENIED_SYSCALLS` to BPF with libseccomp
(``pyseccomp``); :func:`join_new_session_keyring` gives the child an empty session keyring.

References
----------
Bubblewrap: https://github.com/containers/bubblewrap. libseccomp: https://github.com/seccomp/libseccomp
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "SANDBOX_UID",
    "WORKDIR",
    "DENIED_SYSCALLS",
    "SandboxLimits",
    "sandbox_command",
    "seccomp_filter",
    "SeccompFilter",
    "join_new_session_keyring",
    "bwrap_path",
]

#: uid and gid a root parent drops to (``nobody``)
SANDBOX_UID = 65534
#: where the working directory appears inside the sandbox
WORKDIR = "/sandbox"
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
#: the file descriptor the wrapper hands the compiled seccomp filter to bubblewrap on
_SECCOMP_FD = 9
#: system calls the seccomp filter answers with EPERM, by why a causal-learn script never needs them
DENIED_SYSCALLS: dict[str, tuple[str, ...]] = {
    "kernel keyrings": ("add_key", "request_key", "keyctl"),
    "memory no watchdog counts": (
        "memfd_create",
        "memfd_secret",
        "shmget",
        "shmat",
        "shmctl",
        "msgget",
        "msgsnd",
        "msgrcv",
        "msgctl",
        "semget",
        "semop",
        "semctl",
        "semtimedop",
        "mq_open",
        "mq_unlink",
        "mq_timedsend",
        "mq_timedreceive",
        "mq_notify",
        "mq_getsetattr",
    ),
    "kernel buffers no watchdog counts": (
        "socket",  # socket buffers are kernel memory outside RSS, queued in one process, held by another
        "socketpair",
        "vmsplice",  # pipe slots pinning user pages (a transparent huge page each) after they are unmapped
        "splice",
        "tee",
        "inotify_init",  # watches and event queues, per user
        "inotify_init1",
    ),
    "other processes and the kernel": (
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "process_madvise",
        "kcmp",
        "pidfd_getfd",
        "perf_event_open",
        "bpf",
        "userfaultfd",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "lookup_dcookie",
        "fanotify_init",
        "open_by_handle_at",
        "name_to_handle_at",
        "init_module",
        "finit_module",
        "delete_module",
        "kexec_load",
        "kexec_file_load",
        "reboot",
        "swapon",
        "swapoff",
        "acct",
        "quotactl",
        "quotactl_fd",
        "syslog",
        "settimeofday",
        "clock_settime",
        "clock_adjtime",
        "adjtimex",
        "sethostname",
        "setdomainname",
        "iopl",
        "ioperm",
        "vhangup",
        "uselib",
        "nfsservctl",
        "_sysctl",
    ),
    "namespaces and mounts": (
        "unshare",
        "setns",
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "open_tree",
        "move_mount",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
    ),
}
#: ``fcntl`` command that grows a pipe past its default 16 pages (refused: the watchdog counts a pipe as 64 KiB)
_F_SETPIPE_SZ = 1031
#: clone flags that make a namespace (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET)
_CLONE_NEW = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)


class SandboxLimits(NamedTuple):
    """Resource limits of one sandboxed run (see the module docstring for how each is enforced).

    Attributes
    ----------
    memory_mb : int, memory of the whole process tree plus the pages of its tmpfs, MiB; also the
        address-space limit of each process
    max_processes : int, new processes and threads of the sandbox (RLIMIT_NPROC; see the module docstring)
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


def bwrap_path() -> str | None:
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
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    args = ["--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return args


def _wrapper_script(
    host_tmp: Path,
    limits: SandboxLimits,
    uid: int,
    gid: int,
    root: bool,
    staged: list[tuple[str, str]],
    output_names: tuple[str, ...],
    input_names: tuple[str, ...] = (),
) -> str:
    """The shell run in the private mount namespace: mount the one tmpfs, run "$@" (bubblewrap), copy outputs out.

    The copies happen after bubblewrap returned, so every process of the sandbox's PID
    namespace is dead; only regular files are copied, never through a symlink.

    When the Python parent dies (``kill -9`` included) the shell gets SIGTERM (``unshare``'s
    ``--kill-child``) and its trap kills bubblewrap, unmounts what it mounted and removes the host folder by
    name (:func:`_cleanup_function`): no temporary folder is left behind.
    """
    q = shlex.quote
    fs = host_tmp / "fs"
    dirs = " ".join(q(str(fs / d)) for d in ("work", "tmp", "shm"))
    lines = [
        _cleanup_function(host_tmp, staged, output_names, input_names),
        "pid=''",
        "trap cleanup TERM",
        "set -e",
        f"mount -t tmpfs -o size={limits.disk_mb}m,nr_inodes={limits.max_files},mode=0755,nosuid,nodev "
        f"agentcausal-sandbox {q(str(fs))}",
        f"mkdir -m 0700 {dirs}",
    ]
    if root:
        lines.append(f"chown {uid}:{gid} {dirs}")
    lines += [f"mount --bind -o ro {q(a)} {q(b)}" for a, b in staged]
    out = host_tmp / "out"
    lines += [
        "set +e",
        f'"$@" {_SECCOMP_FD}< {q(str(host_tmp / "filter.bpf"))} &',  # in the background: `wait` lets the trap run
        "pid=$!",
        'wait "$pid"',
        "rc=$?",
        f"stat -f -c '%b %f %S %c %d' {q(str(fs))} > {q(str(host_tmp / 'usage'))} 2>/dev/null",
        f"mkdir -m 0700 {q(str(out))} || exit 125",
    ]
    cap = limits.file_size_mb * 2**20 + 1
    for name in output_names:
        src, dst = q(str(fs / "work" / name)), q(str(out / name))
        lines.append(f"if [ -f {src} ] && [ ! -L {src} ]; then head -c {cap} -- {src} > {dst}; fi")
    lines.append('exit "$rc"')
    return "\n".join(lines)


def _cleanup_function(
    host_tmp: Path, staged: list[tuple[str, str]], output_names: tuple[str, ...], input_names: tuple[str, ...]
) -> str:
    """The wrapper's ``cleanup`` shell function, run on SIGTERM (the Python parent died): kill bubblewrap (its
    PID namespace dies with it), unmount the tmpfs and the staged binds, remove the host folder's files and
    folders by name. Nothing is removed recursively (``rm -r`` could reach a bind mount); a folder still
    mounted refuses ``rmdir`` and stays."""
    q = shlex.quote
    files = [host_tmp / "filter.bpf", host_tmp / "usage"]
    files += [host_tmp / "in" / n for n in (*input_names, "script.py")]
    files += [host_tmp / "out" / n for n in output_names]
    folders = [host_tmp / "fs", *(Path(d) for _, d in staged)]
    folders += [host_tmp / "stage"] if staged else []
    folders += [host_tmp / "in", host_tmp / "out", host_tmp]
    unmounts = [q(d) for _, d in staged] + [q(str(host_tmp / "fs"))]
    return "\n".join(
        [
            "cleanup() {",
            "  trap '' TERM",
            '  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi',
            *(f"  umount -l {m} 2>/dev/null" for m in unmounts),
            "  rm -f -- " + " ".join(q(str(f)) for f in files),
            "  rmdir -- " + " ".join(q(str(d)) for d in folders) + " 2>/dev/null",
            "  exit 143",
            "}",
        ]
    )


def sandbox_command(
    bwrap: str,
    host_tmp: Path,
    ro_files: Mapping[str, Path],
    argv: list[str],
    limits: SandboxLimits,
    output_names: tuple[str, ...] = (),
    nproc: int | None = None,
) -> list[str]:
    """The full command line: unshare (a private mount namespace; a user namespace when not root) running the
    wrapper shell, which runs [root: setpriv | not root: prlimit --nproc] bwrap ... argv.

    ``nproc`` (not root; None = none): the ``RLIMIT_NPROC`` set by ``prlimit`` on bubblewrap alone, so the
    wrapper shell (its cleanup forks ``umount`` and ``rmdir``) never shares the sandbox's task budget."""
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
    # --pid --fork: the wrapper shell is its namespace's init, so bubblewrap's init, which bubblewrap's monitor
    # leaves unreaped when it exits, is reaped by the kernel as the shell exits, not later by the machine's init
    cmd = ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child=TERM"]
    if not root:  # mounting the tmpfs needs a mount namespace of our own user namespace
        cmd += ["--user", "--map-root-user"]
    wrapper = _wrapper_script(
        host_tmp, limits, uid, gid, root, staged, output_names, tuple(n for n in ro_files if n != "script.py")
    )
    cmd += ["/bin/sh", "-c", wrapper, "sh"]
    if root:
        cmd += [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={gid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ]
    elif nproc is not None:
        cmd += ["prlimit", f"--nproc={nproc}:{nproc}", "--"]
    cmd += [bwrap, "--unshare-all", "--unshare-user"]
    if _bwrap_supports_disable_userns(bwrap):
        cmd += ["--disable-userns"]
    cmd += [
        "--die-with-parent",
        "--new-session",
        "--uid",
        str(uid),
        "--gid",
        str(gid),
        *_system_binds(),
        "--proc",
        "/proc",
        *_hidden_proc_files(),
        "--dev",
        "/dev",
        "--bind",
        str(fs / "tmp"),
        "/tmp",
        *binds,  # after /tmp: a venv reached through /tmp stays visible
        "--bind",
        str(fs / "work"),
        WORKDIR,
    ]
    for name, path in ro_files.items():
        cmd += ["--ro-bind", str(path), f"{WORKDIR}/{name}"]
    # the root and /dev are tmpfs mounts of bwrap's: read-only once set up, so only the one
    # size-capped tmpfs (/sandbox, /tmp, /dev/shm) takes writes
    cmd += [
        "--bind",
        str(fs / "shm"),
        "/dev/shm",
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--seccomp",
        str(_SECCOMP_FD),
    ]
    cmd += ["--chdir", WORKDIR, *_sandbox_env(), "--", *argv]
    return cmd


class SeccompFilter(NamedTuple):
    bpf: bytes  # the compiled filter, or b"" when it cannot be built
    keyctl_nr: int  # the native number of keyctl (-1 unknown)
    error: str  # why it cannot be built ("" when it can)


@functools.lru_cache(maxsize=1)
def seccomp_filter() -> SeccompFilter:
    """The seccomp filter of :data:`DENIED_SYSCALLS` compiled to BPF for ``bwrap --seccomp``, built once."""
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as exc:  # RuntimeError: pyseccomp found no libseccomp
        return SeccompFilter(
            b"",
            -1,
            "the seccomp filter needs libseccomp and pyseccomp (apt-get install libseccomp2; "
            f"pip install pyseccomp): {exc}",
        )
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
        f.add_rule(sc.ERRNO(errno.EPERM), "fcntl", sc.Arg(1, sc.EQ, _F_SETPIPE_SZ))
        with tempfile.TemporaryFile() as fh:
            f.export_bpf(fh)
            fh.seek(0)
            bpf = fh.read()
        return SeccompFilter(bpf, sc.resolve_syscall(sc.Arch.NATIVE, "keyctl"), "")
    except (OSError, ValueError, RuntimeError) as exc:
        return SeccompFilter(b"", -1, f"the seccomp filter cannot be built here: {exc}")


def join_new_session_keyring(libc, keyctl_nr: int) -> None:  # pragma: no cover - in the child
    """Give the calling process a new, empty, anonymous session keyring (``KEYCTL_JOIN_SESSION_KEYRING``).

    Raises OSError when the kernel refuses it (a kernel without keyrings, ENOSYS, has nothing to hide).
    """
    if keyctl_nr < 0:
        return
    if libc.syscall(keyctl_nr, 1, None) < 0:
        err = ctypes.get_errno()
        if err != errno.ENOSYS:
            raise OSError(err, f"cannot join a new session keyring: {os.strerror(err)}")
