"""ECHO: hierarchical context, a panel of objective analysts, and consensus voting.

ECHO (Error attribution through Contextual Hierarchy and Objective consensus
analysis) looks at each suspect step through context of decreasing detail with
distance, lets several analysts with different focus judge it independently,
and takes the verdict by confidence-weighted consensus. ECHO has no official
code; this is a reimplementation from its paper with the DCFA paper's cost
(two full-context calls per trace, about 300 tokens of prompt each plus the trace):

1. **Scan** (one call, the whole trace; :class:`EchoScan`): the model notes
   hand-offs, decisions, observable errors and patterns and lists candidate
   steps for the decisive error, most likely first (at most ``max_candidates``).
2. **Hierarchical context** (no call; :func:`hierarchical_view`). For each
   candidate step *c*, every step *j* is shown at the level of its distance
   ``d = |j - c|``, as in ECHO's four layers: L1 (``d <= l1_radius``, ECHO ±1)
   the step in full; L2 (``d <= l2_radius``, ECHO ±2-3) its key lines
   (:func:`key_lines`: lines that report errors, decisions, results or
   hand-offs, by regular expressions as ECHO extracts content, up to
   ``l2_chars``); L3 (``d <= l3_radius``, ECHO ±4-6) a summary (first
   sentence and warning lines, up to ``l3_chars``); beyond that L4, shared by
   all candidates as one **global view**: one milestone line per step
   (``l4_chars``) with markers for errors, decisions and hand-offs.
3. **Panel** (one call; :class:`EchoPanelReply`): the global view and each
   candidate's L1-L3 window; every analyst in ``analysts`` (a focus from
   :data:`ANALYSTS`, ECHO's panel runs from conservative to balanced) gives a
   hypothesis, the evidence, a vote (one candidate step and the responsible
   agent, among the trace's own agents) and a confidence in [0, 1].
4. **Consensus** (no call; :func:`consensus`, rule pinned by tests). Votes
   with confidence below ``min_confidence`` are dropped; a vote weighs its
   confidence (``consensus = "confidence_weighted"``, ECHO's rule) or 1
   (``"majority"``); the step with the largest total wins. Ties
   (``tie_break``): ``"earliest"`` takes the earliest tied step (the decisive
   error is the earliest mistake whose correction reverses the failure),
   ``"highest_confidence"`` the tied step with the most confident single vote
   (then the earliest), ``"scan_rank"`` the tied step the scan ranked first
   (then the earliest). A winner whose share of the total weight is below
   ``min_support`` is "undetermined". The agent is the confidence-weighted
   vote of the winning step's voters; a tie, or no agent named, takes the
   step's speaker when it is among the tied, else the earliest speaking of them.

The panel shows at most as many candidates as their windows fit the context
(:func:`panel_capacity`: at least ``MIN_WINDOW_CHARS`` each after the global
view's quarter of the budget); candidates beyond are listed in
``details["candidates_over_budget"]`` (a safety bound, not a method setting).

* ``paper``: all six analysts, candidates bounded only by the trace (n), the
  layer radii of ECHO's paper, no character caps (neither on the L2-L4
  extracts nor on the reply's text fields: ECHO gives none; the context
  budget bounds the views and the profile's completion budget the replies),
  forced choices (every analyst votes; candidate steps bounded in the schema).
* ``small``: three analysts, three candidates, short text fields and a fixed
  completion cap for sub-2B models, and the "undetermined" escape (an analyst
  may abstain with null step; out-of-range candidates are dropped and recorded
  in ``details["invalid_candidates"]``; no valid candidate or no vote leaves the
  trace undetermined).

Choices the paper leaves open, each a setting: the number of candidates, the
analysts' foci, the character caps of L2-L4 (none under ``paper``), the consensus and tie-break rules,
and the thresholds. Deviations from ECHO's paper: ECHO's analysts are separate agents (decoupled
analysis, one call each); here the analysts share one panel call over the
scan's candidates (the DCFA paper's cost table counts two full-context calls),
and the scan replaces ECHO's exhaustive per-position pass. Without ground
truth (``with_ground_truth = False``, Who&When's second setting) neither call
sees the correct answer.

References
----------
Banerjee, A., Nair, A., Borogovac, T. "Where Did It All Go Wrong? A
Hierarchical Look into Multi-Agent Error Attribution." arXiv:2510.04886 (2025).
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, Field, create_model, field_validator

from agentcausal.attribution.baseline_prompts import (
    agent_names,
    baseline_messages,
    enum_choice,
    reply_text,
    task_block,
)
from agentcausal.attribution.baseline_settings import BASELINE_STAGE, BaselineSettings, baseline_tokens, trace_budget
from agentcausal.attribution.registry import MethodSpec, register, usage_item
from agentcausal.attribution.candidates import echo_candidates
from agentcausal.attribution.evidence import evidence_fields
from agentcausal.llm import Gateway
from agentcausal.traces.model import Attribution, Step, Trace
from agentcausal.traces.render import escape_data, render_steps_info, shorten

__all__ = ["NAME", "PROMPT_VERSION", "PROMPT_VERSIONS", "PRESETS", "ANALYSTS", "AnalystName", "SCAN_TEMPLATE",
           "PAPER_SCAN_TEMPLATE", "PANEL_TEMPLATE", "PAPER_PANEL_TEMPLATE", "EchoSettings", "EchoScan",
           "EchoCandidate", "EchoVote", "EchoPanelReply", "Vote", "Consensus", "consensus", "key_lines",
           "summary_line", "milestone", "hierarchical_view", "global_view", "scan_model", "panel_model",
           "scan_messages", "panel_messages", "panel_capacity", "MIN_WINDOW_CHARS", "run"]

NAME = "echo"
#: version of each prompt set
PROMPT_VERSIONS = {"paper": "echo/paper-2", "small": "echo/1"}
PROMPT_VERSION = "+".join(PROMPT_VERSIONS[k] for k in sorted(PROMPT_VERSIONS))

AnalystName = Literal["conservative", "evidence", "causal_chain", "coordination", "reasoning", "balanced"]

#: the analysts' foci, from conservative to balanced (our reading of ECHO's six-analyst panel)
ANALYSTS: dict[AnalystName, str] = {
    "conservative": "blames a step only on direct evidence of a mistake in that step; discounts speculation",
    "evidence": "checks every claim, value and tool result against the task and the data shown",
    "causal_chain": "follows the wrong final result back along the steps it depends on to where it began",
    "coordination": "examines hand-offs, plans and instructions between agents, and who acted on what",
    "reasoning": "looks for flawed logic, wrong assumptions and misread requirements",
    "balanced": "weighs all of these and the severity of each deviation: decisive or minor",
}

#: the ``paper`` scan message; fields: task, trace, n_last, k
PAPER_SCAN_TEMPLATE = (
    "{task}\n\nThe run, steps 0 to {n_last}:\n{trace}\n\n"
    "Survey the whole run as the first stage of a hierarchical error analysis. Note the hand-offs between "
    "agents, the decisions, the observable errors (tool failures, wrong formats, wrong values) and recurring "
    "patterns, and tell minor deviations apart from the error that made the run fail. Give a short overview, "
    "then list up to {k} candidate steps for the decisive error, most likely first, each with its reason."
)

#: the ``small`` scan message; fields as in :data:`PAPER_SCAN_TEMPLATE`
SCAN_TEMPLATE = (
    "{task}\n\nThe run, steps 0 to {n_last}:\n{trace}\n\n"
    "List up to {k} step numbers that most likely hold the decisive error, most likely first."
)

#: the ``paper`` panel message; fields: task, overview, global_view, windows, l1, l2, l3, m, analysts
PAPER_PANEL_TEMPLATE = (
    "{task}\n\nOverview of the run from a first survey: {overview}\n\n"
    "A compressed view of the whole run, one milestone line per step ([error], [decision], [hand-off] mark "
    "what the line reports):\n{global_view}\n\n"
    "The candidate steps for the decisive error, each with hierarchical context: steps up to {l1} away in "
    "full (L1), up to {l2} away by their key lines (L2), up to {l3} away summarised (L3):\n{windows}\n\n"
    "Judge the candidates as a panel of {m} independent analysts. Each analyst keeps to its own focus, judges "
    "objectively from the evidence shown, and gives a hypothesis of how the failure arose, the evidence for "
    "it, its vote (the candidate step of the decisive error and the agent responsible) and its confidence "
    "from 0 to 1. The decisive error is the earliest mistake whose correction would have let the team "
    "reach the correct answer; a minor deviation the run recovered from is not decisive.\n"
    "The analysts:\n{analysts}"
)

#: the ``small`` panel message; fields as in :data:`PAPER_PANEL_TEMPLATE`
PANEL_TEMPLATE = (
    "{task}\n\nThe run in short:\n{global_view}\n\nCandidate steps with their neighbours:\n{windows}\n\n"
    "As each of the {m} analysts below, vote for the candidate step of the decisive error and its agent, "
    "with a confidence from 0 to 1; null step only if that analyst cannot tell.\nThe analysts:\n{analysts}"
)

# ------------------------------------------------------------------ content extraction (regular expressions)
_ERROR = re.compile(r"\b(error|exception|traceback|fail(?:ed|ure|s)?|wrong|incorrect|invalid|not found|"
                    r"unable|cannot|can't|warning|timeout|missing|mistake)\b", re.I)
_DECISION = re.compile(r"\b(therefore|thus|hence|so the|conclude[sd]?|decid(?:e|ed|es)|final(?:ly)?|answer|"
                       r"result(?:s)?|output|plan|will now|let's|we should|must|assum(?:e|ed|ing|ption))\b", re.I)
_HANDOFF = re.compile(r"(@\w+|\bnext speaker\b|\bplease\b.*\b(?:check|verify|run|search|provide)\b|"
                      r"\bhand(?:ing)? (?:off|over)\b|\bover to\b|\bask(?:ing)? \w+ to\b)", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


_FENCE = re.compile(r"^(```|~~~)[\w+-]*$")


def _lines(text: str) -> list[str]:
    """Non-empty lines, code-fence markers dropped."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not _FENCE.match(ln.strip())]


