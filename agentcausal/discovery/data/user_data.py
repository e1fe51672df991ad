"""User datasets (a CSV or Parquet table plus a JSON metadata file), read and validated before any method.

Everything a causal-discovery method cannot use is refused here, naming the
file and the line, field or column, with no traceback:

* **files**: a missing file; anything but a regular file (a FIFO, a device
  such as a symlink to ``/dev/zero``, a symlink loop), named before it is
  opened; a file over the input size limit (256 MiB, ``--max-input-mb``;
  :mod:`agentcausal.input_files`); text that is not UTF-8; a truncated or
  invalid metadata JSON (line and column), one nested deeper than 64 levels or
  holding an integer of more than 4,300 digits; a metadata field of the wrong
  type; an empty CSV; a CSV row with more or fewer fields than the header (its
  line); a column without a name (its position); two columns with one name; a
  Parquet file that cannot be read;
* **variables**: fewer than two, an empty variable name, a described variable
  missing from the table, a ``true_edges`` entry naming an unknown variable,
  true edges that form a cycle (the cycle is named: a causal DAG has none);
* **columns** (each described variable): all values missing; a value that is
  neither a number nor a missing-value marker in a column of numbers (its line);
  a text column with more than :attr:`DatasetChecks.max_categories` distinct
  values (free text, not a category); an infinity; a constant (zero variance:
  conditional-independence tests read the NaN p-values of a constant as
  dependence, so PC and FCI would connect it to everything);
* **rows**: after dropping the rows with a missing value, fewer than
  ``max(min_rows, min_rows_per_variable * d)`` rows (10 and 5 by default:
  at least 15 rows for 3 variables).

Missing values are empty cells and the markers of :data:`DEFAULT_MISSING_VALUES`
(case-insensitive, surrounding spaces ignored); a metadata file may list its own
markers as ``"missing_values": [...]``, which replace the defaults. **A dataset
with missing values is refused** with one line that counts them per column and
marker and says how many rows hold one, unless dropping those rows is accepted:
:attr:`DatasetChecks.drop_missing` (``discover --drop-missing``,
``AGENTCAUSAL_DROP_MISSING=1``) or ``"drop_missing": true`` in the metadata.
Then the rows are dropped and counted in ``Dataset.extra``:
``rows_dropped_missing``, ``rows_read`` and ``missing_by_column`` (column ->
marker -> count; ``""`` is an empty cell), and :func:`missing_summary` says it
in one line. A text column with few distinct values is a category, coded
0..k-1 in sorted order of its values (the states).

The table itself is read and checked column by column in :mod:`agentcausal.discovery.data.user_table`.

The thresholds are :class:`DatasetChecks` fields, read from the environment
variables ``AGENTCAUSAL_MIN_ROWS``, ``AGENTCAUSAL_MIN_ROWS_PER_VARIABLE``,
``AGENTCAUSAL_MAX_CATEGORIES`` and ``AGENTCAUSAL_DROP_MISSING`` by
:meth:`DatasetChecks.from_env`.

References
----------
Spirtes, P., Glymour, C. and Scheines, R. *Causation, Prediction, and Search*, 2nd ed.
MIT Press, 2000. doi:10.7551/mitpress/1754.001.0001 (conditional-independence tests need variance).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentcausal.discovery.data.dataset_model import Dataset, DatasetMetadata, VariableInfo
from agentcausal.discovery.data.user_table import SHOWN, read_column, read_table
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.exceptions import AgentCausalError, ConfigError, DatasetError, InputFileError
from agentcausal.input_files import input_refusal, loads_json, read_input_text

__all__ = ["DEFAULT_MISSING_VALUES", "DatasetChecks", "read_user_dataset", "unique_dataset_names", "missing_summary"]

#: cells read as missing (compared case-insensitively after stripping spaces); pandas' defaults plus ``?`` and ``.``
DEFAULT_MISSING_VALUES = ("", "NA", "N/A", "NaN", "-NaN", "null", "None", "<NA>", "#N/A", "#NA", "missing", "?", ".")


class DatasetChecks(BaseModel):
    """Thresholds of user-dataset validation (see the module docstring).

    Attributes
    ----------
    min_rows : int, the fewest rows any dataset may have (default 10)
    min_rows_per_variable : int, rows needed per variable (default 5); the minimum is
        ``max(min_rows, min_rows_per_variable * d)``
    max_categories : int, the most distinct values of a text column (default 20); more is free text
    missing_values : tuple of str, missing-value markers (a metadata file's ``missing_values`` replace them)
    drop_missing : bool, drop the rows holding a missing value (counted and announced) instead of refusing
        the dataset (default False)
    """

    model_config = ConfigDict(frozen=True)

    min_rows: int = Field(10, ge=1)
    min_rows_per_variable: int = Field(5, ge=0)
    max_categories: int = Field(20, ge=2)
    missing_values: tuple[str, ...] = DEFAULT_MISSING_VALUES
    drop_missing: bool = False

    def min_n(self, d: int) -> int:
        """The fewest rows a dataset with ``d`` variables may have.

        Examples
        --------
        >>> DatasetChecks().min_n(3), DatasetChecks().min_n(8)
        (15, 40)
        """
        return max(self.min_rows, self.min_rows_per_variable * d)

    @classmethod
    def from_env(cls) -> "DatasetChecks":
        """Defaults, then ``AGENTCAUSAL_MIN_ROWS``, ``AGENTCAUSAL_MIN_ROWS_PER_VARIABLE``, ``AGENTCAUSAL_MAX_CATEGORIES``
        and ``AGENTCAUSAL_DROP_MISSING`` (``1``/``true``/``yes`` or ``0``/``false``/``no``).

        Raises
        ------
        ConfigError
            If a variable is set to something that is not a valid integer (or boolean) for its field.
        """
        values: dict[str, Any] = {}
        raw = os.environ.get("AGENTCAUSAL_DROP_MISSING", "").strip().lower()
        if raw:
            if raw not in ("1", "true", "yes", "0", "false", "no"):
                raise ConfigError(f"$AGENTCAUSAL_DROP_MISSING must be 1/true/yes or 0/false/no, got {raw!r}")
            values["drop_missing"] = raw in ("1", "true", "yes")
        for field in ("min_rows", "min_rows_per_variable", "max_categories"):
            var = f"AGENTCAUSAL_{field.upper()}"
            value = os.environ.get(var)
            if value is None or not value.strip():
                continue
            try:
                values[field] = int(value.strip())
            except ValueError as exc:
                raise ConfigError(f"${var} must be an integer, got {value!r}") from exc
        try:
            return cls(**values)
        except ValidationError as exc:
            e = exc.errors()[0]
            raise ConfigError(f"$AGENTCAUSAL_{str(e['loc'][0]).upper()}: {e['msg']}") from exc


class _UserMeta(BaseModel):
    model_config = ConfigDict(extra="ignore")

    title: str | None = None
    domain: str = ""
    variables: dict[str, Any]
    true_edges: list[tuple[str, str]] | None = None
    data_type: str | None = None
    missing_values: list[str] | None = None
    drop_missing: bool | None = None


def _one_line(exc: ValidationError) -> tuple[str, str]:
    """(first field, ``field: message; ...``) of a pydantic error."""
    items = [(".".join(str(x) for x in e["loc"]) or "value", e["msg"]) for e in exc.errors()]
    return items[0][0], "; ".join(f"{loc}: {msg}" for loc, msg in items[:SHOWN]).replace("\n", " ")


def _read_meta(meta_path: Path, name: str):
    err = dict(name=name, file=str(meta_path))
    try:
        text = read_input_text(meta_path)
    except InputFileError as exc:
        raise DatasetError(f"metadata {meta_path}: {exc.detail}", **err) from exc
    if not text.strip():
        raise DatasetError(f"metadata {meta_path} is empty", **err)
    try:
        obj = loads_json(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"metadata {meta_path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", **err
        ) from exc
    except InputFileError as exc:
        raise DatasetError(f"metadata {meta_path} is not valid JSON: {exc.detail}", **err) from exc
    if not isinstance(obj, dict):
        raise DatasetError(f"invalid metadata {meta_path}: expected a JSON object", **err)
    try:
        um = _UserMeta.model_validate(obj)
    except ValidationError as exc:
        field, msg = _one_line(exc)
        raise DatasetError(f"invalid metadata {meta_path}: {msg}", column=field, **err) from exc
    info: dict[str, Any] = {}
    blank = [v for v in um.variables if not v.strip()]
    if blank:
        raise DatasetError(
            f"invalid metadata {meta_path}: variables: a variable with an empty name "
            f"({blank[0]!r}); name it as its column is named",
            column="variables",
            **err,
        )
    for v, d in um.variables.items():
        try:
            info[v] = d if isinstance(d, str) else VariableInfo.model_validate(d)
        except ValidationError as exc:
            raise DatasetError(
                f"invalid metadata {meta_path}: variables.{v}: {_one_line(exc)[1]}", column=f"variables.{v}", **err
            ) from exc
    if um.data_type not in (None, "discrete", "continuous"):
        raise DatasetError(
            f"invalid metadata {meta_path}: data_type must be 'discrete' or 'continuous', got {um.data_type!r}",
            column="data_type",
            **err,
        )
    unknown = sorted({x for e in um.true_edges or [] for x in e if x not in info})
    if unknown:
        raise DatasetError(
            f"invalid true_edges in {meta_path}: {', '.join(map(repr, unknown))} not among the variables",
            column="true_edges",
            **err,
        )
    if len(info) < 2:
        raise DatasetError(
            f"metadata {meta_path} describes {len(info)} variable(s); causal discovery needs at least 2",
            column="variables",
            **err,
        )
    cycle = _cycle(um.true_edges or [])
    if cycle:
        raise DatasetError(
            f"invalid true_edges in {meta_path}: they form a cycle, {' -> '.join(cycle)}; a causal DAG has none",
            column="true_edges",
            **err,
        )
    return um, info


def _cycle(edges: list[tuple[str, str]]) -> list[str]:
    """A directed cycle among ``edges`` as its nodes, first node repeated at the end; [] when there is none."""
    import networkx as nx

    g: nx.DiGraph[str] = nx.DiGraph()
    g.add_edges_from(edges)
    try:
        found = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return []
    return [a for a, _ in found] + [found[0][0]]


def read_user_dataset(
    data_path: str | os.PathLike,
    meta_path: str | os.PathLike,
    *,
    checks: DatasetChecks | None = None,
    name: str | None = None,
):
    """Read and validate a user dataset (see the module docstring for every rule).

    Parameters
    ----------
    data_path : path to ``.csv`` or ``.parquet``
    meta_path : path to the ``.json`` metadata
    checks : DatasetChecks, default :meth:`DatasetChecks.from_env`
    name : the dataset's name; default the data file's stem

    Returns
    -------
    Dataset; ``extra``: ``rows_dropped_missing`` (rows left out for a missing value, when
    accepted), ``rows_read`` and ``missing_by_column`` (column -> marker -> count).

    Raises
    ------
    DatasetError
        On any refused input, with ``file`` and (when one is at fault) ``column`` set;
        the message is one line naming the file and the line, field or column(s). Missing
        values are refused unless ``checks.drop_missing`` or the metadata's ``drop_missing``.
    """
    data_path, meta_path = Path(data_path), Path(meta_path)
    name = name or data_path.stem
    checks = checks or DatasetChecks.from_env()
    for path, what in (
        (data_path, ""),
        (meta_path, " (a user dataset needs its .json metadata beside it, or DATA::META)"),
    ):
        why = input_refusal(path)  # before anything is opened: a FIFO or a device never hangs or floods
        if why == "no such file":
            raise DatasetError(f"file not found: {path}{what}", name=name, file=str(path))
        if why is not None:
            raise DatasetError(f"{path}: {why}", name=name, file=str(path))
    if data_path.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise DatasetError(
            f"data file must be .csv or .parquet, got {data_path.suffix!r}", name=name, file=str(data_path)
        )
    um, described = _read_meta(meta_path, name)
    columns, cells, lines = read_table(data_path, name)
    variables = tuple(described)
    absent = [v for v in variables if v not in cells]
    if absent:
        raise DatasetError(
            f"variables {absent} are not columns of {data_path} (columns: {', '.join(c for c in columns if c)[:300]})",
            name=name,
            file=str(data_path),
            column=absent[0],
        )
    markers = {
        m.strip().casefold() for m in (um.missing_values if um.missing_values is not None else checks.missing_values)
    }
    where = "line" if data_path.suffix.lower() == ".csv" else "row"
    cols, states, problems, bad = [], {}, [], []
    found: dict[str, Counter] = {}
    for v in variables:
        found[v] = Counter()
        values, st, probs = read_column(v, cells[v], lines, markers, checks.max_categories, where, found[v])
        cols.append(values)
        states[v] = st
        problems += probs
        bad += [v] * bool(probs)
    err = dict(name=name, file=str(data_path))
    if problems:
        raise DatasetError(f"{data_path}: {'; '.join(problems)}", column=bad[0], **err)
    arr = np.column_stack(cols)
    keep = ~np.isnan(arr).any(axis=1)
    dropped = int((~keep).sum())
    missing_by_column = {v: dict(sorted(c.items())) for v, c in found.items() if c}
    d = len(variables)
    if dropped and not (checks.drop_missing or um.drop_missing):
        left = len(keep) - dropped
        short = (
            f"; only {left} would be left, and {d} variables need at least {checks.min_n(d)}"
            if left < checks.min_n(d)
            else ""
        )
        how = (
            "fill them in"
            if short
            else 'fill them in, or pass --drop-missing (or "drop_missing": true in the metadata) to drop those rows'
        )
        raise DatasetError(
            f"{data_path}: {dropped} of {len(keep)} rows hold a missing value ("
            f"{_missing_text(missing_by_column)}){short}; {how}",
            column=next(iter(missing_by_column)),
            **err,
        )
    rows_read = int(arr.shape[0])
    arr = arr[keep]
    if arr.shape[0] < checks.min_n(d):
        why = f" after dropping {dropped} with a missing value" if dropped else ""
        raise DatasetError(
            f"{data_path}: {arr.shape[0]} rows{why}; {d} variables need at least {checks.min_n(d)} "
            f"(max({checks.min_rows}, {checks.min_rows_per_variable} x {d}))",
            **err,
        )
    constant = [v for v, c in zip(variables, arr.T) if np.all(c == c[0])]
    if constant:
        listed = ", ".join(f"{v!r} (always {arr[0, variables.index(v)]:g})" for v in constant)
        raise DatasetError(
            f"{data_path}: constant column(s) {listed}: a variable without variance has no causal "
            'relations to find and breaks independence tests; remove it from "variables"',
            column=constant[0],
            **err,
        )
    if um.data_type is not None:
        dtype = um.data_type
    else:
        integer = np.all(np.mod(arr, 1) == 0, axis=0) & (np.array([len(np.unique(c)) for c in arr.T]) <= 10)
        dtype = "discrete" if bool(np.all(integer)) else "continuous"
    info = {
        v: (d if isinstance(d, VariableInfo) else VariableInfo(description=d, states=states[v]))
        for v, d in described.items()
    }
    meta = DatasetMetadata(title=um.title or name, domain=um.domain, source=str(data_path), variables=info)
    true = None
    if um.true_edges is not None:
        try:
            true = CausalGraph.from_edges(variables, um.true_edges)
        except (ValidationError, AgentCausalError) as exc:
            msg = _one_line(exc)[1] if isinstance(exc, ValidationError) else str(exc)
            raise DatasetError(
                f"invalid true_edges in {meta_path}: {msg}", name=name, file=str(meta_path), column="true_edges"
            ) from exc
    return Dataset(
        name=name,
        variables=variables,
        data=arr,
        data_type=dtype,
        metadata=meta,
        true_graph=true,
        extra={"rows_dropped_missing": dropped, "rows_read": rows_read, "missing_by_column": missing_by_column},
    )


def _marker(m: str) -> str:
    return "empty" if m == "" else repr(m)


def _missing_text(by_column: dict[str, dict[str, int]]) -> str:
    """``'A': 6 ('?' 6); 'B': 3 (empty 2, 'NA' 1)``."""
    parts = [
        f"{v!r}: {sum(c.values())} ({', '.join(f'{_marker(m)} {k}' for m, k in c.items())})"
        for v, c in by_column.items()
    ]
    more = f"; and {len(parts) - SHOWN} more columns" if len(parts) > SHOWN else ""
    return "; ".join(parts[:SHOWN]) + more


def missing_summary(ds: Dataset) -> str | None:
    """One line saying which rows a user dataset lost to missing values, per column; None when it lost none.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> missing_summary(SimpleNamespace(name="cars", extra={"rows_dropped_missing": 6, "rows_read": 398,
    ...                                 "missing_by_column": {"Horsepower": {"?": 6}}}))
    "cars: dropped 6 of 398 rows with a missing value ('Horsepower': 6 ('?' 6))"
    """
    dropped = ds.extra.get("rows_dropped_missing", 0)
    if not dropped:
        return None
    return (
        f"{ds.name}: dropped {dropped} of {ds.extra.get('rows_read', '?')} rows with a missing value "
        f"({_missing_text(ds.extra.get('missing_by_column', {}))})"
    )


def _resolved(f: Path) -> Path:
    """``f.resolve()``, or its absolute path where a symlink loop stops that (the loader names the loop)."""
    try:
        return f.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(f))


def _data_file(spec: str) -> Path | None:
    if "::" in spec:
        return Path(spec.split("::", 1)[0])
    if Path(spec).suffix.lower() in (".csv", ".parquet", ".pq"):
        return Path(spec)
    return None


def unique_dataset_names(specs: list[str]) -> dict[str, str]:
    """A name per dataset spec, unique within the list and stable for the same list.

    A benchmark keeps its name; a user dataset is named after its file's stem
    (``data/chain.csv`` is ``chain``). When two specs would share a name (two
    ``<folder>/data.csv``, or a user file named like a benchmark), each of them
    is named with as many parent folders as make the names distinct, joined by
    ``-`` (``folderA-data``, ``folderB-data``; no ``/``, as names become file names
    in run folders).

    Parameters
    ----------
    specs : dataset specs as given to :func:`agentcausal.discovery.data.datasets.load_spec`

    Returns
    -------
    dict spec -> name

    Raises
    ------
    DatasetError
        If two specs name the same data file.

    Examples
    --------
    >>> unique_dataset_names(["a/data.csv", "b/data.csv", "asia", "x/chain.csv"])
    {'a/data.csv': 'a-data', 'b/data.csv': 'b-data', 'asia': 'asia', 'x/chain.csv': 'chain'}
    """
    files = {s: _data_file(s) for s in specs}
    resolved: dict[Path, str] = {}
    for s, f in files.items():
        if f is None:
            continue
        r = _resolved(f)
        if r in resolved and resolved[r] != s:
            raise DatasetError(f"the same data file is named twice ({resolved[r]!r} and {s!r})", name=s, file=str(f))
        resolved[r] = s
    names = {s: (f.stem if f is not None else s.lower().replace("-", "_")) for s, f in files.items()}
    counts = Counter(names.values())
    clash = [s for s in specs if files[s] is not None and counts[names[s]] > 1]
    group: dict[str, list[str]] = {}
    for s in clash:
        group.setdefault(names[s], []).append(s)
    for members in group.values():
        parts = {s: _resolved(f).with_suffix("").parts for s in members if (f := files[s]) is not None}  # all are
        for k in range(2, max(len(p) for p in parts.values()) + 1):
            cand = {s: "-".join(p[-k:]) for s, p in parts.items()}
            if len(set(cand.values())) == len(members):
                names.update(cand)
                break
    return {s: (names[s] if files[s] is not None else s) for s in specs}
