"""The last check before a chat request leaves: a prompt that cannot fit the routed model's context window
is refused for its item, never sent.

Methods budget their prompts themselves (``budget_chars`` in
:mod:`agentcausal.traces.render`, GCA's ``trace_budget``, the baselines'
``context_tokens``), shortening a long trace as each documents. This guard
catches what a budget misses (a method without one, a 100,000-step trace
rendered whole): the prompt's size is estimated as its UTF-8 bytes divided by
:data:`~agentcausal.traces.render.CHARS_PER_TOKEN` (bytes, not characters, so
that text of 2- and 3-byte characters, which tokenises densely, is not
under-counted), and a prompt whose estimate alone exceeds the profile's
``context_window`` raises :class:`~agentcausal.exceptions.ContextWindowError`
before any request. That is a content failure: the item's row is
``content_failed`` with the message, and the run goes on. The estimate errs
towards sending: a prompt within the window by the estimate but over it by the
server's tokenizer is answered by the server (an HTTP 400 for that item).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentcausal.exceptions import ContextWindowError
from agentcausal.traces.render import CHARS_PER_TOKEN

__all__ = ["prompt_size", "check_prompt_window"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content)
    return "" if content is None else str(content)


def prompt_size(messages: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(estimated tokens, characters) of a chat prompt's message contents.

    Examples
    --------
    >>> prompt_size([{"role": "user", "content": "x" * 400}])
    (100, 400)
    """
    chars = nbytes = 0
    for m in messages:
        t = _text(m.get("content"))
        chars += len(t)
        nbytes += len(t.encode("utf-8", "surrogatepass"))
    return int(nbytes / CHARS_PER_TOKEN), chars


def check_prompt_window(stage: str, profile: Any, messages: Iterable[Mapping[str, Any]]) -> None:
    """Refuse a prompt whose estimated size exceeds ``profile.context_window`` tokens.

    Parameters
    ----------
    stage : the routed stage
    profile : the routed profile (``name``, ``context_window``)
    messages : the chat messages about to be sent

    Raises
    ------
    ContextWindowError
        Naming the stage, the profile, the estimate and the window.
    """
    window = int(getattr(profile, "context_window", 0) or 0)
    if window <= 0:
        return
    tokens, chars = prompt_size(messages)
    if tokens > window:
        raise ContextWindowError(stage, profile.name, tokens, window, chars)
