"""The graphs of a causal-discovery run, each predicted graph against the truth: Mermaid and edge tables for
``report.md``, PNG drawings (``graphs/*.png``), inline SVG for ``report.html``, and the DOT and edge-list
files (correct, reversed, extra and missing edges marked alike in every form).
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from agentcausal.discovery.graphs.graph import CausalGraph, Mark
from agentcausal.discovery.outcome import DiscoveryOutcome
from agentcausal.discovery.variants import MethodVariant
from agentcausal.report.figure_cache import FigureCache, cached_draw
from agentcausal.report.graph_files import edge_rows, write_graph_files
from agentcausal.report.svg import SvgEdge, graph_layout, legend_html, render_svg

__all__ = [
    "graph_mermaid",
    "edge_table_markdown",
    "draw_graph_png",
    "draw_graph_png_kept",
    "graphs_html",
    "write_graph_outputs",
    "GraphOutputs",
    "FirstSeed",
]


class FirstSeed(NamedTuple):
    """What :func:`graphs_html` reads of an outcome: the first seed of a (dataset, method), without its debates."""

    dataset: str
    method: str
    seed: int
    graph: CausalGraph | None
    true_graph: CausalGraph | None
    error: str | None

    @classmethod
    def of(cls, o: DiscoveryOutcome) -> FirstSeed:
        """The record of outcome ``o``."""
        return cls(o.dataset, o.method, o.seed, o.graph, o.true_graph, o.error)


def _mid(name: str) -> str:
    return "n_" + "".join(c if c.isalnum() else "_" for c in name)


def graph_mermaid(pred: CausalGraph, true: CausalGraph | None = None) -> str:
    """Mermaid source of a predicted graph, compared with the truth when given.

    Edge styles: correct directed edge ``-->``; reversed ``-- reversed -->``;
    extra edge ``-. extra .->``; missing true edge ``-. missing .-`` ;
    undirected ``---``; other marks (bidirected, circle) are labelled with their symbol.

    Returns
    -------
    str starting with ``flowchart LR``; wrap it in a ```` ```mermaid ```` block.

    Examples
    --------
    >>> t = CausalGraph.from_edges("AB", [("A", "B")])
    >>> print(graph_mermaid(CausalGraph.from_edges("AB", [("B", "A")]), t))
    flowchart LR
      n_A["A"]
      n_B["B"]
      n_B -- reversed --> n_A
    """
    lines = ["flowchart LR"] + [f'  {_mid(v)}["{v}"]' for v in pred.nodes]
    true_dir = true.directed_edges() if true is not None else set()
    true_skel = true.skeleton() if true is not None else set()
    for e in pred.edges:
        o = e.oriented()
        if o is None:
            sym = str(e).split(" ")[1]
            lines.append(f"  {_mid(e.u)} ---|{sym}| {_mid(e.v)}" if sym != "---" else f"  {_mid(e.u)} --- {_mid(e.v)}")
        elif true is None or o in true_dir:
            lines.append(f"  {_mid(o[0])} --> {_mid(o[1])}")
        elif (o[1], o[0]) in true_dir:
            lines.append(f"  {_mid(o[0])} -- reversed --> {_mid(o[1])}")
        else:
            lines.append(f"  {_mid(o[0])} -. extra .-> {_mid(o[1])}")
    if true is not None:
        for pair in sorted(true_skel - pred.skeleton(), key=sorted):
            a, b = (
                next((x, y) for x, y in true_dir if {x, y} == pair)
                if any({x, y} == pair for x, y in true_dir)
                else sorted(pair)
            )
            lines.append(f"  {_mid(a)} -. missing .- {_mid(b)}")
    return "\n".join(lines)


def edge_table_markdown(pred: CausalGraph, true: CausalGraph | None = None) -> str:
    """The predicted graph as a markdown edge table (readable in any markdown viewer, unlike mermaid).

    Columns: source, target, type (``directed``, ``undirected``, ``bidirected``,
    ``partially_directed``) and, against the truth, status (``correct``,
    ``reversed``, ``extra``, or ``missing`` for true edges not found).

    Returns
    -------
    str, a markdown table.
    """
    true_dir = true.directed_edges() if true is not None else set()
    rows = []
    for a, b, t in edge_rows(pred):
        status = ""
        if true is not None:
            status = (
                ("correct" if (a, b) in true_dir else "reversed" if (b, a) in true_dir else "extra")
                if t == "directed"
                else ("in truth" if frozenset((a, b)) in true.skeleton() else "extra")
            )
        rows.append(f"| {a} | {b} | {t} | {status} |")
    if true is not None:
        for a, b, t in edge_rows(true):
            if frozenset((a, b)) not in pred.skeleton():
                rows.append(f"| {a} | {b} | {t} | missing |")
    return "\n".join(["| source | target | type | status |", "|---|---|---|---|", *rows])


def draw_graph_png(pred: CausalGraph, true: CausalGraph | None, path: str | Path, *, title: str = "") -> Path:
    """Draw the predicted graph (green correct, orange reversed, red extra, grey dashed missing) to a PNG.

    Parameters
    ----------
    pred : CausalGraph
    true : CausalGraph or None
    path : output file
    title : str

    Returns
    -------
    Path of the PNG.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    g: nx.DiGraph[str] = nx.DiGraph()
    g.add_nodes_from(pred.nodes)
    true_dir = true.directed_edges() if true is not None else set()
    colours: dict[tuple[str, str], str] = {}
    styles: dict[tuple[str, str], str] = {}
    for e in pred.edges:
        o = e.oriented() or (e.u, e.v)
        g.add_edge(*o)
        if e.oriented() is None:
            colours[o] = "tab:blue"
        elif true is None or o in true_dir:
            colours[o] = "tab:green"
        elif (o[1], o[0]) in true_dir:
            colours[o] = "tab:orange"
        else:
            colours[o] = "tab:red"
        styles[o] = "solid"
    if true is not None:
        for a, b in true_dir:
            if frozenset((a, b)) not in pred.skeleton():
                g.add_edge(a, b)
                colours[(a, b)], styles[(a, b)] = "lightgrey", "dashed"
    pos: dict[Any, Any]  # node -> (x, y)
    try:
        pos = nx.nx_agraph.graphviz_layout(g, prog="dot")
    except Exception:  # graphviz is optional
        pos = nx.kamada_kawai_layout(g) if len(g) > 1 else nx.circular_layout(g)
    fig, ax = plt.subplots(figsize=(2 + 0.6 * len(g), 1.5 + 0.45 * len(g)))
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color="white", edgecolors="black", node_size=900)
    nx.draw_networkx_labels(g, pos, ax=ax, font_size=7)
    for edge in g.edges:
        nx.draw_networkx_edges(
            g,
            pos,
            edgelist=[edge],
            ax=ax,
            edge_color=colours[edge],
            style=styles[edge],
            arrows=True,
            arrowstyle="-" if colours[edge] == "tab:blue" else "-|>",
            arrowsize=14,
            node_size=900,
        )
    ax.set_title(title, fontsize=9)
    ax.axis("off")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


@functools.cache
def _layout_engine() -> str:
    """Which layout :func:`draw_graph_png` uses here: Graphviz's ``dot`` where pygraphviz is installed."""
    return "dot" if importlib.util.find_spec("pygraphviz") is not None else "kamada_kawai"


def draw_graph_png_kept(
    pred: CausalGraph, true: CausalGraph | None, path: Path, *, title: str, cache: FigureCache | None
) -> Path | None:
    """:func:`draw_graph_png`, or the PNG a run before drew of the same drawing copied from ``cache``.

    The key (:func:`agentcausal.report.figure_cache.cached_draw`) is everything the drawing reads: the nodes in
    order, each predicted edge with its marks, the true directed edges (sorted), the title and the layout engine.
    A 3-node PNG takes about 0.1 s of CPU to draw (the layout and matplotlib), so a rerun over many datasets
    spent most of its report drawing the same graphs again.
    """
    rows = [("layout", _layout_engine(), ""), ("title", title, "")]
    rows += [("node", n, "") for n in pred.nodes]
    rows += [("edge", str(e), "") for e in pred.edges]
    rows += [("true", a, b) for a, b in sorted(true.directed_edges())] if true is not None else [("no truth", "", "")]
    table = pd.DataFrame(rows, columns=["part", "a", "b"])
    return cached_draw(path, lambda p: draw_graph_png(pred, true, p, title=title), tables=[table], cache=cache)


def _svg_edges(pred: CausalGraph, true: CausalGraph | None) -> list[Any]:
    """Edges of ``pred`` classed against ``true`` (correct, reversed, extra, undirected, other) plus missing ones."""
    true_dir = true.directed_edges() if true is not None else set()
    out = []
    for e in pred.edges:
        o = e.oriented()
        if o is None:
            if e.is_undirected:
                out.append(SvgEdge(e.u, e.v, "undirected", arrow=False))
            else:
                out.append(
                    SvgEdge(
                        e.u, e.v, "other", arrow=Mark(e.mark_v) == Mark.ARROW, arrow_back=Mark(e.mark_u) == Mark.ARROW
                    )
                )
        elif true is None or o in true_dir:
            out.append(SvgEdge(o[0], o[1], "correct" if true is not None else ""))
        elif (o[1], o[0]) in true_dir:
            out.append(SvgEdge(o[0], o[1], "reversed"))
        else:
            out.append(SvgEdge(o[0], o[1], "extra"))
    if true is not None:
        pred_skel = pred.skeleton()
        for te in true.edges:
            if frozenset((te.u, te.v)) not in pred_skel:
                o = te.oriented() or (te.u, te.v)
                out.append(SvgEdge(o[0], o[1], "missing", arrow=te.oriented() is not None))
    return out


def graphs_html(outcomes: Iterable[DiscoveryOutcome | FirstSeed]) -> str:
    """Per dataset, the true graph and each method's graph (first seed) as inline SVG, sharing one layout.

    The layout is the true graph's (:func:`agentcausal.report.svg.graph_layout`), or that of all
    methods' edges together when there is no truth, so a node sits in the same place in every
    drawing of a dataset. Edges are coloured as in the legend (correct, reversed, extra, missing,
    undirected, bidirected / partially directed).

    Parameters
    ----------
    outcomes : DiscoveryOutcome records, or their :class:`FirstSeed` records (the first per dataset and method)

    Returns
    -------
    str, HTML: a legend, then one ``<section>`` per dataset.
    """
    import html as _html

    e = _html.escape
    first: dict[str, dict[str, DiscoveryOutcome | FirstSeed]] = {}
    for o in outcomes:
        first.setdefault(o.dataset, {}).setdefault(o.method, o)
    parts = ["<h2>Graphs (first seed)</h2>", legend_html()]
    for ds, by_method in first.items():
        true = next((o.true_graph for o in by_method.values() if o.true_graph is not None), None)
        if true is not None:
            nodes = list(true.nodes)
            lay_edges = [(ed.oriented() or (ed.u, ed.v)) for ed in true.edges]
        else:
            nodes = list(dict.fromkeys(v for o in by_method.values() if o.graph for v in o.graph.nodes))
            lay_edges = [(ed.oriented() or (ed.u, ed.v)) for o in by_method.values() if o.graph for ed in o.graph.edges]
        layout = graph_layout(nodes, lay_edges)
        figs = []
        if true is not None:
            t_edges = [SvgEdge(*(ed.oriented() or (ed.u, ed.v)), arrow=ed.oriented() is not None) for ed in true.edges]
            figs.append(
                f"<figure><figcaption>true graph ({len(true.edges)} edges)</figcaption>"
                f"{render_svg(layout, t_edges, title=f'{ds}: true graph')}</figure>"
            )
        for m, o in by_method.items():
            if o.graph is None:
                figs.append(
                    f"<figure><figcaption>{e(m)} (seed {o.seed})</figcaption><p>no graph: "
                    f"{e((o.error or 'failed')[:300])}</p></figure>"
                )
                continue
            figs.append(
                f"<figure><figcaption>{e(m)} (seed {o.seed}, {len(o.graph.edges)} edges)</figcaption>"
                f"{render_svg(layout, _svg_edges(o.graph, true), title=f'{ds}: {m}')}</figure>"
            )
        parts.append(f"<section id='g-{e(ds)}'><h3>{e(ds)}</h3><div class='graphs'>{''.join(figs)}</div></section>")
    return "\n".join(parts)


def write_graph_outputs(outcomes: Iterable[DiscoveryOutcome], run_dir: str | Path) -> list[Path]:
    """Every discovered graph (and each dataset's true graph) as DOT and edge-list CSV under ``graphs/``
    (:class:`GraphOutputs`, one outcome at a time).

    Files: ``graphs/<dataset>__<method>__seed<seed>.dot`` / ``.csv`` and
    ``graphs/<dataset>__truth.dot`` / ``.csv`` (see :mod:`agentcausal.report.graph_files`).

    Parameters
    ----------
    outcomes : DiscoveryOutcome records
    run_dir : the run folder

    Returns
    -------
    list of the written paths.
    """
    files = GraphOutputs(run_dir)
    return [p for o in outcomes for p in files.add(o)]


class GraphOutputs:
    """:func:`write_graph_outputs` as outcomes come: :meth:`add` writes one outcome's graph files (and its
    dataset's truth the first time); only the names of the datasets whose truth is written are kept."""

    def __init__(self, run_dir: str | Path) -> None:
        self.folder = Path(run_dir) / "graphs"
        self._truths: set[str] = set()

    def add(self, o: DiscoveryOutcome) -> list[Path]:
        """Write the files of outcome ``o``; their paths."""
        out: list[Path] = []
        if o.graph is not None:
            stem = f"{o.dataset}__{MethodVariant.parse(o.method).file_stem}__seed{o.seed}"
            out += write_graph_files(o.graph, self.folder / stem)
        if o.true_graph is not None and o.dataset not in self._truths:
            self._truths.add(o.dataset)
            out += write_graph_files(o.true_graph, self.folder / f"{o.dataset}__truth")
        return out
