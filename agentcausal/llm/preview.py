"""Previews of what a method will send: its chat messages, rendered for reading, with no request made.

A method's preview builder returns one :class:`PromptPreview` per call it
makes (the routed stage, the paper's name of the call, the messages); an
input that is an earlier call's reply, which a preview cannot know, is
:func:`placeholder` text. :func:`render_previews` prints them for a reader
checking a preset against its paper: instructions in full, data blocks
(``<trace>`` … ``</trace>`` and the other delimited blocks of
:mod:`agentcausal.traces.render`) elided past a few lines.

Builders: :mod:`agentcausal.attribution.previews` (attribution methods; the
CLI's ``attribute --dry-run --show-prompts``), and the discovery methods' own.

Examples
--------
>>> p = PromptPreview("m", "baseline", "One call", [{"role": "user", "content": "<trace>\\na\\nb\\nc\\n</trace>\\nGo."}])
>>> print(render_previews([p], max_lines=2))
=== m · One call (stage baseline) ===
--- user ---
<trace>
a
b
⟨… 1 more line elided …⟩
</trace>
Go.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from agentcausal.llm.dialect import sent_cap

__all__ = ["PromptPreview", "placeholder", "render_previews", "cap_line"]

#: a line that opens a delimited data block on its own (``<trace>``, ``<step n="3">``), and one that closes it
_OPEN = re.compile(r"^<([A-Za-z_][\w-]*)(?:\s[^>]*)?>\s*$")
#: the longest line of a data block shown whole
_MAX_LINE = 300


class PromptPreview(NamedTuple):
    """The messages of one call of a method, as a run would send them.

    Attributes
    ----------
    method : str, the method's registered name
    stage : str, the routed stage name (``dcfa.gca``, ``baseline`` …)
    call : str, the paper's name of the call (``"MDI+CGC"``, ``"Correct"``, ``"Simulation S(i)"``, ``"DED"``)
    messages : list of {"role", "content"} dicts
    """

    method: str
    stage: str
    call: str
    messages: list[dict[str, str]]


def placeholder(what: str) -> str:
    """The marked stand-in for an input that is the reply of an earlier call ``what``.

    >>> placeholder("MDI")
    '⟨reply of MDI: not requested in a preview⟩'
    """
    return f"⟨reply of {what}: not requested in a preview⟩"


def _cut(line: str) -> str:
    if len(line) <= _MAX_LINE:
        return line
    return f"{line[:_MAX_LINE]}⟨… {len(line) - _MAX_LINE} more characters elided …⟩"


def _elide(text: str, max_lines: int) -> str:
    """``text`` with every outermost data block cut to its first ``max_lines`` inner lines (long lines cut)."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        end = None
        if m:
            close = f"</{m.group(1)}>"
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == close), None)
        if end is None:
            out.append(lines[i])
            i += 1
            continue
        inner = lines[i + 1 : end]
        out.append(lines[i])
        out.extend(_cut(x) for x in inner[:max_lines])
        if len(inner) > max_lines:
            rest = len(inner) - max_lines
            out.append(f"⟨… {rest} more line{'s' if rest != 1 else ''} elided …⟩")
        out.append(lines[end])
        i = end + 1
    return "\n".join(out)


def render_previews(previews: Sequence[PromptPreview], *, max_lines: int = 8) -> str:
    """The previews as text: a header per call, then each message with its data blocks elided.

    Parameters
    ----------
    previews : sequence of PromptPreview
    max_lines : int, inner lines of a data block shown (the rest is elided with a count); lines
        outside data blocks (the instructions) are always shown whole

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``max_lines`` is negative.
    """
    if max_lines < 0:
        raise ValueError(f"max_lines must be >= 0, got {max_lines}")
    parts = []
    for p in previews:
        block = [f"=== {p.method} · {p.call} (stage {p.stage}) ==="]
        for m in p.messages:
            block += [f"--- {m.get('role', '?')} ---", _elide(str(m.get("content", "")), max_lines)]
        parts.append("\n".join(block))
    return "\n\n".join(parts)


def cap_line(method: str, call: str, profiles: Any, stage: str, cap: int, how: str) -> str:
    """One line of the dry run's ``completion caps sent per call:`` list: the cap a call will send.

    ``"METHOD: STAGE CALL -> PROFILE FIELD=N (HOW; as the dialect sends it)"``, the field and value as the
    routed profile's dialect sends ``cap`` (:func:`agentcausal.llm.dialect.sent_cap`; ``no cap`` when it
    sends none). ``profiles``: a ProfileSet or Gateway.

    Raises
    ------
    UnknownStageError
        If ``stage`` has no route.
    """
    profile = profiles.profile_for(stage)
    field, value, why = sent_cap(profile, cap)
    sent = f"{field}={value}" if value is not None else "no cap"
    return f"{method}: {stage} {call} -> {profile.name} {sent} ({how}; {why})"
