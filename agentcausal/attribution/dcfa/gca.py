"""GCA, the Global Causal-inspired Attribution module of DCFA (section 4.1, Algorithm 1).

Three processes over the whole trace:

* **MDI** (minor deviation identification, eq. 2): candidate deviating steps,
  each with a short reason;
* **CGC** (causal-inspired dependency graph construction, eqs. 3 to 6): edges
  p -> q kept only when p < q (temporality) and the model judges step p
  necessary and sufficient for step q. Under the ``paper`` prompts every
  edge of the one reply carries the three judgements and a reason
  (:class:`~agentcausal.attribution.dcfa.prompts.JudgedEdge`); an edge is
  kept only if all three hold (no extra calls), and every judgement is
  recorded (:attr:`GcaResult.edge_judgements`). Under ``small`` the prompt
  states the criteria and the reply lists edges only. What the model returns
  is validated (:func:`validate_edges`): self-loops, edges with p >= q,
  out-of-range steps and duplicates are dropped and counted. The graph is a
  ``networkx.DiGraph`` over all steps 0..N-1 (V is every step, section 4.1.2);
* **HG** (hypothesis generation, eq. 7): the hypothesised decisive step and
  its reason, from the truth (unless the method runs without it), the trace,
  the deviations and *every* valid edge.

When ``max_edges`` caps the graph (``small`` preset), the cap applies to the
graph LCE searches, after HG: the edges closest to the hypothesis are kept
(:func:`cap_edges`) and the number dropped is reported as ``capped``.

By default MDI and CGC are one call and HG a second, as in the paper's
appendix L; ``split_mdi_cgc`` makes MDI and CGC two calls. All calls use
stage ``dcfa.gca`` with the usage item ``item`` (default ``trace.id``).

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/DCFA), section 4.1,
appendix K (Algorithm 1), appendix L (Figures 9 and 10).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import networkx as nx

from agentcausal.attribution.dcfa import prompts
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.llm import Gateway
from agentcausal.settings import completion_budget
from agentcausal.traces.model import Trace
from agentcausal.traces.render import budget_chars

__all__ = [
    "STAGE",
    "DroppedEdges",
    "DroppedDeviations",
    "GraphValidation",
    "DeviationValidation",
    "GcaResult",
    "validate_edges",
    "validate_deviations",
    "cap_edges",
    "gca_budgets",
    "graph_edges",
    "trace_budget",
    "run_gca",
]

#: routed stage of every GCA call
STAGE = "dcfa.gca"


class DroppedEdges(NamedTuple):
    """Counts of model-proposed edges that failed validation (each edge counted once, first rule wins)."""

    out_of_range: int = 0
    self_loops: int = 0
    backward: int = 0  # p > q: violates temporality (eq. 3)
    duplicates: int = 0
    capped: int = 0  # valid edges left out of the searched graph by ``max_edges``
    not_causal: int = 0  # judged edges where temporal, necessary or sufficient was false

    @property
    def total(self) -> int:
        return (self.out_of_range + self.self_loops + self.backward + self.duplicates + self.capped
                + self.not_causal)


class DroppedDeviations(NamedTuple):
    """Counts of model-proposed deviations that failed validation."""

    out_of_range: int = 0
    duplicates: int = 0
    over_limit: int = 0


class GraphValidation(NamedTuple):
    """A validated dependency graph and what was dropped.

    Attributes
    ----------
    graph : networkx.DiGraph over nodes 0..n_steps-1, edges p -> q with p < q
    dropped : DroppedEdges
    """

    graph: nx.DiGraph
    dropped: DroppedEdges


class DeviationValidation(NamedTuple):
    """Validated deviations ``(step, reason)`` in first-mention order and what was dropped."""

    deviations: tuple[tuple[int, str], ...]
    dropped: DroppedDeviations


class GcaResult(NamedTuple):
    """Everything GCA produced for one trace.

    Attributes
    ----------
    deviations : tuple of (step, reason), 0-based steps, validated
    dropped_deviations : DroppedDeviations
    graph : networkx.DiGraph over all steps, every validated edge (what HG saw)
    dropped_edges : DroppedEdges (``capped``: edges left out of ``search_graph``)
    hypothesis_step : int, 0-based
    hypothesis_reason : str
    search_graph : networkx.DiGraph or None, the graph LCE searches (``graph`` capped by
        ``max_edges`` around the hypothesis); None = ``graph``
    edge_judgements : tuple of dict, the CGC judgements of every proposed edge under the
        ``paper`` prompts ({source, target, temporal, necessary, sufficient, reason, kept}); empty under ``small``
    """

    deviations: tuple[tuple[int, str], ...]
    dropped_deviations: DroppedDeviations
    graph: nx.DiGraph
    dropped_edges: DroppedEdges
    hypothesis_step: int
    hypothesis_reason: str
    search_graph: nx.DiGraph | None = None
    edge_judgements: tuple[dict, ...] = ()

    @property
    def lce_graph(self) -> nx.DiGraph:
        """The graph LCE searches (``search_graph``, else ``graph``)."""
        return self.graph if self.search_graph is None else self.search_graph


def validate_edges(edges: Iterable[tuple[int, int]], n_steps: int, *, max_edges: int | None = None) -> GraphValidation:
    """Keep the edges that satisfy temporality and lie in range; count the rest.

    Rules, in order (an edge is counted under the first rule it breaks):
    out of range (either end not in 0..n_steps-1), self-loop (p == q),
    backward (p > q, eq. 3), duplicate (already kept), capped (``max_edges``
    edges already kept).

    Parameters
    ----------
    edges : iterable of (p, q) int pairs, 0-based steps, as the model returned them
    n_steps : int, number of steps N of the trace (nodes are 0..N-1)
    max_edges : int or None, keep at most this many valid edges (first ones win);
        later valid edges are counted under ``capped`` (DCFA itself caps by closeness
        to the hypothesis instead, :func:`cap_edges`)

    Returns
    -------
    GraphValidation(graph, dropped); the graph has every step as a node.

    Raises
    ------
    ValueError
        If ``n_steps < 1``.

    References
    ----------
    DCFA section 4.1.2, eq. 3 (temporality).

    Examples
    --------
    >>> g, d = validate_edges([(0, 2), (2, 2), (3, 1), (0, 2), (1, 9)], n_steps=4)
    >>> sorted(g.edges()), d
    ([(0, 2)], DroppedEdges(out_of_range=1, self_loops=1, backward=1, duplicates=1, capped=0, not_causal=0))
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    g = nx.DiGraph()
    g.add_nodes_from(range(n_steps))
    oor = loops = back = dup = cap = 0
    for p, q in edges:
        if not (0 <= p < n_steps and 0 <= q < n_steps):
            oor += 1
        elif p == q:
            loops += 1
        elif p > q:
            back += 1
        elif g.has_edge(p, q):
            dup += 1
        elif max_edges is not None and g.number_of_edges() >= max_edges:
            cap += 1
        else:
            g.add_edge(p, q)
    return GraphValidation(g, DroppedEdges(oor, loops, back, dup, cap))


