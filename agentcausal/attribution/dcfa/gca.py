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

  What the model returns is validated (:mod:`agentcausal.attribution.dcfa.gca_validation`:
  ``validate_edges``, ``validate_links``): out-of-range steps and duplicates are dropped and
  counted; self-links and links against time (the temporality criterion, eq. 3) are kept under
  ``link_checks="code"`` (``paper``: the released code follows them) and dropped and counted under
  ``"strict"`` (``small``). The graph is a ``networkx.DiGraph`` over all steps 0..N-1 (V is
  every step, section 4.1.2);
* **HG** (hypothesis generation, eq. 7): the hypothesised decisive step and
  its reason (and, under ``paper``, the log's final answer as the released
  code asks for it), from the question, the truth (unless the method runs
  without it), the trace, the deviations and *every* valid edge.

When ``max_edges`` caps the graph (``small`` preset), the cap applies to the
graph LCE searches, after HG: the edges closest to the hypothesis are kept
(``gca_validation.cap_edges``) and the number dropped is reported as ``capped``.

``mdi_cgc``: ``"split"`` (``paper``, the released code) asks MDI and CGC in
two calls, then HG; ``"joint"`` (the paper's appendix L and eq. 15) asks MDI
and CGC in one call, then HG. Under ``paper`` MDI and CGC see the log only,
not the question, as the released code sends them. All calls use stage
``dcfa.gca`` through the run's :class:`~agentcausal.llm.call.LLMCall` (its usage item).

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), section 4.1,
appendix K (Algorithm 1), appendix L (Figures 9 and 10).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import networkx as nx

from agentcausal.attribution.dcfa import prompts
from agentcausal.attribution.dcfa.gca_validation import (
    DroppedDeviations,
    DroppedEdges,
    GraphValidation,
    cap_edges,
    capped_links,
    graph_edges,
    validate_deviations,
    validate_edges,
    validate_links,
)
from agentcausal.attribution.dcfa.prompts import StepLinks
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.attribution.evidence import ask_evidence, with_evidence
from agentcausal.llm import LLMCall, Routing
from agentcausal.settings import completion_budget
from agentcausal.traces.model import Trace
from agentcausal.traces.render import budget_chars

__all__ = [
    "STAGE",
    "GcaResult",
    "gca_budgets",
    "trace_budget",
    "run_gca",
]

#: routed stage of every GCA call
STAGE = "dcfa.gca"


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
            return list(self.links if self.search_graph is None else capped_links(self.links, self.search_graph))
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


def trace_budget(gw: Routing, stage: str, settings: DcfaSettings, max_tokens: int) -> int:
    """Character budget of the trace block in a ``stage`` prompt.

    One budget per stage (not per call), so the calls of a stage render the
    trace identically and share their prompt prefix.

    Parameters
    ----------
    gw : Gateway, LLMCall or ProfileSet, for the stage's context window (tokens)
    stage : str
    settings : DcfaSettings, ``reserve_tokens``
    max_tokens : int, the largest completion cap among the stage's calls

    Returns
    -------
    int, characters (:func:`agentcausal.traces.render.budget_chars`).
    """
    return budget_chars(gw.profile_for(stage).context_window, reserve_tokens=settings.reserve_tokens + max_tokens)


def gca_budgets(gw: Routing, settings: DcfaSettings) -> tuple[int, int]:
    """Completion caps (tokens) of the MDI/CGC call and of HG: the settings, else the
    profile's budget (:func:`agentcausal.settings.completion_budget`)."""
    return (completion_budget(gw, STAGE, settings.gca_tokens), completion_budget(gw, STAGE, settings.hg_max_tokens))


def _judged(raw_edges: Sequence[prompts.JudgedEdge]) -> tuple[list[tuple[int, int]], tuple[dict, ...], int]:
    """Edges whose three judgements hold, every judgement as a record, and how many failed."""
    kept: list[tuple[int, int]] = []
    records: list[dict[str, Any]] = []
    failed = 0
    for e in raw_edges:
        holds = bool(e.temporal and e.necessary and e.sufficient)
        records.append(
            {
                "source": e.source,
                "target": e.target,
                "temporal": e.temporal,
                "necessary": e.necessary,
                "sufficient": e.sufficient,
                "reason": e.reason.strip(),
                "kept": holds,
            }
        )
        if holds:
            kept.append((e.source, e.target))
        else:
            failed += 1
    return kept, tuple(records), failed


