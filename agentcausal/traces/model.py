"""Trace, Step, Label and Attribution: the data model of failure attribution.

Step indices are **0-based** everywhere, as in Who&When (``mistake_step`` is a
0-based index into ``history``; in Hand-Crafted traces step 0 is the human query).

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated
Failure Attribution of LLM Multi-Agent Systems." ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import functools
import hashlib
import json
import unicodedata
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticSerializationError, to_json

from agentcausal.records import RunRecord
from agentcausal.traces.text import clean_text

__all__ = ["Step", "Label", "Trace", "TraceFacts", "Attribution", "Candidate", "CorrectedAction", "normalise_agent"]


def _drop_trailing_parenthetical(name: str) -> str:
    """``"Orchestrator (-> WebSurfer (x))"`` -> ``"Orchestrator"``; balanced groups only, repeatedly."""
    text = name.rstrip()
    while text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                break
        if depth != 0 or i == 0:
            break  # unbalanced, or the whole name is a parenthetical: keep it
        text = text[:i].rstrip()
    return text


_IGNORED = str.maketrans("", "", " \t\n_-*`~")
_EMPHASIS = str.maketrans("", "", "*`~")


def normalise_agent(name: str | None) -> str:
    """Canonical agent name for comparison.

    A trailing parenthetical is dropped first (Hand-Crafted's
    ``"Orchestrator (thought)"``, ``"Orchestrator (-> WebSurfer)"``), then the
    name is NFKC-normalised and case-folded, and spaces, ``_``, ``-`` and
    markdown emphasis (``*``, backticks, ``~``) are ignored, as are quotes
    around the whole name.

    Parameters
    ----------
    name : str or None

    Returns
    -------
    str, ``""`` for None or an empty name.

    Examples
    --------
    >>> normalise_agent("Orchestrator (-> WebSurfer)")
    'orchestrator'
    >>> normalise_agent("**Verification_Expert**") == normalise_agent("verification expert")
    True
    >>> normalise_agent("Web-Surfer") == normalise_agent("WebSurfer") == normalise_agent("`websurfer`")
    True
    """
    if not name:
        return ""
    return _canonical_agent(name)


@functools.lru_cache(maxsize=4096)  # a run compares the same few names on every row
def _canonical_agent(name: str) -> str:
    text = unicodedata.normalize("NFKC", name).strip().strip("\"'")
    text = _drop_trailing_parenthetical(text.translate(_EMPHASIS).strip())
    return text.casefold().translate(_IGNORED)


def _clean_fields(model: BaseModel, fields: tuple[str, ...]) -> None:
    """:func:`~agentcausal.traces.text.clean_text` on text ``fields`` of a model being validated (frozen: set in
    its ``__dict__``, as validation sets them)."""
    values = model.__dict__
    for f in fields:
        v = values[f]
        if not v.isascii():
            values[f] = clean_text(v)


class Step(BaseModel):
    """One message of a trace.

    Attributes
    ----------
    index : int, 0-based position in the trace
    agent : str, the speaking agent (Who&When: ``name``, or ``role`` cut at the first space)
    role : str, the raw role field (``assistant``, ``user``, ``Orchestrator (thought)`` ...)
    content : str
    metadata : dict, where the step came from in an imported trace (``span_id``, ``trace_id`` ...);
        not part of :meth:`Trace.content_hash`
    """

    model_config = ConfigDict(frozen=True)

    index: int = Field(ge=0)
    agent: str
    role: str = ""
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _valid_unicode(self) -> "Step":
        # lone surrogates (valid JSON, invalid Unicode) break hashing, JSON encoders and HTTP bodies; one call per
        # step for its three text fields (a validator per field costs a Python call each), none for ASCII text
        d = self.__dict__
        if not (d["content"].isascii() and d["agent"].isascii() and d["role"].isascii()):
            _clean_fields(self, ("agent", "role", "content"))
        return self


class Label(BaseModel):
    """The annotated decisive error of a failed trace (Who&When ``mistake_*``)."""

    model_config = ConfigDict(frozen=True)

    agent: str
    step: int = Field(ge=0)
    reason: str = ""


def _canonical_bytes(trace: Trace) -> bytes | None:
    """The UTF-8 bytes of :meth:`Trace.content_hash`'s canonical JSON, each string escaped by
    ``pydantic_core.to_json`` (escapes exactly as ``json.dumps(..., ensure_ascii=False)`` does: ``"``, ``\\`` and
    U+0000..U+001F, nothing else), about three times as fast; None where a field is not a plain ``str``/``int``
    or a string does not encode (a lone surrogate): the reference then says what it gives."""
    q, gt = trace.question, trace.ground_truth
    if type(q) is not str or type(gt) is not str:
        return None
    try:
        parts = []
        names: dict[str, bytes] = {}  # agents and roles repeat: each escaped once
        for s in trace.steps:
            i, a, r, c = s.index, s.agent, s.role, s.content
            if type(i) is not int or type(a) is not str or type(r) is not str or type(c) is not str:
                return None
            ea = names.get(a)
            if ea is None:
                ea = names[a] = to_json(a)
            er = names.get(r)
            if er is None:
                er = names[r] = to_json(r)
            parts.append(b"[%d, %b, %b, %b]" % (i, ea, er, to_json(c)))
        return b"".join(
            (
                b'{"ground_truth": ',
                to_json(gt),
                b', "question": ',
                to_json(q),
                b', "steps": [',
                b", ".join(parts),
                b"]}",
            )
        )
    except PydanticSerializationError:
        return None


class Trace(BaseModel):
    """A failed multi-agent run.

    Attributes
    ----------
    id : str, unique within a corpus (e.g. ``"algorithm-generated/38"``)
    source : str, subset or origin (``"Algorithm-Generated"``, ``"Hand-Crafted"``, ``"examples"``)
    question : str
    ground_truth : str, the correct final answer
    steps : list of Step, indices 0..n-1 in order
    label : Label or None

    Raises
    ------
    pydantic.ValidationError
        If the steps are empty, not numbered 0..n-1 in order, or the label step is out of range.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    source: str = ""
    question: str
    ground_truth: str
    steps: list[Step]
    label: Label | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> "Trace":
        _clean_fields(self, ("id", "source", "question", "ground_truth"))
        if not self.steps:
            raise ValueError(f"trace {self.id!r} has no steps")
        for i, s in enumerate(self.steps):
            if s.index != i:
                raise ValueError(f"trace {self.id!r}: step at position {i} has index {s.index}")
        if self.label is not None and self.label.step >= len(self.steps):
            raise ValueError(f"trace {self.id!r}: label step {self.label.step} out of range 0..{len(self.steps) - 1}")
        return self

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def agents(self) -> list[str]:
        """Distinct agents in order of first appearance."""
        seen: dict[str, None] = {}
        for s in self.steps:
            seen.setdefault(s.agent, None)
        return list(seen)

    def content_hash(self) -> str:
        """sha256 hex of the canonical JSON of question, ground truth and steps
        (not the label, so relabelling does not invalidate attributions).

        The canonical JSON is ``json.dumps({"question", "ground_truth", "steps": [[index, agent, role, content],
        ...]}, sort_keys=True, ensure_ascii=False)`` in UTF-8; :func:`_canonical_bytes` writes the same bytes
        faster, and this is the reference it falls back to.
        """
        fast = _canonical_bytes(self)
        if fast is not None:
            return hashlib.sha256(fast).hexdigest()
        payload = json.dumps(
            {
                "question": self.question,
                "ground_truth": self.ground_truth,
                "steps": [[s.index, s.agent, s.role, s.content] for s in self.steps],
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def facts(self) -> TraceFacts:
        """What scoring an attribution of this trace reads (:class:`TraceFacts`)."""
        lab = self.label
        spans = [s.metadata.get("span_id") for s in self.steps]
        return TraceFacts(
            sha256=self.content_hash(),
            source=self.source,
            n_steps=len(self.steps),
            label_agent=lab.agent if lab is not None else None,
            label_step=lab.step if lab is not None else None,
            label_speaker=self.steps[lab.step].agent if lab is not None else None,
            span_ids=tuple(None if v is None else str(v) for v in spans) if any(spans) else (),
            failure_modes="; ".join(self.metadata.get("failure_modes") or []) or None,
        )


class TraceFacts(BaseModel):
    """What scoring an attribution of a trace reads, taken from the trace once (:meth:`Trace.facts`).

    A run's plan keeps them per item (:class:`agentcausal.runs.plan.PlanItem`), so writing the scored
    results reads no trace again.

    Attributes
    ----------
    sha256 : str, :meth:`Trace.content_hash`
    source : str, the trace's subset or origin
    n_steps : int, its number of steps
    label_agent, label_step : the label's agent and 0-based step; both None for an unlabelled trace
    label_speaker : str or None, the agent of the labelled step as the trace names it
    span_ids : tuple of (str or None), each step's ``span_id`` (imported traces); empty when no step has one
    failure_modes : str or None, the trace's annotated failure modes joined by ``"; "`` (MAST)
    """

    model_config = ConfigDict(frozen=True)

    sha256: str
    source: str = ""
    n_steps: int = Field(ge=0)
    label_agent: str | None = None
    label_step: int | None = Field(default=None, ge=0)
    label_speaker: str | None = None
    span_ids: tuple[str | None, ...] = ()
    failure_modes: str | None = None


class Candidate(BaseModel):
    """One ranked candidate for the decisive error (:attr:`Attribution.candidates`, best first).

    Attributes
    ----------
    step : int, 0-based
    agent : str or None, the speaker of that step
    score : float or None, the number the method ranked by (None: the method gives none for it)
    score_is : str, what ``score`` is (e.g. ``"ΔS(i) = S(i) - S(i-1), cosine to the truth"``,
        ``"consensus weight"``, ``"single answer, no score"``)
    role : str, why the step is a candidate: ``answer`` (a single-answer method's one step), DCFA's
        ``decision`` / ``hypothesis`` / ``pivot`` / ``neighbour``, ECHO's ``consensus`` / ``vote``
    s, s_prev, delta_s : float or None, DCFA's S(i), S(i-1) and ΔS(i) where LCE computed them
    """

    model_config = ConfigDict(frozen=True)

    step: int = Field(ge=0)
    agent: str | None = None
    score: float | None = None
    score_is: str = ""
    role: str = "answer"
    s: float | None = None
    s_prev: float | None = None
    delta_s: float | None = None


class CorrectedAction(BaseModel):
    """What the blamed step should have said, and what the run would then have given.

    Attributes
    ----------
    step : int, the 0-based blamed step
    content : str, the corrected content of that step
    changed : bool, the content differs from the original (a corrector may leave a step as it was)
    outcome : str or None, the final answer the run would give with the correction (simulated or
        predicted by the method); None when the method did not simulate it
    outcome_score : float or None, how that outcome scored (DCFA: S of the corrected trace)
    source : str, how it was obtained (e.g. ``"dcfa: Correct (eq. 8) and Simulation of T~(i)"``)
    """

    model_config = ConfigDict(frozen=True)

    step: int = Field(ge=0)
    content: str
    changed: bool = True
    outcome: str | None = None
    outcome_score: float | None = None
    source: str = ""


class Attribution(RunRecord):
    """One method's answer for one trace (a :class:`~agentcausal.records.RunRecord`).

    Attributes
    ----------
    trace_id : str
    step : int or None, predicted 0-based decisive-error step; None when undetermined or failed
    agent : str or None
    reason : str
    settings : dict, the method settings that produced it (enter the cache key)
    candidates : list of Candidate or None, ranked, best first (the answer first); None = not recorded
        (a failed method, or a record older than the field)
    confidence : float in [0, 1] or None, only where the method defines one (DCFA, ECHO:
        :mod:`agentcausal.attribution.candidates`); never invented
    evidence : str or None, a verbatim quote from the blamed step (checked to be a substring of it)
    evidence_note : str or None, why there is no evidence where one was asked for (a quote that was not
        in the blamed step is dropped and named here)
    corrected_action : CorrectedAction or None, the blamed step corrected and the outcome with it

    The fields every record holds (``method``, ``prompt_version``, ``models``, ``usage``, ``seconds``,
    ``error``, ``details``, ``status``, ``status_detail``, ``failure``, ``reused``) are :class:`RunRecord`'s.
    """

    trace_id: str
    step: int | None = None
    agent: str | None = None
    reason: str = ""
    settings: dict[str, Any] = Field(default_factory=dict)
    candidates: list[Candidate] | None = None
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    evidence: str | None = None
    evidence_note: str | None = None
    corrected_action: CorrectedAction | None = None
