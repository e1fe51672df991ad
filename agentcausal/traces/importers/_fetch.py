"""Download dataset files from the Hugging Face hub into a folder (plain HTTPS, no token)."""

from __future__ import annotations

import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from agentcausal.exceptions import DatasetError

__all__ = ["HF_RESOLVE", "fetch_files"]

#: ``HF_RESOLVE.format(repo=..., file=...)`` is a file of a public dataset repository
HF_RESOLVE = "https://huggingface.co/datasets/{repo}/resolve/main/{file}"


def fetch_files(name: str, repo: str, files: Sequence[str], dest: str | Path, *, timeout_s: float = 60.0,
                overwrite: bool = False, base_url: str = HF_RESOLVE) -> Path:
    """Download ``files`` of the dataset repository ``repo`` into ``dest`` (all or nothing).

    Parameters
    ----------
    name : dataset name for messages (``"mast"``)
    repo : ``owner/name`` on the hub
    files : file names in the repository
    dest : target folder
    timeout_s : network timeout, seconds
    overwrite : replace a non-empty ``dest``
    base_url : URL pattern with ``{repo}`` and ``{file}``

    Returns
    -------
    Path, ``dest``.

    Raises
    ------
    DatasetError
        If ``dest`` holds data and not ``overwrite``, or a download fails (offline: the message
        says where to put a copy by hand).
    """
    dest = Path(dest)
    if dest.is_dir() and any(dest.iterdir()) and not overwrite:
        raise DatasetError(f"{dest} already holds data; pass --force to replace it", name=name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=dest.parent))
    try:
        for f in files:
            url = base_url.format(repo=repo, file=f)
            try:
                with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 (fixed https URL)
                    (tmp / f).write_bytes(resp.read())
            except (urllib.error.URLError, OSError, ValueError) as exc:
                raise DatasetError(
                    f"cannot download {url}: {exc}. Offline? Copy {', '.join(files)} from "
                    f"https://huggingface.co/datasets/{repo} into {dest} by hand", name=name) from exc
        if dest.exists():
            shutil.rmtree(dest)
        shutil.move(str(tmp), str(dest))
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest
