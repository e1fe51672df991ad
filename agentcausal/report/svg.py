"""Inline SVG drawings of small graphs for ``report.html``: a layout, then nodes and styled edges.

The layout comes from graphviz ``dot`` (``dot -Tplain``) when the program is
on ``PATH``, else from :func:`layered_layout`, a small deterministic layered
(Sugiyama-style) layout: layers by longest path from the sources (cycles
broken by node order), nodes in a layer ordered by the mean position of their
parents (one downward sweep), layers stacked top to bottom. Either way the
same nodes and edges give the same picture, so a layout computed once (the
true graph's) can be shared by every method's graph of a dataset.

Edges carry a CSS class (``correct``, ``missing``, ``extra``, ``reversed``,
``undirected``, ``dependency``, ``search`` ...) styled by :data:`SVG_CSS`;
text is XML-escaped.

Graphs over an ordered sequence (a trace's steps) are drawn by
:func:`column_svg` instead: one column in sequence order, an edge between
neighbours as a short straight arrow in the gap between their boxes, every
other edge as an arc beside the column whose width grows with the number of
rows it spans (an arc diagram), so no edge runs behind a box and no two edges
share a path. Each edge is one ``<path>`` naming its ends (``data-from``,
``data-to``) and class.

References
----------
Sugiyama, K., Tagawa, S., Toda, M. "Methods for Visual Understanding of Hierarchical System Structures."
IEEE Trans. SMC 11(2), 1981. doi:10.1109/TSMC.1981.4308636.
"""

from __future__ import annotations

import html
import math
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import NamedTuple

__all__ = [
    "Layout",
    "SvgEdge",
    "layered_layout",
    "dot_layout",
    "graph_layout",
    "render_svg",
    "column_svg",
    "arc_bulge",
    "SVG_CSS",
    "legend_html",
]

#: styles of the edge and node classes used by :func:`render_svg` (put once in the page's ``<style>``)
SVG_CSS = """svg.g text{font:11px system-ui,sans-serif}svg.g rect{fill:#fff;stroke:#333}
svg.g line,svg.g path{stroke:#333;fill:none;stroke-width:1.4}
svg.g .correct{stroke:#2a8f2a}svg.g .reversed{stroke:#e08a00}svg.g .extra{stroke:#d62728}
svg.g .missing{stroke:#999;stroke-dasharray:5 4}svg.g .undirected{stroke:#1f77b4}
svg.g .other{stroke:#7b3fa0}svg.g .search{stroke:#ff8c00;stroke-dasharray:6 4;stroke-width:2}
svg.g .dependency{stroke:#555}svg.g rect.deviation{fill:#fff3b0;stroke:#c9a800}
svg.g rect.hypothesis{fill:#ffb347;stroke:#d2691e}svg.g rect.decisive{fill:#e34040;stroke:#8b0000}
svg.g rect.truth{stroke:#2a8f2a;stroke-width:3}svg.g text.elabel{font-size:9px;fill:#b35900}
svg.g rect.absent{stroke-dasharray:3 3;fill:#f7f7f7}"""

_LEGEND = {
    "correct": "correct (in the true graph, same direction)",
    "reversed": "reversed",
    "extra": "extra (not in the true graph)",
    "missing": "missing (true edge not found)",
    "undirected": "undirected",
    "other": "bidirected / partially directed",
}


class Layout(NamedTuple):
    """Node centres in SVG user units.

    Attributes
    ----------
    pos : mapping node -> (x, y) centre
    width, height : float, the drawing size
    """

    pos: dict[str, tuple[float, float]]
    width: float
    height: float


class SvgEdge(NamedTuple):
    """One edge to draw: ``u`` to ``v``, with an arrow head at ``v`` when ``arrow``; ``cls`` its CSS class."""

    u: str
    v: str
    cls: str = ""
    arrow: bool = True
    label: str = ""
    arrow_back: bool = False


_NODE_H = 24.0
_LAYER_GAP = 64.0
_NODE_GAP = 18.0


def _node_w(label: str) -> float:
    return 16.0 + 6.6 * len(label)


