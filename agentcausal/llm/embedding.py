"""The gateway's embeddings: :class:`Embedder`, held by :class:`~agentcausal.llm.gateway.Gateway` (``gw.embedder``).

Each text is cached on its own under :func:`~agentcausal.llm.dialect.cache_key` of (endpoint
identity, model, text); the texts the cache lacks go out as one batch (each distinct text
once), and identical batches in flight wait for the first (one flight per set of missing
texts). A profile with ``is_local_embedder`` embeds in-process
(:func:`agentcausal.llm.local.local_embedder`); every other profile is asked through the
endpoint's ``/embeddings`` route, holding a slot of the profile's limit (the gateway's
:meth:`~agentcausal.llm.limits.EndpointClients.post`). Rows come back L2-normalised, float32. The gateway routes the stage and
records the call's usage once.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from agentcausal.exceptions import LLMCallError
from agentcausal.llm import dialect, local
from agentcausal.llm.gateway_cache import GatewayCache
from agentcausal.llm.limits import Timer
from agentcausal.llm.profiles import Profile
from agentcausal.llm.reply_cache import encode_vector

__all__ = ["Embedded", "Embedder"]

#: the gateway's request: (stage, profile, path, JSON body, timer) -> the reply's JSON object, one slot of the
#: profile's limit held, errors as EndpointUnreachableError / LLMCallError
Post = Callable[[str, Profile, str, dict[str, Any], Timer], dict[str, Any]]


class Embedded(NamedTuple):
    """One embedding call: the vectors and what it cost (for the gateway's usage record).

    Attributes
    ----------
    vectors : ndarray of shape (n, dim), float32, rows L2-normalised
    requests : int, requests sent (the in-process embedder counts as one)
    prompt_tokens : int, as the endpoint reports them
    cache_hits : int, texts served by the cache (after a wait for an identical batch too)
    run_hits : int, those of ``cache_hits`` on entries written this run
    """

    vectors: np.ndarray
    requests: int
    prompt_tokens: int
    cache_hits: int
    run_hits: int


class Embedder:
    """Embeds texts through a reply cache and the gateway's requests.

    Parameters
    ----------
    cache : GatewayCache, the gateway's reply cache (vectors are cached beside replies)
    post : the gateway's request (:meth:`EndpointClients.post <agentcausal.llm.limits.EndpointClients.post>`)
    """

    def __init__(self, cache: GatewayCache, post: Post) -> None:
        self.cache = cache
        self.post = post

    def embed(self, stage: str, profile: Profile, texts: Sequence[str], timer: Timer) -> Embedded:
        """Embed ``texts`` (length n) for ``stage`` on ``profile`` (an embedding profile), each cached on its own.

        Returns
        -------
        Embedded, vectors of shape (n, dim); ``timer`` holds the wait and request seconds and requests sent.

        Raises
        ------
        MissingAPIKeyError, EndpointUnreachableError, LLMCallError
        ModelFileError
            If the local embedder's model cannot be loaded.
        """
        cache = self.cache
        ident = dialect.cache_identity(profile)
        keys = [dialect.cache_key(ident, profile.model, {"embed": t}) for t in texts]
        vecs: list[np.ndarray | None] = [cache.vector(k) for k in keys]
        hits = sum(v is not None for v in vecs)
        requests = pt = 0
        if hits < len(texts):
            # one flight per set of missing texts: identical batches in flight wait for the first
            batch = list(dict.fromkeys(k for k, v in zip(keys, vecs) if v is None))  # first-seen order
            flight = hashlib.sha256(("embed-batch\n" + "\n".join(sorted(batch))).encode()).hexdigest()
            with cache.single_flight(flight, timer):
                found = {k: cache.vector(k) for k in batch}
                todo_keys = [k for k in batch if found[k] is None]
                if todo_keys:
                    first = {k: t for k, t in zip(keys, texts)}
                    todo = [first[k] for k in todo_keys]  # each distinct text once
                    new, pt = self._request(stage, profile, todo, timer)
                    requests = max(1, timer.requests)  # the in-process embedder counts as one
                    for k, v in zip(todo_keys, new):
                        found[k] = v
                        cache.put(k, encode_vector(v))
            vecs = [v if v is not None else found[k] for k, v in zip(keys, vecs)]
            requested = set(todo_keys)
            hits = sum(k not in requested for k in keys)  # texts served by the cache, after the wait too
        arr = np.vstack([np.asarray(v, dtype=np.float32) for v in vecs]) if vecs else np.zeros((0, 0), np.float32)
        norms = np.linalg.norm(arr, axis=1, keepdims=True) if arr.size else 1.0
        arr = (arr / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)  # float32 when empty too
        served = [k for k in keys if k not in requested] if hits < len(texts) else keys
        return Embedded(arr, requests, pt, hits, sum(cache.run_hit(k) for k in served))

    def _request(self, stage: str, profile: Profile, todo: list[str], timer: Timer) -> tuple[np.ndarray, int]:
        """Embed ``todo`` with one request (or the in-process embedder): (vectors (n, dim), prompt tokens)."""
        if profile.is_local_embedder:
            t0 = time.perf_counter()
            try:
                return np.asarray(local.local_embedder(profile.model)(todo), dtype=np.float32), 0
            finally:
                timer.request += time.perf_counter() - t0
        resp = self.post(stage, profile, "/embeddings", {"model": profile.model, "input": todo}, timer)
        data = resp.get("data")
        if not isinstance(data, list) or len(data) != len(todo):
            got = len(data) if isinstance(data, list) else 0
            raise LLMCallError(profile.name, stage, None, f"asked for {len(todo)} embeddings, got {got}")
        try:
            rows = sorted(data, key=lambda d: int(d["index"]))
            new = np.array([d["embedding"] for d in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise LLMCallError(profile.name, stage, None, f"embeddings reply malformed: {exc}") from exc
        if new.ndim != 2 or new.shape[0] != len(todo):
            raise LLMCallError(profile.name, stage, None, f"embeddings reply has shape {new.shape}")
        usage = resp.get("usage")
        return new, int(usage.get("prompt_tokens") or 0) if isinstance(usage, dict) else 0
