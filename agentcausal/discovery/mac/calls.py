"""How MAC and the LLM discovery baselines size their calls: the sample index and completion budgets.

* :func:`sample_index` is the LLM *sample index* of one (data seed, repeat), which ``discover`` puts in the
  method's :class:`~agentcausal.llm.call.LLMCall`: sample 0 keeps the cache keys of a single answer, a
  sample > 0 is cached apart and sent as the request's ``seed`` where the profile allows. The data seed is
  the sample index, so methods whose prompt does not depend on the data (zero-shot, MDM-only) still get an
  independent answer per seed.
* :func:`graph_reply_tokens` is the completion budget a graph reply needs,
  from the number of variables, the length of their names and the reply schema
  (per-edge reasons included); :func:`budget` bounds it by the profile's
  ``max_output_tokens``; :func:`completion_cap` is the one rule of every MAC
  call: a fixed or derived cap (the ``small`` preset's), scaled and bounded by
  the profile, or, where the setting is None (``paper``), the profile's own
  budget (:func:`agentcausal.settings.completion_budget`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agentcausal.llm import Routing
from agentcausal.settings import completion_budget

__all__ = [
    "sample_index",
    "graph_reply_tokens",
    "budget",
    "completion_cap",
    "CHARS_PER_TOKEN",
    "REPEAT_STRIDE",
]

#: characters per token assumed for budgets: 3 is below English prose (about 4) and upper-case
#: abbreviations (HYPOVOLEMIA, LVEDVOLUME) tokenise worse, so budgets err on the generous side
CHARS_PER_TOKEN = 3.0

#: sample index of repeat ``r`` of data seed ``s``: ``s + r * REPEAT_STRIDE`` (seeds below the stride)
REPEAT_STRIDE = 1 << 20


def sample_index(seed: int, repeat: int = 0) -> int:
    """The LLM sample index of one (data seed, repeat): ``seed + repeat * REPEAT_STRIDE``.

    Repeat 0 of seed ``s`` is sample ``s`` (so seed 0 keeps the single-answer cache keys),
    and every (seed, repeat) pair with ``0 <= seed < REPEAT_STRIDE`` has its own index.

    >>> sample_index(3), sample_index(0, 1) == REPEAT_STRIDE
    (3, True)
    """
    if not 0 <= seed < REPEAT_STRIDE or repeat < 0:
        raise ValueError(f"seed must be in [0, {REPEAT_STRIDE}) and repeat >= 0, got {seed}, {repeat}")
    return seed + repeat * REPEAT_STRIDE


def graph_reply_tokens(variables: Sequence[str], *, max_edges: int, reason_chars: int) -> int:
    """Completion tokens a graph reply of up to ``max_edges`` edges can need.

    Per edge ``{"cause": "<name>", "effect": "<name>", "reason": "<text>"}``: 40
    characters of JSON and spacing, two of the longest names, and the reason
    cap; divided by :data:`CHARS_PER_TOKEN`, plus 16 tokens for the envelope.

    Parameters
    ----------
    variables : the variable names
    max_edges : int, the schema's bound on the edge list
    reason_chars : int, the per-edge reason cap (0 = no reason field)

    Returns
    -------
    int, tokens.

    Examples
    --------
    >>> graph_reply_tokens(["A", "B"], max_edges=4, reason_chars=0)
    72
    """
    longest = max((len(v) for v in variables), default=1)
    per_edge = 40 + 2 * longest + (reason_chars + 14 if reason_chars else 0)
    return 16 + math.ceil(max_edges * per_edge / CHARS_PER_TOKEN)


def budget(gw: Routing, stage: str, need: int) -> int:
    """``need`` bounded by the profile's ``max_output_tokens`` (``max_output_tokens(stage)`` of a Gateway or an
    LLMCall, or the routed profile's for a ProfileSet: the dry run's listing), if any."""
    getter = getattr(gw, "max_output_tokens", None)
    try:
        ceiling = getter(stage) if callable(getter) else gw.profile_for(stage).max_output_tokens
    except Exception:  # an unrouted stage fails later, at the call, with its own error
        ceiling = None
    return int(min(need, ceiling)) if ceiling else int(need)


def completion_cap(gw: Routing, stage: str, fixed: int | None, *, scale: float = 1.0) -> int:
    """Completion cap (tokens) of one MAC or LLM-baseline call.

    Parameters
    ----------
    gw : Gateway, LLMCall or ProfileSet, the routing
    stage : str, the routed stage
    fixed : int or None, the fixed or derived cap of the settings (``small``); None = no cap of the method's
        own (``paper``): the profile's budget, :func:`agentcausal.settings.completion_budget` (its
        ``max_output_tokens``, else a fallback from its context window)
    scale : float, multiplies ``fixed`` (``max_tokens_scale``); a profile budget is not scaled

    Returns
    -------
    int: ``max(16, int(fixed * scale))`` bounded by the profile's ``max_output_tokens`` (:func:`budget`), or
    the profile's budget.
    """
    if fixed is None:
        return completion_budget(gw, stage, None)
    return budget(gw, stage, max(16, int(fixed * scale)))
