"""A run's PNG figures kept by what they draw, so a rerun whose tables did not change copies its figures
instead of drawing them (and never imports matplotlib).

A figure's key is the sha256 of its name, the tables it is drawn from, cut to the columns it draws by the caller
(:func:`pandas.util.hash_pandas_object` of each, with its column names and dtypes), the matplotlib version and
:data:`FIGURE_VERSION`: the same tables draw the same bytes (``savefig`` writes no date), so a hit is the file a draw would write. "Nothing to
draw" is kept too. Storage: a :class:`~agentcausal.llm.reply_cache.ReplyCache` folder (``<cache_dir>/figures``:
data-only records, each checked on read), the PNG as base64. A store that fails is logged once and the
figures are drawn.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from agentcausal.exceptions import CorruptStoreError
from agentcausal.llm.reply_cache import ReplyCache

__all__ = ["FIGURE_VERSION", "Figure", "FigureCache", "figure_cache_under", "add_figure", "cached_draw"]

log = logging.getLogger(__name__)

#: bump when a figure's drawing changes (older records are then never read)
FIGURE_VERSION = 1


class Figure(NamedTuple):
    """One drawn figure of a run.

    Attributes
    ----------
    key : str, short stable name (also the PNG file stem)
    title : str
    path : Path of the PNG, or None when there was nothing to draw
    text : str, the same data as a text bar chart (for markdown)
    """

    key: str
    title: str
    path: Path | None
    text: str


@functools.cache  # importlib.metadata scans the installed distributions: once per process, not per figure
def _matplotlib_version() -> str:
    try:
        return version("matplotlib")
    except PackageNotFoundError:  # pragma: no cover - a dependency
        return "?"


class FigureCache:
    """The figure records of one cache folder (``<cache_dir>/figures``, created if absent).

    Raises
    ------
    CorruptStoreError, ConfigError
        As :class:`~agentcausal.llm.reply_cache.ReplyCache` at open.
    """

    def __init__(self, directory: str | Path) -> None:
        self.store: ReplyCache | None = ReplyCache(directory)
        self.reused = 0

    def key(self, name: str, tables: Sequence[pd.DataFrame]) -> str:
        h = hashlib.sha256(f"figure:{FIGURE_VERSION}:{_matplotlib_version()}:{name}".encode())
        for t in tables:
            h.update(repr((list(map(str, t.columns)), [str(d) for d in t.dtypes], t.index.names)).encode())
            h.update(pd.util.hash_pandas_object(t, index=True).to_numpy().tobytes())
        return f"figure:{h.hexdigest()}"

    def get(self, key: str) -> dict[str, Any] | None:
        if self.store is None:
            return None
        try:
            return self.store.get(key)
        except CorruptStoreError as exc:
            self._off(exc)
            return None

    def set(self, key: str, png: bytes | None) -> None:
        if self.store is None:
            return
        try:
            self.store.set(key, {"png": base64.b64encode(png).decode() if png is not None else None})
        except (CorruptStoreError, OSError) as exc:
            self._off(exc)

    def _off(self, exc: Exception) -> None:
        log.warning("figure cache off for this report (%s): figures are drawn", exc)
        self.store = None

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def figure_cache_under(cache_dir: str | Path | None) -> FigureCache | None:
    """The figure cache of the cache root ``cache_dir`` (``<cache_dir>/figures``); None for None, or where it
    cannot be opened (logged: a report is never stopped by its figure cache, it draws every figure)."""
    if cache_dir is None:
        return None
    try:
        return FigureCache(Path(cache_dir) / "figures")
    except (CorruptStoreError, OSError) as exc:
        log.warning("figure cache under %s not used (%s): figures are drawn", cache_dir, exc)
        return None


def cached_draw(
    path: Path,
    draw: Callable[[Path], Path | None],
    *,
    tables: Sequence[pd.DataFrame] = (),
    cache: FigureCache | None = None,
) -> Path | None:
    """``draw(path)`` (the PNG written, or None: nothing to draw), or its kept bytes copied to ``path``.

    Parameters
    ----------
    path : the PNG to write
    draw : writes the figure at its argument and returns it (None or ValueError/KeyError/TypeError/IndexError:
        nothing to draw, as an empty or all-NaN table)
    tables : every table the figure is drawn from (the key); empty: not kept
    cache : FigureCache or None (draw every time)
    """
    key = cache.key(path.stem, tables) if cache is not None and tables else None
    hit = cache.get(key) if cache is not None and key is not None else None
    if hit is not None and (hit.get("png") is None or isinstance(hit.get("png"), str)):
        if hit["png"] is None:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(hit["png"]))
        cache.reused += 1  # type: ignore[union-attr]
        return path
    try:
        out = draw(path)
    except (ValueError, KeyError, TypeError, IndexError):  # nothing to draw (empty or all-NaN frame)
        out = None
    if cache is not None and key is not None:
        cache.set(key, out.read_bytes() if out is not None else None)
    return out


def add_figure(
    figs: list[Figure], key: str, title: str, text: str, draw: Any, run_dir: Path, *tables: pd.DataFrame, cache=None
) -> None:
    """Append the figure ``key`` of a run to ``figs``: drawn into ``run_dir/<key>.png`` (:func:`cached_draw`
    from ``tables`` and ``cache``), with its text chart."""
    figs.append(Figure(key, title, cached_draw(run_dir / f"{key}.png", draw, tables=tables, cache=cache), text))