def cap_edges(graph: nx.DiGraph, hypothesis: int, max_edges: int | None) -> tuple[nx.DiGraph, int]:
    """Keep the ``max_edges`` edges closest to the hypothesis (the graph LCE searches).

    Closeness of an edge (p, q) to the hypothesis h: 0 when p <= h <= q, else the
    distance from h to the nearer end; ties go to the shorter edge, then the
    earlier source. Every step stays a node.

    Parameters
    ----------
    graph : networkx.DiGraph over 0-based steps
    hypothesis : int, GCA's hypothesised step
    max_edges : int or None; None = no cap (the graph itself is returned)

    Returns
    -------
    (graph, dropped): the capped graph and the number of edges it left out.

    Examples
    --------
    >>> g = nx.DiGraph([(0, 1), (1, 2), (4, 5), (2, 3)])
    >>> h, d = cap_edges(g, 2, 2)
    >>> sorted(h.edges()), d
    ([(1, 2), (2, 3)], 2)
    """
    edges = graph_edges(graph)
    if max_edges is None or len(edges) <= max_edges:
        return graph, 0

    def closeness(e: tuple[int, int]) -> tuple[int, int, int]:
        p, q = e
        d = 0 if p <= hypothesis <= q else min(abs(p - hypothesis), abs(q - hypothesis))
        return d, q - p, p

    keep = sorted(edges, key=closeness)[:max_edges]
    out = nx.DiGraph()
    out.add_nodes_from(graph.nodes())
    out.add_edges_from(keep)
    return out, len(edges) - len(keep)


