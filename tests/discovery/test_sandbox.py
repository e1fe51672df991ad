"""The coding sandbox: real subprocesses, no LLM. Refuses network, kills runaways, caps memory, fails closed."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import numpy as np
import psutil
import pytest

from agentcausal.discovery.mac import executor, sandbox
from agentcausal.discovery.mac.executor import coder_usage, read_result, resolve_executor, validate_adjacency
from agentcausal.discovery.mac.sandbox import run_sandboxed, sandbox_available
from agentcausal.discovery.mac.sandbox_command import seccomp_filter
from agentcausal.discovery.mac.sandbox_watch import PIPE_BYTES, kernel_bytes
from agentcausal.discovery.variants import variant
from agentcausal.exceptions import ConfigError, SandboxError
from agentcausal.registry import DISCOVERY_METHODS

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
    script = "import os\nprint(sorted(os.environ))\nopen('out.txt', 'w').write(open('in.txt').read().upper())"
    res = run_sandboxed(script, {"in.txt": b"hello"}, output_names=("out.txt", "missing.txt"), timeout_s=20)
    assert res.returncode == 0, res.stderr
    assert "OPENAI_API_KEY" not in res.stdout and "sk-secret" not in res.stdout
    assert res.outputs == {"out.txt": b"HELLO"}


def test_sandbox_fails_closed_without_bubblewrap(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
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
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: str(fake))
    sandbox._cached_probe.cache_clear()
    try:
        reason = sandbox.sandbox_available()
        assert reason is not None and "No permissions to create new namespace" in reason
        with pytest.raises(SandboxError, match="namespace"):
            run_sandboxed("print(1)")
    finally:
        sandbox._cached_probe.cache_clear()
        shutil.rmtree(folder, ignore_errors=True)


def test_sandbox_fails_closed_without_its_seccomp_filter(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pyseccomp(name, *args, **kwargs):
        if name == "pyseccomp":
            raise RuntimeError("Unable to find libseccomp")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyseccomp)
    seccomp_filter.cache_clear()
    sandbox._cached_probe.cache_clear()
    try:
        reason = sandbox.sandbox_available()
        assert reason is not None and "seccomp" in reason and "libseccomp" in reason and "\n" not in reason
        with pytest.raises(SandboxError, match="seccomp"):
            run_sandboxed("print(1)")
        assert resolve_executor("auto")[0] == "typed"  # the typed executor runs, saying why
        with pytest.raises(ConfigError, match="seccomp"):
            resolve_executor("coding")
    finally:
        monkeypatch.undo()
        seccomp_filter.cache_clear()
        sandbox._cached_probe.cache_clear()


@needs_sandbox
def test_sandbox_rejects_path_like_input_names():
    with pytest.raises(SandboxError, match="plain file name"):
        run_sandboxed("print(1)", {"../x": b""})
    with pytest.raises(SandboxError, match="plain file name"):
        run_sandboxed("print(1)", output_names=("../../etc/passwd",))


def _npy(a: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_validate_adjacency_is_strictly_binary():
    assert validate_adjacency(_npy(np.array([[0, 1], [1, 0]])), 2).tolist() == [[0, 1], [1, 0]]
    with pytest.raises(SandboxError, match="G.graph"):  # a raw causal-learn graph saved as an adjacency
        validate_adjacency(_npy(np.array([[0, -1], [1, 0]])), 2)
    with pytest.raises(SandboxError, match="0 or 1"):
        validate_adjacency(_npy(np.array([[0, 0.3], [0, 0]])), 2)
    with pytest.raises(SandboxError, match="shape"):
        validate_adjacency(_npy(np.zeros((3, 3))), 2)
    with pytest.raises(SandboxError, match="diagonal"):
        validate_adjacency(_npy(np.eye(2)), 2)
    with pytest.raises(SandboxError, match="NaN"):
        validate_adjacency(_npy(np.array([[0, np.nan], [0, 0]])), 2)
    with pytest.raises(SandboxError, match="unreadable"):
        validate_adjacency(b"not numpy", 2)


V = ("A", "B", "C")


def test_read_result_converts_each_declared_encoding():
    # causal-learn G.graph: A -> B (graph[B, A] = 1, graph[A, B] = -1), B --- C
    g = np.array([[0, -1, 0], [1, 0, -1], [0, -1, 0]])
    graph = read_result(_npy(g), b"general_graph\n", V)
    assert graph.directed_edges() == {("A", "B")} and graph.skeleton() == {frozenset("AB"), frozenset("BC")}
    # FCI marks: A o-> B, B <-> C
    pag = read_result(_npy(np.array([[0, 2, 0], [1, 0, 1], [0, 1, 0]])), "general_graph", V)
    assert sorted(str(e) for e in pag.edges) == ["A o-> B", "B <-> C"]
    # LiNGAM B[i, j] != 0 means j -> i: B[1, 0] = 0.8 is A -> B (never reversed)
    b = np.array([[0, 0, 0], [0.8, 0, 0], [0, -1.2, 0]])
    assert read_result(_npy(b), "lingam", V).directed_edges() == {("A", "B"), ("B", "C")}
    dag = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    assert read_result(_npy(dag), "exact_search", V).directed_edges() == {("A", "B"), ("B", "C")}
    assert read_result(_npy(dag), "adjacency", V).directed_edges() == {("A", "B"), ("B", "C")}


def test_read_result_rejects_undeclared_or_mismatched_encodings():
    g = np.array([[0, -1, 0], [1, 0, -1], [0, -1, 0]])
    with pytest.raises(SandboxError, match="no encoding.txt"):
        read_result(_npy(g), None, V)
    with pytest.raises(SandboxError, match="unknown encoding"):
        read_result(_npy(g), "pag", V)
    with pytest.raises(SandboxError, match="G.graph"):  # raw G.graph declared as a 0/1 adjacency
        read_result(_npy(g), "adjacency", V)
    with pytest.raises(SandboxError, match="without one at"):  # a 0/1 adjacency declared as G.graph
        read_result(_npy(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])), "general_graph", V)
    with pytest.raises(SandboxError, match="marks must be"):
        read_result(_npy(np.array([[0, 3, 0], [1, 0, 0], [0, 0, 0]])), "general_graph", V)
    with pytest.raises(SandboxError, match="infinity"):
        read_result(_npy(np.array([[0, np.inf, 0], [0, 0, 0], [0, 0, 0]])), "lingam", V)


def test_coder_usage_shows_the_pool_bounds():
    from agentcausal.discovery.statistical.algorithms import EXACT_SEARCH_SUPERGRAPH_ABOVE, default_choice

    big = EXACT_SEARCH_SUPERGRAPH_ABOVE + 1
    usage = coder_usage(default_choice("exact_search", "discrete", big), "discrete", big)
    assert "super_graph=sg" in usage and "pc(X, 0.2, 'chisq'" in usage and "max_parents=2" in usage
    small = coder_usage(default_choice("exact_search", "continuous", 5), "continuous", 5)
    assert "sg = None" in small and "encoding: exact_search" in small
    assert "encoding: lingam" in coder_usage(default_choice("direct_lingam", "continuous", 5), "continuous", 5)
    assert "fci(X, 'chisq', 0.05" in coder_usage(default_choice("fci", "discrete", 5), "discrete", 5)


def _run_usage(usage: str, data: np.ndarray, variables) -> "CausalGraph":  # noqa: F821
    """Execute the coder's usage lines here (not sandboxed: our own text) and read M by its declared encoding."""
    import io
    import re

    ns = {"X": data.copy(), "np": np}
    exec(usage, ns)  # the text under test, generated by coder_usage
    enc = re.findall(r"# encoding: (\w+)", usage)[-1]
    buf = io.BytesIO()
    np.save(buf, np.asarray(ns["M"]))
    return read_result(buf.getvalue(), enc, variables)


