"""The CLI as a new user meets it: -v after the verb, help texts, one-line errors, all-skipped inputs,
evaluate on a discovery run, unreachable endpoints. Fast: no model, no Prefect run."""

from __future__ import annotations

import pytest

from agentcausal_cli import build_parser, main


def test_verbose_after_the_verb_is_accepted():
    p = build_parser()
    assert p.parse_args(["attribute", "x", "-v"]).verbose is True
    assert p.parse_args(["-v", "attribute", "x"]).verbose is True  # before the verb still works
    assert p.parse_args(["attribute", "x"]).verbose is False
    assert p.parse_args(["evaluate", "runs/x", "--verbose"]).verbose is True


@pytest.mark.parametrize("verb", ["attribute", "evaluate", "discover", "compare"])
def test_every_verb_help_names_verbose(verb, capsys):
    with pytest.raises(SystemExit):
        main([verb, "--help"])
    assert "--verbose" in capsys.readouterr().out


def test_attribute_help_lists_dcfa_gca_only_and_threads(capsys):
    with pytest.raises(SystemExit):
        main(["attribute", "--help"])
    out = capsys.readouterr().out
    assert "dcfa_gca_only" in out and "--threads" in out


def test_evaluate_help_explains_run_dir(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "results.parquet" in capsys.readouterr().out


def test_threads_below_one_refused(tmp_path, capsys):
    (tmp_path / "t.jsonl").write_text("")
    assert main(["attribute", str(tmp_path / "t.jsonl"), "--threads", "0", "--dry-run"]) == 2
    assert "--threads must be at least 1" in capsys.readouterr().err


def test_compare_kind_mismatch_uses_the_right_article(tmp_path):
    from agentcausal.exceptions import CompareError
    from agentcausal.report.compare import compare_runs

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.parquet").write_bytes(b"")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "outcomes.jsonl").write_text("")
    with pytest.raises(CompareError, match="cannot compare an attribution run .* with a discovery run"):
        compare_runs(tmp_path / "a", tmp_path / "b")


def test_set_unknown_field_is_one_line_naming_the_valid_fields(capsys):
    assert main(["attribute", "data/examples", "--set", "all_at_once.nonexistent=3", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "unknown field nonexistent of method all_at_once" in err and "valid fields:" in err and "max_tokens" in err
    assert "pydantic" not in err and "extra_forbidden" not in err


def test_set_bad_value_is_one_line(capsys):
    assert main(["attribute", "data/examples", "--set", "all_at_once.max_tokens=abc", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "all_at_once.max_tokens" in err and "pydantic" not in err


def test_evaluate_rereports_a_discovery_run(tmp_path, monkeypatch, capsys):
    import pandas as pd

    import agentcausal.report.discovery as disc
    import agentcausal.report.discovery_tables as disc_tables

    run = tmp_path / "disc"
    run.mkdir()
    (run / "outcomes.jsonl").write_text("")
    (run / "results.parquet").write_bytes(b"")  # discovery folders hold one too; outcomes.jsonl decides
    seen = {}

    class Files:
        frame, run_dir, report = pd.DataFrame(), str(run), str(run / "report.md")

    def fake_write_report(run_dir, **kw):
        seen["run_dir"] = run_dir
        return Files()

    monkeypatch.setattr(disc, "write_report", fake_write_report)
    monkeypatch.setattr(disc_tables, "summary_text", lambda frame, **kw: "SUMMARY TABLE")
    assert main(["evaluate", str(run)]) == 0
    out, err = capsys.readouterr()
    assert seen["run_dir"] == str(run) and "SUMMARY TABLE" in out
    assert "discovery run" in err and "discover --report" in err and "lacks columns" not in err


def test_evaluate_on_a_missing_folder_is_one_line(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "nope")]) == 2
    assert "no such run folder" in capsys.readouterr().err


def _nocontent(path):
    import json

    from agentcausal_fakes.spans import genai_spans, otlp_json

    path.write_text(json.dumps(otlp_json(genai_spans(content=False))))
    return path


def test_all_skipped_names_the_input_files_and_leaves_no_run_folder(tmp_path, capsys):
    f = _nocontent(tmp_path / "nocontent.json")
    out = tmp_path / "runs" / "empty"
    assert main(["attribute", str(f), "--no-ground-truth", "--skip-invalid", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("agentcausal: error: ") and str(f) in lines[-1]
    assert "traces.jsonl" not in lines[-1]
    assert any(ln.startswith("agentcausal: skipping ") for ln in lines[:-1])
    assert not out.exists()


def test_refused_after_import_leaves_no_run_folder(tmp_path, capsys):
    import json

    from agentcausal_fakes.spans import genai_spans, otlp_json

    f = tmp_path / "run.json"
    f.write_text(json.dumps(otlp_json(genai_spans())))
    out = tmp_path / "runs" / "x"
    assert main(["attribute", str(f), "-m", "all_at_once", "--out", str(out)]) == 2  # no ground truth
    assert "ground truth" in capsys.readouterr().err
    assert not out.exists()


def _closed_port_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there now


def test_unreachable_endpoint_stops_before_work_in_one_line(tmp_path, capsys):
    url = _closed_port_url()
    out = tmp_path / "run"
    rc = main(
        [
            "attribute",
            "data/examples",
            "--base-url",
            url,
            "--model",
            "m",
            "--limit",
            "1",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.splitlines() == [err] and err.startswith(f"agentcausal: error: endpoint unreachable: cli at {url}")
    assert "Traceback" not in err and not out.exists()


def test_dry_run_skips_the_endpoint_check(tmp_path, capsys):
    url = _closed_port_url()
    assert (
        main(
            [
                "attribute",
                "data/examples",
                "--base-url",
                url,
                "--model",
                "m",
                "--limit",
                "1",
                "--cache-dir",
                str(tmp_path / "cache"),
                "--dry-run",
            ]
        )
        == 0
    )
    assert "endpoint unreachable" not in capsys.readouterr().err


def test_endpoint_check_accepts_any_http_answer_and_skips_embedded(tmp_path):
    from agentcausal_cli.endpoints import check_endpoints
    from agentcausal_fakes.fake_openai import FakeOpenAIServer

    assert check_endpoints(None, "default", {"baseline", "dcfa.embed"}) == []  # embedded and local: not checked
    toml = tmp_path / "p.toml"
    with FakeOpenAIServer(replies=["x"]) as fake:
        toml.write_text(
            f'[profiles.f]\nkind = "chat"\nbase_url = "{fake.base_url}"\nmodel = "m"\n'
            "max_concurrency = 1\ntimeout_s = 5\ncontext_window = 4096\n\n"
            '[routings.default]\ndefault = "f"\n'
        )
        assert check_endpoints(str(toml), "default", {"baseline", "dcfa.gca"}) == [fake.base_url]


def _failed_task_records():
    import logging
    import sys

    try:
        try:
            raise ConnectionError("refused")
        except ConnectionError as inner:
            raise RuntimeError("endpoint down") from inner
    except RuntimeError:
        exc_info = sys.exc_info()
    failed = logging.LogRecord(
        "prefect.task_runs",
        logging.ERROR,
        __file__,
        1,
        "Task run failed with exception: %r - Retries are exhausted",
        (exc_info[1],),
        exc_info,
    )
    state = logging.LogRecord(
        "prefect.task_runs",
        logging.ERROR,
        __file__,
        2,
        "Finished in state Failed('Task run encountered an exception')",
        None,
        None,
    )
    other = logging.LogRecord("agentcausal.x", logging.ERROR, __file__, 3, "kept", None, exc_info)
    return failed, state, other


def test_failed_task_runs_reach_the_console_in_one_line():
    import io
    import logging

    from agentcausal_cli import OneLineTaskFailures

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(OneLineTaskFailures())
    failed, state, other = _failed_task_records()
    for r in (failed, state):
        handler.handle(r)
    text = stream.getvalue()
    assert text.count("\n") == 1 and "endpoint down" in text and "Traceback" not in text
    assert "Finished in state" not in text
    handler.handle(other)  # not a task-run record: untouched, traceback and all
    assert "Traceback" in stream.getvalue()


def test_prefects_crash_line_of_a_run_we_stopped_is_left_out(monkeypatch):
    """SIGTERM stops a run (exit 143, one line of ours); Prefect's "Crash detected!" for it is not printed too,
    while the same line of a real crash (no stop asked) is."""
    import logging

    import agentcausal_cli as cli

    def record() -> logging.LogRecord:
        return logging.LogRecord(
            "prefect.flow_runs", logging.ERROR, __file__, 1, "Crash detected! Execution was interrupted", None, None
        )

    monkeypatch.setattr(cli.stop, "stop_requested", lambda: False)
    assert cli.OneLineTaskFailures().filter(record())
    monkeypatch.setattr(cli.stop, "stop_requested", lambda: True)
    assert not cli.OneLineTaskFailures().filter(record())


def test_quiet_task_failures_is_off_with_verbose_and_added_once():
    import io
    import logging

    from agentcausal_cli import OneLineTaskFailures, quiet_task_failures

    root = logging.getLogger()
    handler = logging.StreamHandler(io.StringIO())
    handler.stream = __import__("sys").stderr
    root.addHandler(handler)
    try:
        quiet_task_failures(True)
        assert not any(isinstance(f, OneLineTaskFailures) for f in handler.filters)
        quiet_task_failures(False)
        quiet_task_failures(False)
        assert sum(isinstance(f, OneLineTaskFailures) for f in handler.filters) == 1
    finally:
        root.removeHandler(handler)


@pytest.mark.slow  # a Prefect flow run (about a minute here); no model
def test_run_whose_endpoint_drops_every_request_exits_4_naming_it(tmp_path, capsys):
    from agentcausal_fakes.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(faults=["drop"] * 500) as srv:  # /models answers, every chat request is dropped
        url = srv.base_url
        rc = main(
            [
                "attribute",
                "data/examples",
                "--base-url",
                url,
                "--model",
                "fake-model",
                "--limit",
                "1",
                "--cache-dir",
                str(tmp_path / "c"),
                "--out",
                str(tmp_path / "r"),
                "--no-progress",
            ]
        )
    err = capsys.readouterr().err
    assert rc == 4  # agentcausal_cli.exit_codes.ENDPOINT_DOWN
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines[-2].startswith(f"agentcausal: error: endpoint unreachable: cli at {url}")
    assert lines[-1].startswith("agentcausal: 1 of 1 (trace, method) rows not computed")
