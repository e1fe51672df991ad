"""The dataset of causal discovery: observations O with variables V, metadata I and (when known) the true graph.

Both loaders build it: :mod:`agentcausal.discovery.data.datasets` (benchmarks) and
:mod:`agentcausal.discovery.data.user_data` (a user's table and metadata).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import joblib
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from agentcausal.discovery.graphs.graph import CausalGraph

__all__ = ["DataType", "VariableInfo", "DatasetMetadata", "Dataset", "DatasetHeader"]

DataType = Literal["discrete", "continuous"]


class VariableInfo(BaseModel):
    """What a variable measures, and its states (discrete) or unit (in the description)."""

    model_config = ConfigDict(frozen=True)

    description: str
    states: tuple[str, ...] | None = None


class DatasetMetadata(BaseModel):
    """Descriptions of a dataset and its variables (the metadata I of MAC, §3.1)."""

    model_config = ConfigDict(frozen=True)

    title: str
    domain: str
    source: str = ""
    variables: dict[str, VariableInfo]


@dataclass(frozen=True, eq=False)
class Dataset:
    """Observations O with variables V, metadata I and (when known) the true graph.

    Attributes
    ----------
    name : str
    variables : tuple of str, length d, the column order of ``data``
    data : ndarray of shape (n, d); integer codes (as float64) for discrete data
    data_type : "discrete" or "continuous"
    metadata : DatasetMetadata
    true_graph : CausalGraph or None
    seed : int or None, the sampling seed (bnlearn networks)
    """

    name: str
    variables: tuple[str, ...]
    data: np.ndarray
    data_type: DataType
    metadata: DatasetMetadata
    true_graph: CausalGraph | None = None
    seed: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.data.shape[0])

    @property
    def d(self) -> int:
        return int(self.data.shape[1])

    def content_hash(self) -> str:
        """``joblib.hash`` of the data array and the column names: the cache key of results on this data."""
        return joblib.hash((np.ascontiguousarray(self.data), tuple(self.variables), self.data_type))

    def header(self) -> DatasetHeader:
        """The dataset without its rows."""
        return DatasetHeader(self.name, self.variables, self.data_type, self.metadata, self.true_graph)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.data, columns=list(self.variables))


@dataclass(frozen=True, eq=False)
class DatasetHeader:
    """A dataset without its rows: what an LLM method's cache key and the scoring of a run read.

    Attributes
    ----------
    name, variables, data_type, metadata, true_graph : as :class:`Dataset`'s
    """

    name: str
    variables: tuple[str, ...]
    data_type: DataType
    metadata: DatasetMetadata
    true_graph: CausalGraph | None = None