@pytest.mark.parametrize("algorithm", ["pc", "fci", "ges", "exact_search", "direct_lingam"])
def test_coder_usage_runs_each_pool_algorithm_as_the_typed_executor_does(algorithm, collider_dataset):
    """The lines shown to the coder give the typed executor's graph (discrete Exact Search's pgmpy score too)."""
    from agentcausal.discovery.data.datasets import load_dataset
    from agentcausal.discovery.statistical.algorithms import default_choice, run_algorithm

    for ds in (load_dataset("earthquake", n=400, seed=0), collider_dataset):
        choice = default_choice(algorithm, ds.data_type, ds.d)
        usage = coder_usage(choice, ds.data_type, ds.d)
        if algorithm == "exact_search" and ds.data_type == "discrete":
            assert choice.score == "bic_discrete" and "pgmpy" in usage and "bic_exact_search(" not in usage
        typed = run_algorithm(ds.data, ds.variables, choice).graph
        assert _run_usage(usage, ds.data, ds.variables) == typed, (algorithm, ds.name)


def test_coder_usage_carries_pc_background_knowledge_and_the_bdeu_prior():
    from agentcausal.discovery.data.datasets import load_dataset
    from agentcausal.discovery.statistical.algorithms import ExactSearchParams, PCParams, run_algorithm

    ds = load_dataset("earthquake", n=400, seed=0)
    choice = PCParams(indep_test="chisq", required=((2, 0),), forbidden=((0, 2), (3, 2)))
    usage = coder_usage(choice, "discrete", ds.d)
    assert "background_knowledge=bk" in usage
    assert _run_usage(usage, ds.data, ds.variables) == run_algorithm(ds.data, ds.variables, choice).graph
    bdeu = ExactSearchParams(score="bdeu", equivalent_sample_size=3.0)
    usage = coder_usage(bdeu, "discrete", ds.d)
    assert "equivalent_sample_size=3.0" in usage
    assert _run_usage(usage, ds.data, ds.variables) == run_algorithm(ds.data, ds.variables, bdeu).graph


