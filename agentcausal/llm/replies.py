"""Building blocks for structured-reply models.

:func:`ShortText` is a string field whose JSON schema carries ``maxLength``:
servers that decode with a grammar built from the schema (llama.cpp, vLLM)
cannot write past it, so a chatty small model cannot run a free-text reason
into ``max_tokens`` and cut the JSON off. Endpoints that do not enforce the
schema may still send a longer string; it is truncated on validation instead
of failing, because the length of a reason is never worth a repair round trip.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

__all__ = ["ShortText"]


def _truncate(limit: int):
    def cut(value: Any) -> Any:
        return value[:limit] if isinstance(value, str) else value

    return cut


def ShortText(max_chars: int, description: str | None = None) -> Any:  # noqa: N802 (a type factory)
    """``str`` annotated with ``maxLength = max_chars`` and truncation on validation.

    Parameters
    ----------
    max_chars : int, the cap in characters (>= 1)
    description : str, optional; what the model reads about the field

    Returns
    -------
    An ``Annotated[str, ...]`` type for a pydantic field.

    Raises
    ------
    ValueError if ``max_chars`` < 1.

    Examples
    --------
    >>> from pydantic import BaseModel
    >>> class Verdict(BaseModel):
    ...     reason: ShortText(10)
    >>> Verdict(reason="a very long reason indeed").reason
    'a very lon'
    >>> Verdict.model_json_schema()["properties"]["reason"]["maxLength"]
    10
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    return Annotated[str, BeforeValidator(_truncate(max_chars)), Field(max_length=max_chars, description=description)]
