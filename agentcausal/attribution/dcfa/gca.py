"""GCA, the Global Causal-inspired Attribution module of DCFA (section 4.1, Algorithm 1).

Three processes over the whole trace:

* **MDI** (minor deviation identification, eq. 2): candidate deviating steps,
  each with a short reason;
* **CGC** (causal-inspired dependency graph construction, eqs. 3 to 6), setting ``cgc``:

  - ``"code"`` (``paper``, the released code's ``event_causality.txt``): one
    reply lists, for **every** step, the earlier steps that cause it and the
    later steps it causes (:class:`~agentcausal.attribution.dcfa.prompts.StepLinks`),
    judged on temporality, precondition and influence. The graph E is the
    union of these links; the search takes a pivot's neighbours from the
    pivot's own lists, as the released code does (a link written in only one
    of the two lists is an edge of E but a neighbour of one end only). HG and
    Correct see the lists.
  - ``"equations"`` (the paper's text): every proposed edge carries the three
    judgements of eqs. 3 to 5 and a reason
    (:class:`~agentcausal.attribution.dcfa.prompts.JudgedEdge`); an edge is
    kept only if all three hold, and every judgement is recorded
    (:attr:`GcaResult.edge_judgements`).
  - ``"edges"`` (``small``): the prompt states the criteria, the reply lists edges.

  What the model returns is validated (:func:`validate_edges`,
  :func:`validate_links`): self-loops, links against time (p >= q; the
  temporality criterion, eq. 3), out-of-range steps and duplicates are dropped
  and counted. The graph is a ``networkx.DiGraph`` over all steps 0..N-1 (V is
  every step, section 4.1.2);
* **HG** (hypothesis generation, eq. 7): the hypothesised decisive step and
  its reason (and, under ``paper``, the log's final answer as the released
  code asks for it), from the question, the truth (unless the method runs
  without it), the trace, the deviations and *every* valid edge.

When ``max_edges`` caps the graph (``small`` preset), the cap applies to the
graph LCE searches, after HG: the edges closest to the hypothesis are kept
(:func:`cap_edges`) and the number dropped is reported as ``capped``.

``mdi_cgc``: ``"split"`` (``paper``, the released code) asks MDI and CGC in
two calls, then HG; ``"joint"`` (the paper's appendix L and eq. 15) asks MDI
and CGC in one call, then HG. Under ``paper`` MDI and CGC see the log only,
not the question, as the released code sends them. All calls use stage
``dcfa.gca`` with the usage item ``item`` (default ``trace.id``).

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
from agentcausal.attribution.dcfa.prompts import StepLinks
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.attribution.evidence import ask_evidence, with_evidence
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
    "LinksValidation",
    "GcaResult",
    "validate_edges",
    "validate_links",
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


class LinksValidation(NamedTuple):
    """Validated per-step cause/effect lists (``cgc="code"``), their union graph, and what was dropped.

    Attributes
    ----------
    links : tuple of StepLinks, one per step the reply named, in step order (causes < step < effects)
    graph : networkx.DiGraph over nodes 0..n_steps-1, the union of every kept link
    dropped : DroppedEdges, counted per listed link (``duplicates``: repeated within one list or
        one step named twice; a link given in both lists is one edge, not a duplicate)
    """

    links: tuple[StepLinks, ...]
    graph: nx.DiGraph
    dropped: DroppedEdges


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
    edge_judgements : tuple of dict, the CGC judgements of every proposed edge under
        ``cgc="equations"`` ({source, target, temporal, necessary, sufficient, reason, kept}); else empty
    links : tuple of StepLinks, the validated per-step lists under ``cgc="code"``; else empty
    log_answer : str or None, the log's final answer as HG read it (``paper`` prompts)
    hypothesis_evidence : str or None, HG's quote from the hypothesised step, as replied (unchecked;
        ``quote_evidence`` only)
    """

    deviations: tuple[tuple[int, str], ...]
    dropped_deviations: DroppedDeviations
    graph: nx.DiGraph
    dropped_edges: DroppedEdges
    hypothesis_step: int
    hypothesis_reason: str
    search_graph: nx.DiGraph | None = None
    edge_judgements: tuple[dict, ...] = ()
    links: tuple[StepLinks, ...] = ()
    log_answer: str | None = None
    hypothesis_evidence: str | None = None

    @property
    def lce_graph(self) -> nx.DiGraph:
        """The graph LCE searches (``search_graph``, else ``graph``)."""
        return self.graph if self.search_graph is None else self.search_graph

    @property
    def search_graph_input(self) -> list[tuple[int, int]] | list[StepLinks]:
        """The searched graph as Correct sees it: the per-step lists under ``cgc="code"`` (kept to the
        edges of the searched graph), else its edges (HG saw :attr:`graph` whole)."""
        if self.links:
            return list(self.links if self.search_graph is None else _capped_links(self.links, self.search_graph))
        return graph_edges(self.lce_graph)

    def neighbours(self, pivot: int, direction: str) -> list[int]:
        """The pivot's neighbours in the searched graph, sorted: ``"backward"`` its causes,
        ``"forward"`` its effects. Under ``cgc="code"`` they come from the pivot's own lists (as the
        released code reads them), kept to the edges of the searched graph; else from the graph."""
        g = self.lce_graph
        if pivot not in g:
            return []
        if self.links:
            own = next((e for e in self.links if e.step == pivot), None)
            if own is None:
                return []
            if direction == "forward":
                return sorted(j for j in own.effects if g.has_edge(pivot, j))
            return sorted(k for k in own.causes if g.has_edge(k, pivot))
        nbrs = g.successors(pivot) if direction == "forward" else g.predecessors(pivot)
        return sorted(int(x) for x in nbrs)

    def effects_of(self, step: int) -> tuple[int, ...]:
        """The steps ``step`` directly affects (what a ``simulation="code"`` prompt names): its own
        effects list under ``cgc="code"``, else its successors in the searched graph."""
        return tuple(self.neighbours(step, "forward"))


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