def test_resolve_executor(monkeypatch):
    monkeypatch.setattr(executor, "sandbox_available", lambda: None)
    assert resolve_executor("auto") == ("coding", "") and resolve_executor("coding") == ("coding", "")
    monkeypatch.setattr(executor, "sandbox_available", lambda: "bubblewrap missing")
    mode, note = resolve_executor("auto")
    assert mode == "typed" and "bubblewrap missing" in note and "\n" not in note
    with pytest.raises(ConfigError, match="--executor coding needs the sandbox.*bubblewrap missing"):
        resolve_executor("coding")
    assert resolve_executor("typed") == ("typed", "")


def test_cli_refuses_coding_and_marks_auto_fallback(monkeypatch, capsys):
    import argparse

    from agentcausal.discovery.cache_key import discovery_key
    from agentcausal.discovery.config import DiscoveryConfig
    from agentcausal_cli import main
    from agentcausal_cli.discover import build_config

    monkeypatch.setattr(executor, "sandbox_available", lambda: "bubblewrap missing")
    assert main(["discover", "--dataset", "asia", "--method", "mac", "--executor", "coding"]) == 2
    err = capsys.readouterr().err
    assert "bubblewrap missing" in err and len(err.strip().splitlines()) == 1
    args = argparse.Namespace(
        rounds=1, subset_size=5, executor="auto", coding_attempts=3, timeout=300.0, methods=["pc", "MAC"]
    )
    config = build_config(args)
    assert config.mac.executor == "typed" and "bubblewrap missing" in config.executor_fallback
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    build_config(argparse.Namespace(**{**vars(args), "methods": ["pc", "mdm_only"], "executor": "coding"}))
    assert capsys.readouterr().err == ""  # no method runs an executor: nothing to refuse or say
    from agentcausal.discovery.data.datasets import load_dataset

    ds = load_dataset("earthquake", n=100, seed=0)
    assert discovery_key(ds, variant(DISCOVERY_METHODS, "mac"), config) == discovery_key(
        ds, variant(DISCOVERY_METHODS, "mac"), DiscoveryConfig(mac=config.mac)
    )


