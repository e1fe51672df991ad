"""LCE, the Local Counterfactual-inspired Enhancement module of DCFA (section 4.2, Algorithm 2).

* **Correct** (eq. 8): one corrected version of the whole trace, conditioned
  on the truth, the deviations and the graph, with exactly as many steps as
  the original. The reply is one string per step, ``""`` meaning "unchanged"
  (so unchanged steps cost no decode tokens and keep their full text). The
  step count is validated (the gateway's repair loop re-asks); if the reply
  is still wrong, the documented fallback (:func:`normalise_correction`)
  keeps the first N strings and pads missing ones as unchanged, and records
  which it did. A corrected step longer than ``max_corrected_step_chars`` is cut.
* **Counterfactual trace** for step i (:func:`splice`): corrected steps 0..i,
  original steps i+1..N-1; i = -1 is the original trace, i = N-1 the fully
  corrected one.
* **Simulation** (eq. 9) predicts the counterfactual trace's final answer;
  **S(i)** = cosine(Enc(outcome i), Enc(truth)) (eq. 10), with Enc the
  ``dcfa.embed`` stage. **S(-1)**, "nothing corrected", is defined as the
  score of simulating the *original* trace with the same prompt, so every
  S(i) is measured by the same simulator and ΔS(0) = S(0) - S(-1) compares
  like with like (the logged final answer is not used).
* **ΔS(i)** = S(i) - S(i-1) (eq. 11, :func:`delta_s`).
* **Memoisation**: if the corrector left step i unchanged, the counterfactual
  traces i and i-1 are identical, so S(i) = S(i-1) exactly
  (:func:`canonical_index`); each distinct counterfactual trace is simulated
  once per run (in-memory memo) and once ever (the gateway's disk cache).
* **Bidirectional greedy search** (:func:`bidirectional_search`): forward over
  the pivot's successors (edges p -> j), backward over its predecessors
  (edges k -> p), each taking the neighbour with the largest positive ΔS as
  the next pivot, until none is positive or ``max_iterations`` moves.
* **DED**: the final decisive error among {hypothesis} and the visited
  pivots, given the truth, those steps and the graph (skipped when there is
  only one candidate).

Stages: Correct, Simulation and DED call ``dcfa.lce``; embeddings ``dcfa.embed``;
every call passes the usage item ``item`` (default ``trace.id``; :func:`run_dcfa
<agentcausal.attribution.dcfa.method.run_dcfa>` passes ``"<trace id>::<method>"`` so that
``dcfa`` and ``dcfa_gca_only`` running at once on one trace count their own calls).

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(seed ``../shared/seeds/002_2c62354fb78fce0f.txt``; code github.com/wzhSteve/DCFA), section 4.2,
eqs. 8 to 13; appendix K, Algorithm 2; appendix L, Figures 11 to 13.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import networkx as nx
import numpy as np

from agentcausal.attribution.dcfa import prompts
from agentcausal.attribution.dcfa.gca import GcaResult, graph_edges, trace_budget
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import Gateway
from agentcausal.traces.model import Step, Trace

__all__ = [
    "STAGE",
    "EMBED_STAGE",
    "Correction",
    "SearchStep",
    "SearchResult",
    "Decision",
    "LceResult",
    "normalise_correction",
    "correct_trace",
    "splice",
    "canonical_index",
    "delta_s",
    "CounterfactualScorer",
    "bidirectional_search",
    "decide",
    "run_lce",
]

#: routed stage of Correct, Simulation and DED
STAGE = "dcfa.lce"
#: routed stage of the outcome encoder Enc
EMBED_STAGE = "dcfa.embed"

Evaluate = Callable[[Collection[int]], Mapping[int, float]]


class Correction(NamedTuple):
    """A corrected trace aligned step by step with the original.

    Attributes
    ----------
    contents : tuple of str, length N, the corrected content of every step
        (the original content where the corrector left it unchanged)
    changed : tuple of int, 0-based steps whose content differs from the original
    fallback : str or None, what :func:`normalise_correction` had to do to reach
        N steps (``"padded 4 -> 6"``, ``"truncated 8 -> 6"``, ``"unparseable"``), None when the
        reply had exactly N steps
    """

    contents: tuple[str, ...]
    changed: tuple[int, ...]
    fallback: str | None = None


class SearchStep(NamedTuple):
    """One neighbour evaluated during the search.

    Attributes
    ----------
    direction : "forward" or "backward"
    iteration : int, 1-based iteration of that direction
    pivot : int, the pivot whose neighbour this is
    step : int, the neighbour (0-based)
    s : float, S(step)
    delta_s : float, ΔS(step) = S(step) - S(step - 1)
    accepted : bool, whether it became the next pivot
    """

    direction: str
    iteration: int
    pivot: int
    step: int
    s: float
    delta_s: float
    accepted: bool


class SearchResult(NamedTuple):
    """Outcome of the bidirectional greedy search.

    Attributes
    ----------
    evaluated : tuple of SearchStep, every neighbour evaluated, in order
    path : tuple of SearchStep, the accepted moves (forward first, then backward)
    visited : tuple of int, the hypothesis and every accepted pivot, in visiting order
    stopped : dict direction -> "no_neighbours" | "no_positive" | "max_iterations"
    """

    evaluated: tuple[SearchStep, ...]
    path: tuple[SearchStep, ...]
    visited: tuple[int, ...]
    stopped: dict[str, str]


class Decision(NamedTuple):
    """DED's answer: the step, its reason, and whether the call was skipped (one candidate)."""

    step: int
    reason: str
    skipped: bool


