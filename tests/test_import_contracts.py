"""The import contracts of ``.importlinter`` hold, and they bite: a planted import breaks them.

Runs import-linter (``lint-imports``, as scripts/lint.sh does) on the checkout, then on a copy of the three
packages with one import planted per contract (the command line counted among them).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(where)},
    )


def test_contracts_hold_on_the_checkout() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("agentcausal/traces/model.py", "import flows.engine", "Four layers"),
        ("agentcausal/report/blamed.py", "import agentcausal_cli.show", "Four layers"),
        ("flows/engine.py", "import agentcausal_cli.run_output", "Four layers"),
        ("agentcausal/report/blamed.py", "import prefect", "never imports Prefect"),
        ("agentcausal/runs/store.py", "import agentcausal.attribution.jobs", "run engine imports neither"),
        ("agentcausal/discovery/outcome.py", "import agentcausal.report.discovery", "halves import neither"),
        ("agentcausal/attribution/plan.py", "import agentcausal.registry", "halves import neither"),
        ("agentcausal/discovery/jobs.py", "import agentcausal.registry", "halves import neither"),
        ("agentcausal/attribution/evaluate.py", "import agentcausal.discovery.outcome", "independent"),
    ],
)
def test_a_planted_import_breaks_its_contract(tmp_path: Path, module: str, planted: str, contract: str) -> None:
    for name in ("agentcausal", "agentcausal_cli", "flows", "tasks"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{planted}  # planted by the test\n", encoding="utf-8")
    done = _lint(tmp_path)
    assert done.returncode != 0, done.stdout
    broken = [line for line in done.stdout.splitlines() if " BROKEN" in line]
    assert any(contract in line for line in broken), done.stdout
