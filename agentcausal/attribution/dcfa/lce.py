"""LCE, the Local Counterfactual-inspired Enhancement module of DCFA (section 4.2, Algorithm 2).

* **Correct** (eq. 8): one corrected version of the whole trace, conditioned
  on the truth, the deviations and the graph, every step in place
  (:mod:`agentcausal.attribution.dcfa.correct`).
* **Counterfactual trace** for step i (:func:`splice`): corrected steps 0..i,
  original steps i+1..N-1, matched by step number; i = -1 is the original
  trace, i = N-1 the fully corrected one. (The released code slices its
  corrected and original event lists by list position, so a corrected reply
  with a step too few or too many shifts the splice: a bug, fixed here.)
* **Simulation** (eq. 9) predicts the counterfactual trace's final answer;
  **S(i)** = cosine(Enc(answer i), Enc(truth)) (eq. 10), with Enc the
  ``dcfa.embed`` stage and newlines replaced by spaces before embedding (as
  the released code does). Without ground truth (the ``no_truth`` variant,
  beyond the paper) S(i) is instead a judge's probability, in [0, 1], that
  answer i answers the question correctly (one ``dcfa.lce`` call per distinct
  answer; the judge sees the question and the answer only). An empty
  simulated answer cannot be scored.
* **ΔS(i)** = S(i) - S(i-1) (eq. 11). Setting ``simulation``:

  - ``"code"`` (``paper``, the released ``calculate_total_effect``): each
    candidate i has its own two simulations: S(i) of T~(i) with candidate i
    named as the root cause together with the steps it directly affects, and
    S(i-1) of T~(i-1) with the same prompt and no root cause named. A
    candidate the corrected reply gave no content for is not scored (the
    released code means ΔS = 0 there and crashes on it; either way it is never
    accepted).
  - ``"equations"`` (the paper's text; ``small``): one neutral simulation per
    counterfactual trace, S(i-1) is the score of T~(i-1), and S(-1) is the
    simulated original trace. If the corrector left step i unchanged, T~(i)
    and T~(i-1) are one trace, so S(i) = S(i-1) exactly
    (:func:`canonical_index`).

  Each distinct request is simulated once per run (in-memory memo) and once
  ever (the gateway's disk cache).
* **Bidirectional greedy search** (:mod:`agentcausal.attribution.dcfa.search`),
  with the neighbours of :meth:`GcaResult.neighbours
  <agentcausal.attribution.dcfa.gca.GcaResult.neighbours>`.
* **DED** (:mod:`agentcausal.attribution.dcfa.ded`): the final decisive error
  among {hypothesis} and the accepted pivots.

Stages: Correct, Simulation and DED call ``dcfa.lce``; embeddings ``dcfa.embed``;
every call passes the usage item ``item`` (default ``trace.id``; :func:`run_dcfa
<agentcausal.attribution.dcfa.method.run_dcfa>` passes ``"<trace id>::<method>"`` so that
``dcfa`` and ``dcfa_gca_only`` running at once on one trace count their own calls).

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), section 4.2,
eqs. 8 to 13; appendix K, Algorithm 2; appendix L, Figures 11 to 13.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from agentcausal.attribution.dcfa import prompts
from agentcausal.attribution.dcfa.correct import (
    STAGE,
    Correction,
    correct_trace,
    lce_budget,
    lce_tokens,
)
from agentcausal.attribution.dcfa.ded import Decision, DedCandidate, decide
from agentcausal.attribution.dcfa.gca import GcaResult
from agentcausal.attribution.dcfa.search import CandidateScore, SearchResult, bidirectional_search
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import LLMCall
from agentcausal.traces.model import Step, Trace

__all__ = [
    "EMBED_STAGE",
    "Simulation",
    "LceResult",
    "splice",
    "canonical_index",
    "CounterfactualScorer",
    "run_lce",
]

#: routed stage of the outcome encoder Enc
EMBED_STAGE = "dcfa.embed"


class Simulation(NamedTuple):
    """One simulated counterfactual.

    Attributes
    ----------
    through : int, i of T~(i) (-1 = the original trace)
    named : int or None, the root-cause step the prompt named (``simulation="code"``), else None
    outcome : str, the simulated final answer
    reason : str or None, the reason (or reasoning) the reply gave
    s : float, its score
    """

    through: int
    named: int | None
    outcome: str
    reason: str | None
    s: float


class LceResult(NamedTuple):
    """Everything LCE produced for one trace.

    Attributes
    ----------
    search : SearchResult
    candidates : tuple of int, {hypothesis} ∪ accepted pivots, sorted
    decision : Decision
    correction : Correction or None (None when no neighbour had to be scored)
    simulations : tuple of Simulation, every distinct simulation, in the order made
    scores : dict i -> S(i) of every candidate scored (``code``: the simulation naming i;
        ``equations``: the one S of T~(i), i = -1 included when used)
    """

    search: SearchResult
    candidates: tuple[int, ...]
    decision: Decision
    correction: Correction | None
    simulations: tuple[Simulation, ...]
    scores: dict[int, float]


# ------------------------------------------------------------------ counterfactuals
def splice(original: Sequence[Step], corrected: Sequence[str], i: int) -> list[Step]:
    """The counterfactual trace T~(i): corrected steps 0..i, original steps i+1..N-1.

    Parameters
    ----------
    original : sequence of Step, length N, 0-based
    corrected : sequence of str, length N, corrected contents (by step number)
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


