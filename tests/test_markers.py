"""The quick loop stays quick: a test that allows itself a minute or more (``@pytest.mark.timeout(N)``,
N >= 60: it starts Prefect, a flow, a service or the embedded model) is marked ``slow``, so
``bash scripts/test.sh -m "not slow"`` leaves it to the full run. Read with ``ast``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: seconds of a test's own timeout from which it counts as slow
SLOW_TIMEOUT_S = 60


def unmarked_long_tests(root: Path) -> list[str]:
    """``path::name`` of each test under ``root`` with a timeout of SLOW_TIMEOUT_S or more and no ``slow`` mark
    (on the function, or the module's ``pytestmark``)."""
    out = []
    for path in sorted(root.rglob("test_*.py")):
        src = path.read_text(encoding="utf-8")
        module_slow = re.search(r"^pytestmark\s*=.*\bslow\b", src, re.M) is not None
        for node in ast.walk(ast.parse(src)):
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test")):
                continue
            decorators = [ast.unparse(d) for d in node.decorator_list]
            timeouts = [int(m[1]) for d in decorators if (m := re.search(r"mark\.timeout\((\d+)", d))]
            if (
                timeouts
                and max(timeouts) >= SLOW_TIMEOUT_S
                and not module_slow
                and not any("mark.slow" in d for d in decorators)
            ):
                out.append(f"{path.relative_to(root).as_posix()}::{node.name}")
    return out


def test_every_test_with_a_long_timeout_is_marked_slow():
    assert unmarked_long_tests(TESTS) == []


def test_the_rule_catches_an_unmarked_long_test(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n@pytest.mark.timeout(300)\ndef test_long():\n    pass\n\n"
        "@pytest.mark.slow\n@pytest.mark.timeout(300)\ndef test_marked():\n    pass\n\n"
        "@pytest.mark.timeout(20)\ndef test_short():\n    pass\n",
        encoding="utf-8",
    )
    assert unmarked_long_tests(tmp_path) == ["test_x.py::test_long"]