def validate_links(entries: Iterable[tuple[int, Iterable[int], Iterable[int]]], n_steps: int) -> LinksValidation:
    """Validate a ``cgc="code"`` reply: per step, the earlier steps that cause it and the later steps it causes.

    Each listed link is checked on its own: out of range (either end not in 0..n_steps-1, or the
    entry's own step out of range: all its links), self-loop, against time (a cause at or after the
    step, an effect at or before it: eq. 3) or repeated in one list (and an entry for a step already
    given: all its links). The union of the kept links is the graph E.

    Parameters
    ----------
    entries : iterable of (step, causes, effects), as the model returned them
    n_steps : int

    Returns
    -------
    LinksValidation(links, graph, dropped)

    Raises
    ------
    ValueError
        If ``n_steps < 1``.

    Examples
    --------
    >>> v = validate_links([(1, [0, 1], [3, 0]), (3, [1], []), (9, [0], [])], n_steps=4)
    >>> v.links, sorted(v.graph.edges()), v.dropped.backward, v.dropped.self_loops, v.dropped.out_of_range
    ((StepLinks(step=1, causes=(0,), effects=(3,)), StepLinks(step=3, causes=(1,), effects=())), [(0, 1), (1, 3)], 1, 1, 1)
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    g = nx.DiGraph()
    g.add_nodes_from(range(n_steps))
    oor = loops = back = dup = 0
    kept: dict[int, StepLinks] = {}
    for step, causes, effects in entries:
        causes, effects = list(causes), list(effects)
        if not 0 <= step < n_steps:
            oor += len(causes) + len(effects)
            continue
        if step in kept:
            dup += len(causes) + len(effects)
            continue
        lists: dict[str, list[int]] = {"causes": [], "effects": []}
        for name, xs in (("causes", causes), ("effects", effects)):
            for x in xs:
                if not 0 <= x < n_steps:
                    oor += 1
                elif x == step:
                    loops += 1
                elif (x > step) if name == "causes" else (x < step):
                    back += 1
                elif x in lists[name]:
                    dup += 1
                else:
                    lists[name].append(x)
                    g.add_edge(x, step) if name == "causes" else g.add_edge(step, x)
        kept[step] = StepLinks(step, tuple(sorted(lists["causes"])), tuple(sorted(lists["effects"])))
    links = tuple(kept[s] for s in sorted(kept))
    return LinksValidation(links, g, DroppedEdges(oor, loops, back, dup))


def _capped_links(links: Sequence[StepLinks], graph: nx.DiGraph) -> tuple[StepLinks, ...]:
    """The lists kept to the edges of a (capped) graph."""
    return tuple(StepLinks(e.step, tuple(c for c in e.causes if graph.has_edge(c, e.step)),
                           tuple(x for x in e.effects if graph.has_edge(e.step, x))) for e in links)


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
    settings : DcfaSettings (``prompts``, ``with_ground_truth``, ``mdi_cgc``, ``cgc``, caps and budgets)
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
    style = s.prompts
    judged, links_mode = s.cgc == "equations", s.cgc == "code"
    gca_tokens, hg_tokens = gca_budgets(gw, s)
    budget = trace_budget(gw, STAGE, s, max(gca_tokens, hg_tokens))
    if s.mdi_cgc == "split":
        mdi = gw.structured(
            STAGE,
            prompts.mdi_messages(trace.question, trace.steps, max_deviations=s.max_deviations, budget=budget,
                                 style=style),
            prompts.mdi_model(s.max_deviations, s.max_reason_chars),
            item=item, max_tokens=gca_tokens,
        )
        devs = validate_deviations(((d.step, d.reason) for d in mdi.deviations), n,
                                   max_deviations=s.max_deviations, max_reason_chars=s.max_reason_chars)
        graph_reply = gw.structured(
            STAGE,
            prompts.cgc_messages(trace.question, trace.steps, devs.deviations, max_edges=s.max_edges, budget=budget,
                                 style=style, cgc=s.cgc),
            prompts.cgc_model(s.max_edges, judged, s.max_reason_chars, links_mode),
            item=item, max_tokens=gca_tokens,
        )
    else:
        graph_reply = gw.structured(
            STAGE,
            prompts.gca_joint_messages(trace.question, trace.steps, max_deviations=s.max_deviations,
                                       max_edges=s.max_edges, budget=budget, style=style, cgc=s.cgc),
            prompts.gca_joint_model(s.max_deviations, s.max_edges, s.max_reason_chars, judged, links_mode),
            item=item, max_tokens=gca_tokens,
        )
        devs = validate_deviations(((d.step, d.reason) for d in graph_reply.deviations), n,
                                   max_deviations=s.max_deviations, max_reason_chars=s.max_reason_chars)
    judgements: tuple[dict, ...] = ()
    links: tuple[StepLinks, ...] = ()
    if links_mode:
        lv = validate_links(((e.step, e.causes, e.effects) for e in graph_reply.steps), n)
        graph, links = GraphValidation(lv.graph, lv.dropped), lv.links
    else:
        not_causal = 0
        if judged:
            pairs, judgements, not_causal = _judged(graph_reply.edges)
        else:
            pairs = [(e.source, e.target) for e in graph_reply.edges]
        v = validate_edges(pairs, n)  # HG sees every valid edge; the cap applies to the searched graph
        graph = GraphValidation(v.graph, v.dropped._replace(not_causal=not_causal))
    shown = list(links) if links else graph_edges(graph.graph)
    paper = style == "paper"
    hg_msgs = prompts.hg_messages(trace.question, trace.ground_truth if s.with_ground_truth else None, trace.steps,
                                  devs.deviations, shown, budget=budget, style=style)
    hg_model = prompts.hypothesis_model(n, s.max_reason_chars, paper)
    if s.quote_evidence:  # one more reply field (off in every preset): agentcausal.attribution.evidence
        hg_msgs, hg_model = ask_evidence(hg_msgs), with_evidence(hg_model)
    hyp = gw.structured(STAGE, hg_msgs, hg_model, item=item, max_tokens=hg_tokens)
    search_graph, capped = cap_edges(graph.graph, hyp.step, s.max_edges)
    return GcaResult(
        deviations=devs.deviations,
        dropped_deviations=devs.dropped,
        graph=graph.graph,
        dropped_edges=graph.dropped._replace(capped=capped),
        hypothesis_step=hyp.step,
        hypothesis_reason=hyp.reason.strip()[: s.max_reason_chars],
        search_graph=search_graph if capped else None,
        edge_judgements=judgements,
        links=links,
        log_answer=getattr(hyp, "log_answer", None) if paper else None,
        hypothesis_evidence=getattr(hyp, "evidence", None),
    )
