"""Draw a DCFA attribution's dependency graph as mermaid, like the DCFA paper's Figure 4.

Nodes are steps (``τ3 · WebSurfer``); solid arrows are the validated
dependency edges p -> q; orange dashed arrows are the accepted moves of the
LCE search, labelled with their ΔS. Colours: yellow = minor deviation,
orange = GCA hypothesis, red = final decisive step (a node that is several
of these takes the last colour in that order and lists every role in its
label).

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), section 5.4.4, Figure 4.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from agentcausal.report.svg import SvgEdge, column_svg
from agentcausal.traces.model import Attribution

__all__ = ["MAX_ALL_NODES", "dependency_graph_mermaid", "dependency_graph_svg", "dependency_graph_edge_table"]

#: traces with at most this many steps show every step; longer ones only the steps involved
MAX_ALL_NODES = 40

_CLASSES = (
    "  classDef deviation fill:#fff3b0,stroke:#c9a800,color:#000\n"
    "  classDef hypothesis fill:#ffb347,stroke:#d2691e,color:#000\n"
    "  classDef decisive fill:#e34040,stroke:#8b0000,color:#fff\n"
)


def _label(text: str) -> str:
    """Text safe inside a quoted mermaid label."""
    out = " ".join(str(text).split())
    for a, b in (
        ("&", "#amp;"),
        ('"', "#quot;"),
        ("<", "#lt;"),
        (">", "#gt;"),
        ("|", "#124;"),
        ("[", "#91;"),
        ("]", "#93;"),
        ("`", "#96;"),
    ):
        out = out.replace(a, b)
    return out[:90]


class _GraphView(NamedTuple):
    """What the drawings read from a DCFA attribution's ``details`` (see :func:`_graph_view`)."""

    n: int
    edges: list[tuple[int, int]]  # validated dependency edges, each once, both ends steps of the trace
    ignored: list[tuple[int, int]]  # edges and LCE moves not drawn (a self-loop or an end outside the trace)
    deviations: set[int]
    hypothesis: int | None
    final: int | None
    moves: list[tuple[int, int, str, float]]  # accepted LCE moves: (pivot, step, direction, ΔS)
    scores: dict[int, float]
    agents: dict[int, str]
    nodes: list[int]


def _graph_view(attribution: Attribution) -> _GraphView | None:
    """The dependency graph of a DCFA attribution as the drawings read it; None when GCA built none.

    ``nodes`` are all steps when there are at most :data:`MAX_ALL_NODES`, else only the steps
    involved (deviations, edge ends, LCE moves, hypothesis, final).

    Raises
    ------
    ValueError
        If ``details`` has no ``n_steps`` (not a DCFA attribution).
    """
    d: dict[str, Any] = attribution.details or {}
    if "n_steps" not in d:
        raise ValueError(f"attribution of {attribution.trace_id!r} by {attribution.method!r} has no DCFA details")
    if "edges" not in d:
        return None
    n = int(d["n_steps"])
    raw = list(dict.fromkeys((int(p), int(q)) for p, q in d.get("edges", [])))
    edges = [(p, q) for p, q in raw if p != q and 0 <= p < n and 0 <= q < n]
    ignored = [e for e in raw if e not in set(edges)]
    deviations = {int(x["step"]) for x in d.get("deviations", [])}
    hyp = (d.get("hypothesis") or {}).get("step")
    final = (d.get("final") or {}).get("step", attribution.step)
    lce = d.get("lce") or {}
    moves = [
        (int(m["pivot"]), int(m["step"]), m.get("direction", ""), float(m.get("delta_s", 0.0)))
        for m in lce.get("path", []) or []
    ]
    ignored += [(p, q) for p, q, _, _ in moves if p == q or not (0 <= p < n and 0 <= q < n)]
    moves = [m for m in moves if m[0] != m[1] and 0 <= m[0] < n and 0 <= m[1] < n]
    scores = {int(x["step"]): float(x["s"]) for x in lce.get("scores", []) or []}
    agents = {i: a for i, a in enumerate(d.get("step_agents") or [])}
    for key in ("hypothesis", "final"):
        rec = d.get(key) or {}
        if rec.get("agent") is not None and rec.get("step") is not None:
            agents[int(rec["step"])] = rec["agent"]
    involved = set(deviations) | {p for e in edges for p in e} | {x for m in moves for x in m[:2]}
    involved |= {x for x in (hyp, final) if x is not None}
    nodes = list(range(n)) if n <= MAX_ALL_NODES else sorted(i for i in involved if 0 <= i < n)
    return _GraphView(n, edges, ignored, deviations, hyp, final, moves, scores, agents, nodes)