def layered_layout(
    nodes: Sequence[str],
    edges: Sequence[tuple[str, str]],
    labels: Mapping[str, str] | None = None,
    *,
    max_per_row: int = 8,
) -> Layout:
    """A deterministic layered layout (no external program).

    Parameters
    ----------
    nodes : node names, in a stable order (ties keep this order)
    edges : (parent, child) pairs; undirected edges may be given in either order;
        edges that close a cycle (against node order) are ignored for layering
    labels : node -> drawn text (default the name); sets the node widths
    max_per_row : int, a layer with more nodes is wrapped onto several rows

    Returns
    -------
    Layout, layers top to bottom, each layer centred.

    Examples
    --------
    >>> lay = layered_layout(["A", "B", "C"], [("A", "B"), ("A", "C")])
    >>> lay.pos["A"][1] < lay.pos["B"][1] == lay.pos["C"][1]
    True
    """
    labels = labels or {}
    order = {v: i for i, v in enumerate(nodes)}
    parents: dict[str, list[str]] = {v: [] for v in nodes}
    for a, b in edges:
        if a in order and b in order and a != b and a not in parents[b] and b not in parents[a]:
            parents[b].append(a)
    # break cycles: keep only edges that go forward in a DFS finishing order seeded by node order
    layer: dict[str, int] = {}
    visiting: set[str] = set()

    def depth(v: str) -> int:
        if v in layer:
            return layer[v]
        visiting.add(v)
        d = 0
        for p in parents[v]:
            if p not in visiting:
                d = max(d, depth(p) + 1)
        visiting.discard(v)
        layer[v] = d
        return d

    for v in nodes:
        depth(v)
    layers: dict[int, list[str]] = {}
    for v in nodes:
        layers.setdefault(layer[v], []).append(v)
    x_of: dict[str, float] = {}
    rows: list[list[str]] = []
    for k in sorted(layers):
        row = layers[k]
        if k > 0:

            def key(v: str) -> tuple[float, int]:
                ps = [x_of[p] for p in parents[v] if p in x_of]
                return (sum(ps) / len(ps) if ps else float("inf"), order[v])

            row = sorted(row, key=key)
        for i, v in enumerate(row):
            x_of[v] = float(i % max_per_row)
        rows += [row[i : i + max_per_row] for i in range(0, len(row), max_per_row)]
    widths = [sum(_node_w(labels.get(v, v)) for v in r) + _NODE_GAP * (len(r) - 1) for r in rows]
    width = max(widths, default=0.0) + 20.0
    pos: dict[str, tuple[float, float]] = {}
    for k, (row, w) in enumerate(zip(rows, widths)):
        x = (width - w) / 2
        y = 20.0 + _NODE_H / 2 + k * _LAYER_GAP
        for v in row:
            nw = _node_w(labels.get(v, v))
            pos[v] = (x + nw / 2, y)
            x += nw + _NODE_GAP
    height = 40.0 + _NODE_H + (len(rows) - 1) * _LAYER_GAP if rows else 40.0
    return Layout(pos, width, height)


