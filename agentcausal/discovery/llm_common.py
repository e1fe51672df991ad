"""Pieces the LLM discovery baselines share: prompts' system message, data summaries, edge texts.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.1 (the LLM baselines).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, create_model

from agentcausal.discovery.datasets import Dataset, metadata_text
from agentcausal.discovery.mac import prompts as P
from agentcausal.llm.replies import ShortText

__all__ = ["SYSTEM", "system_message", "baseline_messages", "metadata_block", "reasoned_answer_model",
           "reasoned_answer_tokens", "data_summary", "edges_text"]

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
    """The dataset's variable descriptions (:func:`~agentcausal.discovery.datasets.metadata_text`),
    delimited as ``<metadata>``."""
    return P.delimit("metadata", metadata_text(ds))


def reasoned_answer_model(name: str, field: str, choices: tuple[str, ...], reason_chars: int) -> type[BaseModel]:
    """A reply model of a short reason followed by one of ``choices``.

    Parameters
    ----------
    name : str, the model's (schema's) name
    field : str, the name of the answer field
    choices : tuple of str, the answers allowed
    reason_chars : int, the most characters of the reason

    Returns
    -------
    A pydantic model with fields ``reason`` (str) then ``field`` (one of ``choices``).
    """
    return create_model(name, reason=(ShortText(reason_chars), Field(description="one short sentence")),
                        **{field: (Literal[choices], ...)})  # type: ignore[valid-type]


def reasoned_answer_tokens(reason_chars: int) -> int:
    """Completion tokens a :func:`reasoned_answer_model` reply needs: ``reason_chars // 3 + 40``."""
    return reason_chars // 3 + 40


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
    top_pairs : int, pairs listed (default ``2 d``)

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
    k = top_pairs if top_pairs is not None else 2 * ds.d
    lines.append("Strongest associations (|Spearman r|): " + "; ".join(
        f"{ds.variables[i]}-{ds.variables[j]} {r:.2f}" for r, i, j in pairs[:k]))
    return "\n".join(lines)