def _cap(text: str, max_chars: int | None) -> str:
    """``text`` shortened to ``max_chars`` (:func:`~agentcausal.traces.render.shorten`); None = as it is."""
    return text if max_chars is None else shorten(text, max_chars)


def key_lines(text: str, max_chars: int | None) -> str:
    """L2 content: the lines that report errors, decisions, results or hand-offs, up to ``max_chars``.

    Parameters
    ----------
    text : str, a step's content
    max_chars : int or None (None = no cap)

    Returns
    -------
    str, the matching lines joined by `` / `` (the head of the text when none match),
    shortened to ``max_chars`` when it is set.

    Examples
    --------
    >>> key_lines("hello\\nTraceback: KeyError\\nok\\nTherefore the answer is 4", 200)
    'Traceback: KeyError / Therefore the answer is 4'
    """
    lines = _lines(text)
    keep = [ln for ln in lines if _ERROR.search(ln) or _DECISION.search(ln) or _HANDOFF.search(ln)]
    return _cap(" / ".join(keep or lines[:2]) if lines else "", max_chars)


def summary_line(text: str, max_chars: int | None) -> str:
    """L3 content: the first sentence and any warning lines, up to ``max_chars``.

    >>> summary_line("We searched the web. Nothing else.\\nError: 404", 100)
    'We searched the web. / Error: 404'
    """
    lines = _lines(text)
    if not lines:
        return ""
    first = _SENTENCE.split(lines[0], maxsplit=1)[0]
    warn = [ln for ln in lines[1:] if _ERROR.search(ln)]
    return _cap(" / ".join([first, *warn]), max_chars)


