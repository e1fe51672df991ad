"""LCE, the Local Counterfactual-inspired Enhancement module of DCFA (section 4.2, Algorithm 2).

* **Correct** (eq. 8): one corrected version of the whole trace, conditioned
  on the truth, the deviations and the graph, every step in place. The reply
  names each step by number (``{step, content}``, ``""`` = unchanged), see
  :mod:`agentcausal.attribution.dcfa.correct`.
* **Counterfactual trace** for step i (:func:`splice`): corrected steps 0..i,
  original steps i+1..N-1; i = -1 is the original trace, i = N-1 the fully
  corrected one.
* **Simulation** (eq. 9) predicts the counterfactual trace's final answer;
  **S(i)** = cosine(Enc(outcome i), Enc(truth)) (eq. 10), with Enc the
  ``dcfa.embed`` stage. Without ground truth (the ``no_truth`` variant, beyond
  the paper) S(i) is instead a judge's probability, in [0, 1], that outcome
  i answers the question correctly (one ``dcfa.lce`` call per distinct
  outcome; the judge sees the question and the outcome only). An empty
  simulated outcome is an error (it cannot be scored). **S(-1)**, "nothing corrected", is defined as the
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
  the next pivot, until none is positive or ``max_iterations`` moves (None =
  no cap: the search ends within n moves because edges point forward).
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
(code github.com/wzhSteve/DCFA), section 4.2,
eqs. 8 to 13; appendix K, Algorithm 2; appendix L, Figures 11 to 13.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import networkx as nx
import numpy as np

from agentcausal.attribution.dcfa import prompts
from agentcausal.attribution.dcfa.correct import (
    STAGE,
    Correction,
    correct_trace,
    lce_budget,
    lce_tokens,
    normalise_correction,
)
from agentcausal.attribution.dcfa.gca import GcaResult, graph_edges
from agentcausal.attribution.dcfa.search import SearchResult, SearchStep, bidirectional_search, delta_s
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

#: routed stage of the outcome encoder Enc
EMBED_STAGE = "dcfa.embed"


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
        s = self.settings
        steps = splice(self.trace.steps, corr.contents, i)
        truth = self.trace.ground_truth if s.simulation_sees_truth and s.with_ground_truth else None
        msgs = prompts.simulation_messages(self.trace.question, steps, i, truth=truth,
                                           budget=lce_budget(self.gw, s, len(self.trace)), style=s.prompts)
        model = prompts.simulation_model(s.prompts)
        reply = self.gw.structured(STAGE, msgs, model, item=self.item, max_tokens=lce_tokens(self.gw, s)[0])
        outcome = reply.outcome.strip()
        if not outcome:
            raise StructuredOutputError(STAGE, model.__name__, "", 1, f"empty simulated outcome of T~({i})")
        return outcome

    def _judge(self, outcome: str) -> float:
        reply = self.gw.structured(STAGE, prompts.judge_messages(self.trace.question, outcome), prompts.JudgeReply,
                                   item=self.item, max_tokens=lce_tokens(self.gw, self.settings)[2])
        return float(reply.probability)

    def _score(self, outcomes: list[str]) -> list[float]:
        """S of each outcome: cosine to the truth (eq. 10), or the judge's probability without truth."""
        if not self.settings.with_ground_truth:
            return list(self.pool.map(self._judge, outcomes)) if self.pool else [self._judge(o) for o in outcomes]
        if self._truth is None:
            vecs = self.gw.embed(EMBED_STAGE, [self.trace.ground_truth, *outcomes], item=self.item)
            self._truth, vecs = vecs[0], vecs[1:]
        else:
            vecs = self.gw.embed(EMBED_STAGE, outcomes, item=self.item)
        return [float(np.clip(np.dot(v, self._truth), -1.0, 1.0)) for v in vecs]

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
        dict i -> S(i): cosine in [-1, 1], or a probability in [0, 1] without truth.

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
            scores = self._score(outcomes)
            with self._lock:
                for c, text, v in zip(todo, outcomes, scores):
                    self.simulated[c] = text
                    self._s[c] = v
        with self._lock:
            for i, c in canon.items():
                self._s[i] = self._s[c]
            return {i: self._s[i] for i in indices}


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
    truth = trace.ground_truth if settings.with_ground_truth else None
    msgs = prompts.ded_messages(trace.question, truth, [trace.steps[c] for c in cands],
                                graph_edges(graph), budget=lce_budget(gw, settings, len(trace)), style=settings.prompts)
    reply = gw.structured(STAGE, msgs, prompts.decision_model(cands, settings.max_reason_chars),
                          item=item or trace.id, max_tokens=lce_tokens(gw, settings)[1])
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
        cap = settings.max_iterations if settings.max_iterations is not None else len(trace)
        search = bidirectional_search(gca.lce_graph, gca.hypothesis_step, scorer, max_iterations=cap)
    candidates = tuple(sorted(set(search.visited)))
    decision = decide(trace, candidates, gca.lce_graph, gw, settings, item=item)
    return LceResult(search, candidates, decision, scorer.correction, scorer.scores, dict(scorer.simulated))
