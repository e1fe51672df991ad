"""Text normalisation of trace fields at load time.

Traces come from many systems, and message ``content`` is not always a
string. Every loader turns a field into text with the same rules:

* ``str``: kept, with each **lone surrogate** (``"\\ud800"`` is valid JSON but
  not valid Unicode; JSON encoders, hashes and HTTP bodies reject it) replaced by
  U+FFFD, the replacement character;
* ``None``: the empty string;
* a **list of text parts**: the parts' texts joined by a newline. A part is a
  string, or an object ``{"type": "text", "text": ...}`` (OpenAI chat parts;
  ``input_text`` / ``output_text`` of the Responses API, and ``"content"``
  instead of ``"text"`` as OpenTelemetry GenAI writes it, are accepted too);
* anything else (a number, a boolean, an object, a non-text part such as
  ``image_url``): a :class:`~agentcausal.exceptions.TraceFormatError` naming
  the field; no Python ``repr`` ever becomes trace text.

References
----------
OpenAI. "Chat Completions API: message content parts."
https://platform.openai.com/docs/api-reference/chat/create
"""

from __future__ import annotations

import re
from typing import Any

from agentcausal.exceptions import TraceFormatError

__all__ = ["TEXT_PART_TYPES", "clean_text", "content_text", "optional_text"]

#: part ``type`` values whose text is kept when content is a list of parts
TEXT_PART_TYPES = ("text", "input_text", "output_text")

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Replace every lone surrogate code point by U+FFFD.

    Parameters
    ----------
    text : str

    Returns
    -------
    str, ``text`` itself when it holds no surrogate.

    Examples
    --------
    >>> clean_text("ok \\ud800 end")
    'ok \\ufffd end'
    """
    if text.isascii():  # no surrogate can be there: the common case, without a regex scan
        return text
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def content_text(value: Any, *, field: str) -> str:
    """A message content as text: string, null, or a list of text parts.

    Parameters
    ----------
    value : the parsed JSON value
    field : where it sits, for the error (e.g. ``"history[3].content"``)

    Returns
    -------
    str

    Raises
    ------
    TraceFormatError
        If ``value`` is a number, boolean or object, or a list holding a
        non-text part; ``field`` names the culprit (``history[3].content[1]``).

    Examples
    --------
    >>> content_text([{"type": "text", "text": "a"}, "b"], field="content")
    'a\\nb'
    >>> content_text(None, field="content")
    ''
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        parts = []
        for j, part in enumerate(value):
            if isinstance(part, str):
                parts.append(clean_text(part))
            elif isinstance(part, dict) and part.get("type") in TEXT_PART_TYPES:
                text = part.get("text", part.get("content"))
                if not isinstance(text, str):
                    raise TraceFormatError(
                        f"text part without a string 'text' ({_type_name(text)})", field=f"{field}[{j}]"
                    )
                parts.append(clean_text(text))
            elif isinstance(part, dict):
                raise TraceFormatError(
                    f"part of type {str(part.get('type'))[:40]!r} is not text", field=f"{field}[{j}]"
                )
            else:
                raise TraceFormatError(f"expected text or a text part, got {_type_name(part)}", field=f"{field}[{j}]")
        return "\n".join(parts)
    raise TraceFormatError(f"expected text, null or a list of text parts, got {_type_name(value)}", field=field)


def optional_text(value: Any, *, field: str, numbers: bool = False) -> str:
    """A short text field (role, name, question, answer): string or null.

    Parameters
    ----------
    value : the parsed JSON value
    field : its name, for the error
    numbers : accept an int or float and write it as text (e.g. a ground-truth answer ``42``)

    Returns
    -------
    str, ``""`` for null.

    Raises
    ------
    TraceFormatError
        If ``value`` is any other type.

    Examples
    --------
    >>> optional_text(None, field="role"), optional_text(42, field="ground_truth", numbers=True)
    ('', '42')
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return clean_text(value)
    if numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise TraceFormatError(f"expected text or null, got {_type_name(value)}", field=field)
