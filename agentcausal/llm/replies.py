"""Building blocks for structured-reply models, and the reply text a model's reasoning is removed from.

:func:`strip_reasoning` removes the visible reasoning block a reasoning model
writes before its answer when it is served without a reasoning parser
(``<think>…</think>``, as vLLM serves DeepSeek-R1 and Qwen3 in thinking mode):
the gateway applies it to every reply before the reply is validated, repaired
or cached.

:func:`ShortText` is a string field whose JSON schema carries ``maxLength``:
servers that decode with a grammar built from the schema (llama.cpp, vLLM)
cannot write past it, so a chatty small model cannot run a free-text reason
into ``max_tokens`` and cut the JSON off. Endpoints that do not enforce the
schema may still send a longer string; it is truncated on validation instead
of failing, because the length of a reason is never worth a repair round trip.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

__all__ = ["ShortText", "strip_reasoning"]

_OPEN = re.compile(r"\A\s*<think>", re.IGNORECASE)
_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """``text`` without the reasoning block a reasoning model writes before its answer.

    Removes, from the start of the reply, each ``<think>…</think>`` block, and a
    block whose opening tag was in the prompt (DeepSeek-R1's chat template ends
    the prompt with ``<think>``, so the reply holds only the closing tag): text up
    to a first ``</think>`` with no ``<think>`` before it, unless that text starts
    like an answer (``{``, ``[`` or a code fence), where the tag is content. A
    block that never closes (the reply was cut off while reasoning) leaves no
    answer: ``""``. Anything else is returned unchanged.

    Parameters
    ----------
    text : str, the reply's ``content``

    Returns
    -------
    str, the answer; leading whitespace after a removed block is dropped.

    Examples
    --------
    >>> strip_reasoning('<think>the step 2 is wrong</think>\\n{"step": 2}')
    '{"step": 2}'
    >>> strip_reasoning('weighing steps 1 and 2...</think>{"step": 2}')
    '{"step": 2}'
    >>> strip_reasoning('{"reason": "a literal </think> tag"}')
    '{"reason": "a literal </think> tag"}'
    >>> strip_reasoning("<think>still thinking when the cap hit")
    ''
    """
    out = text
    while (m := _OPEN.match(out)) is not None:
        end = _CLOSE.search(out, m.end())
        if end is None:
            return ""
        out = out[end.end() :].lstrip()
    if out is text:  # no block opened in the reply: a closing tag of one opened in the prompt
        end = _CLOSE.search(out)
        head = out[: end.start()].lstrip() if end is not None else ""
        if end is not None and "<think>" not in head.lower() and not head.startswith(("{", "[", "```")):
            out = out[end.end() :].lstrip()
    return out


def _truncate(limit: int):
    def cut(value: Any) -> Any:
        return value[:limit] if isinstance(value, str) else value

    return cut


def ShortText(max_chars: int, description: str | None = None) -> Any:  # a type factory
    """``str`` annotated with ``maxLength = max_chars`` and truncation on validation.

    Parameters
    ----------
    max_chars : int, the cap in characters (>= 1)
    description : str, optional; what the model reads about the field

    Returns
    -------
    An ``Annotated[str, ...]`` type for a pydantic field.

    Raises
    ------
    ValueError if ``max_chars`` < 1.

    Examples
    --------
    >>> from pydantic import BaseModel
    >>> class Verdict(BaseModel):
    ...     reason: ShortText(10)
    >>> Verdict(reason="a very long reason indeed").reason
    'a very lon'
    >>> Verdict.model_json_schema()["properties"]["reason"]["maxLength"]
    10
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    return Annotated[str, BeforeValidator(_truncate(max_chars)), Field(max_length=max_chars, description=description)]
