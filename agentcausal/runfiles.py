"""Atomic writes of run files: write a temporary file in the same folder, then rename it into place.

A run killed while it writes ``results.parquet``, ``run.json``,
``outcomes.jsonl`` or a report leaves either the old file or the new one,
never a torn or empty one: :func:`os.replace` within one folder is atomic on
POSIX and Windows. The temporary name starts with ``.`` and ends in ``.tmp``
and is removed when the write fails.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "atomic_write_text", "atomic_write_bytes"]


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path``; on a clean exit it is flushed to disk and renamed to ``path``.

    Parameters
    ----------
    path : the final file (its folder is created)

    Yields
    ------
    Path, write the whole file there (any writer: pandas, pyarrow, open()).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "x.txt") as tmp:
    ...     _ = tmp.write_text("done")
    >>> (d / "x.txt").read_text(), sorted(p.name for p in d.iterdir())
    ('done', ['x.txt'])
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp = Path(name)
    os.chmod(tmp, 0o644)  # mkstemp makes 0600; run files are ordinary readable files
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_path`); returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding=encoding)
    return Path(path)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`); returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)
