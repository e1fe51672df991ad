"""Quiet by default: third-party notes a user cannot act on stay off the console unless -v."""

import logging

import pytest

from agentcausal_cli import QUIET_ENV, quiet_third_party


@pytest.fixture
def restore_pgmpy_level():
    logger = logging.getLogger("pgmpy")
    level = logger.level
    yield logger
    logger.setLevel(level)


def test_pgmpy_rounding_warning_is_hidden_unless_verbose(restore_pgmpy_level, monkeypatch, caplog):
    for key in QUIET_ENV:
        monkeypatch.setenv(key, "placeholder")  # recorded, so the teardown restores the environment
        monkeypatch.delenv(key)
    restore_pgmpy_level.setLevel(logging.NOTSET)
    quiet_third_party(verbose=True)
    with caplog.at_level(logging.WARNING):
        logging.getLogger("pgmpy").warning("Probability values don't exactly sum to 1.")
    assert "sum to 1" in caplog.text
    caplog.clear()
    quiet_third_party(verbose=False)
    logging.getLogger("pgmpy").warning("Probability values don't exactly sum to 1.")
    assert "sum to 1" not in caplog.text
    import os

    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and os.environ["AGENTCAUSAL_LLAMA_VERBOSITY"] == "1"
    logging.getLogger("agentcausal").warning("a warning a user can act on")
    assert "act on" in caplog.text