def validate_deviations(deviations: Iterable[tuple[int, str]], n_steps: int, *, max_deviations: int | None = None,
                        max_reason_chars: int | None = None) -> DeviationValidation:
    """Keep in-range, first-mentioned deviations; cut long reasons; count the rest.

    Parameters
    ----------
    deviations : iterable of (step, reason)
    n_steps : int
    max_deviations : int or None, keep at most this many (later ones counted as ``over_limit``)
    max_reason_chars : int or None, cut reasons to this length

    Returns
    -------
    DeviationValidation(deviations, dropped)

    Examples
    --------
    >>> validate_deviations([(1, "a"), (1, "b"), (7, "c")], n_steps=3).deviations
    ((1, 'a'),)
    """
    kept: dict[int, str] = {}
    oor = dup = over = 0
    for step, reason in deviations:
        if not 0 <= step < n_steps:
            oor += 1
        elif step in kept:
            dup += 1
        elif max_deviations is not None and len(kept) >= max_deviations:
            over += 1
        else:
            r = reason.strip()
            kept[step] = r[:max_reason_chars] if max_reason_chars else r
    return DeviationValidation(tuple(kept.items()), DroppedDeviations(oor, dup, over))


def graph_edges(graph: nx.DiGraph) -> list[tuple[int, int]]:
    """Edges of a dependency graph as sorted ``(p, q)`` pairs."""
    return sorted((int(p), int(q)) for p, q in graph.edges())


def trace_budget(gw: Gateway, stage: str, settings: DcfaSettings, max_tokens: int) -> int:
    """Character budget of the trace block in a ``stage`` prompt.

    One budget per stage (not per call), so the calls of a stage render the
    trace identically and share their prompt prefix.

    Parameters
    ----------
    gw : Gateway, for the stage's context window (tokens)
    stage : str
    settings : DcfaSettings, ``reserve_tokens``
    max_tokens : int, the largest completion cap among the stage's calls

    Returns
    -------
    int, characters (:func:`agentcausal.traces.render.budget_chars`).
    """
    return budget_chars(gw.profile_for(stage).context_window, reserve_tokens=settings.reserve_tokens + max_tokens)


def gca_budgets(gw: Gateway, settings: DcfaSettings) -> tuple[int, int]:
    """Completion caps (tokens) of the MDI/CGC call and of HG: the settings, else the
    profile's budget (:func:`agentcausal.settings.completion_budget`)."""
    return (completion_budget(gw, STAGE, settings.gca_tokens), completion_budget(gw, STAGE, settings.hg_max_tokens))


def _judged(raw_edges: Sequence[object]) -> tuple[list[tuple[int, int]], tuple[dict, ...], int]:
    """Edges whose three judgements hold, every judgement as a record, and how many failed."""
    kept, records, failed = [], [], 0
    for e in raw_edges:
        holds = bool(e.temporal and e.necessary and e.sufficient)
        records.append({"source": e.source, "target": e.target, "temporal": e.temporal,
                        "necessary": e.necessary, "sufficient": e.sufficient,
                        "reason": e.reason.strip(), "kept": holds})
        if holds:
            kept.append((e.source, e.target))
        else:
            failed += 1
    return kept, tuple(records), failed


