"""Boolean settings (environment variables and ``--set`` values) parse case-insensitively and refuse the rest."""

from __future__ import annotations

import pytest

from agentcausal.demo_selection import examples_dir
from agentcausal.exceptions import ConfigError
from agentcausal.settings import RunSettings, parse_bool
from agentcausal_cli import main
from agentcausal_cli.method_sets import parse_bool_sets, parse_sets

EXAMPLES = str(examples_dir())


@pytest.mark.parametrize("word", ["true", "TRUE", "True", "1", "yes", "Yes", "on", " ON "])
def test_true_spellings(word):
    assert parse_bool(word, name="x") is True


@pytest.mark.parametrize("word", ["false", "False", "0", "no", "NO", "off", "Off"])
def test_false_spellings(word):
    assert parse_bool(word, name="x") is False


@pytest.mark.parametrize("word", ["ture", "2", "y", "t", "enable", "", "-1"])
def test_anything_else_is_refused_naming_the_setting(word):
    with pytest.raises(ConfigError, match="the_setting must be a boolean"):
        parse_bool(word, name="the_setting")


@pytest.mark.parametrize(("raw", "expected"), [("TRUE", True), ("Yes", True), ("off", False), ("", False)])
def test_refresh_environment_variable(monkeypatch, raw, expected):
    monkeypatch.setenv("AGENTCAUSAL_REFRESH", raw)
    assert RunSettings.from_env().refresh is expected


def test_bad_refresh_environment_variable_is_one_clear_error(monkeypatch, capsys):
    monkeypatch.setenv("AGENTCAUSAL_REFRESH", "maybe")
    with pytest.raises(ConfigError, match=r"\$AGENTCAUSAL_REFRESH must be a boolean.*'maybe'"):
        RunSettings.from_env()
    assert main(["attribute", EXAMPLES, "--limit", "1"]) == 2
    err = capsys.readouterr().err
    assert "AGENTCAUSAL_REFRESH" in err and "Traceback" not in err


def test_set_booleans_parse_case_insensitively_and_refuse_the_rest():
    sets = parse_bool_sets(
        parse_sets(
            [
                "dcfa.use_lce=False",
                "dcfa.revisit=YES",
                "dcfa.simulation_sees_truth=1",
                "all_at_once.with_ground_truth=off",
            ]
        )
    )
    assert sets == {
        "dcfa": {"use_lce": False, "revisit": True, "simulation_sees_truth": True},
        "all_at_once": {"with_ground_truth": False},
    }
    with pytest.raises(ConfigError, match="--set dcfa.use_lce must be a boolean"):
        parse_bool_sets(parse_sets(["dcfa.use_lce=y"]))
    with pytest.raises(ConfigError, match="all_at_once.with_ground_truth"):
        parse_bool_sets(parse_sets(["all_at_once.with_ground_truth=2"]))
    # non-boolean fields and unknown methods pass through
    assert parse_bool_sets({"nope": {"x": "y"}}) == {"nope": {"x": "y"}}


def test_cli_refuses_a_bad_boolean_set(capsys):
    assert main(["attribute", EXAMPLES, "-m", "dcfa", "--set", "dcfa.use_lce=maybe"]) == 2
    err = capsys.readouterr().err
    assert "dcfa.use_lce must be a boolean" in err and len(err.strip().splitlines()) == 1
