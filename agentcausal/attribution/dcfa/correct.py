"""Correct, LCE's corrector (DCFA eq. 8): one corrected version of the whole trace.

The reply names each step by number: a list of ``{step, content}``
(``content`` ``""`` meaning "unchanged", so unchanged steps cost no decode
tokens and keep their full text; under the Hand-Crafted variant every step
is asked for, rewritten with its redundant content removed, as the released
prompt returns every event so, and the corrected prefix of a counterfactual
trace is then the compressed one: a step whose only change is the removal
counts as changed, a ``""`` still keeps the original). Entries are matched to steps by number,
never by position, so a missing entry leaves its step unchanged and an extra
or repeated one can never shift the others (:func:`normalise_correction`
records missing, repeated and out-of-range entries). A step is "changed"
only if its corrected content differs from the original *before* any
truncation; a changed step longer than ``max_corrected_step_chars`` (when
set) is then cut, and the cut is recorded.

Under the ``paper`` prompts Correct follows the released code's two prompts
(setting ``correct_variant``, :func:`~agentcausal.attribution.dcfa.settings.correct_variant_for`):
Algorithm-Generated traces get the factual-only correction (names, terms,
numbers, labels; no new information, reasoning or events) that derives the
correct answer; Hand-Crafted traces also have redundant content removed
(code, intermediate calculations, long analysis, partial outputs) while the
step count stays. The released code matches its corrected events to the
original ones by list position, so a reply that drops or adds a step shifts
every later correction (a bug): here entries are matched by step number.
Correct sees the question, the truth, MDI's reasons, the trace and the graph,
not the GCA hypothesis (the released code passes the hypothesis to its
correction function but never puts it in the prompt).

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), section 4.2.1, eq. 8; appendix L, Figure 11.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from agentcausal.attribution.dcfa import prompts
from agentcausal.attribution.dcfa.gca import GcaResult, trace_budget
from agentcausal.attribution.dcfa.settings import DcfaSettings, correct_variant_for
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import LLMCall, Routing
from agentcausal.settings import completion_budget
from agentcausal.traces.model import Trace
from agentcausal.traces.render import step_label

__all__ = ["STAGE", "Correction", "same_text", "normalise_correction", "correct_trace", "lce_budget", "lce_tokens"]

#: routed stage of Correct, Simulation and DED
STAGE = "dcfa.lce"


class Correction(NamedTuple):
    """A corrected trace aligned step by step with the original.

    Attributes
    ----------
    contents : tuple of str, length N, the corrected content of every step
        (the original content where the corrector left it unchanged)
    changed : tuple of int, 0-based steps whose corrected content differs from the original
        (compared before any truncation)
    fallback : str or None, what had to be done to read the reply (``"unparseable"``,
        ``"invalid reply, read leniently"``, ``"ignored 2 entries (out of range or repeated)"``);
        None when every entry named a distinct step in range
    missing : tuple of int, steps the reply did not name (left unchanged)
    truncated : tuple of int, changed steps cut to ``max_corrected_step_chars``
    invalid : bool, the reply failed validation after every repair and was read leniently
        (``fallback`` says how); LCE then runs on what could be read and the record is degraded
    variant : str or None, the ``paper`` prompt used (``algorithm_generated`` or ``hand_crafted``);
        None under ``small``
    """

    contents: tuple[str, ...]
    changed: tuple[int, ...]
    fallback: str | None = None
    missing: tuple[int, ...] = ()
    truncated: tuple[int, ...] = ()
    invalid: bool = False
    variant: str | None = None


def same_text(a: str, b: str) -> bool:
    """Whether two step contents are the same text once runs of whitespace are read as one space.

    >>> same_text("34 kPa\\n at  the top", " 34 kPa at the top"), same_text("34 kPa", "35 kPa")
    (True, False)
    """
    return a.split() == b.split()


def normalise_correction(
    original: Sequence[str],
    replied: Sequence[tuple[int, str]] | None,
    *,
    max_chars: int | None = None,
    labels: Sequence[str] = (),
) -> Correction:
    """Align a corrector's ``(step, content)`` entries with the original steps, by step number.

    An entry that opens with the step's label as the prompt rendered it (``labels[i]``,
    :func:`agentcausal.traces.render.step_label`: ``"Step 1 | researcher: "``) has it removed: the label is
    our rendering, not the step's content. Then ``""`` (or whitespace) and a copy of the original
    (ignoring whitespace: runs of it compared as one space) mean "unchanged", so a corrector that
    repeats the step, label or not, is never taken for a fix. A step without an entry is unchanged and
    listed in ``missing``; a repeated step keeps its first entry; an entry
    out of range is ignored; ``None`` (unparseable) means nothing is corrected.

    Parameters
    ----------
    original : sequence of str, length N, the original step contents
    replied : sequence of (step, content) or None, the corrector's entries
    max_chars : int or None, cut each *changed* content to this length (after the comparison)
    labels : sequence of str, each step's rendered label (empty: none removed)

    Returns
    -------
    Correction

    Examples
    --------
    >>> normalise_correction(["a", "b", "c"], [(2, "C"), (0, "")])
    Correction(contents=('a', 'b', 'C'), changed=(2,), fallback=None, missing=(1,), truncated=(), invalid=False, variant=None)
    >>> normalise_correction(["x  y\\nz"], [(0, " x y z ")]).changed
    ()
    >>> normalise_correction(["55 kPa"], [(0, "Step 0 | r: 55 kPa")], labels=["Step 0 | r: "]).changed
    ()
    """
    n = len(original)
    by_step: dict[int, str] = {}
    ignored = 0
    fallback = None
    if replied is None:
        fallback, replied = "unparseable", []
    for step, content in replied:
        if not isinstance(step, int) or not 0 <= step < n or step in by_step:
            ignored += 1
        else:
            by_step[step] = content if isinstance(content, str) else ""
    if ignored:
        fallback = f"ignored {ignored} entries (out of range or repeated)"
    contents, changed, truncated = [], [], []
    for i, orig in enumerate(original):
        new = by_step.get(i, "").strip()
        label = labels[i].strip() if i < len(labels) else ""
        if label and new.startswith(label):
            new = new[len(label) :].strip()
        if not new or same_text(new, orig):
            contents.append(orig)
            continue
        changed.append(i)
        if max_chars is not None and len(new) > max_chars:
            new = new[:max_chars]
            truncated.append(i)
        contents.append(new)
    missing = () if fallback == "unparseable" else tuple(i for i in range(n) if i not in by_step)
    return Correction(tuple(contents), tuple(changed), fallback, missing, tuple(truncated))


def _lenient_steps(raw: str) -> list[tuple[int, str]] | None:
    """The ``steps`` entries of a reply that failed validation, if any can be read."""
    start, end = raw.find("{"), raw.rfind("}")
    try:
        data = json.loads(raw[start : end + 1] if 0 <= start < end else raw)
    except (ValueError, TypeError):
        return None
    steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(steps, list):
        return None
    out = []
    for e in steps:
        if isinstance(e, dict) and isinstance(e.get("step"), int):
            c = e.get("content", "")
            out.append((e["step"], c if isinstance(c, str) else json.dumps(c)))
    return out


def _correct_max_tokens(n: int, settings: DcfaSettings, gw: Routing) -> int:
    """``correct_max_tokens``; else derived from ``max_corrected_step_chars`` when set (about 1 token
    per 3 characters + 12 per entry, plus 64, at most a third of the window); else the profile's budget."""
    if settings.correct_max_tokens is not None:
        return settings.correct_max_tokens
    if settings.max_corrected_step_chars is not None:
        ctx = gw.profile_for(STAGE).context_window
        return min(n * (settings.max_corrected_step_chars // 3 + 12) + 64, max(256, ctx // 3))
    return completion_budget(gw, STAGE, None)


def correct_trace(trace: Trace, gca: GcaResult, call: LLMCall, settings: DcfaSettings) -> Correction:
    """Correct(Ŷ, T, T^e, R^e, G): a corrected version of the whole trace (eq. 8).

    Parameters
    ----------
    trace : Trace, N steps
    gca : GcaResult, deviations and graph
    call : LLMCall, the run's call context; stage ``dcfa.lce``
    settings : DcfaSettings (``correct_variant``, ``max_corrected_step_chars``, ``correct_max_tokens``)

    Returns
    -------
    Correction with exactly N contents; ``fallback`` set when the reply could only be read
    leniently or had ignored entries (see :func:`normalise_correction`).

    Raises
    ------
    UnknownStageError, EndpointUnreachableError, LLMCallError
        From the gateway (a reply that stays invalid is *not* raised: it falls back).

    References
    ----------
    DCFA section 4.2.1, eq. 8; appendix L, Figure 11.
    """
    n = len(trace)
    max_tokens = _correct_max_tokens(n, settings, call)
    truth = trace.ground_truth if settings.with_ground_truth else None
    variant = correct_variant_for(settings.correct_variant, trace.source) if settings.prompts == "paper" else None
    messages = prompts.correct_messages(
        trace.question,
        truth,
        trace.steps,
        gca.deviations,
        gca.search_graph_input,
        max_chars=settings.max_corrected_step_chars,
        budget=lce_budget(call, settings, n),
        style=settings.prompts,
        variant=variant or "algorithm_generated",
    )
    original = [s.content for s in trace.steps]
    labels = [step_label(s) for s in trace.steps]  # as the prompt showed them: a copied label is no content
    try:
        reply = call.structured(
            STAGE,
            messages,
            prompts.corrected_trace_model(n, settings.max_corrected_step_chars, variant == "hand_crafted"),
            max_tokens=max_tokens,
        )
    except StructuredOutputError as exc:
        return _fallback(original, exc.raw, settings, labels)._replace(variant=variant)
    return normalise_correction(
        original,
        [(e.step, e.content) for e in reply.steps],
        max_chars=settings.max_corrected_step_chars,
        labels=labels,
    )._replace(variant=variant)


def _fallback(original: Sequence[str], raw: str, settings: DcfaSettings, labels: Sequence[str] = ()) -> Correction:
    steps = _lenient_steps(raw)
    out = normalise_correction(original, steps, max_chars=settings.max_corrected_step_chars, labels=labels)
    how = out.fallback if out.fallback == "unparseable" else "invalid reply, read leniently"
    if out.fallback not in (None, "unparseable"):  # readable entries, some of them ignored
        how = f"{how}; {out.fallback}"
    return out._replace(fallback=how, invalid=True)


def lce_budget(gw: Routing, settings: DcfaSettings, n: int) -> int:
    """Character budget of the trace block in every ``dcfa.lce`` prompt of an N-step trace
    (one budget for Correct, Simulation and DED, so their prompts share prefixes)."""
    biggest = max(_correct_max_tokens(n, settings, gw), *lce_tokens(gw, settings))
    return trace_budget(gw, STAGE, settings, biggest)


def lce_tokens(gw: Routing, settings: DcfaSettings) -> tuple[int, int, int]:
    """Completion caps (tokens) of Simulation, DED and the no-truth judge: the settings, else
    the profile's budget (:func:`agentcausal.settings.completion_budget`)."""
    return (
        completion_budget(gw, STAGE, settings.simulation_max_tokens),
        completion_budget(gw, STAGE, settings.ded_max_tokens),
        completion_budget(gw, STAGE, settings.judge_max_tokens),
    )
