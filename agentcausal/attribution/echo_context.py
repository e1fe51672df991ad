"""ECHO's hierarchical context (no LLM call): what each step shows at its distance from a candidate step.

L1 the step in full, L2 its key lines (:func:`key_lines`: errors, decisions, results, hand-offs), L3 a
summary (:func:`summary_line`), L4 one milestone line per step shared by all candidates (:func:`milestone`,
:func:`global_view`); :func:`hierarchical_view` renders one candidate's L1-L3 window.

References
----------
Banerjee, A., Nair, A., Borogovac, T. "Where Did It All Go Wrong? A
Hierarchical Look into Multi-Agent Error Attribution." arXiv:2510.04886 (2025).
"""

from __future__ import annotations

import re

from agentcausal.attribution.echo_settings import EchoSettings
from agentcausal.traces.model import Step, Trace
from agentcausal.traces.render import render_steps_info, shorten

__all__ = ["key_lines", "summary_line", "milestone", "hierarchical_view", "global_view"]


_ERROR = re.compile(
    r"\b(error|exception|traceback|fail(?:ed|ure|s)?|wrong|incorrect|invalid|not found|"
    r"unable|cannot|can't|warning|timeout|missing|mistake)\b",
    re.I,
)


_DECISION = re.compile(
    r"\b(therefore|thus|hence|so the|conclude[sd]?|decid(?:e|ed|es)|final(?:ly)?|answer|"
    r"result(?:s)?|output|plan|will now|let's|we should|must|assum(?:e|ed|ing|ption))\b",
    re.I,
)


_HANDOFF = re.compile(
    r"(@\w+|\bnext speaker\b|\bplease\b.*\b(?:check|verify|run|search|provide)\b|"
    r"\bhand(?:ing)? (?:off|over)\b|\bover to\b|\bask(?:ing)? \w+ to\b)",
    re.I,
)


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
    marks = [
        m for m, rx in (("[error]", _ERROR), ("[decision]", _DECISION), ("[hand-off]", _HANDOFF)) if rx.search(text)
    ]
    lines = _lines(text)
    first = _SENTENCE.split(lines[0], maxsplit=1)[0] if lines else ""
    return " ".join([*marks, _cap(first, max_chars)]).strip()


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
    for s in trace.steps[max(0, center - r3) : center + r3 + 1]:
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
    return render_steps_info(
        [_with_content(s, milestone(s.content, settings.l4_chars)) for s in trace.steps], budget
    ).text
