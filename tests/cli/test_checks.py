"""Bad inputs stop the CLI up front with one clear error (exit 2), before Prefect or any LLM call."""

from __future__ import annotations

import pytest

from agentcausal.demo_selection import examples_dir
from agentcausal.exceptions import ConfigError, MissingAPIKeyError
from agentcausal.settings import RunSettings
from agentcausal_cli import main

EXAMPLE = str(examples_dir() / "wrong_unit_at_step_2.json")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["attribute", EXAMPLE, "--routing", "nope"], "unknown routing 'nope'"),
        (["attribute", EXAMPLE, "-m", "dcfa", "--routing", "paper"], "$OPENAI_API_KEY, which is not set"),
        (["attribute", EXAMPLE, "--limit", "-1"], "--limit must be at least 1"),
        (["attribute", EXAMPLE, "--max-steps", "0"], "--max-steps must be at least 1"),
        (["attribute", EXAMPLE, "--chunk-size", "-3"], "--chunk-size must be 0 (the default) or a positive"),
        (["discover", "--dataset", "earthquake", "--chunk-size", "-1"], "--chunk-size must be 0 (the default)"),
        (["discover", "--dataset", "earthquake", "-m", "mac", "--routing", "paper"], "$OPENAI_API_KEY"),
        (["demo", "--routing", "nope"], "unknown routing 'nope'"),
    ],
)
def test_bad_input_is_one_clear_error(argv, message, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_malformed_trace_file_fails_before_the_flow(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"history": [')
    assert main(["attribute", str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err


def test_check_routes_names_stage_and_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    RunSettings(routing="default").check_routes(["dcfa.gca", "dcfa.embed", "mac.debate"])
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        RunSettings(routing="paper").check_routes(["dcfa.gca"])
    with pytest.raises(ConfigError, match="unknown routing"):
        RunSettings(routing="nope").check_routes([])


def test_dry_run_into_a_closed_pipe_ends_without_a_traceback():
    """`attribute ... --dry-run | head`: the reader closes stdout before the write; no BrokenPipeError traceback."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    cmd = (
        f"{sys.executable} -m agentcausal attribute data/examples --method all_at_once --method dcfa "
        f"--dry-run | true"
    )  # true exits before the plan is written
    proc = subprocess.run(["bash", "-c", cmd], cwd=repo, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr[-2000:]


def test_chunk_size_help_states_the_flows_default():
    from agentcausal.runs.engine import DEFAULT_CHUNK_SIZE
    from agentcausal_cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command" or getattr(a, "choices", None))
    text = sub.choices["attribute"].format_help()
    assert f"default {DEFAULT_CHUNK_SIZE}," in " ".join(text.split())


def test_discover_takes_threads_like_attribute(capsys, monkeypatch):
    """`discover --threads N` checks N and hands it to the embedded profile, as `attribute --threads` does."""
    from agentcausal_cli import main

    monkeypatch.setenv("AGENTCAUSAL_PROFILE_EMBEDDED_THREADS", "")  # restored (removed) after the test
    monkeypatch.delenv("AGENTCAUSAL_PROFILE_EMBEDDED_THREADS")
    assert main(["discover", "--dataset", "cancer", "--method", "pc", "--threads", "0", "--dry-run"]) == 2
    assert "--threads must be at least 1" in capsys.readouterr().err
    assert main(["discover", "--dataset", "cancer", "--method", "pc", "--threads", "1", "--dry-run"]) == 0
    import os

    assert os.environ.get("AGENTCAUSAL_PROFILE_EMBEDDED_THREADS") == "1"


def test_discover_refuses_attributions_dcfa_paper_preset(capsys):
    """``dcfa_paper`` changes only attribution's baselines: ``discover --preset dcfa_paper`` is refused by name."""
    from agentcausal_cli import main

    with pytest.raises(SystemExit) as exc:
        main(["discover", "-d", "asia", "-m", "pc", "--preset", "dcfa_paper", "--dry-run"])
    assert exc.value.code == 2 and "invalid choice: 'dcfa_paper'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, says",
    [
        (["attribute", "x", "--resume", "--force"], "agentcausal attribute: error: argument --force: not allowed"),
        (["attribute", "--methd", "x"], "agentcausal attribute: error: unrecognized arguments: --methd"),
        (["cache"], "agentcausal cache: error: the following arguments are required: action"),
        ([], "agentcausal: error: the following arguments are required: VERB"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_verb_and_exit_2(argv, says, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()] and err.startswith(says) and "--help` lists the options" in err


@pytest.mark.parametrize("verb", [["show"], ["annotate", "--otlp", "out.json"]])
def test_a_missing_run_folder_reads_the_same_for_show_and_annotate(verb, tmp_path, capsys):
    assert main([verb[0], str(tmp_path / "nope"), *verb[1:]]) == 2
    assert capsys.readouterr().err.strip() == f"agentcausal: error: no such run folder: {tmp_path / 'nope'}"