def milestone(text: str, max_chars: int | None) -> str:
    """L4 content: markers of what the step reports and its first sentence, up to ``max_chars``.

    >>> milestone("Final answer: 12 because of an error", 80)
    '[error] [decision] Final answer: 12 because of an error'
    """
    marks = [m for m, rx in (("[error]", _ERROR), ("[decision]", _DECISION), ("[hand-off]", _HANDOFF))
             if rx.search(text)]
    lines = _lines(text)
    first = _SENTENCE.split(lines[0], maxsplit=1)[0] if lines else ""
    return " ".join([*marks, _cap(first, max_chars)]).strip()


# ------------------------------------------------------------------ settings
class EchoSettings(BaselineSettings):
    """Settings of ECHO (see :class:`~agentcausal.attribution.baseline_settings.BaselineSettings` for the shared ones).

    Attributes
    ----------
    analysts : tuple of analyst names (:data:`ANALYSTS`), the panel, in order; ``paper``: all six
        (ECHO's panel size), ``small``: conservative, causal_chain, balanced
    max_candidates : int or None, the most candidate steps the scan lists; None = the trace's
        length (``paper``, no cap); ``small``: 3
    l1_radius, l2_radius, l3_radius : int, the distances of ECHO's layers L1 (full, ±1), L2 (key
        lines, ±2-3) and L3 (summary, ±4-6); farther steps are in the global view only (L4)
    l2_chars, l3_chars, l4_chars : int or None, the most characters per step at L2, L3 and in the
        global view (L4). ECHO defines each layer by what it keeps (L2 key reasoning lines, L3 an
        outcome summary and warnings, L4 a milestone line, extracted by pattern matching) and gives
        no character counts, so ``paper`` has none (None: the extraction alone compresses; the
        rendered views stay within the context budget, see :func:`panel_messages`); ``small``:
        300 / 120 / 60
    consensus : ``"confidence_weighted"`` (a vote weighs its confidence, ECHO's rule) or ``"majority"``
        (every vote weighs 1)
    tie_break : ``"earliest"`` (default), ``"highest_confidence"`` or ``"scan_rank"`` (see the module docstring)
    min_confidence : float, votes with a lower confidence are dropped (0 = keep all)
    min_support : float, the winner's least share of the total vote weight; below it the trace is
        undetermined (0 = always decide)
    field_chars : int or None, the most characters of each text field of the replies (schema
        ``maxLength``, longer text cut); None = no cap (``paper``: ECHO's paper gives none; the
        profile's completion budget bounds the reply); ``small``: 160
    """

    analysts: tuple[AnalystName, ...] = Field(tuple(ANALYSTS), min_length=1)
    max_candidates: int | None = Field(None, ge=1)
    l1_radius: int = Field(1, ge=0)
    l2_radius: int = Field(3, ge=0)
    l3_radius: int = Field(6, ge=0)
    l2_chars: int | None = Field(None, ge=40)
    l3_chars: int | None = Field(None, ge=40)
    l4_chars: int | None = Field(None, ge=20)
    consensus: Literal["confidence_weighted", "majority"] = "confidence_weighted"
    tie_break: Literal["earliest", "highest_confidence", "scan_rank"] = "earliest"
    min_confidence: float = Field(0.0, ge=0.0, le=1.0)
    min_support: float = Field(0.0, ge=0.0, le=1.0)
    field_chars: int | None = Field(None, ge=40)

    @field_validator("analysts")
    @classmethod
    def _distinct(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(v)) != len(v):
            raise ValueError(f"analysts must be distinct, got {list(v)}")
        return v


