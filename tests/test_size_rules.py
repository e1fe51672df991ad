"""The size rules of scripts/size_rules.py hold on the checkout and catch a planted breach."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "size_rules.py"


def _run(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=120)


def test_the_checkout_keeps_the_size_rules() -> None:
    done = _run(ROOT)
    assert done.returncode == 0, done.stderr


def test_a_long_module_and_a_long_function_are_named(tmp_path: Path) -> None:
    pkg = tmp_path / "agentcausal"
    pkg.mkdir()
    (tmp_path / "flows").mkdir()
    (tmp_path / "tasks").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(170))
    (pkg / "long.py").write_text("def grown():\n" + body + "\n" + "\n" * 400, encoding="utf-8")
    (pkg / "fine.py").write_text("def small():\n    return 1\n", encoding="utf-8")
    done = _run(tmp_path)
    assert done.returncode == 1
    assert "agentcausal/long.py: 571 lines" in done.stderr
    assert "agentcausal/long.py:1: grown() is 171 lines" in done.stderr
    assert "fine.py" not in done.stderr
