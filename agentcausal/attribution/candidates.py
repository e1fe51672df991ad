"""Ranked candidates and confidence of an attribution: what each method yields, and nothing it does not.

Every :class:`~agentcausal.traces.model.Attribution` with a blamed step carries
``candidates``, best first, the blamed step first:

* single-answer methods (All-at-Once, Step-by-Step, Binary-Search, A2P, DCFA's
  GCA-only ablation) have one candidate, role ``answer``, no score
  (:func:`single_answer`);
* ECHO ranks the steps its panel voted for by consensus weight (the summed
  confidence of the analysts' votes, or their count under ``majority``), ties in
  the order the consensus broke them;
* DCFA (:mod:`agentcausal.attribution.dcfa.result_fields`) ranks DED's decision
  first, then the rest of its candidate set T^c (the GCA hypothesis, then the
  accepted search pivots by ΔS), then the neighbours the search evaluated but did
  not accept, by ΔS; each with S(i), S(i-1) and ΔS(i) where LCE computed them.

A method *ranks* when its candidates come from a ranking (a role other than
``answer``, :func:`ranks`); only those get a top-k column in the accuracy tables.

``confidence`` is set only where the method defines a number for its answer:

* **DCFA**: S of the counterfactual trace corrected through the blamed step i*
  (eq. 10), clipped to [0, 1]: how well correcting the run through i* rescues
  it. It is read from the simulations LCE already made, under every preset: the
  earliest simulated T~(m) with m >= i* (T~(i*) itself whenever the search
  scored i* or i* + 1; else the nearest later one, which carries the corrections
  up to m too); ``details["confidence_is"]`` names the trace. With the correct
  answer S is the embedding cosine of the simulated outcome to it; without
  (``--no-ground-truth``, the ``no_truth`` variant) the judge's probability
  that the simulated outcome answers the question correctly. Range [0, 1];
  not calibrated, so not the probability that i* is the decisive error. None
  when Correct left i* as it was, up to whitespace (no correction proposed, so
  no fix either), when LCE corrected nothing (no neighbour to score; LCE off or
  failed), or when no trace corrected through i* was simulated
  (:mod:`agentcausal.attribution.dcfa.result_fields`).
* **ECHO**: the consensus support of the blamed step, its share of the total
  consensus weight (``details["support"]``), in [0, 1].
* All-at-Once, Step-by-Step, Binary-Search, A2P: None. Their replies hold no
  score, and none is invented.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentcausal.traces.model import Candidate, Trace

__all__ = ["SINGLE_ANSWER", "single_answer", "ranks", "top_k_hit", "read_candidates", "echo_candidates"]

#: ``score_is`` of a single-answer method's one candidate
SINGLE_ANSWER = "single answer, no score"


def single_answer(trace: Trace, step: int | None) -> list[Candidate] | None:
    """The one candidate of a single-answer method, or None without a blamed step.

    Examples
    --------
    >>> from agentcausal.traces.model import Step
    >>> t = Trace(id="t", question="q", ground_truth="a", steps=[Step(index=0, agent="A", content="x")])
    >>> [(c.step, c.agent, c.role) for c in single_answer(t, 0)], single_answer(t, None)
    ([(0, 'A', 'answer')], None)
    """
    if step is None or not 0 <= step < len(trace):
        return None
    return [Candidate(step=step, agent=trace.steps[step].agent, score_is=SINGLE_ANSWER, role="answer")]


def echo_candidates(
    trace: Trace, step: int | None, scores: Mapping[int, float], tied: Sequence[int], rule: str
) -> list[Candidate] | None:
    """ECHO's voted steps, best first: the consensus step, then the others by consensus weight (ties by step).

    Parameters
    ----------
    trace : Trace
    step : int or None, the consensus step (None: undetermined, no candidates)
    scores : step -> consensus weight
    tied : the steps tied at the top (the consensus step is one of them)
    rule : ``confidence_weighted`` or ``majority`` (what the weight is)
    """
    if step is None:
        return None
    what = (
        "consensus weight: summed confidence of the analysts' votes"
        if rule == "confidence_weighted"
        else "consensus weight: number of analysts' votes"
    )
    order = [step] + sorted((s for s in scores if s != step), key=lambda s: (-scores[s], s))
    return [
        Candidate(
            step=s,
            agent=trace.steps[s].agent,
            score=float(scores.get(s, 0.0)),
            score_is=what,
            role="consensus" if s == step else "vote",
        )
        for s in order
        if 0 <= s < len(trace)
    ]


def read_candidates(value: Any) -> list[dict[str, Any]] | None:
    """Candidates as stored (a list of Candidate, of dicts, or the JSON text of ``results.parquet``) as dicts.

    Returns
    -------
    list of dict, or None when not recorded (None, NaN, ``""``, unreadable JSON).

    Examples
    --------
    >>> read_candidates('[{"step": 2, "role": "answer"}]'), read_candidates(None)
    ([{'step': 2, 'role': 'answer'}], None)
    """
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, list):
        return None
    return [c.model_dump() if isinstance(c, Candidate) else dict(c) for c in value if isinstance(c, (Candidate, dict))]


def ranks(candidates: Iterable[Any] | None) -> bool:
    """Whether candidates come from a ranking (any role other than ``answer``).

    >>> ranks([{"step": 1, "role": "answer"}]), ranks([{"step": 1, "role": "decision"}]), ranks(None)
    (False, True, False)
    """
    return any(
        (c.get("role") if isinstance(c, Mapping) else getattr(c, "role", "answer")) != "answer"
        for c in (candidates or [])
    )


def top_k_hit(candidates: Sequence[Any] | None, true_step: int | None, k: int) -> bool:
    """Whether the labelled step is among the first ``k`` candidates (exact 0-based match).

    >>> top_k_hit([{"step": 4}, {"step": 2}, {"step": 7}], 7, 3), top_k_hit([{"step": 4}], 4, 0), top_k_hit(None, 1, 3)
    (True, False, False)
    """
    if true_step is None or not candidates:
        return False
    steps = [c.get("step") if isinstance(c, Mapping) else getattr(c, "step", None) for c in list(candidates)[:k]]
    return int(true_step) in [int(s) for s in steps if s is not None]
