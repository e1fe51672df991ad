"""The gateway's embedding calls: :meth:`EmbeddingMixin.embed`, a mixin of :class:`~agentcausal.llm.gateway.Gateway`.

Each text is cached on its own under :func:`~agentcausal.llm.dialect.cache_key` of (endpoint
identity, model, text); the texts the cache lacks go out as one batch (each distinct text
once), and identical batches in flight wait for the first (one flight per set of missing
texts). A profile with ``is_local_embedder`` embeds in-process
(:func:`agentcausal.llm.local.local_embedder`); every other profile is asked through the
``openai`` client's ``embeddings`` endpoint, holding a slot of the profile's limit. Rows come
back L2-normalised, float32.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from agentcausal.exceptions import EndpointUnreachableError, LLMCallError
from agentcausal.llm import dialect, local
from agentcausal.llm.gateway_cache import GatewayCache
from agentcausal.llm.limits import Timer
from agentcausal.llm.profiles import Profile
from agentcausal.llm.reply_cache import encode_vector

if TYPE_CHECKING:
    import openai

__all__ = ["EmbeddingMixin"]

R = TypeVar("R")


class EmbeddingMixin(GatewayCache):
    """Embeddings for :class:`~agentcausal.llm.gateway.Gateway`, which provides routing, calls and accounting."""

    if TYPE_CHECKING:  # defined by Gateway

        def _routed(self, stage: str, kind: str) -> Profile: ...

        def _call(self, stage: str, profile: Profile, fn: Callable[[openai.OpenAI], R], timer: Timer) -> R: ...

        def _record(self, stage: str, item: str | None, profile: Profile, timer: Timer, **kw: int) -> None: ...

    def embed(self, stage: str, texts: Sequence[str], *, item: str | None = None) -> np.ndarray:
        """Embed texts, each cached on disk by (base URL, model, text).

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
        ident = dialect.cache_identity(profile)
        keys = [dialect.cache_key(ident, profile.model, {"embed": t}) for t in texts]
        vecs: list[np.ndarray | None] = [self._cached_vector(k) for k in keys]
        hits = sum(v is not None for v in vecs)
        requests = pt = 0
        if hits < len(texts):
            # one flight per set of missing texts: identical batches in flight wait for the first
            batch = list(dict.fromkeys(k for k, v in zip(keys, vecs) if v is None))  # first-seen order
            flight = hashlib.sha256(("embed-batch\n" + "\n".join(sorted(batch))).encode()).hexdigest()
            with self._single_flight(flight, timer):
                found = {k: self._cached_vector(k) for k in batch}
                todo_keys = [k for k in batch if found[k] is None]
                if todo_keys:
                    first = {k: t for k, t in zip(keys, texts)}
                    todo = [first[k] for k in todo_keys]  # each distinct text once
                    try:
                        new, pt = self._embed_request(stage, profile, todo, timer)
                    except (EndpointUnreachableError, LLMCallError):
                        self._record(stage, item, profile, timer, requests=timer.requests)
                        raise
                    requests = max(1, timer.requests)  # the in-process embedder counts as one
                    for k, v in zip(todo_keys, new):
                        found[k] = v
                        self._cache_set(k, encode_vector(v))
            vecs = [v if v is not None else found[k] for k, v in zip(keys, vecs)]
            requested = set(todo_keys)
            hits = sum(k not in requested for k in keys)  # texts served by the cache, after the wait too
        arr = np.vstack([np.asarray(v, dtype=np.float32) for v in vecs]) if vecs else np.zeros((0, 0), np.float32)
        norms = np.linalg.norm(arr, axis=1, keepdims=True) if arr.size else 1.0
        arr = (arr / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)  # float32 when empty too
        served = [k for k in keys if k not in requested] if hits < len(texts) else keys
        self._record(
            stage,
            item,
            profile,
            timer,
            requests=requests,
            prompt_tokens=pt,
            cache_hits=hits,
            run_hits=sum(self._run_hit(k) for k in served),
        )
        return arr

    def _embed_request(self, stage: str, profile: Profile, todo: list[str], timer: Timer) -> tuple[np.ndarray, int]:
        """Embed ``todo`` with one request (or the in-process embedder): (vectors (n, dim), prompt tokens)."""
        if profile.is_local_embedder:
            t0 = time.perf_counter()
            try:
                return np.asarray(local.local_embedder(profile.model)(todo), dtype=np.float32), 0
            finally:
                timer.request += time.perf_counter() - t0
        resp = self._call(stage, profile, lambda c: c.embeddings.create(model=profile.model, input=todo), timer)
        if len(resp.data) != len(todo):
            raise LLMCallError(profile.name, stage, None, f"asked for {len(todo)} embeddings, got {len(resp.data)}")
        resp.data.sort(key=lambda d: d.index)
        new = np.array([d.embedding for d in resp.data], dtype=np.float32)
        return new, (resp.usage.prompt_tokens if resp.usage else 0)