class _Request(NamedTuple):
    through: int
    named: int | None
    messages: list[dict[str, str]]


class CounterfactualScorer:
    """ΔS of candidate steps of one trace, memoised and evaluated concurrently.

    The corrected trace is made lazily, on the first score needed, so a
    hypothesis without neighbours costs no Correct call.

    Parameters
    ----------
    trace : Trace
    gca : GcaResult
    call : LLMCall, the run's call context (thread-safe); Simulation on ``dcfa.lce``, Enc on ``dcfa.embed``
    settings : DcfaSettings (``simulation``, ``prompts``, ``with_ground_truth``, ...)
    pool : ThreadPoolExecutor or None; None evaluates sequentially
    correct : callable (trace, gca, call, settings) -> Correction; default :func:`correct_trace`

    Attributes
    ----------
    simulations : list of Simulation, each distinct request simulated once, in order
    reasons : dict step -> the reason the Simulation of T~(step) gave, for every candidate scored
    """

    def __init__(
        self,
        trace: Trace,
        gca: GcaResult,
        call: LLMCall,
        settings: DcfaSettings,
        pool: ThreadPoolExecutor | None = None,
        correct: Callable[[Trace, GcaResult, LLMCall, DcfaSettings], Correction] = correct_trace,
    ) -> None:
        self.trace, self.gca, self.call, self.settings, self.pool = trace, gca, call, settings, pool
        self._correct = correct
        self._correction: Correction | None = None
        self._memo: dict[str, Simulation | StructuredOutputError] = {}
        self._scores: dict[int, float] = {}
        self.reasons: dict[int, str | None] = {}
        self.simulations: list[Simulation] = []
        self._lock = threading.Lock()
        self._truth: np.ndarray | None = None

    @property
    def named(self) -> bool:
        """Whether S(i) names candidate i (``simulation="code"`` under the ``paper`` prompts)."""
        return self.settings.simulation == "code" and self.settings.prompts == "paper"

    @property
    def correction(self) -> Correction | None:
        """The corrected trace, or None if nothing has been scored yet."""
        return self._correction

    @property
    def scores(self) -> dict[int, float]:
        """S(i) of every candidate scored so far (a copy)."""
        with self._lock:
            return dict(self._scores)

    def _ensure_correction(self) -> Correction:
        with self._lock:
            if self._correction is None:
                self._correction = self._correct(self.trace, self.gca, self.call, self.settings)
            return self._correction

    def _request(self, through: int, named: int | None) -> _Request:
        corr = self._correction
        assert corr is not None
        s = self.settings
        steps = splice(self.trace.steps, corr.contents, through)
        truth = self.trace.ground_truth if s.simulation_sees_truth and s.with_ground_truth else None
        root = None
        if named is not None:
            root = prompts.RootCause(named, self.trace.steps[named].agent, self.gca.effects_of(named))
        msgs = prompts.simulation_messages(
            self.trace.question,
            steps,
            through,
            truth=truth,
            budget=lce_budget(self.call, s, len(self.trace)),
            style=s.prompts,
            variant=s.simulation,
            root=root,
        )
        return _Request(through, named, msgs)

    def _simulate(self, req: _Request) -> tuple[str, str | None] | StructuredOutputError:
        s = self.settings
        model = prompts.simulation_model(s.prompts, s.simulation)
        try:
            reply = self.call.structured(STAGE, req.messages, model, max_tokens=lce_tokens(self.call, s)[0])
        except StructuredOutputError as exc:
            return exc
        outcome = str(reply.outcome).strip()
        if not outcome:
            return StructuredOutputError(STAGE, model.__name__, "", 1, f"empty simulated outcome of T~({req.through})")
        reason = getattr(reply, "reason", None) or getattr(reply, "reasoning", None) or None
        return outcome, reason

    def _judge(self, outcome: str) -> float:
        reply = self.call.structured(
            STAGE,
            prompts.judge_messages(self.trace.question, outcome),
            prompts.JudgeReply,
            max_tokens=lce_tokens(self.call, self.settings)[2],
        )
        return float(reply.probability)

    def _score(self, outcomes: list[str]) -> list[float]:
        """S of each outcome: cosine to the truth (eq. 10), or the judge's probability without truth."""
        if not self.settings.with_ground_truth:
            return list(self.pool.map(self._judge, outcomes)) if self.pool else [self._judge(o) for o in outcomes]
        flat = [o.replace("\n", " ") for o in outcomes]  # as the released code embeds every text
        if self._truth is None:
            vecs = self.call.embed(EMBED_STAGE, [self.trace.ground_truth.replace("\n", " "), *flat])
            self._truth, vecs = vecs[0], vecs[1:]
        else:
            vecs = self.call.embed(EMBED_STAGE, flat)
        return [float(np.clip(np.dot(v, self._truth), -1.0, 1.0)) for v in vecs]

    def _run(self, requests: Sequence[_Request]) -> None:
        """Simulate and score every request not simulated yet (concurrently), into the memo."""
        keys = {}
        with self._lock:
            for r in requests:
                k = json.dumps(r.messages, sort_keys=True)
                if k not in self._memo and k not in keys:
                    keys[k] = r
        if not keys:
            return
        todo = list(keys.items())
        results = (
            list(self.pool.map(self._simulate, [r for _, r in todo]))
            if self.pool
            else [self._simulate(r) for _, r in todo]
        )
        ok = [(k, r, res) for (k, r), res in zip(todo, results) if not isinstance(res, StructuredOutputError)]
        scores = self._score([res[0] for _, _, res in ok]) if ok else []
        with self._lock:
            for (k, _r), res in zip(todo, results):
                if isinstance(res, StructuredOutputError):
                    self._memo[k] = res
            for (k, r, (outcome, reason)), v in zip(ok, scores):
                sim = Simulation(r.through, r.named, outcome, reason, v)
                self._memo[k] = sim
                self.simulations.append(sim)

    def _get(self, req: _Request) -> Simulation | StructuredOutputError:
        with self._lock:
            return self._memo[json.dumps(req.messages, sort_keys=True)]

    def __call__(self, steps: Sequence[int]) -> dict[int, CandidateScore]:
        """ΔS of each candidate step (each in 0..N-1).

        Distinct simulations not yet made run concurrently on the pool, then
        their answers are embedded in one ``dcfa.embed`` call.

        Returns
        -------
        dict step -> CandidateScore (S in [-1, 1], or a probability in [0, 1] without truth);
        ``error`` set when a Simulation reply stayed invalid or Correct gave the step no content
        (``simulation="code"``).

        Raises
        ------
        ValueError
            If a step is outside 0..N-1.
        EndpointUnreachableError, LLMCallError
            From the gateway (Correct's, a Simulation's or the encoder's transport failures).
        """
        n = len(self.trace)
        bad = [i for i in steps if not 0 <= i < n]
        if bad:
            raise ValueError(f"candidate steps {bad} outside 0..{n - 1}")
        corr = self._ensure_correction()
        pairs: dict[int, tuple[_Request, _Request] | None] = {}
        for i in steps:
            if self.named:
                pairs[i] = None if i in corr.missing else (self._request(i, i), self._request(i - 1, None))
            else:
                pairs[i] = (
                    self._request(canonical_index(corr.changed, i), None),
                    self._request(canonical_index(corr.changed, i - 1), None),
                )
        self._run([r for p in pairs.values() if p for r in p])
        out: dict[int, CandidateScore] = {}
        for i, p in pairs.items():
            if p is None:
                out[i] = CandidateScore(None, None, None, None, "Correct's reply gave no content for this step")
                continue
            cur, prev = self._get(p[0]), self._get(p[1])
            if isinstance(cur, StructuredOutputError) or isinstance(prev, StructuredOutputError):
                bad_sim = cur if isinstance(cur, StructuredOutputError) else prev
                out[i] = CandidateScore(None, None, None, None, f"{type(bad_sim).__name__}: {bad_sim}"[:300])
                continue
            out[i] = CandidateScore(cur.s, prev.s, cur.s - prev.s, cur.reason)
            with self._lock:
                self._scores[i] = cur.s
                self.reasons[i] = cur.reason
                if not self.named:
                    self._scores[i - 1] = prev.s
        return out