def test_cli_executor_default_is_the_presets(monkeypatch, capsys):
    """No --executor: paper resolves auto (here: typed, said once); small keeps typed and says nothing."""
    import argparse

    from agentcausal_cli.discover import build_config

    monkeypatch.setattr(executor, "sandbox_available", lambda: "bubblewrap missing")
    args = argparse.Namespace(
        rounds=None, subset_size=None, executor=None, coding_attempts=None, timeout=None, methods=["mac"]
    )
    paper = build_config(args, "paper")
    assert paper.mac.executor == "typed" and "bubblewrap missing" in paper.executor_fallback
    assert "bubblewrap missing" in capsys.readouterr().err
    small = build_config(args, "small")
    assert small.mac.executor == "typed" and small.executor_fallback == "" and capsys.readouterr().err == ""
    monkeypatch.setattr(executor, "sandbox_available", lambda: None)
    assert build_config(args, "paper").mac.executor == "coding"
    assert build_config(argparse.Namespace(**{**vars(args), "executor": "auto"}), "small").mac.executor == "coding"


def test_auto_fallback_is_marked_in_the_rows_that_run_dcm(fake_server, make_gateway):
    from agentcausal.discovery.config import DiscoveryConfig
    from agentcausal.discovery.data.datasets import load_dataset
    from agentcausal.discovery.jobs import run_discovery
    from tests.discovery.conftest import mac_responder

    fake_server.responder = mac_responder()
    ds = load_dataset("earthquake", n=200, seed=0)
    from agentcausal.discovery.mac.settings import MACSettings

    # as the CLI resolves --executor auto where the sandbox cannot run
    config = DiscoveryConfig(
        mac=MACSettings(executor="typed"), executor_fallback="executor auto: the coding sandbox cannot run here (x)"
    )
    gw = make_gateway(fake_server)
    dcm = run_discovery(variant(DISCOVERY_METHODS, "dcm_only"), ds, gw, config)
    assert dcm.error is None and dcm.details["executor_fallback"] == config.executor_fallback
    assert "executor_fallback" not in run_discovery(variant(DISCOVERY_METHODS, "pc"), ds, None, config).details


def test_redact_replaces_profile_keys_and_secret_named_variables(monkeypatch, tmp_path):
    from agentcausal.redact import redact, register_secret_env

    toml = tmp_path / "profiles.toml"
    toml.write_text('[profiles.p]\nkind = "chat"\nbase_url = "http://x"\nmodel = "m"\napi_key_env = "MY_CRED"\n')
    monkeypatch.setenv("AGENTCAUSAL_PROFILES", str(toml))
    monkeypatch.setenv("MY_CRED", "cred-value-123")  # named by a profile, not by its name
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_abcdefgh")  # matched by name
    monkeypatch.setenv("DB_PASSWORD", "short")  # under 8 characters: left alone
    monkeypatch.setenv("HOME_DIR_NAME", "cred-value-123-x")  # not secret by name; longer overlapping value
    monkeypatch.setenv("OTHER_SETTING", "ghp_abcdefgh-not")
    text = "a cred-value-123 b ghp_abcdefgh c short"
    assert redact(text) == "a [REDACTED:MY_CRED] b [REDACTED:GITHUB_TOKEN] c short"
    monkeypatch.setenv("PLAIN_NAME", "plain-value-99")
    assert redact("plain-value-99") == "plain-value-99"
    register_secret_env("PLAIN_NAME")
    assert redact("x plain-value-99") == "x [REDACTED:PLAIN_NAME]"


