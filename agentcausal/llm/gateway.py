"""The one LLM gateway: chat, structured replies and embeddings for every stage.

Every call names a *stage* (``dcfa.gca``, ``dcfa.embed``, ``mac.debate``, ``baseline`` ...); the
routing (:mod:`agentcausal.llm.profiles`) maps it to a profile, and the call goes as JSON over HTTP
(:class:`~agentcausal.llm.limits.Endpoint`) to that OpenAI-compatible endpoint: a commercial API, vLLM, or
the embedded llama.cpp server
(:mod:`agentcausal.llm.local`). One code path for all three. The gateway holds its reply cache (disk cache,
one paid call per prompt, entries written this run: :class:`~agentcausal.llm.gateway_cache.GatewayCache`,
``gw.cache``) and its embedder (:class:`~agentcausal.llm.embedding.Embedder`, ``gw.embedder``); around each
call: parameters per dialect and the cache key (:mod:`~agentcausal.llm.dialect`), the concurrency limit per
profile (:mod:`~agentcausal.llm.limits`), and:

* **Retries**: the ``openai`` client's policy (:class:`~agentcausal.llm.limits.RetryPolicy`): backoff with
  jitter on 408, 409, 429, 5xx, timeouts and connection errors (``max_retries``, ``Retry-After``), one slot
  of the limit held; then :class:`EndpointUnreachableError`.
* **Request bodies**: plain dicts sent as JSON, the reply read as JSON; a leading visible
  ``<think>…</think>`` block is removed before a reply is parsed or cached
  (:func:`agentcausal.llm.replies.strip_reasoning`).
* **One completion core** (:meth:`Gateway._complete`) under :meth:`Gateway.chat` and
  :meth:`Gateway.structured`: single flight, cache read, request(s), cache write, one usage record.
* **Structured replies** (:mod:`~agentcausal.llm.structured`): the model's JSON schema goes as
  ``response_format``; an invalid reply goes back with its validation error up to ``max_repairs`` times,
  then :class:`~agentcausal.exceptions.StructuredOutputError` carries the raw text.
* **Accounting** per stage and item (:attr:`Gateway.usage`): one record per call (hit, answer or failure):
  tokens, and time waiting (for a slot or an identical call in flight) apart from time in requests.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from agentcausal.exceptions import ConfigError, EndpointUnreachableError, LLMCallError, StructuredOutputError
from agentcausal.llm import dialect
from agentcausal.llm.embedding import Embedder
from agentcausal.llm.gateway_cache import GatewayCache
from agentcausal.llm.limits import EndpointClients, Timer
from agentcausal.llm.profiles import Profile, ProfileSet, load_profiles
from agentcausal.llm.replies import strip_reasoning
from agentcausal.llm.structured import repair_turns, structured_request
from agentcausal.llm.usage import StageUsage, UsageLedger
from agentcausal.llm.window import check_prompt_window

__all__ = ["Gateway", "Message"]

log = logging.getLogger(__name__)

Message = dict[str, str]
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class Gateway:
    """Routes, caches, retries and counts every LLM and embedding call.

    Parameters
    ----------
    profiles : ProfileSet
        Profiles and the active routing (:func:`agentcausal.llm.profiles.load_profiles`).
    cache_dir : path or None
        Disk cache folder; ``None`` disables caching.
    refresh : bool
        Bypass reads of entries written before this gateway (writes still
        happen, and identical calls in this run still share one request); an
        unreadable cache file is moved aside and a new one started.
    max_retries : int
        Retries of one request on 429, 5xx, timeouts and connection errors.
    max_repairs : int
        Extra attempts for a structured reply that fails validation.

    Attributes
    ----------
    usage : UsageLedger, one record per call (:mod:`agentcausal.llm.usage`)
    cache : GatewayCache, the reply cache (shared by :meth:`namespaced` views)
    clients : EndpointClients, a client per endpoint and the call through it (limit held, errors mapped)
    embedder : Embedder, embeddings through ``cache`` and this gateway's client call

    Examples
    --------
    >>> from agentcausal.llm import Gateway
    >>> gw = Gateway.from_settings(cache_dir=None)
    >>> gw.profile_for("dcfa.gca").name
    'embedded'
    """

    def __init__(
        self,
        profiles: ProfileSet,
        *,
        cache_dir: str | Path | None = "cache/llm",
        refresh: bool = False,
        max_retries: int = 4,
        max_repairs: int = 2,
    ) -> None:
        self.profiles = profiles
        self.max_retries = max_retries
        self.max_repairs = max_repairs
        self.usage = UsageLedger()
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.cache = GatewayCache(self.cache_dir, refresh=refresh)
        self.clients = EndpointClients(profiles, max_retries)
        self.embedder = Embedder(self.cache, self.clients.post)
        self.namespace: str | None = None  # a caller's cache space (:meth:`namespaced`); None = none

    @classmethod
    def from_settings(
        cls,
        *,
        routing: str | None = None,
        profiles_path: str | Path | None = None,
        cache_dir: str | Path | None = "cache/llm",
        refresh: bool = False,
        max_retries: int = 4,
        max_repairs: int = 2,
    ) -> "Gateway":
        """Build a gateway from the profiles file and a routing name.

        Parameters
        ----------
        routing : str, optional; default ``$AGENTCAUSAL_ROUTING`` or ``"default"``
        profiles_path : path, optional; default ``$AGENTCAUSAL_PROFILES`` or the packaged file
        cache_dir, refresh, max_retries, max_repairs : as in :class:`Gateway`

        Raises
        ------
        ConfigError, UnknownProfileError
            See :func:`agentcausal.llm.profiles.load_profiles`.
        """
        return cls(
            load_profiles(profiles_path, routing),
            cache_dir=cache_dir,
            refresh=refresh,
            max_retries=max_retries,
            max_repairs=max_repairs,
        )

    @property
    def refresh(self) -> bool:
        """Read only reply-cache entries written this run (the cache's; settable, for every view)."""
        return self.cache.refresh

    @refresh.setter
    def refresh(self, value: bool) -> None:
        self.cache.refresh = value

    def namespaced(self, namespace: str) -> "Gateway":
        """A view of this gateway whose chat and structured replies are cached in their own ``namespace``.

        The view shares everything else (profiles, the reply cache with its keys in flight and the entries
        written this run, the embedder, clients, usage ledger): only the cache key differs
        (:func:`~agentcausal.llm.dialect.cache_key`'s ``namespace``), so a call never reads a reply
        cached under another namespace, or under none, even within one run and under ``refresh``.
        Discovery runs each method in its own (``"dcm_only"``), so an ablation pays for its own calls.

        >>> gw = Gateway.from_settings(cache_dir=None)
        >>> v = gw.namespaced("dcm_only")
        >>> (v.namespace, gw.namespace, v.usage is gw.usage, v.cache is gw.cache)
        ('dcm_only', None, True, True)
        """
        view = copy.copy(self)
        view.namespace = namespace
        return view

    def _key(self, profile: Profile, payload: dict[str, Any]) -> str:
        """The reply-cache key of a chat request; the namespace only where this view has one."""
        ident = dialect.cache_identity(profile)
        if self.namespace is None:
            return dialect.cache_key(ident, profile.model, payload)
        return dialect.cache_key(ident, profile.model, payload, self.namespace)

    def profile_for(self, stage: str) -> Profile:
        """The profile serving ``stage``. Raises UnknownStageError (see ProfileSet)."""
        return self.profiles.profile_for(stage)

    def _routed(self, stage: str, kind: str) -> Profile:
        profile = self.profile_for(stage)
        if profile.kind != kind:
            raise ConfigError(
                f"stage {stage!r} is routed to profile {profile.name!r} of kind {profile.kind!r}, "
                f"but the call needs a {kind!r} profile",
                path=self.profiles.path,
            )
        return profile

    def model_for(self, stage: str) -> str:
        """``"profile:model"`` label of the stage, for records and cache keys of results; an embedded profile
        serving its own ``model_path`` gets ``@<file name>`` appended (two GGUF files never share a label)."""
        p = self.profile_for(stage)
        label = f"{p.name}:{p.model}"
        return f"{label}@{Path(p.model_path).name}" if p.is_embedded and p.model_path else label

    def stage_identity(self, stage: str) -> list[Any]:
        """What of the stage's routing changes a result, for the results store's keys.

        Returns ``[profile:model label, context window, endpoint identity, dialect]``: the endpoint
        identity as in the reply cache's keys (base URL; for embedded profiles the GGUF and the
        reproducible mode), the dialect the request parameters a call sends by default (temperature,
        token cap, ``reasoning_effort``, ``extra_body`` fields such as Qwen3's thinking switch) plus the
        JSON mode and the profile's ``max_output_tokens`` (the completion cap of a call whose method leaves
        its own cap unset). Two profiles serving one model id in two dialects never share a result.

        Raises UnknownStageError (see ProfileSet) when the stage is not routed.
        """
        p = self.profile_for(stage)
        shape: dict[str, Any] = {"json_mode": p.json_mode, "max_output_tokens": p.max_output_tokens}
        if p.kind == "chat":
            shape.update(dialect.chat_params(p, None, None, 0)[0])
        return [self.model_for(stage), p.context_window, dialect.cache_identity(p), shape]

    def _request(
        self, stage: str, profile: Profile, messages: list[Message], params: dict[str, Any], timer: Timer
    ) -> tuple[str, str | None, int, int]:
        """One chat completion request: (text, finish_reason, prompt_tokens, completion_tokens).

        The body goes out as it is (:meth:`EndpointClients.post <agentcausal.llm.limits.EndpointClients.post>`:
        the limit's slot held, retries, errors as ours), and the reply is read as JSON.
        """
        check_prompt_window(stage, profile, messages)  # over the window: refused for the item, never sent
        body = {"model": profile.model, "messages": messages, **params}
        data = self.clients.post(stage, profile, "/chat/completions", body, timer)
        choices = data.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise LLMCallError(profile.name, stage, None, "reply has no choices")
        choice = choices[0]
        text = (choice.get("message") or {}).get("content") or ""
        if not isinstance(text, str):
            raise LLMCallError(profile.name, stage, None, f"reply content is {type(text).__name__}, not text")
        text = strip_reasoning(text)  # a visible <think> block is not the answer
        u = data.get("usage") or {}
        return text, choice.get("finish_reason"), int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)

    def _record(self, stage: str, item: str | None, profile: Profile, timer: Timer, **kw: int) -> None:
        """The one usage record of a call (``kw``: the :class:`StageUsage` counts), priced by the profile."""
        pt, ct, t = kw.get("prompt_tokens", 0), kw.get("completion_tokens", 0), timer.request
        cost = pt / 1000 * profile.price_prompt_per_1k + ct / 1000 * profile.price_completion_per_1k
        u = StageUsage(calls=1, seconds=t, request_seconds=t, wait_seconds=timer.wait, cost_usd=cost, **kw)
        self.usage.record(stage, item, u)

    def _complete(
        self,
        stage: str,
        item: str | None,
        profile: Profile,
        key: str,
        messages: list[Message],
        params: dict[str, Any],
        parse: Callable[[str], T],
        *,
        repairs: int = 0,
        reply_model: str = "",
        max_tokens: int | None = None,
    ) -> T:
        """The completion core of :meth:`chat` and :meth:`structured`: one call, cached, one usage record.

        Under the single flight of ``key``: a cached reply that ``parse`` accepts is the answer (a cache
        hit); else up to ``1 + repairs`` requests, each reply given to ``parse`` (a ``ValidationError``
        sends the reply back with its error, :func:`~agentcausal.llm.structured.repair_turns`); the first
        reply it accepts is cached (its text) and returned. The call's usage is recorded once, whether it
        is a hit, an answer or a failure of the endpoint (the tokens and requests it spent). Raises
        StructuredOutputError when ``parse`` refused every reply (``reply_model`` names what it had to
        satisfy); :meth:`_request`'s errors pass through.
        """
        timer = Timer()
        with self.cache.single_flight(key, timer):  # identical calls in flight wait for the first
            hit = self.cache.text(key)
            if hit is not None:
                try:
                    out = parse(hit)
                except ValidationError:
                    pass  # reply model changed since: ask again
                else:
                    self._record(stage, item, profile, timer, cache_hits=1, run_hits=self.cache.run_hit(key))
                    return out
            convo, pt, ct, raw, err = messages, 0, 0, "", ""

            def spent() -> None:  # the record of a call that sent requests: what they cost so far
                self._record(
                    stage, item, profile, timer, requests=timer.requests, prompt_tokens=pt, completion_tokens=ct
                )

            for attempt in range(1 + repairs):
                try:
                    raw, finish, p, c = self._request(stage, profile, convo, params, timer)
                except (EndpointUnreachableError, LLMCallError):
                    spent()
                    raise
                pt, ct = pt + p, ct + c
                try:
                    out = parse(raw)
                except ValidationError as exc:
                    truncated = finish == "length"
                    err = (
                        f"reply cut off at max_tokens={max_tokens} (finish_reason=length); {exc}"
                        if truncated
                        else str(exc)
                    )
                    log.info("stage=%s invalid %s reply (attempt %d): %s", stage, reply_model, attempt + 1, err[:200])
                    convo = repair_turns(messages, raw, err, truncated)
                    continue
                self.cache.put(key, {"text": raw})
                spent()
                log.debug("stage=%s profile=%s prompt_tokens=%d completion_tokens=%d", stage, profile.name, pt, ct)
                return out
            spent()
            raise StructuredOutputError(stage, reply_model, raw, 1 + repairs, err)

    def chat(
        self,
        stage: str,
        messages: Sequence[Message],
        *,
        item: str | None = None,
        max_tokens: int | None = None,
        sample: int = 0,
        temperature: float | None = None,
    ) -> str:
        """One chat completion, cached.

        Parameters
        ----------
        stage : str, routed stage name
        messages : sequence of {"role", "content"} dicts
        item : str, optional; the trace or dataset id for usage accounting
        max_tokens : int, optional
            Completion cap in tokens, clamped to the profile's ``max_output_tokens``
            and sent under the profile's ``token_cap_param``; for a profile whose
            hidden reasoning counts against the cap, the profile's
            ``max_output_tokens`` (or no cap) is sent instead.
        sample : int
            Repeat index. 0 (default) is the ordinary call; ``sample > 0`` is
            cached apart and sent as ``seed = sample`` where the profile takes a
            seed, so K repeats give K independent draws at the profile's temperature.
        temperature : float, optional
            ``None`` (default) uses the profile's ``temperature`` (0 unless set);
            not sent where the profile's ``temperature_allowed`` is false.

        Returns
        -------
        str, the reply text.

        Raises
        ------
        UnknownStageError, MissingAPIKeyError, EndpointUnreachableError, LLMCallError
        ConfigError
            If the stage is routed to an embedding profile.
        """
        profile = self._routed(stage, "chat")
        msgs = [dict(m) for m in messages]
        params, key_extra = dialect.chat_params(profile, max_tokens, temperature, sample)
        key = self._key(profile, {"messages": msgs, "params": params, **key_extra})
        return self._complete(stage, item, profile, key, msgs, params, str)

    def structured(
        self,
        stage: str,
        messages: Sequence[Message],
        reply_model: type[M],
        *,
        item: str | None = None,
        max_tokens: int | None = None,
        sample: int = 0,
        temperature: float | None = None,
        schema: dict[str, Any] | None = None,
        context: Any = None,
    ) -> M:
        """A chat completion validated against a pydantic model, repaired on failure, cached.

        Parameters
        ----------
        stage, messages, item, max_tokens, sample, temperature
            As in :meth:`chat`.
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
        req = structured_request(profile, [dict(m) for m in messages], reply_model, schema)
        params, key_extra = dialect.chat_params(profile, max_tokens, temperature, sample)
        params["response_format"] = req.response_format
        key = self._key(profile, {"messages": req.messages, "params": params, "schema": req.schema, **key_extra})

        def parse(text: str) -> M:
            return reply_model.model_validate_json(dialect.extract_json(text), context=context)

        return self._complete(
            stage,
            item,
            profile,
            key,
            req.messages,
            params,
            parse,
            repairs=self.max_repairs,
            reply_model=reply_model.__name__,
            max_tokens=max_tokens,
        )

    def embed(self, stage: str, texts: Sequence[str], *, item: str | None = None) -> np.ndarray:
        """Embed texts, each cached on disk by (base URL, model, text) (:class:`~agentcausal.llm.embedding.Embedder`).

        Parameters
        ----------
        stage : str, an embedding stage (e.g. ``dcfa.embed``)
        texts : sequence of str, length n
        item : str, optional

        Returns
        -------
        ndarray of shape (n, dim), float32, rows L2-normalised (so a dot product is a cosine).

        Raises
        ------
        UnknownStageError, MissingAPIKeyError, EndpointUnreachableError, LLMCallError
        ConfigError
            If the stage is routed to a chat profile.
        ModelFileError
            If the local embedder's model cannot be loaded.
        """
        profile = self._routed(stage, "embedding")
        timer = Timer()
        try:
            out = self.embedder.embed(stage, profile, texts, timer)
        except (EndpointUnreachableError, LLMCallError):
            self._record(stage, item, profile, timer, requests=timer.requests)
            raise
        self._record(
            stage,
            item,
            profile,
            timer,
            requests=out.requests,
            prompt_tokens=out.prompt_tokens,
            cache_hits=out.cache_hits,
            run_hits=out.run_hits,
        )
        return out.vectors

    def max_output_tokens(self, stage: str) -> int | None:
        """The completion-token ceiling of the profile serving ``stage`` (``None`` = no ceiling), from which methods
        under the ``paper`` preset derive their completion budgets. Raises UnknownStageError (see ProfileSet)."""
        return self.profile_for(stage).max_output_tokens

    @property
    def cache_dropped(self) -> int:
        """Reply-cache records that failed their check, dropped and asked again (:attr:`GatewayCache.dropped`)."""
        return self.cache.dropped

    def cache_notice(self) -> str | None:
        """One console line when reply-cache records were dropped, else None (:meth:`GatewayCache.notice`)."""
        return self.cache.notice()

    def close(self) -> None:
        """Close HTTP clients and the disk cache."""
        self.clients.close()
        self.cache.close()
