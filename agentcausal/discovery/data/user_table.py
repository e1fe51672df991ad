"""A user dataset's table read into named columns and checked cell by cell: the CSV (UTF-8, header, no ragged
row) or Parquet file, the missing-value markers, numbers and categories (coded 0..k-1 in sorted order), each
refusal naming the file and the line or column (see :mod:`agentcausal.discovery.data.user_data`, which reads the
metadata and builds the dataset)."""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentcausal.exceptions import DatasetError, InputFileError
from agentcausal.input_files import read_input_text

__all__ = ["SHOWN", "read_table", "read_column"]

#: problems of one kind spelled out in a message
SHOWN = 5


def _read_csv(path: Path, name: str) -> tuple[list[str], list[list[str]], list[int]]:
    """Header, rows and each row's line number; ragged rows, empty files and undecodable text refused."""
    err = dict(name=name, file=str(path))
    rows: list[list[str]] = []
    lines: list[int] = []
    ragged: list[str] = []
    try:
        text = read_input_text(path, encoding="utf-8-sig")
    except InputFileError as exc:
        raise DatasetError(f"{path}: {exc.detail}", **err) from exc
    try:
        with io.StringIO(text, newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            while header is not None and not any(c.strip() for c in header):
                header = next(reader, None)  # leading blank lines
            if header is None:
                raise DatasetError(f"{path} is empty (no header line)", **err)
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank line
                if len(row) != len(header):
                    ragged.append(f"line {reader.line_num} has {len(row)}")
                    continue
                rows.append(row)
                lines.append(reader.line_num)
    except csv.Error as exc:
        raise DatasetError(f"{path} is not a valid CSV: {exc}", **err) from exc
    if ragged:
        more = f" (and {len(ragged) - SHOWN} more rows)" if len(ragged) > SHOWN else ""
        raise DatasetError(
            f"{path}: ragged rows: {'; '.join(ragged[:SHOWN])} fields, the header has {len(header)}{more}",
            column=None,
            **err,
        )
    if not rows:
        raise DatasetError(f"{path} has a header but no data rows", **err)
    return [h.strip() for h in header], rows, lines


def read_table(path: Path, name: str) -> tuple[list[str], dict[str, list[Any]], list[int]]:
    """Column names, each column's raw cells (str, number or None) and the rows' line numbers (CSV) or row numbers."""
    err = dict(name=name, file=str(path))
    suffix = path.suffix.lower()
    if suffix == ".csv":
        header, rows, lines = _read_csv(path, name)
        columns = [str(h) for h in header]
        cells: dict[str, list[Any]] = {h: [r[j] for r in rows] for j, h in enumerate(columns)}
    elif suffix in (".parquet", ".pq"):
        try:
            df = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types for a bad file
            raise DatasetError(
                f"cannot read {path} as Parquet: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:200] if str(exc) else ''}",
                **err,
            ) from exc
        columns = ["" if c is None else str(c) for c in df.columns]
        if not len(df):
            raise DatasetError(f"{path} has no rows", **err)
        cells = {}
        for j, c in enumerate(columns):
            if c not in cells:
                col = df.iloc[:, j]
                cells[c] = [None if _is_na(x) else x for x in col.tolist()]
        lines = list(range(1, len(df) + 1))
    else:
        raise DatasetError(f"data file must be .csv or .parquet, got {path.suffix!r}", **err)
    unnamed = [j + 1 for j, c in enumerate(columns) if not c.strip()]
    if unnamed:
        listed = ", ".join(map(str, unnamed[:SHOWN]))
        raise DatasetError(
            f"{path}: column{'s' if len(unnamed) > 1 else ''} {listed} of the header "
            f"{'have' if len(unnamed) > 1 else 'has'} no name; name every column (or drop the "
            "unnamed ones, such as a written-out index)",
            column=f"column {unnamed[0]}",
            **err,
        )
    dups = sorted(c for c, k in Counter(c for c in columns if c).items() if k > 1)
    if dups:
        raise DatasetError(f"{path}: duplicate column name(s) {', '.join(map(repr, dups))}", column=dups[0], **err)
    return columns, cells, lines


def _is_na(x: Any) -> bool:
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def _number(cell: Any) -> float | None:
    """The cell as a float, or None when it is not a number (text, boolean text ...)."""
    if isinstance(cell, bool):
        return float(cell)
    if isinstance(cell, (int, float, np.integer, np.floating)):
        return float(cell)
    if isinstance(cell, str):
        s = cell.strip()
        if "_" in s:  # Python's float() accepts 1_000; a data file does not mean that
            return None
        try:
            return float(s)
        except ValueError:
            return None
    return None


def read_column(
    name: str, cells: list[Any], lines: list[int], markers: set[str], max_categories: int, where: str, found: Counter
) -> tuple[np.ndarray, tuple[str, ...] | None, list[str]]:
    """One described column as floats (NaN = missing) and its states; problems as messages.
    ``found`` counts the column's missing cells by marker (``""`` empty, ``"null"`` a table's own null)."""
    values = np.full(len(cells), np.nan)
    missing = np.zeros(len(cells), dtype=bool)
    text: list[tuple[int, str]] = []
    numeric = 0
    for i, c in enumerate(cells):
        if c is None or (not isinstance(c, str) and _is_na(c)):
            missing[i] = True
            found["null" if c is None or not isinstance(c, float) else "NaN"] += 1
            continue
        if isinstance(c, str) and c.strip().casefold() in markers:
            missing[i] = True
            found[c.strip()] += 1
            continue
        x = _number(c)
        if x is None:
            text.append((i, str(c).strip()))
        elif math.isnan(x):
            missing[i] = True
            found[str(c).strip()] += 1
        else:
            values[i] = x
            numeric += 1
    if missing.all():
        return values, None, [f"column {name!r} has no values (all {len(cells)} missing)"]
    if text and numeric:
        i, tok = text[0]
        more = f" (and {len(text) - 1} more)" if len(text) > 1 else ""
        return (
            values,
            None,
            [
                f"column {name!r} holds numbers and the non-numeric value {tok[:40]!r} ({where} "
                f'{lines[i]}){more}; if it marks a missing value, list it under "missing_values" in '
                "the metadata"
            ],
        )
    if text:
        levels = sorted({t for _, t in text})
        if len(levels) > max_categories:
            return (
                values,
                None,
                [
                    f"column {name!r} is free text ({len(levels)} distinct values, more than "
                    f'{max_categories} categories); remove it from "variables" or code it'
                ],
            )
        codes = {s: k for k, s in enumerate(levels)}
        for i, t in text:
            values[i] = codes[t]
        return values, tuple(levels), []
    inf = np.flatnonzero(np.isinf(values))
    if inf.size:
        return (
            values,
            None,
            [
                f"column {name!r} holds {'an infinity' if inf.size == 1 else f'{inf.size} infinities'} "
                f"({where} {lines[inf[0]]}: {cells[inf[0]]!s:.20})"
            ],
        )
    return values, None, []
