"""The README and docs/ pages: every relative link and anchor resolves, every repository path they name
exists, the README stays a front door, docs/cli.md is what the parsers say, and every ``agentcausal``
command shown in a shell block parses."""

from __future__ import annotations

import importlib.util
import re
import shlex
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
MAX_README_LINES = 220
#: the front door reads in about five minutes; reference text goes to docs/ (words as `wc -w` counts them)
MAX_README_WORDS = 1200

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def _prose(text: str) -> str:
    """The text without fenced blocks and code spans (links inside code are not links)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation dropped, spaces to hyphens.

    >>> slug("`agentcausal serve-local`"), slug("What the `paper` preset reproduces"), slug("ΔS and DED")
    ('agentcausal-serve-local', 'what-the-paper-preset-reproduces', 'δs-and-ded')
    """
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.replace("`", "").lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page defines: its headings' slugs (GitHub's -1, -2 … for repeats) and HTML anchors."""
    text = page.read_text(encoding="utf-8")
    out: set[str] = set(HTML_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for _, title in HEADING.findall(FENCE.sub("", text)):
        base = slug(title)
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def links(page: Path) -> list[str]:
    return LINK.findall(_prose(page.read_text(encoding="utf-8")))


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """The page's relative links whose file, or anchor in a markdown file, does not exist (or lies outside
    ``root``)."""
    bad = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto: …: not checked offline
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            bad.append(f"{target} (no such file)")
        elif root not in dest.parents and dest != root:
            bad.append(f"{target} (outside the repository)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target} (no heading #{anchor} in {dest.relative_to(root)})")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_link_check_catches_a_missing_file_an_outside_file_and_a_missing_anchor(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "outside.md").write_text("# Out\n", encoding="utf-8")
    page = root / "page.md"
    (root / "other.md").write_text("# Real heading\n## Real heading\n", encoding="utf-8")
    page.write_text(
        "# Top\n[a](other.md#real-heading-1) [b](other.md#gone) [c](missing.md) [d](#top) "
        "`[e](in-code.md)` [f](https://example.org/x) [g](../outside.md) [h](#nowhere)\n"
        "```\n[i](in-fence.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page, root) == [
        "other.md#gone (no heading #gone in other.md)",
        "missing.md (no such file)",
        "../outside.md (outside the repository)",
        "#nowhere (no heading #nowhere in page.md)",
    ]


def test_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move reference text to docs/"
    assert max(len(line) for line in lines) <= 400, "a README line over 400 characters"
    words = len(README.read_text(encoding="utf-8").split())
    assert words <= MAX_README_WORDS, f"README.md has {words} words; move reference text to docs/"


def test_readme_names_the_test_command_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test.sh" in ci
    assert "bash scripts/test.sh" in README.read_text(encoding="utf-8")


def _cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cli_page_is_what_the_parsers_say() -> None:
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == _cli_reference().render(), (
        "docs/cli.md is out of date: run .venv/bin/python scripts/cli_reference.py"
    )


def shell_commands(page: Path) -> list[str]:
    """Every ``agentcausal …`` command line in the page's bash/sh/shell blocks (continuations joined,
    leading VAR=value assignments and trailing comments dropped)."""
    out = []
    for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                words.pop(0)
            if words and words[0] in ("agentcausal", ".venv/bin/agentcausal"):
                out.append(shlex.join(words[1:]))
    return out


COMMANDS = [(p, c) for p in PAGES for c in shell_commands(p)]


@pytest.mark.parametrize("page,command", COMMANDS, ids=[f"{p.name}: {c[:60]}" for p, c in COMMANDS])
def test_every_shown_command_parses(page: Path, command: str) -> None:
    from agentcausal_cli import build_parser

    try:
        build_parser().parse_args(shlex.split(command))
    except SystemExit as exc:
        pytest.fail(f"{page.relative_to(ROOT)}: `agentcausal {command}` does not parse (exit {exc.code})")


def test_the_readme_shows_commands_to_check() -> None:
    assert len(shell_commands(README)) >= 5


REPO_PATH = re.compile(
    r"`((?:agentcausal|agentcausal_cli|agentcausal_fakes|flows|tasks|scripts|deploy|tests|bench|data|docs|requirements)"
    r"/[\w./-]*)`"
)


def missing_repo_paths(page: Path) -> list[str]:
    """Repository paths the page's prose names in code spans (`agentcausal/...`, `deploy/...` ...) that do not
    exist; the download folders of the settings (Who&When, MAST, AgentRx: git-ignored) excepted."""
    from agentcausal.settings import RunSettings

    s = RunSettings()
    downloads = {d.rstrip("/") for d in (s.who_and_when_dir, s.mast_dir, s.agentrx_dir)}
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [p for p in REPO_PATH.findall(text) if p.rstrip("/") not in downloads and not (ROOT / p).exists()]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_named_repository_path_exists(page: Path) -> None:
    assert missing_repo_paths(page) == []


def test_path_check_catches_a_moved_module(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "See `agentcausal/discovery/mac/sandbox.py` and `agentcausal/no_such_module.py`; "
        "the benchmark goes to `data/who_and_when`.\n",
        encoding="utf-8",
    )
    assert missing_repo_paths(page) == ["agentcausal/no_such_module.py"]


#: ARCHITECTURE.md is a map: one line per module (small siblings share one), this many lines at most
MAX_ARCHITECTURE_LINES = 150
SECTION = re.compile(r"^## .*?((?:`[\w/]+/`(?:, )?)+)\s*$")


def unmapped_modules(page: Path, root: Path) -> list[str]:
    """Modules of ``agentcausal/``, ``agentcausal_cli/``, ``flows/`` and ``tasks/`` (``__init__``/``__main__`` aside) that ``page`` does not
    name under the section of their package: a ``## ... — `pkg/``` heading, the module written in a code span
    as its path below that package (``dcfa/gca.py`` also matches a line under it that opens with ``- `dcfa/```)."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in page.read_text(encoding="utf-8").splitlines():
        if m := SECTION.match(line):
            current = []
            for pkg in re.findall(r"`([\w/]+/)`", m.group(1)):
                sections.setdefault(pkg, current)
        elif line.startswith("## "):
            current = []
        else:
            current.append(line)
    missing = []
    for path in sorted(
        p.relative_to(root).as_posix()
        for top in ("agentcausal", "agentcausal_cli", "flows", "tasks")
        for p in (root / top).rglob("*.py")
    ):
        if path.endswith(("__init__.py", "__main__.py")):
            continue
        pkg = max((s for s in sections if path.startswith(s)), key=len, default=None)
        if pkg is None:
            missing.append(path)
            continue
        rel = path[len(pkg) :]
        head, _, name = rel.rpartition("/")
        lines = sections[pkg]
        if head:  # a module of a sub-package: on a line that opens with that sub-package
            lines = [ln for ln in lines if ln.startswith(f"- `{head}/`") or f"`{head}/{name}`" in ln]
        if not any(re.search(rf"(?<![\w/]){re.escape(name)}`|`{re.escape(pkg + rel)}`", ln) for ln in lines):
            missing.append(path)
    return missing


def test_architecture_is_a_map_of_every_module() -> None:
    page = ROOT / "ARCHITECTURE.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_ARCHITECTURE_LINES, f"ARCHITECTURE.md has {len(lines)} lines; it is a map"
    assert unmapped_modules(page, ROOT) == []


def test_map_check_catches_a_module_left_out(tmp_path: Path) -> None:
    (tmp_path / "agentcausal" / "runs").mkdir(parents=True)
    (tmp_path / "flows").mkdir()
    (tmp_path / "tasks").mkdir()
    for f in ("engine.py", "store.py", "new_part.py"):
        (tmp_path / "agentcausal" / "runs" / f).write_text("")
    (tmp_path / "flows" / "attribute.py").write_text("")
    page = tmp_path / "ARCHITECTURE.md"
    page.write_text(
        "## The engine — `agentcausal/runs/`\n- `engine.py` — the loop; `store.py` — the store.\n"
        "## Prefect — `tasks/`, `flows/`\n- `flows/attribute.py` — wiring.\n",
        encoding="utf-8",
    )
    assert unmapped_modules(page, tmp_path) == ["agentcausal/runs/new_part.py"]
