"""The one LLM gateway: chat, structured replies and embeddings for every stage.

Every call names a *stage* (``dcfa.gca``, ``dcfa.embed``, ``mac.debate``, ``baseline`` ...); the
routing (:mod:`agentcausal.llm.profiles`) maps it to a profile, and the call goes through the ``openai``
client to that OpenAI-compatible endpoint: a commercial API, vLLM, or the embedded llama.cpp server
(:mod:`agentcausal.llm.local`). One code path for all three. Around each call: the disk cache and one
paid call per prompt (:mod:`~agentcausal.llm.gateway_cache`), parameters per dialect and the cache key
(:mod:`~agentcausal.llm.dialect`), the concurrency limit per profile (:mod:`~agentcausal.llm.limits`),
embeddings (:mod:`~agentcausal.llm.embedding`), and:

* **Retries**: the ``openai`` client's exponential backoff with jitter on 429, 5xx, timeouts and
  connection errors (``max_retries``; it honours ``Retry-After``), holding one slot of the profile's
  limit throughout. After the last retry: :class:`EndpointUnreachableError`.
* **Request bodies**: plain dicts sent with the client's ``post`` (its retries, errors and auth), not
  ``chat.completions.create``, whose type-directed transform cost about 0.5 ms of CPU per request. A
  leading visible ``<think>…</think>`` block is removed before a reply is parsed or cached
  (:func:`agentcausal.llm.replies.strip_reasoning`).
* **Structured replies** (:mod:`~agentcausal.llm.structured`): the model's JSON schema goes as
  ``response_format``; an invalid reply goes back with its validation error up to ``max_repairs`` times,
  then :class:`~agentcausal.exceptions.StructuredOutputError` carries the raw text.
* **Accounting** per stage and item (:attr:`Gateway.usage`): tokens, and time waiting (for a slot or
  an identical call in flight) apart from time in requests; a cache hit has no request time.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import openai

from agentcausal.exceptions import ConfigError, EndpointUnreachableError, LLMCallError
from agentcausal.llm import dialect, local
from agentcausal.llm.embedding import EmbeddingMixin
from agentcausal.llm.gateway_cache import GatewayCache
from agentcausal.llm.limits import Timer, count_request, requests_sent, semaphore
from agentcausal.llm.profiles import Profile, ProfileSet, load_profiles
from agentcausal.llm.replies import strip_reasoning
from agentcausal.llm.reply_cache import ReplyCache, thread_flights
from agentcausal.llm.structured import StructuredMixin
from agentcausal.llm.usage import StageUsage, UsageLedger
from agentcausal.llm.window import check_prompt_window

__all__ = ["Gateway", "Message"]

log = logging.getLogger(__name__)

Message = dict[str, str]
R = TypeVar("R")

#: what ``chat.completions.create`` puts in its request options: the bearer key
_POST_OPTIONS: openai.RequestOptions = {"security": {"bearer_auth": True}}


class Gateway(EmbeddingMixin, StructuredMixin, GatewayCache):
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
        self.refresh = refresh
        self.max_retries = max_retries
        self.max_repairs = max_repairs
        self.usage = UsageLedger()
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        # a damaged cache file heals (moved aside); CorruptStoreError (one line) only when it cannot be moved
        self._cache = ReplyCache(self.cache_dir, refresh=refresh) if self.cache_dir is not None else None
        self._clients: dict[str, openai.OpenAI] = {}
        self._lock = threading.Lock()
        self._flights_lock, self._flights = thread_flights(self.cache_dir)  # keys in flight, per cache folder
        self._fresh: set[str] = set()  # keys written by this gateway (readable under refresh)
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

    def namespaced(self, namespace: str) -> "Gateway":
        """A view of this gateway whose chat and structured replies are cached in their own ``namespace``.

        The view shares everything else (profiles, cache store, clients, usage ledger, keys in flight,
        the entries written this run): only the cache key differs
        (:func:`~agentcausal.llm.dialect.cache_key`'s ``namespace``), so a call never reads a reply
        cached under another namespace, or under none, even within one run and under ``refresh``.
        Discovery runs each method in its own (``"dcm_only"``), so an ablation pays for its own calls.

        >>> gw = Gateway.from_settings(cache_dir=None)
        >>> v = gw.namespaced("dcm_only")
        >>> (v.namespace, gw.namespace, v.usage is gw.usage)
        ('dcm_only', None, True)
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

    # ------------------------------------------------------------------ routing
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
        """``"profile:model"`` label of the stage, for records and cache keys of results.

        An embedded profile serving its own ``model_path`` gets ``@<file name>``
        appended, so results from two GGUF files never share a label.
        """
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

    def _base_url(self, profile: Profile) -> str:
        if profile.is_embedded:
            return local.ensure_embedded_server(profile)
        return profile.base_url

    def _client(self, profile: Profile) -> tuple[openai.OpenAI, str]:
        base_url = self._base_url(profile)
        key = f"{profile.name}|{base_url}"
        with self._lock:
            if key not in self._clients:
                if profile.is_embedded:
                    api_key = local.embedded_api_key(base_url)  # the server's per-process key
                else:
                    api_key = profile.api_key()
                self._clients[key] = openai.OpenAI(
                    base_url=base_url,
                    api_key=api_key,
                    timeout=profile.timeout_s,
                    max_retries=self.max_retries,
                    http_client=openai.DefaultHttpxClient(event_hooks={"request": [count_request]}),
                )
            return self._clients[key], base_url

    # -------------------------------------------------------------------- chat
    def _call(self, stage: str, profile: Profile, fn: Callable[[openai.OpenAI], R], timer: Timer) -> R:
        """Run one client call holding a slot of the profile's limit; map openai errors to ours.

        The ``openai`` client has already retried (with backoff and jitter) when
        an error reaches here, so a retryable error means the endpoint stayed
        unavailable. The slot is held through those retries (so requests in
        flight never exceed the limit) and released however the call ends.
        """
        client, base_url = self._client(profile)
        sem = semaphore(self.profiles, profile, base_url)
        t0 = time.perf_counter()
        sem.acquire()
        t1 = time.perf_counter()
        timer.wait += t1 - t0
        sent = requests_sent()
        try:
            return fn(client)
        except openai.APITimeoutError as exc:
            cause = f"stage {stage!r}: timed out after {profile.timeout_s:g} s ({self.max_retries} retries)"
            raise EndpointUnreachableError(profile.name, base_url, cause) from exc
        except openai.APIConnectionError as exc:
            cause = f"stage {stage!r}: connection failed ({self.max_retries} retries): {exc}"
            raise EndpointUnreachableError(profile.name, base_url, cause) from exc
        except (openai.RateLimitError, openai.InternalServerError) as exc:
            cause = f"stage {stage!r}: HTTP {exc.status_code} ({self.max_retries} retries): {str(exc)[:300]}"
            raise EndpointUnreachableError(profile.name, base_url, cause) from exc
        except openai.APIStatusError as exc:
            raise LLMCallError(profile.name, stage, exc.status_code, str(exc)[:500]) from exc
        finally:
            sem.release()
            timer.request += time.perf_counter() - t1
            timer.requests += requests_sent() - sent

    def _request(
        self, stage: str, profile: Profile, messages: list[Message], params: dict[str, Any], timer: Timer
    ) -> tuple[str, str | None, int, int]:
        """One chat completion request: (text, finish_reason, prompt_tokens, completion_tokens).

        The body goes out as it is through the client's ``post`` (retries, errors and the
        bearer key as ``chat.completions.create`` sends them), and the reply is read as JSON.
        """
        check_prompt_window(stage, profile, messages)  # over the window: refused for the item, never sent
        body = {"model": profile.model, "messages": messages, **params}
        data = self._call(
            stage, profile, lambda c: c.post("/chat/completions", body=body, cast_to=dict, options=_POST_OPTIONS), timer
        )
        choices = data.get("choices") if isinstance(data, dict) else None
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
        pt, ct = kw.get("prompt_tokens", 0), kw.get("completion_tokens", 0)
        cost = pt / 1000 * profile.price_prompt_per_1k + ct / 1000 * profile.price_completion_per_1k
        self.usage.record(
            stage,
            item,
            StageUsage(
                calls=1,
                seconds=timer.request,
                request_seconds=timer.request,
                wait_seconds=timer.wait,
                cost_usd=cost,
                **kw,
            ),
        )

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
        timer = Timer()
        with self._single_flight(key, timer):  # identical calls in flight wait for the first
            hit = self._cached_text(key)
            if hit is not None:
                self._record(stage, item, profile, timer, cache_hits=1, run_hits=self._run_hit(key))
                return hit
            try:
                text, _finish, pt, ct = self._request(stage, profile, msgs, params, timer)
            except (EndpointUnreachableError, LLMCallError):
                self._record(stage, item, profile, timer, requests=timer.requests)  # time and requests spent
                raise
            self._cache_set(key, {"text": text})
            self._record(stage, item, profile, timer, requests=timer.requests, prompt_tokens=pt, completion_tokens=ct)
            log.debug("stage=%s profile=%s prompt_tokens=%d completion_tokens=%d", stage, profile.name, pt, ct)
            return text

    def max_output_tokens(self, stage: str) -> int | None:
        """The completion-token ceiling of the profile serving ``stage`` (``None`` = no ceiling).

        Methods under the ``paper`` preset derive their completion budgets from
        it instead of fixed token counts. Raises UnknownStageError (see ProfileSet).
        """
        return self.profile_for(stage).max_output_tokens

    def close(self) -> None:
        """Close HTTP clients and the disk cache."""
        for c in self._clients.values():
            c.close()
        self._clients.clear()
        if self._cache is not None:
            self._cache.close()