class LceResult(NamedTuple):
    """Everything LCE produced for one trace.

    Attributes
    ----------
    search : SearchResult
    candidates : tuple of int, {hypothesis} ∪ visited, sorted
    decision : Decision
    correction : Correction or None (None when no neighbour had to be scored)
    scores : dict i -> S(i) of every counterfactual scored (i = -1 included when used)
    outcomes : dict i -> simulated outcome text of the canonical counterfactuals simulated
    """

    search: SearchResult
    candidates: tuple[int, ...]
    decision: Decision
    correction: Correction | None
    scores: dict[int, float]
    outcomes: dict[int, str]


# ------------------------------------------------------------------ Correct
def normalise_correction(original: Sequence[str], replied: Sequence[str] | None, *,
                         max_chars: int | None = None) -> Correction:
    """Align a corrector's reply with the original steps (the documented fallback).

    ``""`` (or whitespace) and a copy of the original mean "unchanged". A reply
    with too few strings is padded with "unchanged", one with too many is
    truncated to N, and ``None`` (unparseable) means nothing is corrected; the
    :attr:`Correction.fallback` field records which.

    Parameters
    ----------
    original : sequence of str, length N, the original step contents
    replied : sequence of str or None, the corrector's strings
    max_chars : int or None, cut each corrected content to this length

    Returns
    -------
    Correction

    Examples
    --------
    >>> normalise_correction(["a", "b", "c"], ["", "B"])
    Correction(contents=('a', 'B', 'c'), changed=(1,), fallback='padded 2 -> 3')
    """
    n = len(original)
    fallback = None
    if replied is None:
        replied, fallback = [], "unparseable"
    elif len(replied) < n:
        fallback = f"padded {len(replied)} -> {n}"
    elif len(replied) > n:
        fallback = f"truncated {len(replied)} -> {n}"
    contents, changed = [], []
    for i, orig in enumerate(original):
        new = replied[i].strip() if i < len(replied) and isinstance(replied[i], str) else ""
        if max_chars is not None:
            new = new[:max_chars]
        if not new or new == orig.strip():
            contents.append(orig)
        else:
            contents.append(new)
            changed.append(i)
    return Correction(tuple(contents), tuple(changed), fallback)


def _lenient_steps(raw: str) -> list[str] | None:
    """The ``steps`` list of a reply that failed validation, if any can be read."""
    start, end = raw.find("{"), raw.rfind("}")
    try:
        data = json.loads(raw[start : end + 1] if 0 <= start < end else raw)
    except (ValueError, TypeError):
        return None
    steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(steps, list):
        return None
    return [s if isinstance(s, str) else json.dumps(s) for s in steps]


