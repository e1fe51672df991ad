"""Correct, LCE's corrector (DCFA eq. 8): one corrected version of the whole trace.

The reply is one string per step, ``""`` meaning "unchanged" (so unchanged
steps cost no decode tokens and keep their full text). The step count is
validated (the gateway's repair loop re-asks); if the reply is still wrong,
the documented fallback (:func:`normalise_correction`) keeps the first N
strings and pads missing ones as unchanged, and records which it did. A
corrected step longer than ``max_corrected_step_chars`` is cut.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(seed ``../shared/seeds/002_2c62354fb78fce0f.txt``; code github.com/wzhSteve/DCFA), section 4.2.1, eq. 8; appendix L, Figure 11.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from agentcausal.attribution.dcfa import prompts
from agentcausal.attribution.dcfa.gca import GcaResult, graph_edges, trace_budget
from agentcausal.attribution.dcfa.settings import DcfaSettings
from agentcausal.exceptions import StructuredOutputError
from agentcausal.llm import Gateway
from agentcausal.traces.model import Trace

__all__ = ["STAGE", "Correction", "normalise_correction", "correct_trace", "lce_budget"]

#: routed stage of Correct, Simulation and DED
STAGE = "dcfa.lce"


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
        max_chars=settings.max_corrected_step_chars, budget=lce_budget(gw, settings, n),
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


def lce_budget(gw: Gateway, settings: DcfaSettings, n: int) -> int:
    """Character budget of the trace block in every ``dcfa.lce`` prompt of an N-step trace
    (one budget for Correct, Simulation and DED, so their prompts share prefixes)."""
    ctx = gw.profile_for(STAGE).context_window
    biggest = max(_correct_max_tokens(n, settings, ctx), settings.simulation_max_tokens, settings.ded_max_tokens)
    return trace_budget(gw, STAGE, settings, biggest)