@needs_sandbox
def test_sandbox_output_is_redacted(monkeypatch):
    monkeypatch.setenv("SANDBOX_TEST_API_KEY", "sk-visible-in-script-only")
    res = run_sandboxed(
        "import sys\nprint('sk-visible-in-script-only')\nsys.exit('sk-visible-in-script-only')", timeout_s=20
    )
    assert "sk-visible" not in res.stdout + res.stderr
    assert "[REDACTED:SANDBOX_TEST_API_KEY]" in res.stdout and "[REDACTED:SANDBOX_TEST_API_KEY]" in res.stderr


SECRET = "sk-proj-Zq8~Xv2+Lm/9Tr4_Wc7!Hy1Na6Pd3Qe5"  # '+', '/', '~', '!' : URL and base64 alphabets differ


def _encodings(secret: str) -> dict[str, str]:
    import base64
    import textwrap as tw
    from urllib.parse import quote, quote_plus

    raw = secret.encode()
    return {
        "reversed": secret[::-1],
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "url": quote(secret, safe=""),
        "url_plus": quote_plus(secret),
        "url_every_byte": "".join(f"%{b:02X}" for b in raw),
        "base64": base64.b64encode(raw).decode(),
        "base64_unpadded": base64.b64encode(raw).decode().rstrip("="),
        "base64_urlsafe": base64.urlsafe_b64encode(raw).decode(),
        "base64_in_longer_text_0": base64.b64encode(b"KEY=" + raw + b"\n").decode(),
        "base64_in_longer_text_1": base64.b64encode(b"OPENAI_API_KEY=" + raw).decode(),
        "base64_in_longer_text_2": base64.b64encode(b"k=" + raw + b";").decode(),
        "base64_wrapped": "\n".join(tw.wrap(base64.b64encode(b"export X=" + raw * 2).decode(), 20)),
    }


@pytest.mark.parametrize("kind", list(_encodings(SECRET)))
def test_redact_catches_the_common_encodings_of_a_secret(monkeypatch, kind):
    from agentcausal.redact import redact

    monkeypatch.setenv("ENC_TEST_API_KEY", SECRET)
    blob = _encodings(SECRET)[kind]
    out = redact(f"leaked: {blob} (end)")
    assert "[REDACTED:ENC_TEST_API_KEY" in out and out.endswith("(end)")
    # nothing that decodes back to the secret is left
    import base64
    import binascii

    for token in out.replace("\n", "").split():
        for decode in (
            lambda t: base64.b64decode(t + "=" * (-len(t) % 4)),
            bytes.fromhex,
            lambda t: base64.urlsafe_b64decode(t + "=" * (-len(t) % 4)),
        ):
            try:
                assert SECRET.encode() not in decode(token)
            except (ValueError, binascii.Error):
                pass
    assert SECRET[::-1] not in out and SECRET not in out


def test_redact_leaves_ordinary_text_alone(monkeypatch):
    from agentcausal.redact import redact

    monkeypatch.setenv("ENC_TEST_API_KEY", SECRET)
    import base64

    text = (
        "PC on 5 variables; adjacency [[0, 1], [0, 0]] "
        + base64.b64encode(bytes(range(256))).decode()
        + " deadbeef%20cafe "
        + "x" * 100
    )
    assert redact(text) == text


@needs_sandbox
def test_sandbox_output_is_redacted_in_every_encoding(monkeypatch):
    monkeypatch.setenv("SANDBOX_TEST_API_KEY", SECRET)
    forms = _encodings(SECRET)
    script = "import sys\nforms = " + repr(forms) + "\nprint(*forms.values())\nsys.exit(forms['base64'])"
    res = run_sandboxed(script, timeout_s=20)
    text = res.stdout + res.stderr
    for kind, blob in forms.items():
        assert blob.replace("\n", "")[4:-4] not in text.replace("\n", ""), kind
    assert text.count("[REDACTED:SANDBOX_TEST_API_KEY") >= len(forms)