def run_lce(trace: Trace, gca: GcaResult, call: LLMCall, settings: DcfaSettings) -> LceResult:
    """Refine GCA's hypothesis by counterfactual-inspired search and DED (Algorithm 2).

    Parameters
    ----------
    trace : Trace
    gca : GcaResult
    call : LLMCall, the run's call context
    settings : DcfaSettings (the search rules, ``max_workers`` and the LCE caps)

    Returns
    -------
    LceResult

    Raises
    ------
    StructuredOutputError
        If the DED reply stays invalid after the gateway's repairs.
    UnknownStageError, EndpointUnreachableError, LLMCallError
        From the gateway.

    References
    ----------
    DCFA section 4.2; appendix K, Algorithm 2.
    """
    s = settings
    order = ("backward", "forward") if s.search_order == "causes_first" else ("forward", "backward")
    with ThreadPoolExecutor(max_workers=s.max_workers, thread_name_prefix="dcfa-sim") as pool:
        scorer = CounterfactualScorer(trace, gca, call, s, pool)
        cap = s.max_iterations if s.max_iterations is not None else len(trace)
        search = bidirectional_search(
            gca.neighbours,
            gca.hypothesis_step,
            scorer,
            max_iterations=cap,
            order=order,
            decimals=s.delta_s_decimals,
            ties=s.search_ties,
            revisit=s.revisit,
        )
    cands = [DedCandidate(gca.hypothesis_step, None, True)]
    cands += [DedCandidate(m.step, scorer.reasons.get(m.step)) for m in search.path if m.step != gca.hypothesis_step]
    decision = decide(trace, cands, gca.lce_graph, gca.deviations, call, s)
    candidates = tuple(sorted({gca.hypothesis_step, *(m.step for m in search.path)}))  # the steps of cands
    return LceResult(search, candidates, decision, scorer.correction, tuple(scorer.simulations), scorer.scores)
