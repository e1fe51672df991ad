"""A run folder is one run's: its lock (held by a live process, gone with it, kill -9 included), ``--out`` on a
run refused unless ``--resume`` or ``--force``, the exit statuses in ``--help``. Fast: no Prefect run."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentcausal.exceptions import RunFolderBusyError
from agentcausal.runs.lock import LOCK_FILE, lock_holder, run_folder_lock
from agentcausal_cli import main
from agentcausal_cli.exit_codes import BAD_INPUT, EXIT_CODES, RUN_FOLDER_BUSY

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"

HOLDER = """
import sys, time
from agentcausal.runs.lock import run_folder_lock
with run_folder_lock(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(120)
"""


def _holder(run_dir):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_lock_refuses_a_second_holder_naming_it_and_dies_with_kill_9(tmp_path):
    run_dir = tmp_path / "run"
    proc = _holder(run_dir)
    try:
        with pytest.raises(RunFolderBusyError) as err, run_folder_lock(run_dir):
            pass
        assert err.value.pid == proc.pid and f"process {proc.pid}" in str(err.value)
        assert "\n" not in str(err.value)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert lock_holder(run_dir) == proc.pid  # the stale pid file stays; the kernel's lock went with the process
    with run_folder_lock(run_dir) as path:  # free again at once
        assert path.name == LOCK_FILE and lock_holder(run_dir) == os.getpid()
        with run_folder_lock(run_dir):  # re-entrant in one process
            pass
        other = subprocess.run([sys.executable, "-c", HOLDER, str(run_dir)], capture_output=True, text=True, timeout=60)
        assert other.returncode != 0 and "RunFolderBusyError" in other.stderr and str(os.getpid()) in other.stderr


def _args(fake_server, tmp_path, run_dir, *extra):
    return [
        "attribute",
        str(EXAMPLES),
        "--base-url",
        fake_server.base_url,
        "--model",
        "fake-model",
        "--limit",
        "1",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(run_dir),
        "--no-progress",
        *extra,
    ]


def test_second_run_on_a_locked_folder_exits_5_in_one_line(fake_server, tmp_path, capsys):
    run_dir = tmp_path / "run"
    proc = _holder(run_dir)
    try:
        rc = main(_args(fake_server, tmp_path, run_dir, "--resume"))
    finally:
        proc.kill()
        proc.wait(timeout=10)
    err = capsys.readouterr().err.strip()
    assert rc == RUN_FOLDER_BUSY
    assert err.splitlines() == [err] and f"in use by process {proc.pid}" in err
    assert fake_server.count == 0 and sorted(p.name for p in run_dir.iterdir()) == [LOCK_FILE]


def test_out_on_an_existing_run_refuses_unless_resume_or_force(fake_server, tmp_path, capsys, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text('{"rows": {"total": 1}}')
    (run_dir / "report.md").write_text("old report")
    (run_dir / "plots").mkdir()
    rc = main(_args(fake_server, tmp_path, run_dir))
    err = capsys.readouterr().err.strip()
    assert rc == BAD_INPUT and err.splitlines() == [err]
    assert str(run_dir) in err and "--resume" in err and "--force" in err
    assert (run_dir / "report.md").read_text() == "old report" and fake_server.count == 0

    import flows.attribute  # --force: the folder emptied before the run; the run itself not needed here

    ran = {}
    monkeypatch.setattr(
        flows.attribute, "run_attribute", lambda plan, run, **kw: ran.update(run.model_dump()) or run.out_dir
    )
    monkeypatch.setattr("agentcausal_cli.attribute.print_attribution_run", lambda run_dir, **kw: 0)
    assert main(_args(fake_server, tmp_path, run_dir, "--force", "--name", "nightly")) == 0
    assert not (run_dir / "report.md").exists() and not (run_dir / "plots").exists()
    assert (run_dir / "plan.json").is_file() and ran["meta"]["name"] == "nightly"
    assert "starting Prefect" in capsys.readouterr().err
    assert main(_args(fake_server, tmp_path, run_dir, "--resume")) == 0  # the plan is run again into it


def test_a_refused_run_leaves_no_new_folder_and_resume_force_exclude_each_other(fake_server, tmp_path, capsys):
    run_dir = tmp_path / "new"
    assert main(_args(fake_server, tmp_path, run_dir, "--set", "nope.x=1")) == BAD_INPUT
    assert not run_dir.exists()
    with pytest.raises(SystemExit) as exc:
        main(_args(fake_server, tmp_path, run_dir, "--resume", "--force"))
    assert exc.value.code == 2 and not run_dir.exists()
    capsys.readouterr()


@pytest.mark.parametrize("verb", ["attribute", "discover"])
def test_help_lists_every_exit_status(verb, capsys):
    with pytest.raises(SystemExit):
        main([verb, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status:" in text
    for code, meaning in EXIT_CODES.items():
        assert f"{code} {' '.join(meaning.split())}" in text
    for option in ("--name", "--resume", "--force", "--breaker-after", "--heartbeat"):
        assert option in text


def test_heartbeat_prints_items_calls_and_tokens_on_its_interval():
    import io

    from agentcausal.runs.heartbeat import Heartbeat, UsageMeter

    meter = UsageMeter()
    meter.add({"baseline": {"calls": 3, "prompt_tokens": 100, "completion_tokens": 20}})
    buf = io.StringIO()
    beat = Heartbeat("attribute", 10, lambda: 4, meter=meter, live=lambda: (1, 5), interval=0.05, stream=buf).start()
    time.sleep(0.5)
    beat.stop()
    lines = buf.getvalue().splitlines()
    assert len(lines) >= 3
    assert lines[0].startswith("attribute: heartbeat: 4/10 items done (40%)")
    assert lines[0].endswith("4 LLM calls, 125 tokens so far")


def test_demo_out_on_an_earlier_demo_refuses_unless_resume_or_force(tmp_path, capsys, monkeypatch):
    out = tmp_path / "demo"
    (out / "attribution").mkdir(parents=True)
    (out / "attribution" / "run.json").write_text('{"rows": {"total": 1}}')
    (out / "attribution" / "report.md").write_text("old report")
    args = ["demo", "--quick", "--out", str(out), "--who-and-when", str(tmp_path / "absent"), "--no-progress"]
    import flows.demo

    # demo sets the embedded model's threads in the environment (setdefault): keep it out of later tests' env
    monkeypatch.setenv("AGENTCAUSAL_PROFILE_EMBEDDED_THREADS", "1")
    ran = []
    monkeypatch.setattr(flows.demo, "demo", lambda **kw: ran.append(kw) or {})
    assert main(args) == BAD_INPUT
    err = capsys.readouterr().err
    assert str(out / "attribution") in err and "--resume" in err and "--force" in err
    assert (out / "attribution" / "report.md").read_text() == "old report" and ran == []

    assert main([*args, "--resume"]) == 0 and len(ran) == 1  # run again into it: the earlier files stay
    assert (out / "attribution" / "report.md").read_text() == "old report"
    assert main([*args, "--force"]) == 0 and len(ran) == 2  # start over: the earlier run's files are gone
    assert not (out / "attribution" / "report.md").exists()