#: presets (:mod:`agentcausal.settings`); fields not listed keep the ``paper`` defaults
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {"prompts": "small", "max_tokens": 384, "analysts": ("conservative", "causal_chain", "balanced"),
              "max_candidates": 3, "l2_chars": 300, "l3_chars": 120, "l4_chars": 60, "field_chars": 160},
}


# ------------------------------------------------------------------ replies
class EchoCandidate(BaseModel):
    """One candidate step for the decisive error."""

    step: int = Field(description="Step number.")
    reason: str = Field(description="Why this step may hold the decisive error.")


class EchoScan(BaseModel):
    """Your survey of the run and the candidate steps for the decisive error, most likely first."""

    overview: str = Field(description="What the run did and where it went off track.")
    candidates: list[EchoCandidate] = Field(description="Candidate steps, most likely first.")


class EchoVote(BaseModel):
    """One analyst's judgement."""

    hypothesis: str = Field(description="How the failure arose.")
    evidence: str = Field(description="What in the steps shown supports it.")
    step: int | None = Field(description="The candidate step of the decisive error.")
    agent: str | None = Field(description="The agent responsible, as shown.")
    confidence: float = Field(ge=0.0, le=1.0, description="Confidence in this vote, 0 to 1.")


class EchoPanelReply(BaseModel):
    """The panel's judgements: one entry per analyst."""


