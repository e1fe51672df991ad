"""The run folder of either half: files written atomically, ``run.json``, and which half wrote it.

A run folder holds ``run.json`` (the run's facts, with the plan under ``plan``; :func:`write_run_meta`,
:func:`load_run_meta`) beside the records each half writes (attribution: ``results.parquet``; discovery:
``outcomes.jsonl`` and ``results.parquet``; :func:`run_kind` tells them apart) and their reports.

Every file is written to a temporary file in the same folder and renamed (:func:`atomic_path`): a run
killed while it writes leaves either the old file or the new one, never a torn or empty one
(:func:`os.replace` within one folder is atomic on POSIX and Windows). The temporary name starts with
``.`` and ends in ``.tmp`` and is removed when the write fails. A torn or missing file is a one-line
:class:`~agentcausal.exceptions.RunFileError` naming it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from agentcausal.exceptions import RunFileError

__all__ = [
    "atomic_path",
    "atomic_write_text",
    "atomic_write_bytes",
    "write_run_meta",
    "load_run_meta",
    "run_kind",
    "default_run_dir",
]


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


def write_run_meta(run_dir: str | Path, meta: Mapping[str, Any]) -> Path:
    """Write ``run.json`` (sorted keys, indented; values JSON can't hold as text) atomically; creates the folder.

    Returns
    -------
    Path of ``run.json``.
    """
    d = Path(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    p = d / "run.json"
    atomic_write_text(p, json.dumps(dict(meta), indent=2, sort_keys=True, default=str) + "\n")
    return p


def load_run_meta(run_dir: str | Path) -> dict[str, object]:
    """The ``run.json`` of a run folder, or an empty dict when absent.

    Parameters
    ----------
    run_dir : folder

    Returns
    -------
    dict

    Raises
    ------
    RunFileError
        If ``run.json`` exists but is not a JSON object (torn, empty).
    """
    p = Path(run_dir) / "run.json"
    if not p.is_file():
        return {}
    try:
        meta = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunFileError(f"not valid JSON (torn or empty?): {exc}", path=str(p)) from exc
    if not isinstance(meta, dict):
        raise RunFileError("not a JSON object", path=str(p))
    return meta


def run_kind(run_dir: str | Path) -> Literal["attribute", "discover"]:
    """``discover`` for a folder holding ``outcomes.jsonl`` (written by ``discover`` only), else ``attribute``."""
    return "discover" if (Path(run_dir) / "outcomes.jsonl").is_file() else "attribute"


def default_run_dir(kind: Literal["attribute", "discover", "demo"], out_root: str | Path = "runs") -> str:
    """``<out_root>/<kind>-YYYYmmdd-HHMMSS``, the run folder of a run not told where to write."""
    return str(Path(out_root) / f"{kind}-{dt.datetime.now():%Y%m%d-%H%M%S}")


M = TypeVar("M", bound=BaseModel)


def model_lines(lines: Iterable[str], model: type[M], what: str, path: str | Path) -> Iterator[M]:
    """One ``model`` per non-blank JSON line of a run file (``plan.items.jsonl``, ``outcomes.jsonl``), as read.

    Raises
    ------
    RunFileError
        On a line that is not a ``model`` (a file torn by a kill), naming the file and the line: ``line N is
        not WHAT (torn?): …``.
    """
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield model.model_validate_json(line)
        except ValueError as exc:
            raise RunFileError(f"line {i} is not {what} (torn?): {str(exc)[:200]}", path=str(path)) from exc