def run_gca(trace: Trace, gw: Gateway, settings: DcfaSettings, *, item: str | None = None) -> GcaResult:
    """Run MDI, CGC and HG on one trace (Algorithm 1).

    Parameters
    ----------
    trace : Trace, N steps, 0-based
    gw : Gateway; calls go to stage ``dcfa.gca``
    settings : DcfaSettings (``prompts``, ``with_ground_truth``, ``split_mdi_cgc``, caps and budgets)
    item : str or None, the usage-ledger item of every call; None = ``trace.id``

    Returns
    -------
    GcaResult

    Raises
    ------
    StructuredOutputError
        If a reply stays invalid after the gateway's repairs (e.g. HG names a
        step outside 0..N-1 every time).
    UnknownStageError, EndpointUnreachableError, LLMCallError
        From the gateway.

    References
    ----------
    DCFA section 4.1, eqs. 2 to 7; appendix K, Algorithm 1.
    """
    n = len(trace)
    s = settings
    item = item or trace.id
    style, judged = s.prompts, s.prompts == "paper"
    gca_tokens, hg_tokens = gca_budgets(gw, s)
    budget = trace_budget(gw, STAGE, s, max(gca_tokens, hg_tokens))
    if s.split_mdi_cgc:
        mdi = gw.structured(
            STAGE,
            prompts.mdi_messages(trace.question, trace.steps, max_deviations=s.max_deviations, budget=budget,
                                 style=style),
            prompts.mdi_model(s.max_deviations, s.max_reason_chars),
            item=item, max_tokens=gca_tokens,
        )
        devs = validate_deviations(((d.step, d.reason) for d in mdi.deviations), n,
                                   max_deviations=s.max_deviations, max_reason_chars=s.max_reason_chars)
        cgc = gw.structured(
            STAGE,
            prompts.cgc_messages(trace.question, trace.steps, devs.deviations, max_edges=s.max_edges, budget=budget,
                                 style=style),
            prompts.cgc_model(s.max_edges, judged, s.max_reason_chars),
            item=item, max_tokens=gca_tokens,
        )
        raw_edges: Sequence = cgc.edges
    else:
        joint = gw.structured(
            STAGE,
            prompts.gca_joint_messages(trace.question, trace.steps, max_deviations=s.max_deviations,
                                       max_edges=s.max_edges, budget=budget, style=style),
            prompts.gca_joint_model(s.max_deviations, s.max_edges, s.max_reason_chars, judged),
            item=item, max_tokens=gca_tokens,
        )
        devs = validate_deviations(((d.step, d.reason) for d in joint.deviations), n,
                                   max_deviations=s.max_deviations, max_reason_chars=s.max_reason_chars)
        raw_edges = joint.edges
    judgements: tuple[dict, ...] = ()
    not_causal = 0
    if judged:
        pairs, judgements, not_causal = _judged(raw_edges)
    else:
        pairs = [(e.source, e.target) for e in raw_edges]
    graph = validate_edges(pairs, n)  # HG sees every valid edge; the cap applies to the searched graph
    hyp = gw.structured(
        STAGE,
        prompts.hg_messages(trace.question, trace.ground_truth if s.with_ground_truth else None, trace.steps,
                            devs.deviations, graph_edges(graph.graph), budget=budget, style=style),
        prompts.hypothesis_model(n, s.max_reason_chars),
        item=item, max_tokens=hg_tokens,
    )
    search_graph, capped = cap_edges(graph.graph, hyp.step, s.max_edges)
    return GcaResult(
        deviations=devs.deviations,
        dropped_deviations=devs.dropped,
        graph=graph.graph,
        dropped_edges=graph.dropped._replace(capped=capped, not_causal=not_causal),
        hypothesis_step=hyp.step,
        hypothesis_reason=hyp.reason.strip()[: s.max_reason_chars],
        search_graph=search_graph if capped else None,
        edge_judgements=judgements,
    )
