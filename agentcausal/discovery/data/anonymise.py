"""Memorisation control: the same dataset with its variable names, or all its metadata, hidden from the LLM.

A textbook network (Asia, Alarm...) may be recalled rather than inferred. Running
each LLM method once per mode shows how much of its score survives without the
names that let a model recall the network:

========  ===================================================================
mode      what the LLM sees
========  ===================================================================
``none``  the dataset as it is
``names`` variable names replaced by neutral ids ``V1 .. Vd`` (column order); descriptions,
          states and the domain line kept
``all``   neutral ids, and descriptions, state names and the domain line dropped (states become
          their integer codes): only the data remains
========  ===================================================================

The data array is unchanged (only the column names differ). A method runs on the
anonymised dataset and its graph is mapped back to the real names before scoring.
This goes beyond the MAC paper, whose limitations section asks for such a control.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §6 (limitations).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from agentcausal.discovery.data.dataset_model import Dataset, DatasetMetadata, VariableInfo
from agentcausal.discovery.graphs.graph import CausalGraph, Edge
from agentcausal.exceptions import ConfigError

__all__ = ["AnonymiseMode", "ANONYMISE_MODES", "anonymise", "restore_names"]

AnonymiseMode = Literal["none", "names", "all"]
ANONYMISE_MODES: tuple[str, ...] = ("none", "names", "all")


def _relabel(g: CausalGraph | None, mapping: dict[str, str], nodes: tuple[str, ...]) -> CausalGraph | None:
    if g is None:
        return None
    return CausalGraph(nodes=nodes, edges=tuple(Edge(mapping[e.u], mapping[e.v], e.mark_u, e.mark_v) for e in g.edges))


def anonymise(ds: Dataset, mode: str) -> tuple[Dataset, dict[str, str]]:
    """The dataset as an LLM method sees it under ``mode``, and the map neutral id -> real name.

    Parameters
    ----------
    ds : Dataset
    mode : "none", "names" or "all"

    Returns
    -------
    (Dataset, dict): for ``none`` the dataset itself and the identity map.

    Raises
    ------
    ConfigError on an unknown mode.

    Examples
    --------
    >>> from agentcausal.discovery.data.datasets import load_dataset
    >>> anon, back = anonymise(load_dataset("cancer", n=20), "names")  # doctest: +SKIP
    >>> anon.variables[:2], back["V1"]                                 # doctest: +SKIP
    (('V1', 'V2'), 'Pollution')
    """
    if mode not in ANONYMISE_MODES:
        raise ConfigError(f"unknown anonymise mode {mode!r}; choose from {', '.join(ANONYMISE_MODES)}")
    if mode == "none":
        return ds, {v: v for v in ds.variables}
    ids = tuple(f"V{i + 1}" for i in range(ds.d))
    fwd = dict(zip(ds.variables, ids))
    info = {}
    for v, new in fwd.items():
        old = ds.metadata.variables[v]
        if mode == "names":
            info[new] = old
        else:
            states = tuple(str(i) for i in range(len(old.states))) if old.states else None
            info[new] = VariableInfo(description="(not given)", states=states)
    meta = DatasetMetadata(
        title="anonymised", domain=ds.metadata.domain if mode == "names" else "(not given)", source="", variables=info
    )
    anon = dataclasses.replace(ds, variables=ids, metadata=meta, true_graph=_relabel(ds.true_graph, fwd, ids))
    return anon, {new: v for v, new in fwd.items()}


def restore_names(graph: CausalGraph, back: dict[str, str], nodes: tuple[str, ...]) -> CausalGraph:
    """A graph over neutral ids mapped back to the real names (``nodes`` = the real column order)."""
    out = _relabel(graph, back, nodes)
    assert out is not None
    return out
