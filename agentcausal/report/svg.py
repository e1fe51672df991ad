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

__all__ = ["Layout", "SvgEdge", "layered_layout", "dot_layout", "graph_layout", "render_svg", "SVG_CSS",
           "legend_html"]

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

_LEGEND = {"correct": "correct (in the true graph, same direction)", "reversed": "reversed",
           "extra": "extra (not in the true graph)", "missing": "missing (true edge not found)",
           "undirected": "undirected", "other": "bidirected / partially directed"}


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


def layered_layout(nodes: Sequence[str], edges: Sequence[tuple[str, str]],
                   labels: Mapping[str, str] | None = None, *, max_per_row: int = 8) -> Layout:
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
        rows += [row[i:i + max_per_row] for i in range(0, len(row), max_per_row)]
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


def dot_layout(nodes: Sequence[str], edges: Sequence[tuple[str, str]],
               labels: Mapping[str, str] | None = None, *, timeout_s: float = 20.0) -> Layout | None:
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
        out = subprocess.run([exe, "-Tplain"], input="\n".join(src), capture_output=True, text=True,
                             timeout=timeout_s, check=True).stdout
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


def graph_layout(nodes: Sequence[str], edges: Sequence[tuple[str, str]],
                 labels: Mapping[str, str] | None = None) -> Layout:
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


def render_svg(layout: Layout, edges: Sequence[SvgEdge], *, labels: Mapping[str, str] | None = None,
               node_classes: Mapping[str, str] | None = None, title: str = "",
               nodes: Sequence[str] | None = None) -> str:
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
    out = [f'<svg class="g" xmlns="http://www.w3.org/2000/svg" width="{layout.width:.0f}" '
           f'height="{layout.height:.0f}" viewBox="0 0 {layout.width:.0f} {layout.height:.0f}" role="img">',
           f"<title>{e(title)}</title>",
           '<defs><marker id="ah" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" style="fill:context-stroke;stroke:none"/>'
           "</marker></defs>"]
    for ed in edges:
        if ed.u not in layout.pos or ed.v not in layout.pos:
            continue
        (x0, y0), (x1, y1) = layout.pos[ed.u], layout.pos[ed.v]
        a = _clip(x0, y0, x1, y1, _node_w(labels.get(ed.u, ed.u)))
        b = _clip(x1, y1, x0, y0, _node_w(labels.get(ed.v, ed.v)))
        marks = (' marker-end="url(#ah)"' if ed.arrow else "") + (' marker-start="url(#ah)"' if ed.arrow_back else "")
        if ed.cls == "search":  # bend the LCE moves so they do not hide dependency edges
            mx, my = (a[0] + b[0]) / 2 + (b[1] - a[1]) * 0.25, (a[1] + b[1]) / 2 - (b[0] - a[0]) * 0.25
            out.append(f'<path class="{e(ed.cls)}" d="M{a[0]:.1f},{a[1]:.1f} Q{mx:.1f},{my:.1f} '
                       f'{b[0]:.1f},{b[1]:.1f}"{marks}><title>{e(ed.u)} → {e(ed.v)} {e(ed.label)}</title></path>')
            if ed.label:
                out.append(f'<text class="elabel" x="{mx:.1f}" y="{my:.1f}">{e(ed.label)}</text>')
        else:
            out.append(f'<line class="{e(ed.cls)}" x1="{a[0]:.1f}" y1="{a[1]:.1f}" x2="{b[0]:.1f}" '
                       f'y2="{b[1]:.1f}"{marks}><title>{e(ed.u)} – {e(ed.v)} ({e(ed.cls)})</title></line>')
    for v in show:
        if v not in layout.pos:
            continue
        x, y = layout.pos[v]
        lab = labels.get(v, v)
        w = _node_w(lab)
        cls = node_classes.get(v, "")
        fill = ' fill="#fff"' if cls == "decisive" else ""
        out.append(f'<g><rect class="{e(cls)}" x="{x - w / 2:.1f}" y="{y - _NODE_H / 2:.1f}" width="{w:.1f}" '
                   f'height="{_NODE_H:.0f}" rx="5"/><text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle"'
                   f"{fill}>{e(lab)}</text></g>")
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
        items.append(f'<span><svg class="g" width="34" height="10"><line class="{c}" x1="2" y1="5" x2="32" y2="5"/>'
                     f"</svg> {html.escape(_LEGEND.get(c, c))}</span>")
    return '<p class="legend">' + " &nbsp; ".join(items) + "</p>"
