"""Structured replies: the request a reply model asks for, and the repair turns of an invalid reply.

:meth:`Gateway.structured <agentcausal.llm.gateway.Gateway.structured>` sends the reply model's JSON
schema as ``response_format`` (``json_schema``, or ``json_object`` with the schema in the prompt;
:func:`structured_request`), and the schema is part of the cache key; a cached reply is validated
again (a changed reply model asks again). An invalid reply goes back with its validation error up to
``max_repairs`` times (:func:`repair_turns`), then :class:`~agentcausal.exceptions.StructuredOutputError`
carries the raw text. Not instructor: this loop shares the cache key, usage accounting and the
``json_schema`` mode of llama.cpp's and vLLM's servers, and llama.cpp's server lacks instructor's
default tool calling.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from pydantic import BaseModel

from agentcausal.llm import dialect
from agentcausal.llm.profiles import Profile

__all__ = ["StructuredRequest", "repair_turns", "structured_request"]


class StructuredRequest(NamedTuple):
    """What a structured call adds to a chat request.

    Attributes
    ----------
    messages : list of {"role", "content"}, the caller's (plus the schema as a system turn under ``json_object``)
    response_format : dict, the ``response_format`` request parameter
    schema : dict, the JSON schema (part of the cache key)
    """

    messages: list[dict[str, str]]
    response_format: dict[str, Any]
    schema: dict[str, Any]


def structured_request(
    profile: Profile, messages: list[dict[str, str]], reply_model: type[BaseModel], schema: dict[str, Any] | None
) -> StructuredRequest:
    """The messages, ``response_format`` and schema of a structured call on ``profile``.

    Parameters
    ----------
    profile : the routed chat profile (its ``json_mode``)
    messages : the caller's messages (copied dicts; the list is not changed)
    reply_model : the pydantic model; its schema unless ``schema`` is given
    schema : a per-call schema to send instead (its ``title`` names it, else the class name); only read

    Examples
    --------
    >>> from agentcausal.llm.profiles import Profile
    >>> class Verdict(BaseModel):
    ...     agent: str
    >>> p = Profile(name="p", kind="chat", base_url="http://h/v1", model="m", json_mode="json_object")
    >>> r = structured_request(p, [{"role": "user", "content": "who?"}], Verdict, None)
    >>> r.response_format, r.messages[-1]["role"]
    ({'type': 'json_object'}, 'system')
    """
    name = reply_model.__name__
    if schema is None:
        schema, schema_text = dialect.reply_schema(reply_model)
    else:
        name = schema.get("title") or name
        schema_text = json.dumps(schema) if profile.json_mode != "json_schema" else ""
    if profile.json_mode == "json_schema":
        fmt: dict[str, Any] = {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
        return StructuredRequest(messages, fmt, schema)
    turn = {"role": "system", "content": "Reply with one JSON object that satisfies this JSON schema:\n" + schema_text}
    return StructuredRequest(messages + [turn], {"type": "json_object"}, schema)


def repair_turns(messages: list[dict[str, str]], raw: str, error: str, truncated: bool) -> list[dict[str, str]]:
    """The conversation of a repair request: the original ``messages``, the invalid reply ``raw`` and its
    validation ``error`` (not every earlier attempt: prompts stay short on small local models); a reply cut
    off at the token cap (``truncated``) is asked for a shorter object."""
    return messages + [
        {"role": "assistant", "content": raw},
        {"role": "user", "content": dialect.repair_prompt(error, truncated)},
    ]