@functools.lru_cache(maxsize=256)
def scan_model(n_steps: int, k: int, forced: bool, field_chars: int | None) -> type[EchoScan]:
    """The scan reply model: 1..k candidates; ``forced`` (``paper``) bounds steps to ``0..n_steps-1``."""
    step_f = (int, Field(ge=0, le=max(n_steps - 1, 0), description="Step number.")) if forced else \
        (int, Field(description="Step number."))
    cand = create_model("EchoCandidate", __base__=EchoCandidate, step=step_f,
                        reason=(reply_text(field_chars),
                                Field(description=EchoCandidate.model_fields["reason"].description)))
    return create_model("EchoScan", __base__=EchoScan,
                        overview=(reply_text(field_chars),
                                  Field(description=EchoScan.model_fields["overview"].description)),
                        candidates=(list[cand], Field(min_length=1 if forced else 0, max_length=k,
                                                      description="Candidate steps, most likely first.")))


@functools.lru_cache(maxsize=256)
def panel_model(agents: tuple[str, ...], candidates: tuple[int, ...], analysts: tuple[AnalystName, ...], forced: bool,
                field_chars: int | None) -> type[EchoPanelReply]:
    """The panel reply model: one required :class:`EchoVote` per analyst; ``step`` an enum of the
    candidates and ``agent`` an enum of the trace's agents (both nullable unless ``forced``)."""
    step_t: Any = enum_choice(candidates, "integer")
    agent_t: Any = enum_choice(agents)
    if not forced:
        step_t, agent_t = step_t | None, agent_t | None
    vote = create_model(
        "EchoVote", __base__=EchoVote,
        hypothesis=(reply_text(field_chars), Field(description=EchoVote.model_fields["hypothesis"].description)),
        evidence=(reply_text(field_chars), Field(description=EchoVote.model_fields["evidence"].description)),
        step=(step_t, Field(description="The candidate step of the decisive error" + ("." if forced else
                                                                                      "; null if you cannot tell."))),
        agent=(agent_t, Field(description="The agent responsible, as shown.")))
    fields: dict[str, Any] = {a: (vote, Field(description=f"The {a} analyst: {ANALYSTS[a]}.")) for a in analysts}
    return create_model("EchoPanelReply", __base__=EchoPanelReply, **fields)


# ------------------------------------------------------------------ consensus
class Vote(NamedTuple):
    """One analyst's vote (step None = abstains)."""

    analyst: str
    step: int | None
    agent: str | None
    confidence: float


class Consensus(NamedTuple):
    """The panel's verdict.

    Attributes
    ----------
    step, agent : the winner (None when undetermined)
    scores : dict step -> total vote weight
    support : float, the winner's share of the total weight (0 when no vote counted)
    tied : tuple of steps tied at the top score (one when no tie)
    counted : int, votes that counted
    """

    step: int | None
    agent: str | None
    scores: dict[int, float]
    support: float
    tied: tuple[int, ...]
    counted: int


