"""Discovered graphs as files other tools read: graphviz DOT and an edge-list CSV.

The CSV has the header ``source,target,type`` with ``type`` one of
``directed`` (source causes target), ``undirected`` (a CPDAG's unoriented
edge ``---``), ``bidirected`` (``<->``, a latent common cause in a PAG) or
``partially_directed`` (an edge with a circle mark, ``o->`` / ``o-o``; the
DOT file keeps the exact marks as arrowheads).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Literal

from agentcausal.discovery.graphs.graph import CausalGraph, Edge, Mark

__all__ = ["EdgeType", "edge_type", "edge_rows", "graph_dot", "graph_csv", "write_graph_files"]

EdgeType = Literal["directed", "undirected", "bidirected", "partially_directed"]

_HEAD = {Mark.ARROW: "normal", Mark.TAIL: "none", Mark.CIRCLE: "odot"}


def edge_type(e: Edge) -> EdgeType:
    """The CSV type of an edge.

    Examples
    --------
    >>> edge_type(Edge("A", "B")), edge_type(Edge("A", "B", Mark.TAIL, Mark.TAIL))
    ('directed', 'undirected')
    >>> edge_type(Edge("A", "B", Mark.ARROW, Mark.ARROW)), edge_type(Edge("A", "B", Mark.CIRCLE, Mark.ARROW))
    ('bidirected', 'partially_directed')
    """
    if e.oriented() is not None:
        return "directed"
    if e.is_undirected:
        return "undirected"
    if Mark(e.mark_u) == Mark.ARROW and Mark(e.mark_v) == Mark.ARROW:
        return "bidirected"
    return "partially_directed"


def edge_rows(graph: CausalGraph) -> list[tuple[str, str, EdgeType]]:
    """(source, target, type) per edge; directed edges point from cause to effect."""
    rows: list[tuple[str, str, EdgeType]] = []
    for e in graph.edges:
        o = e.oriented()
        rows.append((o[0], o[1], "directed") if o else (e.u, e.v, edge_type(e)))
    return rows


def graph_csv(graph: CausalGraph) -> str:
    """The edge list as CSV text (header ``source,target,type``)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["source", "target", "type"])
    w.writerows(edge_rows(graph))
    return buf.getvalue()


def _q(name: str) -> str:
    return '"' + str(name).replace("\\", "\\\\").replace('"', '\\"') + '"'


def graph_dot(graph: CausalGraph, *, name: str = "G") -> str:
    """The graph as graphviz DOT: every node, directed edges as arrows, other marks as ``dir=both`` heads.

    Parameters
    ----------
    graph : CausalGraph
    name : str, the graph's name in the file

    Returns
    -------
    str

    Examples
    --------
    >>> print(graph_dot(CausalGraph.from_edges("AB", [("A", "B")])))
    digraph "G" {
      "A";
      "B";
      "A" -> "B";
    }
    """
    lines = [f"digraph {_q(name)} {{"] + [f"  {_q(v)};" for v in graph.nodes]
    for e in graph.edges:
        o = e.oriented()
        if o is not None:
            lines.append(f"  {_q(o[0])} -> {_q(o[1])};")
        else:
            lines.append(
                f"  {_q(e.u)} -> {_q(e.v)} [dir=both, arrowtail={_HEAD[Mark(e.mark_u)]}, "
                f"arrowhead={_HEAD[Mark(e.mark_v)]}, type={edge_type(e)}];"
            )
    lines.append("}")
    return "\n".join(lines)


def write_graph_files(graph: CausalGraph, stem: str | Path) -> tuple[Path, Path]:
    """Write ``<stem>.dot`` and ``<stem>.csv``.

    Parameters
    ----------
    graph : CausalGraph
    stem : path without suffix (folders are created)

    Returns
    -------
    (dot path, csv path)
    """
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    dot, csv_path = stem.with_name(stem.name + ".dot"), stem.with_name(stem.name + ".csv")
    dot.write_text(graph_dot(graph, name=stem.name) + "\n", encoding="utf-8")
    csv_path.write_text(graph_csv(graph), encoding="utf-8")
    return dot, csv_path
