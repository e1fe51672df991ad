"""Pieces the LLM discovery baselines share: prompts' system message, data summaries, edge texts, and the
graph answer (reply model and completion cap).

Under ``paper`` settings nothing here caps what the method's paper does not: a graph answer's edge list is
bounded only by what a DAG allows (d(d-1)/2 edges), a reason is unbounded, and a completion cap of None
leaves the budget to the profile (:func:`agentcausal.discovery.mac.calls.completion_cap`). The ``small``
settings keep their fixed bounds (2 d edges, short reasons).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1 (the LLM baselines).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, Field, create_model

from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.data.datasets import metadata_text
from agentcausal.discovery.mac import prompts as P
from agentcausal.discovery.mac.calls import graph_reply_tokens
from agentcausal.llm.replies import ShortText

__all__ = [
    "SYSTEM",
    "system_message",
    "baseline_messages",
    "metadata_block",
    "reasoned_answer_model",
    "reasoned_answer_tokens",
    "data_summary",
    "edges_text",
    "GraphAnswer",
    "graph_answer",
]

SYSTEM = "You are a causal discovery expert. Reply only with JSON."


def system_message() -> dict[str, str]:
    """The system message of every LLM-baseline call (:data:`SYSTEM`)."""
    return {"role": "system", "content": SYSTEM}


def baseline_messages(user: str) -> list[dict[str, str]]:
    """The chat messages of one LLM-baseline call: :func:`system_message`, then ``user``.

    Parameters
    ----------
    user : str, the user message

    Returns
    -------
    list of two message dicts (system, user)
    """
    return [system_message(), {"role": "user", "content": user}]


def metadata_block(ds: Dataset) -> str:
    """The dataset's variable descriptions (:func:`~agentcausal.discovery.data.datasets.metadata_text`),
    delimited as ``<metadata>``."""
    return P.delimit("metadata", metadata_text(ds))


def reasoned_answer_model(name: str, field: str, choices: tuple[str, ...], reason_chars: int | None) -> type[BaseModel]:
    """A reply model of a reason followed by one of ``choices``.

    Parameters
    ----------
    name : str, the model's (schema's) name
    field : str, the name of the answer field
    choices : tuple of str, the answers allowed
    reason_chars : int or None, the most characters of the reason (``maxLength``); None = unbounded

    Returns
    -------
    A pydantic model with fields ``reason`` (str) then ``field`` (one of ``choices``).
    """
    kind = ShortText(reason_chars) if reason_chars else str
    answer: dict[str, Any] = {field: (Literal[choices], ...)}
    return create_model(
        name, reason=(kind, Field(description="one short sentence" if reason_chars else "your reasoning")), **answer
    )


def reasoned_answer_tokens(reason_chars: int | None) -> int | None:
    """Completion tokens a :func:`reasoned_answer_model` reply needs: ``reason_chars // 3 + 40``; None
    (the profile's budget) for an unbounded reason."""
    return None if reason_chars is None else reason_chars // 3 + 40


class GraphAnswer(NamedTuple):
    """A baseline's graph answer: the reply model and its fixed completion cap (None = the profile's budget)."""

    model: type[BaseModel]
    max_tokens: int | None


def graph_answer(ds: Dataset, edges_per_variable: float | None) -> GraphAnswer:
    """The reply model of a baseline's graph (``{"edges": [{"cause", "effect"}]}``, no reasons) and its cap.

    Parameters
    ----------
    ds : Dataset (its variables)
    edges_per_variable : float or None, the edge list's bound as a multiple of d
        (:func:`~agentcausal.discovery.mac.prompts.max_graph_edges`; ``small``: 2); None = d(d-1)/2

    Returns
    -------
    GraphAnswer(model, max_tokens): ``max_tokens`` from the bound and the names
    (:func:`~agentcausal.discovery.mac.calls.graph_reply_tokens`) when the bound is ``small``'s, else None.
    """
    bound = P.max_graph_edges(ds.d, edges_per_variable)
    model = P.graph_reply_model(tuple(ds.variables), max_edges=bound)
    need = None if edges_per_variable is None else graph_reply_tokens(ds.variables, max_edges=bound, reason_chars=0)
    return GraphAnswer(model, need)


def edges_text(edges: Iterable[str]) -> str:
    """Edges one per line (``(none)`` when empty)."""
    lines = list(edges)
    return "\n".join(lines) if lines else "(none)"


def data_summary(ds: Dataset, *, top_pairs: int | None = None) -> str:
    """Summary statistics of the data: per variable its state frequencies (discrete) or mean and std,
    then the most associated pairs (absolute Spearman correlation), strongest first.

    Parameters
    ----------
    ds : Dataset
    top_pairs : int or None, pairs listed (``ReActSettings.edges_per_variable`` times d under ``small``);
        None = every pair

    Returns
    -------
    str
    """
    x = ds.data
    lines = [f"{ds.n} rows, {ds.d} variables, {ds.data_type}."]
    for j, v in enumerate(ds.variables):
        col = x[:, j]
        if ds.data_type == "discrete":
            vals, counts = np.unique(col.astype(int), return_counts=True)
            lines.append(f"{v}: " + ", ".join(f"{int(a)}: {c / ds.n:.2f}" for a, c in zip(vals, counts)))
        else:
            lines.append(f"{v}: mean {col.mean():.4g}, std {col.std():.4g}")
    ranks = np.argsort(np.argsort(x, axis=0), axis=0).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.nan_to_num(np.corrcoef(ranks, rowvar=False))
    pairs = sorted(((abs(c[i, j]), i, j) for i in range(ds.d) for j in range(i + 1, ds.d)), reverse=True)
    k = top_pairs if top_pairs is not None else len(pairs)
    lines.append(
        "Strongest associations (|Spearman r|): "
        + "; ".join(f"{ds.variables[i]}-{ds.variables[j]} {r:.2f}" for r, i, j in pairs[:k])
    )
    return "\n".join(lines)