def consensus(votes: Sequence[Vote], trace: Trace, *, rule: str = "confidence_weighted",
              tie_break: str = "earliest", scan_order: Sequence[int] = (), min_confidence: float = 0.0,
              min_support: float = 0.0) -> Consensus:
    """Consensus of the panel's votes (the rule of :class:`EchoSettings`; see the module docstring).

    Parameters
    ----------
    votes : sequence of Vote
    trace : Trace, for the speakers and the order of first appearance of agents
    rule : ``"confidence_weighted"`` or ``"majority"``
    tie_break : ``"earliest"``, ``"highest_confidence"`` or ``"scan_rank"``
    scan_order : the scan's candidate steps, most likely first (for ``scan_rank``)
    min_confidence, min_support : float, thresholds

    Returns
    -------
    Consensus

    Raises
    ------
    ValueError
        For an unknown rule or tie-break.

    Examples
    --------
    >>> from agentcausal.traces.model import Step, Trace
    >>> t = Trace(id="x", question="q", ground_truth="a",
    ...           steps=[Step(index=i, agent=a, content="") for i, a in enumerate("ABAB")])
    >>> v = [Vote("x", 1, "B", 0.9), Vote("y", 2, "A", 0.5), Vote("z", 2, "A", 0.3)]
    >>> consensus(v, t).step, consensus(v, t, rule="majority").step
    (1, 2)
    """
    if rule not in ("confidence_weighted", "majority"):
        raise ValueError(f"unknown consensus rule {rule!r}")
    if tie_break not in ("earliest", "highest_confidence", "scan_rank"):
        raise ValueError(f"unknown tie-break {tie_break!r}")
    counted = [v for v in votes if v.step is not None and 0 <= v.step < len(trace) and v.confidence >= min_confidence]
    if not counted:
        return Consensus(None, None, {}, 0.0, (), 0)

    def weight(v: Vote) -> float:
        return max(0.0, min(1.0, v.confidence)) if rule == "confidence_weighted" else 1.0

    scores: dict[int, float] = {}
    for v in counted:
        if v.step is not None:  # every counted vote has a step
            scores[v.step] = scores.get(v.step, 0.0) + weight(v)
    top = max(scores.values())
    tied = tuple(sorted(s for s, w in scores.items() if abs(w - top) <= 1e-9))
    if tie_break == "highest_confidence":
        best = {s: max(v.confidence for v in counted if v.step == s) for s in tied}
        step = min(tied, key=lambda s: (-best[s], s))
    elif tie_break == "scan_rank":
        rank = {s: i for i, s in enumerate(scan_order)}
        step = min(tied, key=lambda s: (rank.get(s, len(rank)), s))
    else:
        step = tied[0]
    total = sum(scores.values())
    support = scores[step] / total if total > 0 else 1.0 / len(scores)
    if support < min_support:
        return Consensus(None, None, scores, support, tied, len(counted))
    # the agent: weighted vote among the winning step's voters; ties -> the speaker, else the earliest
    agent_w: dict[str, float] = {}
    for v in counted:
        if v.step == step and v.agent:
            agent_w[v.agent] = agent_w.get(v.agent, 0.0) + weight(v)
    speaker = trace.steps[step].agent
    if not agent_w:
        agent = speaker
    else:
        amax = max(agent_w.values())
        tied_agents = [a for a, w in agent_w.items() if abs(w - amax) <= 1e-9]
        order = {a: i for i, a in enumerate(agent_names(trace))}
        agent = speaker if speaker in tied_agents else min(tied_agents, key=lambda a: order.get(a, len(order)))
    return Consensus(step, agent, scores, support, tied, len(counted))


# ------------------------------------------------------------------ hierarchical context
def _with_content(step: Step, content: str) -> Step:
    return step.model_copy(update={"content": content})


def hierarchical_view(trace: Trace, center: int, settings: EchoSettings, budget: int | None) -> str:
    """Candidate ``center``'s window: L1 steps in full, L2 key lines, L3 summaries (rendered, delimited).

    Parameters
    ----------
    trace : Trace
    center : int, 0-based candidate step
    settings : EchoSettings (radii and caps)
    budget : int or None, characters of the rendered window

    Returns
    -------
    str, a ``<trace>`` block of the steps within ``l3_radius`` of ``center``, each prefixed with its layer.
    """
    r1, r2 = settings.l1_radius, max(settings.l1_radius, settings.l2_radius)
    r3 = max(r2, settings.l3_radius)
    steps = []
    for s in trace.steps[max(0, center - r3): center + r3 + 1]:
        d = abs(s.index - center)
        if d <= r1:
            steps.append(_with_content(s, f"[L1] {s.content}"))
        elif d <= r2:
            steps.append(_with_content(s, f"[L2] {key_lines(s.content, settings.l2_chars)}"))
        else:
            steps.append(_with_content(s, f"[L3] {summary_line(s.content, settings.l3_chars)}"))
    return render_steps_info(steps, budget).text


