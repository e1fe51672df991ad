"""The fidelity tables of docs/fidelity/ name only settings (and functions) that exist."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

from agentcausal.exceptions import AgentCausalError
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.settings import resolve

DOCS = Path(__file__).resolve().parents[2] / "docs" / "fidelity"
TABLES = ("dcfa", "all_at_once", "step_by_step", "binary_search", "a2p", "echo")
_ITEM = re.compile(r"([a-z][a-z_0-9]*)\.([a-z][a-z_0-9]*)=")
_FUNC = re.compile(r"`(agentcausal\.[\w.]+)`")


def rows(path: Path) -> list[list[str]]:
    """The body rows of the markdown table in ``path``, as stripped cells (header and rule left out)."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines[2:]]


def settings_of(cell: str) -> list[tuple[str, str, object]]:
    """``method.field=value`` items of a setting cell (``-`` = none); values JSON, else text."""
    if cell == "-":
        return []
    found = list(_ITEM.finditer(cell))
    if not found or found[0].start() != 0:
        raise ValueError(f"setting cell is neither '-' nor method.field=value items: {cell!r}")
    out = []
    for m, nxt in zip(found, found[1:] + [None]):
        raw = cell[m.end() : nxt.start() if nxt else len(cell)].strip().rstrip(",").strip()
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.append((m.group(1), m.group(2), value))
    return out


def check_setting(method: str, field: str, value: object) -> None:
    """Raise when ``method.field=value`` is not a setting ``--set`` takes."""
    spec = ATTRIBUTION_METHODS[method]
    if field not in spec.settings_model.model_fields:
        raise AssertionError(f"{method} has no setting {field!r}")
    resolve(spec.settings_model, spec.presets, None, {field: value}, name=method)


def check_function(dotted: str) -> None:
    """Raise when ``agentcausal.mod.attr[.attr]`` cannot be imported."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return
    raise ImportError(dotted)


@pytest.mark.parametrize("name", TABLES)
def test_every_row_names_existing_settings_and_functions(name):
    table = rows(DOCS / f"{name}.md")
    assert len(table) >= 4, name
    for r in table:
        assert len(r) == 6, (name, r)
        for method, field, value in settings_of(r[5]):
            check_setting(method, field, value)
        for dotted in _FUNC.findall(r[3]):
            check_function(dotted)


def test_the_checks_fail_on_a_setting_or_function_that_does_not_exist():
    with pytest.raises(AssertionError, match="no setting 'max_hops'"):
        check_setting(*settings_of("dcfa.max_hops=3")[0])
    with pytest.raises(AgentCausalError):
        check_setting(*settings_of("dcfa.search_order=sideways")[0])  # not one of its values
    with pytest.raises(AgentCausalError):
        check_setting(*settings_of("no_such_method.x=1")[0])
    with pytest.raises(ValueError, match="neither"):
        settings_of("mdi_cgc joint")
    with pytest.raises((ImportError, AttributeError)):
        check_function("agentcausal.attribution.dcfa.gca.no_such_function")
    assert settings_of('echo.analysts=["conservative", "balanced"], echo.tie_break=scan_rank') == [
        ("echo", "analysts", ["conservative", "balanced"]),
        ("echo", "tie_break", "scan_rank"),
    ]


def test_the_dcfa_table_has_a_row_for_every_paper_text_setting():
    named = {f for r in rows(DOCS / "dcfa.md") for m, f, _ in settings_of(r[5]) if m == "dcfa"}
    assert {
        "mdi_cgc",
        "cgc",
        "simulation",
        "search_order",
        "delta_s_decimals",
        "search_ties",
        "revisit",
        "max_iterations",
        "ded",
        "correct_variant",
    } <= named
