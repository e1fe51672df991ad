"""Benchmark and user datasets for causal discovery, offline, with variable descriptions.

* bnlearn networks (Earthquake, Cancer, Survey, Asia, Child, Sachs, Alarm):
  BIF files vendored in ``data/bnlearn/`` (see its ``ORIGIN.md``), read with
  pgmpy's ``BIFReader`` and forward-sampled with a seed. Columns follow the BIF
  file's variable order; states are integer codes in the BIF file's state order.
* Auto MPG: ``vega_datasets``' packaged ``cars.json`` (no download), rows with a
  missing Horsepower or Miles_per_Gallon dropped (392 rows), five continuous
  variables; true graph from Takayama et al. (2024).
* User datasets: a CSV or Parquet file plus a JSON metadata file, validated
  before any method (see :func:`load_user_dataset` and
  :mod:`agentcausal.discovery.data.user_data`).

The :class:`Dataset` type both loaders build is :mod:`agentcausal.discovery.data.dataset_model`'s.

Every variable has a description in ``data/descriptions/<name>.json``; MAC's
metadata text I is built from them (:func:`metadata_text`).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1.
Scutari. "Learning Bayesian Networks with the bnlearn R Package." JSS 35 (3), 2010.
Takayama et al. "Integrating Large Language Models in Causal Discovery: A Statistical
Causal Approach." arXiv:2402.01454, 2024.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import threading
import warnings
from pathlib import Path

import numpy as np

from agentcausal.discovery.data.dataset_model import Dataset, DatasetHeader, DatasetMetadata, VariableInfo
from agentcausal.discovery.data.user_data import DatasetChecks, read_user_dataset
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.exceptions import DatasetError

__all__ = [
    "BNLEARN_NETWORKS",
    "BENCHMARKS",
    "MAIN_BENCHMARKS",
    "data_dir",
    "load_dataset",
    "load_user_dataset",
    "load_spec",
    "load_header",
    "metadata_text",
    "sample_rows",
]

BNLEARN_NETWORKS = ("earthquake", "cancer", "survey", "asia", "child", "sachs", "alarm")
BENCHMARKS = BNLEARN_NETWORKS + ("auto_mpg",)
#: The six datasets of the main benchmark table (the paper's five plus Asia).
MAIN_BENCHMARKS = ("earthquake", "cancer", "survey", "asia", "child", "auto_mpg")


def data_dir() -> Path:
    """The folder holding ``bnlearn/`` and ``descriptions/``.

    Order: ``$AGENTCAUSAL_DATA_DIR``; the repository's ``data/`` (editable
    install or source tree); ``agentcausal/data`` inside the package.

    Raises
    ------
    DatasetError if none of them has ``bnlearn/``.
    """
    here = Path(__file__).resolve()
    candidates = []
    if os.environ.get("AGENTCAUSAL_DATA_DIR"):
        candidates.append(Path(os.environ["AGENTCAUSAL_DATA_DIR"]))
    package = here.parents[2]  # agentcausal/ (this file is agentcausal/discovery/data/datasets.py)
    candidates += [package.parent / "data", package / "data"]
    for c in candidates:
        if (c / "bnlearn").is_dir():
            return c
    raise DatasetError(
        f"no data folder with bnlearn/ found; looked in {', '.join(map(str, candidates))}; set AGENTCAUSAL_DATA_DIR"
    )


def _read_descriptions(name: str) -> dict:
    path = data_dir() / "descriptions" / f"{name}.json"
    if not path.is_file():
        raise DatasetError(f"no descriptions file {path}", name=name)
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path} is not valid JSON: {exc}", name=name) from exc


# pgmpy's sampler touches shared state (the cached model, numpy's global RNG): one sampler at a time,
# or concurrent loads in a thread pool draw different rows for the same seed.
_SAMPLE_LOCK = threading.Lock()


@functools.lru_cache(maxsize=16)
def _bif_model(name: str):
    path = data_dir() / "bnlearn" / f"{name}.bif.gz"
    if not path.is_file():
        raise DatasetError(f"BIF file {path} is missing", name=name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgmpy.readwrite import BIFReader

        reader = BIFReader(string=gzip.open(path, "rt").read())
        model = reader.get_model()
    return reader, model


def _network_header(name: str) -> tuple[DatasetHeader, dict[str, tuple[str, ...]]]:
    """A network's variables, metadata and true graph from its BIF file and descriptions, and each
    variable's states (no row sampled)."""
    with _SAMPLE_LOCK:
        reader, model = _bif_model(name)
        variables = tuple(reader.variable_names)
        states = {v: tuple(reader.variable_states[v]) for v in variables}
        edges = sorted(model.edges())
    desc = _read_descriptions(name)
    missing = set(variables) - set(desc["variables"])
    if missing:
        raise DatasetError(f"descriptions lack variables {sorted(missing)}", name=name)
    meta = DatasetMetadata(
        title=desc["title"],
        domain=desc["domain"],
        source=desc.get("source", ""),
        variables={v: VariableInfo(description=desc["variables"][v], states=states[v]) for v in variables},
    )
    true = CausalGraph.from_edges(variables, edges)
    return DatasetHeader(name, variables, "discrete", meta, true), states


