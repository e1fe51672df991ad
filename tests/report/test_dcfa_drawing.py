"""The DCFA dependency graph drawing shows every edge of its edge table as a distinct, visible path: a graph of
8 edges whose skip edges used to run behind the boxes of a one-column layout (read as a 4-edge chain)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from agentcausal.report.dcfa import dependency_graph_edge_table, dependency_graph_svg
from agentcausal.traces.model import Attribution

NS = "{http://www.w3.org/2000/svg}"

#: a chain 0-1-2-3-4 plus four edges that skip steps, two LCE moves (one between neighbours, one skipping),
#: a repeated edge and two that cannot be drawn
DETAILS = {
    "n_steps": 5,
    "edges": [[0, 1], [1, 2], [2, 3], [3, 4], [0, 2], [0, 3], [1, 3], [2, 4], [0, 2], [3, 3], [1, 9]],
    "deviations": [{"step": 1, "reason": "r"}],
    "hypothesis": {"step": 1, "agent": "Planner"},
    "lce": {
        "path": [
            {"pivot": 1, "step": 2, "direction": "forward", "delta_s": 0.31},
            {"pivot": 2, "step": 0, "direction": "backward", "delta_s": -0.12},
        ],
        "scores": [{"step": 1, "s": 0.4}, {"step": 2, "s": 0.7}],
    },
    "final": {"step": 2, "agent": "Coder"},
    "step_agents": ["User", "Planner", "Coder", "Coder", "Verifier"],
}


def _table_rows(md: str) -> list[tuple[int, int, str]]:
    rows = []
    for line in md.splitlines():
        m = re.fullmatch(r"\| τ(\d+) \| τ(\d+) \| (.+?) \|", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), "search" if m.group(3).startswith("LCE") else m.group(3)))
    return rows


def _points(d: str, n: int = 60) -> np.ndarray:
    """Points along an SVG path of the forms the drawing writes: ``M a L b`` and ``M a C c1 c2 b``."""
    nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", d)]
    t = np.linspace(0.0, 1.0, n)[:, None]
    if "C" in d:
        p0, c1, c2, p1 = (np.array(nums[i : i + 2]) for i in range(0, 8, 2))
        return (1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * c1 + 3 * (1 - t) * t**2 * c2 + t**3 * p1
    p0, p1 = np.array(nums[0:2]), np.array(nums[2:4])
    return (1 - t) * p0 + t * p1


@pytest.fixture()
def drawing():
    a = Attribution(trace_id="t/1", method="dcfa", step=2, details=DETAILS)
    root = ET.fromstring(dependency_graph_svg(a))
    boxes = [tuple(float(r.get(k)) for k in ("x", "y", "width", "height")) for r in root.iter(f"{NS}rect")]
    paths = [p for p in root.iter(f"{NS}path") if p.get("data-from")]
    return dependency_graph_edge_table(a), boxes, paths


def test_every_table_edge_is_one_path(drawing):
    table, _, paths = drawing
    rows = _table_rows(table)
    assert len([r for r in rows if r[2] == "dependency"]) == 8 and len(rows) == 10  # the repeat once, 2 moves
    drawn = [(int(p.get("data-from")[1:]), int(p.get("data-to")[1:]), p.get("class")) for p in paths]
    assert sorted(drawn) == sorted(rows)
    assert "τ3 → τ3" in table and "τ1 → τ9" in table  # not drawn, and the table says so


def test_every_path_is_visible_and_distinct(drawing):
    _, boxes, paths = drawing
    assert len(boxes) == 5
    curves = [_points(p.get("d")) for p in paths]
    for p, pts in zip(paths, curves):
        inner = pts[2:-2]  # the ends touch their boxes
        hidden = [(x, y) for x, y in inner for bx, by, bw, bh in boxes if bx < x < bx + bw and by < y < by + bh]
        assert not hidden, f"{p.get('data-from')} -> {p.get('data-to')} runs behind a box"
    for i in range(len(curves)):
        for j in range(i + 1, len(curves)):
            gap = np.max(np.min(np.linalg.norm(curves[i][:, None] - curves[j][None], axis=2), axis=1))
            assert gap > 3.0, f"paths {i} and {j} coincide"


def test_skip_edges_bulge_by_span(drawing):
    _, _, paths = drawing
    right = {
        (p.get("data-from"), p.get("data-to")): _points(p.get("d"))[:, 0].max()
        for p in paths
        if p.get("class") == "dependency"
    }
    assert right[("s0", "s3")] > right[("s0", "s2")] > right[("s0", "s1")]  # wider arcs for longer skips