def dependency_graph_mermaid(attribution: Attribution) -> str:
    """Mermaid ``flowchart`` source of a DCFA attribution's dependency graph (no code fences).

    Parameters
    ----------
    attribution : Attribution from ``dcfa`` or ``dcfa_gca_only``; reads
        ``details``: ``n_steps``, ``edges``, ``deviations``, ``hypothesis``,
        ``lce.path``, ``lce.scores``, ``final`` and ``step_agents`` (all but
        ``n_steps`` and ``edges`` optional; without ``step_agents`` only the
        hypothesis and final steps show their agent).

    Returns
    -------
    str, mermaid source starting with ``flowchart LR``; wrap it in a
    ```` ```mermaid ```` block to embed it in markdown. An attribution whose
    GCA failed gives a one-node chart saying so.

    Raises
    ------
    ValueError
        If ``details`` has no ``n_steps`` (not a DCFA attribution).

    References
    ----------
    DCFA section 5.4.4, Figure 4.

    Examples
    --------
    >>> a = Attribution(trace_id="t", method="dcfa", step=2, details={
    ...     "n_steps": 3, "edges": [[0, 2]], "deviations": [{"step": 0, "reason": "r"}],
    ...     "hypothesis": {"step": 0}, "final": {"step": 2}})
    >>> print(dependency_graph_mermaid(a).splitlines()[0])
    flowchart LR
    """
    g = _graph_view(attribution)
    if g is None:
        msg = _label(attribution.error or "no dependency graph")
        return f'flowchart LR\n  err["{_label(attribution.trace_id)}: {msg}"]\n'
    edges, deviations, hyp, final, path = g.edges, g.deviations, g.hypothesis, g.final, g.moves
    scores, agents, nodes = g.scores, g.agents, g.nodes

    lines = [
        "flowchart LR",
        "  %% yellow: minor deviation; orange: GCA hypothesis; red: final decisive step;",
        "  %% solid: dependency edge; dashed orange: LCE search move (with ΔS)",
    ]
    for i in nodes:
        roles = [
            r for r, on in (("deviation", i in deviations), ("hypothesis", i == hyp), ("decisive", i == final)) if on
        ]
        text = f"τ{i}"
        if i in agents:
            text += f" · {agents[i]}"
        if i in scores:
            text += f" · S={scores[i]:.2f}"
        if roles:
            text += " · " + ", ".join(roles)
        lines.append(f'  s{i}["{_label(text)}"]')
    link = 0
    for p, q in edges:
        lines.append(f"  s{p} --> s{q}")
        link += 1
    search_links = []
    for pivot, step, direction, ds in path:
        tag = "fwd" if direction == "forward" else "bwd"
        lines.append(f'  s{pivot} -.->|"{tag} ΔS={ds:+.2f}"| s{step}')
        search_links.append(str(link))
        link += 1
    lines.append(_CLASSES.rstrip("\n"))
    for cls, members in (("deviation", deviations), ("hypothesis", {hyp}), ("decisive", {final})):
        shown = [f"s{i}" for i in sorted(x for x in members if x is not None) if i in set(nodes)]
        if shown:
            lines.append(f"  class {','.join(shown)} {cls}")
    if search_links:
        lines.append(f"  linkStyle {','.join(search_links)} stroke:#ff8c00,stroke-width:2px,stroke-dasharray:5 5")
    return "\n".join(lines) + "\n"