def _load_bnlearn(name: str, n: int, seed: int) -> Dataset:
    head, states = _network_header(name)
    with _SAMPLE_LOCK:
        _, model = _bif_model(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = model.simulate(n_samples=n, seed=seed, show_progress=False)
    cols = []
    for v in head.variables:
        codes = {s: i for i, s in enumerate(states[v])}
        col = df[v].astype(str).map(codes)
        if col.isna().any():
            raise DatasetError(f"sampled states of {v} not in the BIF states {states[v]}", name=name)
        cols.append(col.to_numpy(dtype=np.float64))
    return Dataset(
        name=name,
        variables=head.variables,
        data=np.column_stack(cols),
        data_type="discrete",
        metadata=head.metadata,
        true_graph=head.true_graph,
        seed=seed,
    )


def _load_auto_mpg() -> Dataset:
    from vega_datasets import data as vd

    if not vd.cars.is_local:  # pragma: no cover - depends on the installed package
        raise DatasetError("vega_datasets does not ship cars.json locally", name="auto_mpg")
    df = vd.cars().dropna(subset=["Horsepower", "Miles_per_Gallon"])
    df = df.rename(columns={"Miles_per_Gallon": "Mpg", "Weight_in_lbs": "Weight"})
    variables = ("Displacement", "Mpg", "Horsepower", "Weight", "Acceleration")
    desc = _read_descriptions("auto_mpg")
    meta = DatasetMetadata(
        title=desc["title"],
        domain=desc["domain"],
        source=desc.get("source", ""),
        variables={v: VariableInfo(description=desc["variables"][v]) for v in variables},
    )
    true = CausalGraph.from_edges(variables, [tuple(e) for e in desc["true_edges"]])
    return Dataset(
        name="auto_mpg",
        variables=variables,
        data=df[list(variables)].to_numpy(dtype=np.float64),
        data_type="continuous",
        metadata=meta,
        true_graph=true,
    )


def load_dataset(name: str, n: int = 1000, seed: int = 0) -> Dataset:
    """Load a benchmark dataset offline.

    Parameters
    ----------
    name : one of :data:`BENCHMARKS` (case-insensitive; ``"auto"`` is an alias of ``"auto_mpg"``)
    n : int, rows to sample from a bnlearn network (Auto MPG always has its 392 rows)
    seed : int, sampling seed of a bnlearn network (Auto MPG ignores it)

    Returns
    -------
    Dataset with ``data`` of shape (n, d).

    Raises
    ------
    DatasetError on an unknown name, n < 1, or a missing data file.

    Examples
    --------
    >>> ds = load_dataset("earthquake", n=50, seed=0)   # doctest: +SKIP
    >>> ds.data.shape, ds.variables[0]                   # doctest: +SKIP
    ((50, 5), 'Burglary')
    """
    key = name.lower().replace("-", "_")
    key = "auto_mpg" if key in ("auto", "autompg") else key
    if key not in BENCHMARKS:
        raise DatasetError(f"unknown dataset; known: {', '.join(BENCHMARKS)} (or a user CSV/Parquet path)", name=name)
    if n < 1:
        raise DatasetError(f"n must be >= 1, got {n}", name=name)
    if key == "auto_mpg":
        return _load_auto_mpg()
    return _load_bnlearn(key, n, seed)


def load_user_dataset(
    data_path: str | os.PathLike,
    meta_path: str | os.PathLike,
    *,
    checks: DatasetChecks | None = None,
    name: str | None = None,
) -> Dataset:
    """Load a user dataset: a CSV or Parquet table plus a JSON metadata file, validated before any method.

    The metadata file holds ``{"title": str, "domain": str, "variables": {name:
    description}, "true_edges": [[cause, effect], ...] (optional), "data_type":
    "discrete" | "continuous" (optional), "missing_values": [marker, ...]
    (optional)}``. Columns not in ``variables`` are ignored; rows with a missing
    value are dropped. Text columns with few distinct values are categories,
    coded as integers in sorted order of their values. The data type is
    ``discrete`` when every column is integer-valued with at most 10 levels,
    unless the file says otherwise. What is refused, and the minimum number of
    rows, are in :mod:`agentcausal.discovery.data.user_data`.

    Parameters
    ----------
    data_path : path to ``.csv`` or ``.parquet``
    meta_path : path to ``.json``
    checks : DatasetChecks, the validation thresholds (default: from the environment)
    name : the dataset's name (default: the data file's stem; see
        :func:`agentcausal.discovery.data.user_data.unique_dataset_names`)

    Returns
    -------
    Dataset

    Raises
    ------
    DatasetError
        On a missing file, an unknown suffix, invalid or truncated metadata, a
        ragged or empty table, a described variable absent from the table, or a
        column or row count the module docstring of
        :mod:`agentcausal.discovery.data.user_data` refuses; ``file`` and ``column`` say where.
    """
    return read_user_dataset(data_path, meta_path, checks=checks, name=name)


def load_spec(spec: str, n: int = 1000, seed: int = 0, *, name: str | None = None) -> Dataset:
    """Load a dataset named on the command line: a benchmark name, or a ``.csv``/``.parquet`` path.

    For a path, the metadata file is the same path with ``.json`` as suffix,
    or an explicit ``DATA::META`` pair (``data.csv::meta.json``). ``n`` and
    ``seed`` apply to benchmark networks only.

    Parameters
    ----------
    spec : benchmark name, data path, or ``DATA::META``
    n, seed : rows and sampling seed of a bnlearn network
    name : a user dataset's name (default its file's stem)

    Raises
    ------
    DatasetError as :func:`load_dataset` and :func:`load_user_dataset`.
    """
    if "::" in spec:
        data, meta = spec.split("::", 1)
        return load_user_dataset(data, meta, name=name)
    if Path(spec).suffix.lower() in (".csv", ".parquet", ".pq"):
        return load_user_dataset(spec, Path(spec).with_suffix(".json"), name=name)
    return load_dataset(spec, n=n, seed=seed)


def load_header(spec: str, *, name: str | None = None) -> DatasetHeader:
    """A dataset named on the command line without its rows (:func:`load_spec`'s variables, metadata and
    true graph): a bnlearn network's from its BIF file and descriptions, no row sampled; Auto MPG and a
    user dataset's from their files as :func:`load_spec` reads them.

    Raises
    ------
    DatasetError as :func:`load_spec`.
    """
    key = spec.lower().replace("-", "_")
    if "::" not in spec and key in BNLEARN_NETWORKS:
        return _network_header(key)[0]
    return load_spec(spec, name=name).header()


def metadata_text(ds: Dataset | DatasetHeader, *, with_states: bool = True) -> str:
    """The metadata I as short lines: the domain, then ``- name: description [states]``.

    Parameters
    ----------
    ds : Dataset or DatasetHeader
    with_states : bool, list the states of discrete variables

    Returns
    -------
    str, one line per variable, in column order.
    """
    lines = [f"Domain: {ds.metadata.domain}"]
    for v in ds.variables:
        info = ds.metadata.variables[v]
        states = f" [states: {', '.join(info.states)}]" if with_states and info.states else ""
        lines.append(f"- {v}: {info.description}{states}")
    return "\n".join(lines)


def sample_rows(ds: Dataset, k: int, seed: int) -> np.ndarray:
    """The subset S: ``k`` rows drawn without replacement with ``seed``.

    Parameters
    ----------
    ds : Dataset
    k : int, rows wanted (capped at n)
    seed : int

    Returns
    -------
    ndarray of shape (min(k, n), d).
    """
    rng = np.random.default_rng(seed)
    idx = rng.choice(ds.n, size=min(k, ds.n), replace=False)
    return ds.data[np.sort(idx)]
