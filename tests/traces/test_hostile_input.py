"""Hostile trace input: every class is exit 2 and one line naming the file (and field) through the CLI, with and
without ``--skip-invalid`` (which names each file it leaves out); nothing hangs, floods or reaches a model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentcausal.exceptions import ContextWindowError, InputFileError, TraceFormatError, is_content_failure
from agentcausal.input_files import MAX_INT_DIGITS, input_refusal, loads_json, read_input_bytes, within_json_limits
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.traces.io import scan_traces
from agentcausal_cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _input_limits_restored(monkeypatch):
    """``--max-input-mb`` and ``--drop-missing`` set the process environment (for the flow's tasks):
    each test starts without them and leaves none behind."""
    for var in ("AGENTCAUSAL_MAX_INPUT_MB", "AGENTCAUSAL_DROP_MISSING"):
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)


def _trace(n_steps: int = 2, **extra: object) -> dict:
    hist = [{"name": f"A{i % 2}", "role": "assistant", "content": f"step {i}"} for i in range(n_steps)]
    return {"question": "q", "ground_truth": "a", "history": hist, **extra}


def _write(path: Path, obj: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def _deep(depth: int) -> str:
    return '{"question": "q", "history": [{"role": "a", "content": "x"}], "level": ' + "[" * depth + "]" * depth + "}"


def _big_int(digits: int) -> str:
    return '{"question": "q", "history": [{"role": "a", "content": "x"}], "level": ' + "7" * digits + "}"


#: name -> (file name, writer(path), the words the refusal must hold)
FILES = {
    "json_nested_past_recursion": ("deep.json", lambda p: _write(p, _deep(100_000)), "nested deeper than"),
    "json_nested_past_the_limit": ("deep64.json", lambda p: _write(p, _deep(200)), "nested deeper than 64"),
    "integer_over_4300_digits": (
        "bigint.json",
        lambda p: _write(p, _big_int(MAX_INT_DIGITS + 1)),
        f"integer of {MAX_INT_DIGITS + 1} digits",
    ),
    "mistake_step_superscript": ("sup.json", lambda p: _write(p, _trace(mistake_step="\u00b2")), "mistake_step"),
    "mistake_step_arabic_indic": ("ar.json", lambda p: _write(p, _trace(mistake_step="\u0663")), "mistake_step"),
    "mistake_step_huge": ("huge.json", lambda p: _write(p, _trace(mistake_step="9" * 5000)), "mistake_step"),
    "no_question": ("noq.json", lambda p: _write(p, {"ground_truth": "a", "history": _trace()["history"]}), "question"),
    "empty_question": ("emptyq.json", lambda p: _write(p, _trace(question="  ")), "question"),
    "fifo": ("fifo.json", lambda p: os.mkfifo(p), "a FIFO"),
    "symlink_to_dev_zero": ("zero.json", lambda p: os.symlink("/dev/zero", p), "/dev/zero"),
    "symlink_loop": (
        "loop.json",
        lambda p: (os.symlink(p.name + ".2", p), os.symlink(p.name, str(p) + ".2")),
        "a symlink loop",
    ),
    "dangling_symlink": ("gone.json", lambda p: os.symlink("/nonexistent/x.json", p), "a dangling symlink"),
    "folder_named_json": ("dir.json", lambda p: p.mkdir(), "a folder, not a regular file"),
    "not_utf8": ("latin.json", lambda p: p.write_bytes(b'{"question": "caf\xe9"}'), "not UTF-8"),
}


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI in its own process: a hang (a FIFO opened for reading) fails by the timeout instead of blocking."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "agentcausal", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("kind", list(FILES))
def test_each_hostile_file_is_one_line_naming_it(tmp_path, kind, capsys):
    name, make, words = FILES[kind]
    f = tmp_path / "corpus" / name
    f.parent.mkdir()
    make(f)
    # named directly and found in a folder; --dry-run too (it reads the corpus as a run does)
    targets = [str(f.parent)] if f.is_dir() else [str(f), str(f.parent)]  # a folder named directly is a folder
    for target in targets:
        assert main(["attribute", target, "--dry-run"]) == 2
        line = _one_line(capsys.readouterr().err)
        assert str(f) in line and words in line, line


def test_the_loader_names_file_and_field(tmp_path):
    f = FILES["mistake_step_superscript"][1](tmp_path / "c" / "1.json")
    scan = scan_traces([f])
    assert [(e.path, e.field) for e in scan.invalid] == [(str(f), "mistake_step")]
    assert "'\u00b2' is not a step index" in str(scan.invalid[0])


def test_a_fifo_never_hangs_even_under_dry_run(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    os.mkfifo(d / "x.json")
    for target in (d / "x.json", d):
        r = _cli("attribute", str(target), "--dry-run")
        assert r.returncode == 2 and "x.json: a FIFO" in _one_line(r.stderr)


def test_a_symlink_to_dev_zero_reads_nothing(tmp_path):
    link = tmp_path / "x.json"
    os.symlink("/dev/zero", link)
    assert input_refusal(link) == "a symlink to /dev/zero: a character device, not a regular file"
    with pytest.raises(InputFileError, match="character device"):
        read_input_bytes(link)
    r = _cli("attribute", str(link), "--dry-run")
    assert r.returncode == 2 and "/dev/zero" in _one_line(r.stderr)


def test_a_symlink_out_of_the_folder_is_refused_but_one_inside_is_read(tmp_path):
    outside = _write(tmp_path / "elsewhere" / "t.json", _trace())
    d = tmp_path / "corpus"
    _write(d / "real.json", _trace())
    _write(d / "kept" / "inner.json", _trace())
    os.symlink(outside, d / "out.json")
    os.symlink(d / "kept" / "inner.json", d / "alias.json")
    scan = scan_traces([d])
    assert [Path(e.path).name for e in scan.invalid] == ["out.json"] and "outside" in str(scan.invalid[0])
    assert sorted(t.id for t in scan.traces) == ["corpus/real", "kept/inner"]
    assert scan_traces([d / "out.json"]).invalid == []  # a file the user names may be a link anywhere


def test_jsonl_lines_are_named(tmp_path):
    good = json.dumps(
        {"id": "t1", "question": "q", "ground_truth": "a", "steps": [{"index": 0, "agent": "A", "content": "x"}]}
    )
    deep = '{"id": "t2", "question": "q", "steps": [], "x": ' + "[" * 5000 + "]" * 5000 + "}"
    big = '{"id": "t3", "question": "q", "steps": [], "x": ' + "1" * 5000 + "}"
    noq = json.dumps(
        {"id": "t4", "question": "", "ground_truth": "a", "steps": [{"index": 0, "agent": "A", "content": "x"}]}
    )
    f = _write(tmp_path / "c.jsonl", "\n".join([good, deep, big, noq]) + "\n")
    scan = scan_traces([f])
    assert [t.id for t in scan.traces] == ["t1"]
    assert [e.field for e in scan.invalid] == ["line 2", "line 3", "line 4"]
    msgs = [str(e) for e in scan.invalid]
    assert "nested deeper than" in msgs[0] and "integer of 5000 digits" in msgs[1] and "question" in msgs[2]


def test_size_limit_refuses_unread_unless_raised(tmp_path, capsys, monkeypatch):
    f = _write(tmp_path / "c" / "big.json", json.dumps(_trace()) + " " * (2 * 2**20))
    assert main(["attribute", str(f), "--dry-run", "--max-input-mb", "1"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert str(f) in line and "2.0 MiB, over the 1.0 MiB input limit" in line and "--max-input-mb" in line
    assert main(["attribute", str(f), "--dry-run", "--max-input-mb", "3"]) == 0
    capsys.readouterr()
    assert main(["attribute", str(f), "--dry-run", "--max-input-mb", "0"]) == 2
    assert "--max-input-mb" in _one_line(capsys.readouterr().err)


def test_skip_invalid_names_every_hostile_file_and_runs_the_rest(tmp_path, capsys):
    d = tmp_path / "corpus"
    d.mkdir()
    _write(d / "good.json", _trace())
    for name, make, _ in FILES.values():
        make(d / name)
    assert main(["attribute", str(d), "--dry-run", "--skip-invalid"]) == 0
    out, err = capsys.readouterr()
    plan = json.loads(out)
    assert [i["id"] for i in plan["items"]] == ["corpus/good"]
    assert f"skipping {len(FILES)} invalid trace input(s)" in err
    for name, _, words in FILES.values():
        assert any(str(d / name) in ln and words in ln for ln in err.splitlines()), name
    # nothing valid left: refused in one line
    os.unlink(d / "good.json")
    assert main(["attribute", str(d), "--dry-run", "--skip-invalid"]) == 2
    assert "no valid trace" in capsys.readouterr().err.splitlines()[-1]


def test_loads_json_limits():
    assert loads_json("[" * 64 + "]" * 64) == loads_json("[" * 64 + "]" * 64)
    with pytest.raises(InputFileError, match="deeper than 64"):
        loads_json("[" * 65 + "]" * 65)
    assert loads_json("-" + "9" * MAX_INT_DIGITS) < 0
    with pytest.raises(InputFileError, match="digits"):
        loads_json("9" * (MAX_INT_DIGITS + 1))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 64 + "]" * 64,
        "[" * 65 + "]" * 65,
        '{"a": ' * 63 + "{}" + "}" * 63,
        '{"a": ' * 64 + "{}" + "}" * 64,
        '{"a": ' * 64 + "1" + "}" * 64,
        '{"a": ' * 65 + "1" + "}" * 65,
        "[" * 63 + "[1, {}, [], 2.5, null, true]" + "]" * 63,
        '{"a": [{"b": "x"}, -' + "9" * MAX_INT_DIGITS + "]}",
        '{"a": [{"b": "x"}, -' + "9" * (MAX_INT_DIGITS + 1) + "]}",
        "9" * (MAX_INT_DIGITS + 1),
        '"text"',
    ],
)
def test_within_json_limits_refuses_what_loads_json_refuses(text):
    """What another parser read is judged as :func:`loads_json` judges the text (the fast trace reading relies on
    it): the same nesting and integer-digit limits, empty arrays and objects counted."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # json.loads reads the long integers; loads_json counts their digits itself
    try:
        value = json.loads(text)
        try:
            loads_json(text)
            accepted = True
        except InputFileError:
            accepted = False
    finally:
        sys.set_int_max_str_digits(old)
    assert within_json_limits(value) is accepted


# ---- prompts over the routed model's window -------------------------------------------------------------------


def test_an_over_window_request_is_refused_unsent(fake_server, make_gateway):
    from pydantic import BaseModel

    class Reply(BaseModel):
        answer: str

    gw = make_gateway(fake_server)  # context_window 8192
    huge = [{"role": "user", "content": "step " * 20_000}]  # 100,000 characters
    with pytest.raises(ContextWindowError) as info:
        gw.chat("baseline", huge)
    with pytest.raises(ContextWindowError):
        gw.structured("baseline", huge, Reply)
    assert fake_server.count == 0
    assert is_content_failure(info.value) and "8,192-token context window" in str(info.value)
    assert "'fake'" in str(info.value) and "\n" not in str(info.value)
    fake_server.push('{"answer": "ok"}')
    assert gw.structured("baseline", [{"role": "user", "content": "step " * 1000}], Reply).answer == "ok"


@pytest.mark.parametrize("method", ["all_at_once", "step_by_step", "binary_search", "a2p", "echo", "dcfa"])
def test_no_method_sends_a_prompt_over_the_window(fake_server, make_gateway, method):
    """A trace of 600,000 characters (about 150,000 tokens) against an 8,192-token window: each method
    shortens it by its budget or the item is refused; no request over the window is ever sent."""
    from agentcausal.attribution.jobs import run_method
    from agentcausal.llm.window import prompt_size
    from agentcausal.traces.model import Step, Trace

    trace = Trace(
        id="huge/1",
        source="test",
        question="q",
        ground_truth="a",
        steps=[Step(index=i, agent=f"A{i % 2}", content=f"step {i} " + "data " * 20_000) for i in range(6)],
    )
    fake_server.responder = lambda body: "{}"  # never a valid reply: every method stops early
    a = run_method(trace, ATTRIBUTION_METHODS[method], make_gateway(fake_server))
    for body in fake_server.chat_requests:
        assert prompt_size(body["messages"])[0] <= 8192, method
    assert a.status in ("content_failed", "degraded", "complete"), a
    if a.status == "content_failed" and "ContextWindowError" in (a.error or ""):
        assert "context window" in a.error


def test_trace_format_error_for_a_hostile_file_is_a_content_failure(tmp_path):
    f = FILES["fifo"][1](tmp_path / "x.json") or tmp_path / "x.json"
    err = scan_traces([f]).invalid[0]
    assert isinstance(err, TraceFormatError) and is_content_failure(err)


@pytest.mark.parametrize("method", ["all_at_once", "binary_search", "a2p", "echo", "dcfa"])
def test_a_many_step_trace_over_the_window_is_refused_for_its_item(fake_server, make_gateway, method):
    """20,000 short steps (about 280,000 tokens rendered): the methods' budgets shorten step text, not the
    number of steps, so the guard refuses the item: content_failed, naming the window; no request sent."""
    from agentcausal.attribution.jobs import run_method
    from agentcausal.traces.model import Step, Trace

    trace = Trace(
        id="long/1",
        source="test",
        question="q",
        ground_truth="a",
        steps=[Step(index=i, agent=f"A{i % 2}", content=f"step {i} ok") for i in range(20_000)],
    )
    fake_server.responder = lambda body: "{}"
    a = run_method(trace, ATTRIBUTION_METHODS[method], make_gateway(fake_server))
    assert fake_server.count == 0
    assert a.status == "content_failed" and "ContextWindowError" in a.error and "8,192-token" in a.error


@pytest.mark.parametrize("fmt", ["auto", "otel", "openinference", "ag2", "langsmith"])
def test_importers_open_no_fifo_or_device_whatever_the_format(tmp_path, fmt):
    os.mkfifo(tmp_path / "spans.json")
    os.symlink("/dev/zero", tmp_path / "zero.ndjson")
    for f, words in ((tmp_path / "spans.json", "a FIFO"), (tmp_path / "zero.ndjson", "/dev/zero")):
        r = _cli("import", str(f), "--format", fmt, "--out", str(tmp_path / "out.jsonl"), timeout=60)
        assert r.returncode == 2 and str(f) in _one_line(r.stderr) and words in r.stderr, (fmt, r.stderr)
