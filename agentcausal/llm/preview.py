"""Prompt previews: the messages a method would send, rendered without a request (``--show-prompts``).

A preview is data (:class:`PromptPreview`: method, stage, call, messages); where
a call's input is an earlier call's reply, the preview holds
:func:`placeholder` text instead, so nothing is requested to build it.
:func:`render_previews` turns previews into plain text for the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["PromptPreview", "placeholder", "render_previews"]


class PromptPreview(NamedTuple):
    """The messages of one call a method would make.

    Attributes
    ----------
    method : str, the method's name (e.g. ``mac``)
    stage : str, the routed stage (e.g. ``mac.debate``)
    call : str, which call (e.g. ``DCM algorithm debate: Affirmative``)
    messages : list of ``{"role", "content"}`` dicts, as the gateway would send them
    """

    method: str
    stage: str
    call: str
    messages: list[dict[str, str]]


def placeholder(what: str) -> str:
    """Text standing for an earlier call's reply, which a preview does not request.

    >>> placeholder("the Affirmative")
    '⟨reply of the Affirmative: not requested in a preview⟩'
    """
    return f"⟨reply of {what}: not requested in a preview⟩"


def render_previews(previews: Sequence[PromptPreview], *, max_lines: int = 8) -> str:
    """Previews as plain text: a header per call, then each message's role and content.

    Parameters
    ----------
    previews : sequence of PromptPreview
    max_lines : int, lines of each message shown (the rest is counted, not shown); 0 = all

    Returns
    -------
    str
    """
    out: list[str] = []
    for p in previews:
        out.append(f"=== {p.method} · {p.stage} · {p.call}")
        for m in p.messages:
            lines = str(m.get("content", "")).splitlines() or [""]
            shown = lines if max_lines <= 0 else lines[:max_lines]
            out.append(f"--- {m.get('role', '?')}")
            out += shown
            if len(shown) < len(lines):
                out.append(f"[… {len(lines) - len(shown)} more lines]")
        out.append("")
    return "\n".join(out)
