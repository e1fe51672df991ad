"""GCA, the Global Causal-inspired Attribution module of DCFA (section 4.1, Algorithm 1).

Three processes over the whole trace:

* **MDI** (minor deviation identification, eq. 2): candidate deviating steps,
  each with a short reason;
* **CGC** (causal-inspired dependency graph construction, eqs. 3 to 6): edges
  p -> q kept only when p < q (temporality) and the model judges step p
  necessary and sufficient for step q. What the model returns is validated
  (:func:`validate_edges`): self-loops, edges with p >= q, out-of-range
  steps and duplicates are dropped and counted. The graph is a
  ``networkx.DiGraph`` over all steps 0..N-1 (V is every step, section 4.1.2);
* **HG** (hypothesis generation, eq. 7): the hypothesised decisive step and
  its reason, from the truth, the trace, the deviations and the graph.

By default MDI and CGC are one call and HG a second, as in the paper's
appendix L; ``split_mdi_cgc`` makes MDI and CGC two calls. All calls use
stage ``dcfa.gca`` with the usage item ``item`` (default ``trace.id``).

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(seed ``../shared/seeds/002_2c62354fb78fce0f.txt``; code github.com/wzhSteve/DCFA), section 4.1,
appendix K (Algorithm 1), appendix L (Figures 9 and 10).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import networkx as nx

from agentcausal.attribution.dcfa import prompts
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.llm import Gateway
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

    @property
    def total(self) -> int:
        return self.out_of_range + self.self_loops + self.backward + self.duplicates


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
    graph : networkx.DiGraph over all steps, validated edges
    dropped_edges : DroppedEdges
    hypothesis_step : int, 0-based
    hypothesis_reason : str
    """

    deviations: tuple[tuple[int, str], ...]
    dropped_deviations: DroppedDeviations
    graph: nx.DiGraph
    dropped_edges: DroppedEdges
    hypothesis_step: int
    hypothesis_reason: str


def validate_edges(edges: Iterable[tuple[int, int]], n_steps: int, *, max_edges: int | None = None) -> GraphValidation:
    """Keep the edges that satisfy temporality and lie in range; count the rest.

    Rules, in order (an edge is counted under the first rule it breaks):
    out of range (either end not in 0..n_steps-1), self-loop (p == q),
    backward (p > q, eq. 3), duplicate (already kept, or ``max_edges``
    edges already kept).

    Parameters
    ----------
    edges : iterable of (p, q) int pairs, 0-based steps, as the model returned them
    n_steps : int, number of steps N of the trace (nodes are 0..N-1)
    max_edges : int or None, keep at most this many valid edges (first ones win);
        later valid edges are counted under ``duplicates``

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
    ([(0, 2)], DroppedEdges(out_of_range=1, self_loops=1, backward=1, duplicates=1))
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    g = nx.DiGraph()
    g.add_nodes_from(range(n_steps))
    oor = loops = back = dup = 0
    for p, q in edges:
        if not (0 <= p < n_steps and 0 <= q < n_steps):
            oor += 1
        elif p == q:
            loops += 1
        elif p > q:
            back += 1
        elif g.has_edge(p, q) or (max_edges is not None and g.number_of_edges() >= max_edges):
            dup += 1
        else:
            g.add_edge(p, q)
    return GraphValidation(g, DroppedEdges(oor, loops, back, dup))


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


def run_gca(trace: Trace, gw: Gateway, settings: DcfaSettings, *, item: str | None = None) -> GcaResult:
    """Run MDI, CGC and HG on one trace (Algorithm 1).

    Parameters
    ----------
    trace : Trace, N steps, 0-based
    gw : Gateway; calls go to stage ``dcfa.gca``
    settings : DcfaSettings (``split_mdi_cgc``, caps and ``max_tokens``)
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
    budget = trace_budget(gw, STAGE, s, max(s.gca_tokens, s.hg_max_tokens))
    if s.split_mdi_cgc:
        mdi = gw.structured(
            STAGE,
            prompts.mdi_messages(trace.question, trace.steps, max_deviations=s.max_deviations, budget=budget),
            prompts.mdi_model(s.max_deviations, s.max_reason_chars),
            item=item, max_tokens=s.gca_tokens,
        )
        devs = validate_deviations(((d.step, d.reason) for d in mdi.deviations), n,
                                   max_deviations=s.max_deviations, max_reason_chars=s.max_reason_chars)
        cgc = gw.structured(
            STAGE,
            prompts.cgc_messages(trace.question, trace.steps, devs.deviations, max_edges=s.max_edges, budget=budget),
            prompts.cgc_model(s.max_edges),
            item=item, max_tokens=s.gca_tokens,
        )
        raw_edges: Sequence[prompts.Edge] = cgc.edges
    else:
        joint = gw.structured(
            STAGE,
            prompts.gca_joint_messages(trace.question, trace.steps, max_deviations=s.max_deviations,
                                       max_edges=s.max_edges, budget=budget),
            prompts.gca_joint_model(s.max_deviations, s.max_edges, s.max_reason_chars),
            item=item, max_tokens=s.gca_tokens,
        )
        devs = validate_deviations(((d.step, d.reason) for d in joint.deviations), n,
                                   max_deviations=s.max_deviations, max_reason_chars=s.max_reason_chars)
        raw_edges = joint.edges
    graph = validate_edges(((e.source, e.target) for e in raw_edges), n, max_edges=s.max_edges)
    hyp = gw.structured(
        STAGE,
        prompts.hg_messages(trace.question, trace.ground_truth, trace.steps, devs.deviations,
                            graph_edges(graph.graph), budget=budget),
        prompts.hypothesis_model(n, s.max_reason_chars),
        item=item, max_tokens=s.hg_max_tokens,
    )
    return GcaResult(
        deviations=devs.deviations,
        dropped_deviations=devs.dropped,
        graph=graph.graph,
        dropped_edges=graph.dropped,
        hypothesis_step=hyp.step,
        hypothesis_reason=hyp.reason.strip()[: s.max_reason_chars],
    )
