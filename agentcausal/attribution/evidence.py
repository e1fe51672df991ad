"""Evidence for a blamed step: a verbatim quote from that step, asked for in one extra reply field, then checked.

A method asks for evidence only when its setting ``quote_evidence`` is on (off in
every preset, so what ``paper`` and ``small`` send does not change): the reply
model of the call that names the blamed step gains an ``evidence`` field
(:func:`with_evidence`) and that call's prompt one sentence asking for it
(:func:`ask_evidence`). The setting enters the cache key with the other settings.

The quote is then checked against the blamed step's content
(:func:`check_evidence`): it is kept only when it has at least
:data:`MIN_CHARS` characters and is a substring of the step,
either exactly or after collapsing runs of whitespace, in which case the
step's own text is stored, so a stored quote is always verbatim. Otherwise it
is dropped and the record says why (``evidence_note``). Surrounding quote
marks and whitespace are ignored.

ECHO's analysts give evidence without any extra field (its panel reply has one);
it goes through the same check. ``attribute --evidence`` turns ``quote_evidence`` on
for every method of the run that has the setting
(:func:`agentcausal.attribution.method_settings.evidence_sets`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, Field, create_model

from agentcausal.llm.replies import ShortText

__all__ = [
    "EVIDENCE_CHARS",
    "EVIDENCE_TOKENS",
    "MIN_CHARS",
    "EVIDENCE_REQUEST",
    "EvidenceCheck",
    "with_evidence",
    "ask_evidence",
    "check_evidence",
    "evidence_fields",
]

#: a reply model
M = TypeVar("M", bound=BaseModel)

#: ``maxLength`` of the evidence field (a longer quote is cut, which keeps it a substring)
EVIDENCE_CHARS = 300

#: completion tokens a reply's ``evidence`` field may take on top of a method's set ``max_tokens``: the quote
#: (EVIDENCE_CHARS characters, about 4 to a token), its key and quotes, and a margin for escapes
EVIDENCE_TOKENS = EVIDENCE_CHARS // 4 + 40

#: a shorter quote is no evidence (a letter or a word fragment is a substring of almost any step)
MIN_CHARS = 4

#: the sentence added to a prompt that asks for evidence
EVIDENCE_REQUEST = (
    'Also reply with "evidence": a short quote (at most {n} characters) copied exactly, character '
    "for character, from the content of the step you name, showing the error. Quote; do not "
    "paraphrase."
)

_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb "


class EvidenceCheck(NamedTuple):
    """The outcome of :func:`check_evidence`.

    Attributes
    ----------
    evidence : str or None, the quote as it stands in the step (None when dropped or not given)
    note : str or None, why there is none (None when kept)
    """

    evidence: str | None
    note: str | None


@functools.lru_cache(maxsize=512)
def with_evidence(model: type[M], max_chars: int = EVIDENCE_CHARS) -> type[M]:
    """``model`` with one more required field, ``evidence`` (a string of at most ``max_chars`` characters).

    The subclass keeps the model's name, so the schema name a server or a log shows is unchanged.

    Examples
    --------
    >>> class R(BaseModel):
    ...     step: int
    >>> sorted(with_evidence(R).model_json_schema()["properties"])
    ['evidence', 'step']
    """
    return create_model(
        model.__name__,
        __base__=model,
        __doc__=model.__doc__,
        evidence=(ShortText(max_chars, "a verbatim quote from the blamed step that shows the error"), Field(...)),
    )


def ask_evidence(messages: Sequence[dict[str, Any]], max_chars: int = EVIDENCE_CHARS) -> list[dict[str, Any]]:
    """The messages with :data:`EVIDENCE_REQUEST` appended to the last user message (copies; input unchanged).

    Raises
    ------
    ValueError
        If there is no user message.

    Examples
    --------
    >>> ask_evidence([{"role": "user", "content": "Which step?"}])[0]["content"].startswith("Which step?\\n\\nAlso")
    True
    """
    out = [dict(m) for m in messages]
    for m in reversed(out):
        if m.get("role") == "user":
            m["content"] = f"{m['content']}\n\n{EVIDENCE_REQUEST.format(n=max_chars)}"
            return out
    raise ValueError("no user message to ask for evidence in")


def check_evidence(quote: str | None, content: str, step: int) -> EvidenceCheck:
    """Keep ``quote`` only if it is a substring of the step's ``content``.

    Parameters
    ----------
    quote : str or None, the quote as replied
    content : str, the blamed step's content
    step : int, its 0-based index (named in the note)

    Returns
    -------
    EvidenceCheck: the quote as it stands in ``content`` (an exact match, or the step's text where the quote
    matched with runs of whitespace collapsed), or None with the reason.

    Examples
    --------
    >>> check_evidence('"34 kPa"', "About 34 kPa at the summit.", 2)
    EvidenceCheck(evidence='34 kPa', note=None)
    >>> check_evidence("34  kPa\\nat", "About 34 kPa at the summit.", 2).evidence
    '34 kPa at'
    >>> check_evidence("71 kPa", "About 34 kPa at the summit.", 2).note
    "dropped: the quote is not in step 2 ('71 kPa')"
    """
    q = (quote or "").strip().strip(_QUOTES).strip()
    if not q:
        return EvidenceCheck(None, "no quote given")
    if len(q) < MIN_CHARS:
        return EvidenceCheck(None, f"dropped: the quote is too short to be evidence ({q!r})")
    if q in content:
        return EvidenceCheck(q, None)
    words = q.split()
    m = re.search(r"\s+".join(re.escape(w) for w in words), content) if words else None
    if m:
        return EvidenceCheck(m.group(0), None)
    shown = q if len(q) <= 80 else q[:79] + "…"
    return EvidenceCheck(None, f"dropped: the quote is not in step {step} ({shown!r})")


def evidence_fields(quote: str | None, steps: Sequence[Any], step: int | None, *, asked: bool) -> dict[str, Any]:
    """The ``evidence`` and ``evidence_note`` of an Attribution.

    Parameters
    ----------
    quote : str or None, what the reply gave
    steps : the trace's steps (``Step`` objects with ``content``)
    step : int or None, the blamed step
    asked : bool, whether evidence was asked for (``quote_evidence`` on, or a method whose reply has it);
        when False both fields are None

    Returns
    -------
    dict with ``evidence`` and ``evidence_note``
    """
    if not asked:
        return {"evidence": None, "evidence_note": None}
    if step is None or not 0 <= step < len(steps):
        return {"evidence": None, "evidence_note": "no blamed step to quote"}
    chk = check_evidence(quote, steps[step].content, step)
    return {"evidence": chk.evidence, "evidence_note": chk.note}