def global_view(trace: Trace, settings: EchoSettings, budget: int | None) -> str:
    """The global view (L4): one milestone line per step, rendered and delimited."""
    return render_steps_info([_with_content(s, milestone(s.content, settings.l4_chars)) for s in trace.steps],
                             budget).text


# ------------------------------------------------------------------ messages and run
def scan_messages(trace: Trace, settings: EchoSettings, budget: int | None, k: int) -> list[dict[str, str]]:
    """The scan call's messages (the whole trace within ``budget`` characters)."""
    template = PAPER_SCAN_TEMPLATE if settings.prompts == "paper" else SCAN_TEMPLATE
    user = template.format(task=task_block(trace, settings.with_ground_truth),
                           trace=render_steps_info(trace.steps, budget).text, n_last=len(trace) - 1, k=k)
    return baseline_messages("List the candidate steps for the decisive error.", user)


#: the least characters of one candidate's window in the panel prompt
MIN_WINDOW_CHARS = 1000


def panel_capacity(budget: int | None) -> int:
    """How many candidate windows fit the panel prompt: ``(budget - global view) // MIN_WINDOW_CHARS``
    (at least 1; unbounded without a budget). The global view takes a quarter of the budget.

    >>> panel_capacity(20_000), panel_capacity(None) > 10**6
    (15, True)
    """
    if budget is None:
        return 10**9
    return max(1, (budget - max(MIN_WINDOW_CHARS, budget // 4)) // MIN_WINDOW_CHARS)


def panel_messages(trace: Trace, settings: EchoSettings, budget: int | None, overview: str,
                   candidates: Sequence[tuple[int, str]]) -> list[dict[str, str]]:
    """The panel call's messages: the global view (a quarter of ``budget``) and each candidate's
    window (the rest, shared equally)."""
    share = None if budget is None else max(MIN_WINDOW_CHARS, budget // 4)
    per = None if budget is None else max(MIN_WINDOW_CHARS, (budget - (share or 0)) // max(1, len(candidates)))
    windows = "\n".join(f"Candidate step {c} (from the survey: {escape_data(reason)})\n"
                        f"{hierarchical_view(trace, c, settings, per)}" for c, reason in candidates)
    template = PAPER_PANEL_TEMPLATE if settings.prompts == "paper" else PANEL_TEMPLATE
    analysts = "\n".join(f"- {a}: {ANALYSTS[a]}" for a in settings.analysts)
    user = template.format(task=task_block(trace, settings.with_ground_truth), overview=escape_data(overview),
                           global_view=global_view(trace, settings, share), windows=windows,
                           l1=settings.l1_radius, l2=max(settings.l1_radius, settings.l2_radius),
                           l3=max(settings.l1_radius, settings.l2_radius, settings.l3_radius),
                           m=len(settings.analysts), analysts=analysts)
    return baseline_messages("Give each analyst's vote on the decisive error.", user)


def run(trace: Trace, gw: Gateway, settings: EchoSettings) -> Attribution:
    """Attribute one trace with ECHO: scan, hierarchical context, panel, consensus.

    Parameters
    ----------
    trace : Trace, n steps
    gw : Gateway; calls stage ``baseline`` twice (once when the ``small`` scan finds no valid candidate)
    settings : EchoSettings

    Returns
    -------
    Attribution with the consensus step and agent (None when undetermined). ``details``:
    ``candidates`` (scan order, with reasons), ``overview``, ``votes`` (per analyst: step,
    agent, confidence, hypothesis, evidence), ``scores`` (step -> weight), ``support``,
    ``tied``, ``consensus`` and ``tie_break`` (the rules used), ``prompt_version`` and,
    under ``small``, ``invalid_candidates`` (out-of-range steps the scan listed).

    Raises
    ------
    StructuredOutputError, EndpointUnreachableError, LLMCallError
        From the gateway.
    """
    n = len(trace)
    forced = settings.prompts == "paper"
    version = PROMPT_VERSIONS[settings.prompts]
    budget = trace_budget(gw, settings)
    tokens = baseline_tokens(gw, settings)
    item = usage_item(trace.id, NAME)
    k = min(n, settings.max_candidates or n)
    scan = gw.structured(BASELINE_STAGE, scan_messages(trace, settings, budget, k),
                         scan_model(n, k, forced, settings.field_chars), item=item, max_tokens=tokens)
    cands: dict[int, str] = {}
    invalid: list[int] = []
    for c in scan.candidates:
        if 0 <= c.step < n:
            cands.setdefault(c.step, c.reason)
        else:
            invalid.append(c.step)
    listed = list(cands.items())[:k]
    candidates = listed[:panel_capacity(budget)]  # the windows that fit the context (safety bound)
    details: dict[str, Any] = {"overview": scan.overview, "candidates": [{"step": s, "reason": r} for s, r in candidates],
                               "consensus": settings.consensus, "tie_break": settings.tie_break,
                               "prompt_version": version}
    if invalid:
        details["invalid_candidates"] = invalid
    if len(listed) > len(candidates):
        details["candidates_over_budget"] = [s for s, _ in listed[len(candidates):]]
    if not candidates:
        return Attribution(trace_id=trace.id, method=NAME, step=None, agent=None,
                           reason="undetermined: the scan listed no valid candidate step", prompt_version=version,
                           details=details)
    model = panel_model(agent_names(trace), tuple(s for s, _ in candidates), tuple(settings.analysts), forced,
                        settings.field_chars)
    reply = gw.structured(BASELINE_STAGE, panel_messages(trace, settings, budget, scan.overview, candidates), model,
                          item=item, max_tokens=tokens)
    votes = [Vote(a, getattr(reply, a).step, getattr(reply, a).agent, getattr(reply, a).confidence)
             for a in settings.analysts]
    result = consensus(votes, trace, rule=settings.consensus, tie_break=settings.tie_break,
                       scan_order=[s for s, _ in candidates], min_confidence=settings.min_confidence,
                       min_support=settings.min_support)
    details.update({
        "votes": [{"analyst": a, "step": getattr(reply, a).step, "agent": getattr(reply, a).agent,
                   "confidence": getattr(reply, a).confidence, "hypothesis": getattr(reply, a).hypothesis,
                   "evidence": getattr(reply, a).evidence} for a in settings.analysts],
        "scores": {str(s): round(w, 6) for s, w in sorted(result.scores.items())},
        "support": round(result.support, 6), "tied": list(result.tied)})
    best = None
    if result.step is None:
        reason = "undetermined: no analyst vote counted" if not result.counted else \
            f"undetermined: support {result.support:.2f} below {settings.min_support}"
    else:
        winners = [a for a in settings.analysts if getattr(reply, a).step == result.step]
        best = max(winners, key=lambda a: getattr(reply, a).confidence, default=None)
        reason = getattr(reply, best).hypothesis if best else ""
        reason = f"{len(winners)}/{len(votes)} analysts, support {result.support:.2f}: {reason}"
    # ranked by consensus weight; confidence = the consensus support; evidence = the most confident winning
    # analyst's, kept only when it quotes the blamed step (agentcausal.attribution.candidates, .evidence)
    return Attribution(trace_id=trace.id, method=NAME, step=result.step, agent=result.agent, reason=reason,
                       prompt_version=version, details=details,
                       candidates=echo_candidates(trace, result.step, result.scores, result.tied, settings.consensus),
                       confidence=None if result.step is None else float(min(1.0, max(0.0, result.support))),
                       **evidence_fields(getattr(reply, best).evidence if best else None, trace.steps, result.step,
                                         asked=result.step is not None))


SPEC = register(MethodSpec(name=NAME, run=run, settings_model=EchoSettings, prompt_version=PROMPT_VERSION,
                           stages=(BASELINE_STAGE,), presets=PRESETS))
