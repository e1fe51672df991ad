"""The tests mirror the packages: a test of ``agentcausal/<sub>/x.py`` lives in ``tests/<sub>/`` (``test_x*.py``), of the
command line (``agentcausal_cli/``) in ``tests/cli/``, of ``flows/``, ``tasks/``, ``bench/`` in ``tests/flows/``,
``tests/tasks/``, ``tests/bench/``, of the test doubles (``agentcausal_fakes/``) in ``tests/fakes/``; a test of a
top-level module ``agentcausal/x.py`` and a repository-wide check (docs, markers, size rules, import contracts,
method conformance, this layout) is a ``tests/test_*.py`` file.

So every folder under ``tests/`` (``__pycache__`` aside) maps to an existing package folder by the table
:data:`TOP`, or is a helper folder named in :data:`HELPERS` (data and scripts the tests read, no tests of their
own); a folder such as ``tests/ops/`` that names no package fails :func:`test_every_test_folder_mirrors_a_package`.
Each mirrored folder is a package (it has ``__init__.py``), so that tests import each other as ``tests.<sub>.x``
and two files of one name in two folders do not clash. Read from the file system, nothing imported."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"

#: the first folder under tests/ -> the package folder it mirrors; any other first folder mirrors agentcausal/<name>
TOP = {"cli": "agentcausal_cli", "flows": "flows", "tasks": "tasks", "bench": "bench", "fakes": "agentcausal_fakes"}

#: folders of data or scripts the tests read (paths relative to tests/), with everything below them
HELPERS = {"golden", "tracers/sdk_runs"}


def mirrored_package(folder: Path, repo: Path = REPO) -> Path | None:
    """The package folder that ``folder`` (a folder under ``repo/tests``) mirrors, or None for a helper folder.

    ``tests/cli/x`` -> ``agentcausal_cli/x``, ``tests/<sub>/x`` -> ``agentcausal/<sub>/x``; whether that folder
    exists is for the caller to check."""
    rel = folder.relative_to(repo / "tests")
    if any(rel == Path(h) or Path(h) in rel.parents for h in HELPERS):
        return None
    first, *rest = rel.parts
    return repo.joinpath(TOP.get(first, f"agentcausal/{first}"), *rest)


def _kept(path: Path) -> bool:
    return not any(part == "__pycache__" or part.startswith(".") for part in path.parts)


def folders_under_tests(repo: Path = REPO) -> list[Path]:
    """Every folder under ``repo/tests`` that holds a file, ``__pycache__`` and hidden folders left out, sorted.

    A folder left with nothing but ``__pycache__`` (a checkout from before a move: git leaves it) is no folder."""
    files = [p for p in (repo / "tests").rglob("*") if p.is_file() and _kept(p.relative_to(repo))]
    return sorted({parent for f in files for parent in f.parents if (repo / "tests") in parent.parents})


def layout_offenders(repo: Path = REPO) -> list[str]:
    """Each test folder of ``repo`` that breaks the rule, as ``"tests/x: why"``; empty when the layout holds."""
    offenders = []
    for folder in folders_under_tests(repo):
        name = folder.relative_to(repo).as_posix()
        package = mirrored_package(folder, repo)
        if package is None:
            continue
        if not (package / "__init__.py").is_file():
            offenders.append(f"{name}: mirrors no package ({package.relative_to(repo).as_posix()} is not one)")
        elif not (folder / "__init__.py").is_file():
            offenders.append(f"{name}: has no __init__.py")
    return offenders


def test_every_test_folder_mirrors_a_package() -> None:
    assert layout_offenders() == []


def test_a_folder_that_mirrors_nothing_is_named(tmp_path: Path) -> None:
    for package in ("agentcausal/runs", "flows"):
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
    for folder in ("tests/runs", "tests/flows", "tests/ops", "tests/golden/x", "tests/bench"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "tests/runs/__init__.py").unlink()
    (tmp_path / "tests/runs/test_x.py").write_text("")
    (tmp_path / "tests/scale/__pycache__").mkdir(parents=True)  # left behind by a move: not a folder of tests
    (tmp_path / "tests/scale/__pycache__/test_x.cpython-311.pyc").write_text("")
    assert layout_offenders(tmp_path) == [
        "tests/bench: mirrors no package (bench is not one)",
        "tests/ops: mirrors no package (agentcausal/ops is not one)",
        "tests/runs: has no __init__.py",
    ]
