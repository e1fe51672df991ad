"""The test doubles live in one package, ``agentcausal_fakes``, that tests and bench import, and nothing else
crosses: the product never imports the doubles, bench never imports tests, and only the bench's own tests
(``tests/bench/``) import bench. Imports are read with ``ast`` (function-level imports included)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _imported(path: Path) -> set[str]:
    """Top-level package names ``path`` imports, anywhere in the file."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _offenders(folder: str, forbidden: set[str], skip: str | None = None) -> list[str]:
    root = REPO / folder
    return sorted(
        f"{p.relative_to(REPO)}: {', '.join(sorted(_imported(p) & forbidden))}"
        for p in root.rglob("*.py")
        if (skip is None or skip not in p.relative_to(REPO).parts) and _imported(p) & forbidden
    )


@pytest.mark.parametrize("folder", ["agentcausal", "flows", "tasks"])
def test_the_product_never_imports_the_test_doubles_tests_or_bench(folder):
    assert _offenders(folder, {"agentcausal_fakes", "tests", "bench"}) == []


def test_bench_imports_the_doubles_and_never_tests():
    assert _offenders("bench", {"tests"}) == []
    assert any("agentcausal_fakes" in _imported(p) for p in (REPO / "bench").rglob("*.py"))


def test_only_the_bench_tests_import_bench():
    assert _offenders("tests", {"bench"}, skip="bench") == []


def test_the_doubles_import_neither_tests_nor_bench():
    assert _offenders("agentcausal_fakes", {"tests", "bench"}) == []


def test_the_doubles_are_left_out_of_the_distribution():
    find = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    assert "agentcausal_fakes*" in find.get("exclude", [])
