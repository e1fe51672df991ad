"""Download dataset files from the Hugging Face hub into a folder (plain HTTPS, no token)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from agentcausal.traces.download import check_dest_free, download

__all__ = ["HF_RESOLVE", "fetch_files"]

#: ``HF_RESOLVE.format(repo=..., file=...)`` is a file of a public dataset repository
HF_RESOLVE = "https://huggingface.co/datasets/{repo}/resolve/main/{file}"


def fetch_files(
    name: str,
    repo: str,
    files: Sequence[str],
    dest: str | Path,
    *,
    timeout_s: float = 60.0,
    overwrite: bool = False,
    base_url: str = HF_RESOLVE,
) -> Path:
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
    check_dest_free(dest, name=name, overwrite=overwrite)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=dest.parent))
    try:
        for f in files:
            url = base_url.format(repo=repo, file=f)
            download(
                url,
                name=name,
                timeout_s=timeout_s,
                to=tmp / f,
                offline_hint=f"Offline? Copy {', '.join(files)} from "
                f"https://huggingface.co/datasets/{repo} into {dest} by hand",
            )
        if dest.exists():
            shutil.rmtree(dest)
        shutil.move(str(tmp), str(dest))
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest
