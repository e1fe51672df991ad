"""Repeated runs (``--repeats K``): the repeat index r in every LLM request and in the task cache key.

Repeat r = 0 is the ordinary run (its requests and keys are exactly those of a
run without repeats); repeat r > 0 sends ``sample=r`` with every chat and
structured request (the method's :class:`~agentcausal.llm.call.LLMCall`, built by
:func:`agentcausal.attribution.jobs.run_method`), which the gateway keeps apart in
its cache and sends as ``seed=r`` where the endpoint takes one, at the
profile's temperature. Reports give mean ± standard deviation over repeats
(:func:`mean_std`), as the DCFA paper's Table 4 does over its runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["mark_repeat", "repeat_of", "mean_std"]


def mark_repeat(attribution: Any, repeat: int) -> Any:
    """The Attribution with its repeat index recorded (field ``repeat`` when the model has one,
    and ``details["repeat"]`` for every reader); repeat 0 is left unmarked."""
    if not repeat:
        return attribution
    update: dict[str, Any] = {"details": {**attribution.details, "repeat": repeat}}
    if "repeat" in type(attribution).model_fields:
        update["repeat"] = repeat
    return attribution.model_copy(update=update)


def repeat_of(details: dict | None) -> int:
    """The repeat index recorded by :func:`mark_repeat` (0 when none)."""
    return int((details or {}).get("repeat", 0) or 0)


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; 0.0 for one value) of per-repeat scores.

    >>> mean_std([0.25, 0.75])
    (0.5, 0.3535533905932738)
    """
    vals = [float(v) for v in values]
    if not vals:
        return math.nan, math.nan
    m = sum(vals) / len(vals)
    if len(vals) < 2:
        return m, 0.0
    return m, math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))