def dependency_graph_svg(attribution: Attribution) -> str:
    """The dependency graph of a DCFA attribution as inline SVG (same content and colours as the mermaid chart).

    Steps stand in one column in trace order (:func:`agentcausal.report.svg.column_svg`): a dependency
    edge between neighbouring steps is a short arrow between their boxes, one that skips steps an arc
    on the right whose width grows with the steps it skips, and the accepted LCE search moves are
    orange dashed arcs on the left labelled with ΔS. Every edge of
    :func:`dependency_graph_edge_table` is one visible path of its own. Boxes are yellow (minor
    deviation), orange (GCA hypothesis) or red (final decisive step).

    Parameters
    ----------
    attribution : Attribution from ``dcfa`` or ``dcfa_gca_only`` (see :func:`dependency_graph_mermaid`)

    Returns
    -------
    str, an ``<svg>`` element; an attribution without a graph gives a ``<p>`` saying why.

    Raises
    ------
    ValueError
        If ``details`` has no ``n_steps`` (not a DCFA attribution).

    References
    ----------
    DCFA section 5.4.4, Figure 4.
    """
    import html as _html

    g = _graph_view(attribution)
    if g is None:
        return f"<p>No dependency graph: {_html.escape(attribution.error or 'GCA did not build one')}</p>"
    edges, deviations, hyp, final, agents, steps = g.edges, g.deviations, g.hypothesis, g.final, g.agents, g.nodes
    names = [f"s{i}" for i in steps]
    labels = {f"s{i}": f"τ{i}" + (f" · {agents[i]}" if i in agents else "") for i in steps}
    classes: dict[str, str] = {}
    for cls, members in (("deviation", deviations), ("hypothesis", {hyp}), ("decisive", {final})):
        for i in members:
            if i is not None:
                classes[f"s{i}"] = cls
    svg_edges = [SvgEdge(f"s{p}", f"s{q}", "dependency") for p, q in edges]
    svg_edges += [SvgEdge(f"s{p}", f"s{q}", "search", label=f"ΔS={ds:+.2f}") for p, q, _, ds in g.moves]
    return column_svg(
        names,
        svg_edges,
        labels=labels,
        node_classes=classes,
        title=f"dependency graph of {attribution.trace_id} ({attribution.method})",
    )


def dependency_graph_edge_table(attribution: Attribution) -> str:
    """The dependency graph as a markdown table (readable where mermaid is not drawn, e.g. Prefect's older UI).

    One row per validated dependency edge (``dependency``, each once) and per accepted LCE move
    (``LCE forward`` / ``LCE backward`` with its ΔS): exactly the edges :func:`dependency_graph_svg`
    draws; then the edges left out (a self-loop, a step outside the trace) and the roles of the steps.

    Parameters
    ----------
    attribution : a DCFA Attribution (see :func:`dependency_graph_mermaid`)

    Returns
    -------
    str, markdown; a one-line note when there is no graph.

    Examples
    --------
    >>> a = Attribution(trace_id="t", method="dcfa", step=2, details={"n_steps": 3, "edges": [[0, 2]],
    ...     "final": {"step": 2}})
    >>> print(dependency_graph_edge_table(a))
    | from | to | kind |
    |---|---|---|
    | τ0 | τ2 | dependency |
    <BLANKLINE>
    final decisive step: τ2
    """
    d: dict[str, Any] = attribution.details or {}
    if "edges" not in d:
        return f"No dependency graph: {attribution.error or 'GCA did not build one'}."
    g = _graph_view(attribution)
    assert g is not None  # "edges" is in details
    rows = ["| from | to | kind |", "|---|---|---|"]
    rows += [f"| τ{p} | τ{q} | dependency |" for p, q in g.edges]
    for pivot, step, direction, ds in g.moves:
        rows.append(f"| τ{pivot} | τ{step} | LCE {direction} ΔS={ds:+.2f} |")
    roles = []
    if g.ignored:
        roles.append(
            "not drawn (a self-loop or a step outside the trace): " + ", ".join(f"τ{p} → τ{q}" for p, q in g.ignored)
        )
    devs = sorted(int(x["step"]) for x in d.get("deviations", []))
    if devs:
        roles.append("minor deviations: " + ", ".join(f"τ{i}" for i in devs))
    hyp = (d.get("hypothesis") or {}).get("step")
    if hyp is not None:
        roles.append(f"GCA hypothesis: τ{hyp}")
    final = (d.get("final") or {}).get("step", attribution.step)
    if final is not None:
        roles.append(f"final decisive step: τ{final}")
    return "\n".join(rows) + ("\n\n" + "; ".join(roles) if roles else "")
