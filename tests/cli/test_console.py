"""The CLI's console shows warnings only (INFO with -v), whoever configured logging first.

Each case runs in a child interpreter: the root logger there starts without pytest's handlers.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import logging, sys
if sys.argv[1] == "prefect-first":  # a console handler already there, as Prefect's after an earlier flow run
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("%(levelname)s | %(name)s - %(message)s"))
    logging.getLogger().addHandler(h)
from agentcausal_cli import console_logging
console_logging(verbose=sys.argv[2] == "-v")
run_logger = logging.getLogger("prefect.flow_runs")
run_logger.setLevel(logging.INFO)  # PREFECT_LOGGING_LEVEL=INFO: INFO records are made (for the API)
run_logger.info("an INFO line")
run_logger.warning("a WARNING line")
"""


@pytest.mark.parametrize("first", ["fresh", "prefect-first"])
@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_console_shows_info_only_when_verbose(first, verbose):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(
        [sys.executable, "-c", CHILD, first, "-v" if verbose else "-"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "a WARNING line" in r.stderr
    assert ("an INFO line" in r.stderr) is verbose, r.stderr
