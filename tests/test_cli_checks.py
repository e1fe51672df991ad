"""Bad inputs stop the CLI up front with one clear error (exit 2), before Prefect or any LLM call."""

from __future__ import annotations

import pytest

from agentcausal.cli import main
from agentcausal.demo import examples_dir
from agentcausal.exceptions import ConfigError, MissingAPIKeyError
from agentcausal.settings import RunSettings

EXAMPLE = str(examples_dir() / "wrong_unit_at_step_2.json")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["attribute", EXAMPLE, "--routing", "nope"], "unknown routing 'nope'"),
        (["attribute", EXAMPLE, "-m", "dcfa", "--routing", "paper"], "$OPENAI_API_KEY, which is not set"),
        (["attribute", EXAMPLE, "--limit", "-1"], "--limit must be at least 1"),
        (["attribute", EXAMPLE, "--max-steps", "0"], "--max-steps must be at least 1"),
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