def _correct_max_tokens(n: int, settings: DcfaSettings, context_window: int) -> int:
    if settings.correct_max_tokens is not None:
        return settings.correct_max_tokens
    return min(n * (settings.max_corrected_step_chars // 3 + 4) + 64, max(256, context_window // 3))


def correct_trace(trace: Trace, gca: GcaResult, gw: Gateway, settings: DcfaSettings, *,
                  item: str | None = None) -> Correction:
    """Correct(Ŷ, T, T^e, R^e, G): a corrected version of the whole trace (eq. 8).

    Parameters
    ----------
    trace : Trace, N steps
    gca : GcaResult, deviations and graph
    gw : Gateway; stage ``dcfa.lce``
    settings : DcfaSettings (``max_corrected_step_chars``, ``correct_max_tokens``)
    item : str or None, usage item; None = ``trace.id``

    Returns
    -------
    Correction with exactly N contents; ``fallback`` set when the reply still
    had the wrong step count after the gateway's repairs (see :func:`normalise_correction`).

    Raises
    ------
    UnknownStageError, EndpointUnreachableError, LLMCallError
        From the gateway (a reply that stays invalid is *not* raised: it falls back).

    References
    ----------
    DCFA section 4.2.1, eq. 8; appendix L, Figure 11.
    """
    n = len(trace)
    ctx = gw.profile_for(STAGE).context_window
    max_tokens = _correct_max_tokens(n, settings, ctx)
    messages = prompts.correct_messages(
        trace.question, trace.ground_truth, trace.steps, gca.deviations, graph_edges(gca.graph),
        max_chars=settings.max_corrected_step_chars, budget=_lce_budget(gw, settings, n),
    )
    original = [s.content for s in trace.steps]
    try:
        reply = gw.structured(STAGE, messages, prompts.corrected_trace_model(n, settings.max_corrected_step_chars),
                              item=item or trace.id, max_tokens=max_tokens)
    except StructuredOutputError as exc:
        return _fallback(original, exc.raw, settings)
    return normalise_correction(original, reply.steps, max_chars=settings.max_corrected_step_chars)


def _fallback(original: Sequence[str], raw: str, settings: DcfaSettings) -> Correction:
    steps = _lenient_steps(raw)
    out = normalise_correction(original, steps, max_chars=settings.max_corrected_step_chars)
    if out.fallback is None:  # right count but invalid otherwise (e.g. non-strings)
        out = out._replace(fallback="invalid reply, read leniently")
    return out


def _lce_budget(gw: Gateway, settings: DcfaSettings, n: int) -> int:
    ctx = gw.profile_for(STAGE).context_window
    biggest = max(_correct_max_tokens(n, settings, ctx), settings.simulation_max_tokens, settings.ded_max_tokens)
    return trace_budget(gw, STAGE, settings, biggest)


# ------------------------------------------------------------------ counterfactuals
def splice(original: Sequence[Step], corrected: Sequence[str], i: int) -> list[Step]:
    """The counterfactual trace T~(i): corrected steps 0..i, original steps i+1..N-1.

    Parameters
    ----------
    original : sequence of Step, length N, 0-based
    corrected : sequence of str, length N, corrected contents
    i : int in -1..N-1; -1 gives the original trace, N-1 the fully corrected one

    Returns
    -------
    list of Step, length N, indices and agents of the original.

    Raises
    ------
    ValueError
        If the lengths differ or ``i`` is outside -1..N-1.

    References
    ----------
    DCFA section 4.2.1, definition of T~(i) before eq. 9.

    Examples
    --------
    >>> steps = [Step(index=k, agent="A", content=f"o{k}") for k in range(3)]
    >>> [s.content for s in splice(steps, ["c0", "c1", "c2"], 1)]
    ['c0', 'c1', 'o2']
    """
    n = len(original)
    if len(corrected) != n:
        raise ValueError(f"corrected trace has {len(corrected)} steps, original has {n}")
    if not -1 <= i < n:
        raise ValueError(f"splice index {i} outside -1..{n - 1}")
    return [s.model_copy(update={"content": corrected[k]}) if k <= i else s for k, s in enumerate(original)]


def canonical_index(changed: Collection[int], i: int) -> int:
    """The largest changed step <= i, or -1: T~(i) equals T~(canonical_index(i)).

    Parameters
    ----------
    changed : collection of int, steps the corrector changed
    i : int in -1..N-1

    Returns
    -------
    int in -1..i

    Examples
    --------
    >>> canonical_index({1, 4}, 3), canonical_index({1, 4}, 0), canonical_index({1, 4}, 4)
    (1, -1, 4)
    """
    below = [c for c in changed if c <= i]
    return max(below) if below else -1


def delta_s(scores: Mapping[int, float], i: int) -> float:
    """Marginal attributional impact of correcting step i (DCFA eq. 11).

    Parameters
    ----------
    scores : mapping step -> S(step), cosine in [-1, 1]; key -1 is the uncorrected trace
    i : int, 0-based step index

    Returns
    -------
    float, S(i) - S(i - 1).

    Raises
    ------
    KeyError
        If S(i) or S(i - 1) has not been computed.

    Examples
    --------
    >>> delta_s({-1: 0.25, 0: 0.75}, 0)
    0.5
    """
    return scores[i] - scores[i - 1]


class CounterfactualScorer:
    """S(i) for the counterfactual traces of one trace, memoised and evaluated concurrently.

    The corrected trace is made lazily, on the first score needed, so a
    hypothesis without neighbours costs no Correct call.

    Parameters
    ----------
    trace : Trace
    gca : GcaResult
    gw : Gateway (thread-safe); Simulation on ``dcfa.lce``, Enc on ``dcfa.embed``
    settings : DcfaSettings
    pool : ThreadPoolExecutor or None; None evaluates sequentially
    correct : callable (trace, gca, gw, settings, item=...) -> Correction; default :func:`correct_trace`
    item : str or None, usage item; None = ``trace.id``

    Attributes
    ----------
    simulated : dict canonical i -> outcome text (each distinct T~(i) simulated once)
    """

    def __init__(self, trace: Trace, gca: GcaResult, gw: Gateway, settings: DcfaSettings,
                 pool: ThreadPoolExecutor | None = None,
                 correct: Callable[..., Correction] = correct_trace, item: str | None = None) -> None:
        self.trace, self.gca, self.gw, self.settings, self.pool = trace, gca, gw, settings, pool
        self.item = item or trace.id
        self._correct = correct
        self._correction: Correction | None = None
        self._s: dict[int, float] = {}
        self.simulated: dict[int, str] = {}
        self._lock = threading.Lock()
        self._truth: np.ndarray | None = None

    @property
    def correction(self) -> Correction | None:
        """The corrected trace, or None if nothing has been scored yet."""
        return self._correction

    def _ensure_correction(self) -> Correction:
        with self._lock:
            if self._correction is None:
                self._correction = self._correct(self.trace, self.gca, self.gw, self.settings, item=self.item)
            return self._correction

    def _simulate(self, i: int) -> str:
        corr = self._correction
        assert corr is not None
        steps = splice(self.trace.steps, corr.contents, i)
        truth = self.trace.ground_truth if self.settings.simulation_sees_truth else None
        msgs = prompts.simulation_messages(self.trace.question, steps, i, truth=truth,
                                           budget=_lce_budget(self.gw, self.settings, len(self.trace)))
        reply = self.gw.structured(STAGE, msgs, prompts.SimulatedOutcome, item=self.item,
                                   max_tokens=self.settings.simulation_max_tokens)
        return reply.outcome.strip()

    @property
    def scores(self) -> dict[int, float]:
        """S(i) for every i requested so far (a copy)."""
        with self._lock:
            return dict(self._s)

    def __call__(self, indices: Collection[int]) -> dict[int, float]:
        """S(i) for each i in ``indices`` (each in -1..N-1).

        Distinct counterfactual traces not yet scored are simulated
        concurrently on the pool, then embedded in one ``dcfa.embed`` call.

        Returns
        -------
        dict i -> S(i), cosine in [-1, 1].

        Raises
        ------
        ValueError
            If an index is outside -1..N-1.
        StructuredOutputError, EndpointUnreachableError, LLMCallError
            From Correct's gateway errors (not its invalid replies) or a Simulation reply.
        """
        n = len(self.trace)
        bad = [i for i in indices if not -1 <= i < n]
        if bad:
            raise ValueError(f"counterfactual indices {bad} outside -1..{n - 1}")
        corr = self._ensure_correction()
        canon = {i: canonical_index(corr.changed, i) for i in indices}
        with self._lock:
            todo = sorted({c for c in canon.values() if c not in self.simulated})
        if todo:
            outcomes = list(self.pool.map(self._simulate, todo)) if self.pool else [self._simulate(c) for c in todo]
            if self._truth is None:
                vecs = self.gw.embed(EMBED_STAGE, [self.trace.ground_truth, *outcomes], item=self.item)
                self._truth, vecs = vecs[0], vecs[1:]
            else:
                vecs = self.gw.embed(EMBED_STAGE, outcomes, item=self.item)
            with self._lock:
                for c, text, v in zip(todo, outcomes, vecs):
                    self.simulated[c] = text
                    self._s[c] = float(np.clip(np.dot(v, self._truth), -1.0, 1.0))
        with self._lock:
            for i, c in canon.items():
                self._s[i] = self._s[c]
            return {i: self._s[i] for i in indices}


# ------------------------------------------------------------------ search
def _neighbours(graph: nx.DiGraph, pivot: int, direction: str) -> list[int]:
    if pivot not in graph:
        return []
    nbrs = graph.successors(pivot) if direction == "forward" else graph.predecessors(pivot)
    return sorted(int(x) for x in nbrs)


def bidirectional_search(graph: nx.DiGraph, hypothesis: int, evaluate: Evaluate, *,
                         max_iterations: int) -> SearchResult:
    """Greedy bidirectional search from the hypothesis on the dependency graph (Algorithm 2).

    Forward search: the candidates of pivot p are its **successors**
    {j | (p, j) ∈ E} (eq. 12); backward search: its **predecessors**
    {k | (k, p) ∈ E} (eq. 13). Both start at the hypothesis. In each
    iteration all candidates are scored (one ``evaluate`` call, so their
    simulations run concurrently), the one with the largest ΔS is taken
    (ties: the lower step), and it becomes the pivot if ΔS > 0; otherwise,
    with no candidates, or after ``max_iterations`` moves, that direction stops.
    Note: the authors' released code swaps the names "forward" and
    "backward"; this function follows the paper (forward = successors).
    Edges always point from an earlier to a later step (validated), so each
    direction moves monotonically and terminates even without the cap.

    Parameters
    ----------
    graph : networkx.DiGraph over 0-based steps
    hypothesis : int, the GCA hypothesis (initial pivot p(0))
    evaluate : callable taking a collection of step indices (-1..N-1) and
        returning a mapping index -> S(index); called with each candidate j and j - 1
    max_iterations : int >= 0, most pivot moves per direction

    Returns
    -------
    SearchResult

    Raises
    ------
    ValueError
        If ``max_iterations`` is negative.

    References
    ----------
    DCFA section 4.2.1, eqs. 11 to 13; appendix K, Algorithm 2.

    Examples
    --------
    >>> g = nx.DiGraph([(0, 1), (1, 2)])
    >>> s = {-1: 0.0, 0: 0.1, 1: 0.5, 2: 0.6}
    >>> r = bidirectional_search(g, 1, lambda idx: {i: s[i] for i in idx}, max_iterations=5)
    >>> r.visited, r.stopped
    ((1, 2, 0), {'forward': 'no_neighbours', 'backward': 'no_neighbours'})
    """
    if max_iterations < 0:
        raise ValueError(f"max_iterations must be >= 0, got {max_iterations}")
    evaluated: list[SearchStep] = []
    path: list[SearchStep] = []
    visited = [hypothesis]
    stopped: dict[str, str] = {}
    for direction in ("forward", "backward"):
        pivot = hypothesis
        iteration = 0
        while True:
            nbrs = _neighbours(graph, pivot, direction)
            if not nbrs:
                stopped[direction] = "no_neighbours"
                break
            if iteration >= max_iterations:
                stopped[direction] = "max_iterations"
                break
            iteration += 1
            scores = evaluate(sorted({x for j in nbrs for x in (j, j - 1)}))
            ranked = sorted(((delta_s(scores, j), -j) for j in nbrs), reverse=True)
            best_ds, best = ranked[0][0], -ranked[0][1]
            accept = best_ds > 0
            for j in nbrs:
                st = SearchStep(direction, iteration, pivot, j, scores[j], delta_s(scores, j), accept and j == best)
                evaluated.append(st)
                if st.accepted:
                    path.append(st)
            if not accept:
                stopped[direction] = "no_positive"
                break
            pivot = best
            if best not in visited:
                visited.append(best)
    return SearchResult(tuple(evaluated), tuple(path), tuple(visited), stopped)


# ------------------------------------------------------------------ DED
def decide(trace: Trace, candidates: Sequence[int], graph: nx.DiGraph, gw: Gateway,
           settings: DcfaSettings, *, item: str | None = None) -> Decision:
    """DED(Ŷ, T^c, G): the decisive error among the candidate steps.

    Parameters
    ----------
    trace : Trace
    candidates : sequence of int, {hypothesis} ∪ visited (0-based)
    graph : networkx.DiGraph, the dependency graph (all its edges are shown)
    gw : Gateway; stage ``dcfa.lce``
    settings : DcfaSettings (``ded_max_tokens``, ``max_reason_chars``)
    item : str or None, usage item; None = ``trace.id``

    Returns
    -------
    Decision; with a single candidate no call is made (``skipped=True``).

    Raises
    ------
    ValueError
        If ``candidates`` is empty.
    StructuredOutputError
        If the reply names a non-candidate step after every repair.

    References
    ----------
    DCFA appendix K, Algorithm 2 (last line); appendix L, Figure 13.
    """
    cands = tuple(sorted(set(candidates)))
    if not cands:
        raise ValueError("DED needs at least one candidate step")
    if len(cands) == 1:
        return Decision(cands[0], "", True)
    msgs = prompts.ded_messages(trace.question, trace.ground_truth, [trace.steps[c] for c in cands],
                                graph_edges(graph), budget=_lce_budget(gw, settings, len(trace)))
    reply = gw.structured(STAGE, msgs, prompts.decision_model(cands, settings.max_reason_chars),
                          item=item or trace.id, max_tokens=settings.ded_max_tokens)
    return Decision(int(reply.step), reply.reason.strip()[: settings.max_reason_chars], False)


def run_lce(trace: Trace, gca: GcaResult, gw: Gateway, settings: DcfaSettings, *,
            item: str | None = None) -> LceResult:
    """Refine GCA's hypothesis by counterfactual-inspired search and DED (Algorithm 2).

    Parameters
    ----------
    trace : Trace
    gca : GcaResult
    gw : Gateway
    settings : DcfaSettings (``max_iterations``, ``max_workers`` and the LCE caps)
    item : str or None, usage item of every call; None = ``trace.id``

    Returns
    -------
    LceResult

    Raises
    ------
    StructuredOutputError
        If a Simulation or DED reply stays invalid after the gateway's repairs.
    UnknownStageError, EndpointUnreachableError, LLMCallError
        From the gateway.

    References
    ----------
    DCFA section 4.2; appendix K, Algorithm 2.
    """
    with ThreadPoolExecutor(max_workers=settings.max_workers, thread_name_prefix="dcfa-sim") as pool:
        scorer = CounterfactualScorer(trace, gca, gw, settings, pool, item=item)
        search = bidirectional_search(gca.graph, gca.hypothesis_step, scorer, max_iterations=settings.max_iterations)
    candidates = tuple(sorted(set(search.visited)))
    decision = decide(trace, candidates, gca.graph, gw, settings, item=item)
    return LceResult(search, candidates, decision, scorer.correction, scorer.scores, dict(scorer.simulated))
