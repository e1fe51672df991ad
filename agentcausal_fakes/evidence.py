"""TEST DOUBLE: wraps a fake-server responder so that replies whose schema asks for ``evidence`` carry a quote.

:class:`EvidenceResponder` passes every request to the wrapped responder; when
the request's reply schema has an ``evidence`` property (a method run with
``quote_evidence`` on) it adds one to the JSON reply: a slice of the content of
the step the reply names (``step``), read from the prompt's ``<step n="k">``
blocks (or, for prompts that render the trace as ``speaker: content`` lines,
the k-th line of the ``<trace>`` block). ``mode="paraphrase"`` quotes words
that are not in the step, to exercise the check that drops them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["EvidenceResponder", "asks_evidence", "add_evidence"]

_BLOCK = re.compile(r'<step n="(\d+)">\n(?:Step \d+ \| [^:\n]*: )?(.*?)\n</step>', re.S)
_TRACE = re.compile(r"<trace>\n(.*?)\n</trace>", re.S)
_ASKED = re.compile(r"(?:Is step|most recent step \(step) (\d+)[ ,]|most recent step \((\d+)\)")


def asks_evidence(body: dict[str, Any]) -> bool:
    """Whether the request's reply schema has an ``evidence`` field."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    return "evidence" in (schema.get("properties") or {})


def _user(body: dict[str, Any]) -> str:
    return next((m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"), "")


def _step_text(prompt: str, step: int) -> str | None:
    blocks = {int(i): c for i, c in _BLOCK.findall(prompt)}
    if step in blocks:
        return blocks[step]
    m = _TRACE.search(prompt)
    if m:
        lines = m.group(1).splitlines()
        if 0 <= step < len(lines):
            return lines[step].split(": ", 1)[-1]
    return None


class EvidenceResponder:
    """A responder adding ``evidence`` to replies that ask for it (test double).

    Parameters
    ----------
    inner : callable body -> reply text (the wrapped responder)
    mode : ``"verbatim"`` (a slice of the named step) or ``"paraphrase"`` (words not in it)
    chars : int, length of the quoted slice

    Attributes
    ----------
    asked : int, replies that carried an evidence field
    """

    def __init__(self, inner: Callable[[dict[str, Any]], str], *, mode: str = "verbatim", chars: int = 24) -> None:
        self.inner, self.mode, self.chars = inner, mode, chars
        self.asked = 0

    def __call__(self, body: dict[str, Any]) -> str:
        text = self.inner(body)
        if not asks_evidence(body):
            return text
        self.asked += 1
        return add_evidence(body, text, mode=self.mode, chars=self.chars)


def add_evidence(body: dict[str, Any], text: str, *, mode: str = "verbatim", chars: int = 24) -> str:
    """The JSON reply ``text`` with an ``evidence`` quote of the step it names (see :class:`EvidenceResponder`)."""
    reply = json.loads(text)
    prompt = _user(body)
    step = reply.get("step")
    if step is None:  # Step-by-Step's verdict names no step: the step asked about
        m = _ASKED.search(prompt)
        step = int(m.group(1) or m.group(2)) if m else None
    content = _step_text(prompt, int(step)) if step is not None else None
    if mode == "paraphrase" or not content:
        reply["evidence"] = "the agent clearly got everything wrong here"
    else:
        reply["evidence"] = content[:chars]
    return json.dumps(reply)