def run_gca(trace: Trace, call: LLMCall, settings: DcfaSettings) -> GcaResult:
    """Run MDI, CGC and HG on one trace (Algorithm 1).

    Parameters
    ----------
    trace : Trace, N steps, 0-based
    call : LLMCall, the run's call context; calls go to stage ``dcfa.gca``
    settings : DcfaSettings (``prompts``, ``with_ground_truth``, ``mdi_cgc``, ``cgc``, caps and budgets)

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
    style = s.prompts
    judged, links_mode = s.cgc == "equations", s.cgc == "code"
    strict = s.link_checks == "strict"
    gca_tokens, hg_tokens = gca_budgets(call, s)
    budget = trace_budget(call, STAGE, s, max(gca_tokens, hg_tokens))
    graph_reply: prompts.DeviationsAndGraph | prompts.DeviationsAndLinks | prompts.EdgesReply | prompts.CausalListsReply
    if s.mdi_cgc == "split":
        mdi = call.structured(
            STAGE,
            prompts.mdi_messages(
                trace.question, trace.steps, max_deviations=s.max_deviations, budget=budget, style=style
            ),
            prompts.mdi_model(s.max_deviations, s.max_reason_chars, style),
            max_tokens=gca_tokens,
        )
        devs = validate_deviations(
            ((d.step, d.reason) for d in mdi.deviations),
            n,
            max_deviations=s.max_deviations,
            max_reason_chars=s.max_reason_chars,
        )
        graph_reply = call.structured(
            STAGE,
            prompts.cgc_messages(
                trace.question,
                trace.steps,
                devs.deviations,
                max_edges=s.max_edges,
                budget=budget,
                style=style,
                cgc=s.cgc,
            ),
            prompts.cgc_model(s.max_edges, judged, s.max_reason_chars, links_mode),
            max_tokens=gca_tokens,
        )
    else:
        graph_reply = call.structured(
            STAGE,
            prompts.gca_joint_messages(
                trace.question,
                trace.steps,
                max_deviations=s.max_deviations,
                max_edges=s.max_edges,
                budget=budget,
                style=style,
                cgc=s.cgc,
            ),
            prompts.gca_joint_model(s.max_deviations, s.max_edges, s.max_reason_chars, judged, links_mode, style),
            max_tokens=gca_tokens,
        )
        devs = validate_deviations(
            ((d.step, d.reason) for d in graph_reply.deviations),
            n,
            max_deviations=s.max_deviations,
            max_reason_chars=s.max_reason_chars,
        )
    judgements: tuple[dict, ...] = ()
    links: tuple[StepLinks, ...] = ()
    if isinstance(graph_reply, (prompts.DeviationsAndLinks, prompts.CausalListsReply)):  # links_mode
        lv = validate_links(((e.step, e.causes, e.effects) for e in graph_reply.steps), n, strict=strict)
        graph, links = GraphValidation(lv.graph, lv.dropped), lv.links
    else:
        not_causal = 0
        if judged:
            # cgc="equations": the model's edges are JudgedEdge models (prompts._edge_type)
            pairs, judgements, not_causal = _judged(cast(list[prompts.JudgedEdge], graph_reply.edges))
        else:
            pairs = [(e.source, e.target) for e in graph_reply.edges]
        v = validate_edges(pairs, n, strict=strict)  # HG sees every valid edge; the cap applies to the searched graph
        graph = GraphValidation(v.graph, v.dropped._replace(not_causal=not_causal))
    shown = list(links) if links else graph_edges(graph.graph)
    paper = style == "paper"
    hg_msgs = prompts.hg_messages(
        trace.question,
        trace.ground_truth if s.with_ground_truth else None,
        trace.steps,
        devs.deviations,
        shown,
        budget=budget,
        style=style,
    )
    hg_model = prompts.hypothesis_model(n, s.max_reason_chars, paper)
    if s.quote_evidence:  # one more reply field (off in every preset): agentcausal.attribution.evidence
        hg_msgs, hg_model = ask_evidence(hg_msgs), with_evidence(hg_model)
    hyp = call.structured(STAGE, hg_msgs, hg_model, max_tokens=hg_tokens)
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