@pytest.mark.slow
@needs_sandbox
@pytest.mark.timeout(300)
def test_every_pool_algorithm_runs_under_the_seccomp_filter_and_tmpfs():
    """What the filter refuses is nothing a causal-learn script needs: the five pool algorithms, pgmpy and a
    joblib process pool (semaphores in /dev/shm) run, and the adjacency comes back."""
    from agentcausal.discovery.data.datasets import load_dataset

    ds = load_dataset("cancer", n=300, seed=0)
    script = """
import numpy as np, warnings
warnings.simplefilter("ignore")
X = np.load("data.npy")
from causallearn.search.ConstraintBased.PC import pc
from causallearn.search.ConstraintBased.FCI import fci
from causallearn.search.ScoreBased.GES import ges
from causallearn.search.FCMBased import lingam
from causallearn.search.ScoreBased.ExactSearch import bic_exact_search
g = pc(X, 0.05, "chisq", show_progress=False)
print("PC", g.G.graph.shape[0])
print("FCI", fci(X, "chisq", 0.05, verbose=False, show_progress=False)[0].graph.shape[0])
print("GES", ges(X, score_func="local_score_BDeu")["G"].graph.shape[0])
m = lingam.DirectLiNGAM(); m.fit(X)
print("LINGAM", m.adjacency_matrix_.shape[0])
print("EXACT", bic_exact_search(X, max_parents=2)[0].shape[0])
import pgmpy.estimators
from joblib import Parallel, delayed
print("JOBLIB", sum(Parallel(n_jobs=2)(delayed(abs)(-i) for i in range(4))))
np.save("adjacency.npy", (g.G.graph != 0).astype(int))
"""
    res = run_sandboxed(
        script, {"data.npy": _npy(ds.data)}, output_names=("adjacency.npy",), timeout_s=240, memory_mb=4096
    )
    assert res.returncode == 0 and res.killed_for == "", res.stderr[-2000:]
    assert res.stdout.split() == ["PC", "5", "FCI", "5", "GES", "5", "LINGAM", "5", "EXACT", "5", "JOBLIB", "6"]
    assert np.load(__import__("io").BytesIO(res.outputs["adjacency.npy"])).shape == (5, 5)


def test_memory_accounting_says_which_limit_applies(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "cgroup_v2", lambda: None)
    assert sandbox.memory_accounting().startswith("the 50 ms watchdog (no writable cgroup v2")
    monkeypatch.setattr(sandbox, "cgroup_v2", lambda: tmp_path)
    assert sandbox.memory_accounting().startswith(f"cgroup v2 memory.max under {tmp_path}")


@needs_sandbox
def test_each_result_says_which_memory_limit_applied():
    res = run_sandboxed("print('ok')", timeout_s=30)
    assert res.returncode == 0 and res.memory_limit in ("the watchdog", "cgroup v2 memory.max and the watchdog")
    if sandbox.cgroup_v2() is None:  # no cgroup can be made here (one that can may still refuse the limits)
        assert res.memory_limit == "the watchdog"


def test_kernel_bytes_counts_each_open_pipe_once():
    me = [psutil.Process()]
    before = kernel_bytes(me)
    tables = next(int(ln.split()[1]) * 1024 for ln in open("/proc/self/status") if ln.startswith("VmPTE:"))
    assert before >= tables > 0  # page tables count too
    fds = [fd for _ in range(10) for fd in os.pipe()]
    dups = [os.dup(fds[0]) for _ in range(5)]  # the same pipe again: counted once
    try:
        grown = kernel_bytes(me) - before  # page tables may grow by a page meanwhile: less than one pipe
        assert 10 * PIPE_BYTES <= grown < 11 * PIPE_BYTES
    finally:
        for fd in fds + dups:
            os.close(fd)
    assert abs(kernel_bytes(me) - before) < PIPE_BYTES
