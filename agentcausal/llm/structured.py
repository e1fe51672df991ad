"""The gateway's structured replies: :meth:`StructuredMixin.structured`, a mixin of :class:`~agentcausal.llm.gateway.Gateway`.

The reply model's JSON schema goes as ``response_format`` (``json_schema``, or ``json_object`` with the
schema in the prompt) and is part of the cache key; a cached reply is validated again (a changed reply
model asks again). An invalid reply goes back with its validation error up to ``max_repairs`` times, then
:class:`~agentcausal.exceptions.StructuredOutputError` carries the raw text. Not instructor: this loop
shares the cache key, usage accounting and the ``json_schema`` mode of llama.cpp's and vLLM's servers, and
llama.cpp's server lacks instructor's default tool calling.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from agentcausal.exceptions import EndpointUnreachableError, LLMCallError, StructuredOutputError
from agentcausal.llm import dialect
from agentcausal.llm.gateway_cache import GatewayCache
from agentcausal.llm.limits import Timer
from agentcausal.llm.profiles import Profile

__all__ = ["StructuredMixin"]

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)


class StructuredMixin(GatewayCache):
    """Structured replies for :class:`~agentcausal.llm.gateway.Gateway`, which provides routing, requests,
    cache keys and accounting.

    Attributes
    ----------
    max_repairs : int, extra attempts for a reply that fails validation
    """

    max_repairs: int

    if TYPE_CHECKING:  # defined by Gateway

        def _routed(self, stage: str, kind: str) -> Profile: ...

        def _key(self, profile: Profile, payload: dict[str, Any]) -> str: ...

        def _request(
            self, stage: str, profile: Profile, messages: list[dict[str, str]], params: dict[str, Any], timer: Timer
        ) -> tuple[str, str | None, int, int]: ...

        def _record(self, stage: str, item: str | None, profile: Profile, timer: Timer, **kw: int) -> None: ...

    def structured(
        self,
        stage: str,
        messages: Sequence[dict[str, str]],
        reply_model: type[T],
        *,
        item: str | None = None,
        max_tokens: int | None = None,
        sample: int = 0,
        temperature: float | None = None,
        schema: dict[str, Any] | None = None,
        context: Any = None,
    ) -> T:
        """A chat completion validated against a pydantic model, repaired on failure, cached.

        Parameters
        ----------
        stage, messages, item, max_tokens, sample, temperature
            As in :meth:`~agentcausal.llm.gateway.Gateway.chat`.
        reply_model : pydantic model class; its JSON schema is sent with the request,
            and its docstring and field descriptions are what the model reads.
        schema : dict, optional
            The JSON schema to send (and key) instead of ``reply_model``'s own: a per-call
            variant of one template (an enum of this trace's agents, a bound on its steps), so a
            method whose reply shape varies per item need not build a pydantic class and its
            schema per shape (about 1-2 ms of CPU each). ``reply_model`` must then enforce the
            same constraints, reading them from ``context``; the dict is only read. Its ``title``
            names it in ``response_format`` (else the class name).
        context : optional
            pydantic's validation context for ``reply_model.model_validate_json`` (every reply,
            cached ones included), e.g. the agents and step count a ``schema`` was built for.

        Returns
        -------
        An instance of ``reply_model``.

        Raises
        ------
        StructuredOutputError
            The reply is still invalid after ``max_repairs`` repair attempts;
            carries the last raw text, the attempt count and the error.
            Each repair request sends the original messages, the last invalid
            reply and its validation error (not every earlier attempt: prompts
            stay short on small local models); a reply cut off at
            ``max_tokens`` is asked again for a shorter object.
        UnknownStageError, MissingAPIKeyError, EndpointUnreachableError, LLMCallError
        ConfigError
            If the stage is routed to an embedding profile.
        """
        profile = self._routed(stage, "chat")
        name = reply_model.__name__
        if schema is None:
            schema, schema_text = dialect.reply_schema(reply_model)
        else:
            name = schema.get("title") or name
            schema_text = json.dumps(schema) if profile.json_mode != "json_schema" else ""
        msgs = [dict(m) for m in messages]
        params, key_extra = dialect.chat_params(profile, max_tokens, temperature, sample)
        if profile.json_mode == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": False},
            }
        else:
            params["response_format"] = {"type": "json_object"}
            msgs = msgs + [
                {
                    "role": "system",
                    "content": "Reply with one JSON object that satisfies this JSON schema:\n" + schema_text,
                }
            ]
        key = self._key(profile, {"messages": msgs, "params": params, "schema": schema, **key_extra})
        timer = Timer()
        with self._single_flight(key, timer):  # identical calls in flight wait for the first
            hit = self._cached_text(key)
            if hit is not None:
                try:
                    out = reply_model.model_validate_json(dialect.extract_json(hit), context=context)
                    self._record(stage, item, profile, timer, cache_hits=1, run_hits=self._run_hit(key))
                    return out
                except ValidationError:
                    pass  # reply model changed since: ask again
            convo = list(msgs)
            attempts = pt_total = ct_total = 0
            raw, err = "", ""
            for attempt in range(1 + self.max_repairs):
                try:
                    raw, finish, pt, ct = self._request(stage, profile, convo, params, timer)
                except (EndpointUnreachableError, LLMCallError):
                    self._record(
                        stage,
                        item,
                        profile,
                        timer,
                        requests=timer.requests,
                        prompt_tokens=pt_total,
                        completion_tokens=ct_total,
                    )
                    raise
                attempts += 1
                pt_total += pt
                ct_total += ct
                try:
                    out = reply_model.model_validate_json(dialect.extract_json(raw), context=context)
                except ValidationError as exc:
                    err = str(exc)
                    truncated = finish == "length"
                    if truncated:
                        err = f"reply cut off at max_tokens={max_tokens} (finish_reason=length); {err}"
                    log.info(
                        "stage=%s invalid %s reply (attempt %d): %s",
                        stage,
                        reply_model.__name__,
                        attempt + 1,
                        err[:200],
                    )
                    convo = msgs + [
                        {"role": "assistant", "content": raw},
                        {"role": "user", "content": dialect.repair_prompt(err, truncated)},
                    ]
                    continue
                self._cache_set(key, {"text": raw})
                self._record(
                    stage,
                    item,
                    profile,
                    timer,
                    requests=timer.requests,
                    prompt_tokens=pt_total,
                    completion_tokens=ct_total,
                )
                return out
            self._record(
                stage, item, profile, timer, requests=timer.requests, prompt_tokens=pt_total, completion_tokens=ct_total
            )
            raise StructuredOutputError(stage, reply_model.__name__, raw, attempts, err)
