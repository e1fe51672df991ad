"""Download a dataset into a folder over plain HTTPS: the checks and the fetch its loaders share.

* :func:`check_dest_free`: refuse to overwrite a folder that already holds data.
* :func:`download`: one URL's bytes, with a message saying what to do offline.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from agentcausal.exceptions import DatasetError

__all__ = ["check_dest_free", "download"]


def check_dest_free(dest: Path, *, name: str, overwrite: bool, hint: str = "pass --force to replace it") -> None:
    """Refuse a destination folder that already holds data, unless ``overwrite``.

    Parameters
    ----------
    dest : the target folder
    name : dataset name for the error (``"mast"``, ``"who-and-when"``)
    overwrite : bool, allow replacing a non-empty ``dest``
    hint : str, what the message tells the user to do

    Raises
    ------
    DatasetError
        If ``dest`` is a non-empty folder and not ``overwrite``.
    """
    if dest.is_dir() and any(dest.iterdir()) and not overwrite:
        raise DatasetError(f"{dest} already holds data; {hint}", name=name)


def download(url: str, *, name: str, timeout_s: float, offline_hint: str, to: Path | None = None) -> bytes:
    """The bytes at ``url`` (written to ``to`` as well when given).

    Parameters
    ----------
    url : str, a fixed https URL
    name : dataset name for the error
    timeout_s : float, network timeout, seconds
    offline_hint : str, the sentence after ``"cannot download <url>: <error>. "`` (where to put a copy by hand)
    to : Path or None, a file to write the bytes to

    Returns
    -------
    bytes

    Raises
    ------
    DatasetError
        If the download (or writing ``to``) fails: offline, blocked, HTTP error.
    """
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # fixed https URL
            blob = resp.read()
        if to is not None:
            to.write_bytes(blob)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DatasetError(f"cannot download {url}: {exc}. {offline_hint}", name=name) from exc
    return blob