def dot_layout(
    nodes: Sequence[str],
    edges: Sequence[tuple[str, str]],
    labels: Mapping[str, str] | None = None,
    *,
    timeout_s: float = 20.0,
) -> Layout | None:
    """The layout graphviz ``dot`` computes, or None when ``dot`` is not installed or fails.

    Parameters
    ----------
    nodes, edges, labels : as in :func:`layered_layout`
    timeout_s : float, seconds ``dot`` may take

    Returns
    -------
    Layout or None.
    """
    exe = shutil.which("dot")
    if exe is None or not nodes:
        return None
    labels = labels or {}
    ids = {v: f"n{i}" for i, v in enumerate(nodes)}
    src = ["digraph G {", "  node [shape=box, fixedsize=true, height=0.333];"]
    src += [f"  {ids[v]} [width={_node_w(labels.get(v, v)) / 72:.3f}];" for v in nodes]
    src += [f"  {ids[a]} -> {ids[b]};" for a, b in edges if a in ids and b in ids]
    src.append("}")
    try:
        out = subprocess.run(
            [exe, "-Tplain"], input="\n".join(src), capture_output=True, text=True, timeout=timeout_s, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    back = {i: v for v, i in ids.items()}
    pos: dict[str, tuple[float, float]] = {}
    height = 0.0
    width = 0.0
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "graph":
            width, height = float(f[2]) * 72 + 20, float(f[3]) * 72 + 20
        elif f and f[0] == "node" and f[1] in back:
            pos[back[f[1]]] = (float(f[2]) * 72 + 10, height - (float(f[3]) * 72 + 10))
    if len(pos) != len(nodes):
        return None
    return Layout(pos, width, height)


def graph_layout(
    nodes: Sequence[str], edges: Sequence[tuple[str, str]], labels: Mapping[str, str] | None = None
) -> Layout:
    """:func:`dot_layout` when graphviz is installed, else :func:`layered_layout`."""
    return dot_layout(nodes, edges, labels) or layered_layout(nodes, edges, labels)


def _clip(x0: float, y0: float, x1: float, y1: float, w: float) -> tuple[float, float]:
    """Where the segment from the centre (x0, y0) towards (x1, y1) leaves a w x _NODE_H box."""
    dx, dy = x1 - x0, y1 - y0
    if dx == 0 and dy == 0:
        return x0, y0
    tx = (w / 2) / abs(dx) if dx else math.inf
    ty = (_NODE_H / 2) / abs(dy) if dy else math.inf
    t = min(tx, ty)
    return x0 + dx * t, y0 + dy * t


def render_svg(
    layout: Layout,
    edges: Sequence[SvgEdge],
    *,
    labels: Mapping[str, str] | None = None,
    node_classes: Mapping[str, str] | None = None,
    title: str = "",
    nodes: Sequence[str] | None = None,
) -> str:
    """An ``<svg class="g">`` element drawing ``edges`` over the nodes placed by ``layout``.

    Parameters
    ----------
    layout : Layout (from :func:`graph_layout`, possibly another graph's)
    edges : SvgEdge records; an edge whose ends are not in the layout is skipped
    labels : node -> drawn text (default the name)
    node_classes : node -> CSS class of its box (``deviation``, ``decisive``, ``truth`` ...)
    title : str, the SVG's ``<title>`` (tooltip and accessible name)
    nodes : nodes to draw (default every node of the layout)

    Returns
    -------
    str, SVG markup to inline in HTML.
    """
    e = html.escape
    labels = labels or {}
    node_classes = node_classes or {}
    show = list(nodes) if nodes is not None else list(layout.pos)
    out = [
        f'<svg class="g" xmlns="http://www.w3.org/2000/svg" width="{layout.width:.0f}" '
        f'height="{layout.height:.0f}" viewBox="0 0 {layout.width:.0f} {layout.height:.0f}" role="img">',
        f"<title>{e(title)}</title>",
        '<defs><marker id="ah" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" style="fill:context-stroke;stroke:none"/>'
        "</marker></defs>",
    ]
    for ed in edges:
        if ed.u not in layout.pos or ed.v not in layout.pos:
            continue
        (x0, y0), (x1, y1) = layout.pos[ed.u], layout.pos[ed.v]
        a = _clip(x0, y0, x1, y1, _node_w(labels.get(ed.u, ed.u)))
        b = _clip(x1, y1, x0, y0, _node_w(labels.get(ed.v, ed.v)))
        marks = (' marker-end="url(#ah)"' if ed.arrow else "") + (' marker-start="url(#ah)"' if ed.arrow_back else "")
        if ed.cls == "search":  # bend the LCE moves so they do not hide dependency edges
            mx, my = (a[0] + b[0]) / 2 + (b[1] - a[1]) * 0.25, (a[1] + b[1]) / 2 - (b[0] - a[0]) * 0.25
            out.append(
                f'<path class="{e(ed.cls)}" d="M{a[0]:.1f},{a[1]:.1f} Q{mx:.1f},{my:.1f} '
                f'{b[0]:.1f},{b[1]:.1f}"{marks}><title>{e(ed.u)} → {e(ed.v)} {e(ed.label)}</title></path>'
            )
            if ed.label:
                out.append(f'<text class="elabel" x="{mx:.1f}" y="{my:.1f}">{e(ed.label)}</text>')
        else:
            out.append(
                f'<line class="{e(ed.cls)}" x1="{a[0]:.1f}" y1="{a[1]:.1f}" x2="{b[0]:.1f}" '
                f'y2="{b[1]:.1f}"{marks}><title>{e(ed.u)} – {e(ed.v)} ({e(ed.cls)})</title></line>'
            )
    for v in show:
        if v not in layout.pos:
            continue
        x, y = layout.pos[v]
        lab = labels.get(v, v)
        w = _node_w(lab)
        cls = node_classes.get(v, "")
        fill = ' fill="#fff"' if cls == "decisive" else ""
        out.append(
            f'<g><rect class="{e(cls)}" x="{x - w / 2:.1f}" y="{y - _NODE_H / 2:.1f}" width="{w:.1f}" '
            f'height="{_NODE_H:.0f}" rx="5"/><text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle"'
            f"{fill}>{e(lab)}</text></g>"
        )
    out.append("</svg>")
    return "".join(out)


_ROW_PITCH = 40.0


def arc_bulge(span: int, *, extra: int = 0) -> float:
    """How far (SVG units) the control points of an arc spanning ``span`` rows stand beside the column.

    Strictly increasing in ``span`` (nested arcs never coincide) and in ``extra`` (the k-th arc between
    the same two rows, e.g. both directions); the arc's farthest point is 3/4 of it.

    >>> arc_bulge(1) < arc_bulge(2) < arc_bulge(2, extra=1) < arc_bulge(3)
    True
    """
    return 20.0 + 34.0 * math.log2(max(1, span)) + 9.0 * extra


def column_svg(
    nodes: Sequence[str],
    edges: Sequence[SvgEdge],
    *,
    labels: Mapping[str, str] | None = None,
    node_classes: Mapping[str, str] | None = None,
    title: str = "",
    left: Sequence[str] = ("search",),
) -> str:
    """An ``<svg class="g">`` arc diagram: ``nodes`` in one column in the given order, every edge visible.

    Parameters
    ----------
    nodes : node names, top to bottom (a trace's steps in order)
    edges : SvgEdge records; an edge whose ends are not in ``nodes``, or a self-loop, is skipped; the same
        (u, v, class, label) twice is drawn once
    labels : node -> drawn text (default the name); every box takes the widest label's width
    node_classes : node -> CSS class of its box (``deviation``, ``hypothesis``, ``decisive`` ...)
    title : str, the SVG's ``<title>``
    left : edge classes drawn on the left of the column (default the LCE ``search`` moves); all others on
        the right

    Returns
    -------
    str, SVG markup. An edge between neighbouring rows on the right is a straight arrow in the gap between
    their boxes (offset sideways when both directions are there); every other edge is a cubic arc from
    the side of one box to the side of the other, bulging by :func:`arc_bulge` of the rows it spans, so
    all of it but its ends lies outside every box. Each edge is one ``<path>`` with ``data-from``,
    ``data-to`` and ``class``; a labelled edge's label sits beside its arc (left arcs: in a column left of
    them all).
    """
    e = html.escape
    labels = labels or {}
    node_classes = node_classes or {}
    row = {v: i for i, v in enumerate(dict.fromkeys(nodes))}
    w = max((_node_w(labels.get(v, v)) for v in row), default=40.0)
    seen: set[tuple[str, str, str, str]] = set()
    plan: list[tuple[SvgEdge, str, int]] = []  # edge, side, k: the k-th edge between its two rows on that side
    per_pair: dict[tuple[str, int, int], int] = {}
    for ed in edges:
        if ed.u not in row or ed.v not in row or ed.u == ed.v or (ed.u, ed.v, ed.cls, ed.label) in seen:
            continue
        seen.add((ed.u, ed.v, ed.cls, ed.label))
        side = "left" if ed.cls in left else "right"
        lo, hi = sorted((row[ed.u], row[ed.v]))
        k = per_pair.get((side, lo, hi), 0)
        per_pair[(side, lo, hi)] = k + 1
        plan.append((ed, side, k))
    reach = {"left": 0.0, "right": 0.0}
    label_w = 0.0
    for ed, side, k in plan:
        span = abs(row[ed.u] - row[ed.v])
        if side == "right" and span == 1:
            continue
        reach[side] = max(reach[side], 0.75 * arc_bulge(span, extra=k))
        if ed.label and side == "left":
            label_w = max(label_w, 5.6 * len(ed.label) + 6)
        elif ed.label:
            reach["right"] = max(reach["right"], 0.75 * arc_bulge(span, extra=k) + 5.6 * len(ed.label) + 6)
    x_left = 10.0 + reach["left"] + label_w
    xc = x_left + w / 2
    width = x_left + w + reach["right"] + 10.0
    height = 20.0 + _NODE_H + max(0, len(row) - 1) * _ROW_PITCH + 20.0
    y = {v: 20.0 + _NODE_H / 2 + i * _ROW_PITCH for v, i in row.items()}
    out = [
        f'<svg class="g" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img">',
        f"<title>{e(title)}</title>",
        '<defs><marker id="ah" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" style="fill:context-stroke;stroke:none"/>'
        "</marker></defs>",
    ]
    for ed, side, k in plan:
        y0, y1 = y[ed.u], y[ed.v]
        span = abs(row[ed.u] - row[ed.v])
        marks = (' marker-end="url(#ah)"' if ed.arrow else "") + (' marker-start="url(#ah)"' if ed.arrow_back else "")
        if side == "right" and span == 1:  # neighbours: a straight arrow in the gap between the two boxes
            n_pair = per_pair[(side, min(row[ed.u], row[ed.v]), max(row[ed.u], row[ed.v]))]
            dx = (k - (n_pair - 1) / 2) * 12.0  # several edges between the same neighbours sit side by side
            down = y1 > y0
            a = (xc + dx, y0 + (_NODE_H / 2 if down else -_NODE_H / 2))
            b = (xc + dx, y1 - (_NODE_H / 2 if down else -_NODE_H / 2))
            d = f"M{a[0]:.1f},{a[1]:.1f} L{b[0]:.1f},{b[1]:.1f}"
            lx, ly = xc + dx + 4, (y0 + y1) / 2 + 3
        else:  # an arc beside the column: out of one box's side, into the other's
            bulge = arc_bulge(span, extra=k)
            x = xc + w / 2 if side == "right" else xc - w / 2
            cx = x + bulge if side == "right" else x - bulge
            port = 5.0 if y1 > y0 else -5.0  # leave towards the other end, arrive from it: in and out arcs part
            y0, y1 = y0 + port, y1 - port
            d = f"M{x:.1f},{y0:.1f} C{cx:.1f},{y0:.1f} {cx:.1f},{y1:.1f} {x:.1f},{y1:.1f}"
            lx = (x + 0.75 * bulge + 3) if side == "right" else (xc - w / 2 - reach["left"] - 3)
            ly = (y0 + y1) / 2 + 3
        tip = f"{ed.u} → {ed.v} ({ed.cls})" + (f" {ed.label}" if ed.label else "")
        out.append(
            f'<path class="{e(ed.cls)}" data-from="{e(ed.u)}" data-to="{e(ed.v)}" d="{d}"{marks}>'
            f"<title>{e(tip)}</title></path>"
        )
        if ed.label:
            anchor = ' text-anchor="end"' if side == "left" else ""
            out.append(f'<text class="elabel" x="{lx:.1f}" y="{ly:.1f}"{anchor}>{e(ed.label)}</text>')
    for v in row:
        lab = labels.get(v, v)
        cls = node_classes.get(v, "")
        fill = ' fill="#fff"' if cls == "decisive" else ""
        out.append(
            f'<g><rect class="{e(cls)}" data-node="{e(v)}" x="{xc - w / 2:.1f}" y="{y[v] - _NODE_H / 2:.1f}" '
            f'width="{w:.1f}" height="{_NODE_H:.0f}" rx="5"/><text x="{xc:.1f}" y="{y[v] + 4:.1f}" '
            f'text-anchor="middle"{fill}>{e(lab)}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)


def legend_html(classes: Sequence[str] = tuple(_LEGEND)) -> str:
    """A one-line legend of edge classes, each with a short SVG sample of its line style.

    Parameters
    ----------
    classes : edge classes to list (keys of the built-in descriptions)

    Returns
    -------
    str, an HTML ``<p class="legend">``.
    """
    items = []
    for c in classes:
        items.append(
            f'<span><svg class="g" width="34" height="10"><line class="{c}" x1="2" y1="5" x2="32" y2="5"/>'
            f"</svg> {html.escape(_LEGEND.get(c, c))}</span>"
        )
    return '<p class="legend">' + " &nbsp; ".join(items) + "</p>"
