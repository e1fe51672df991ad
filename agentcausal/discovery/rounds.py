"""The rounds sweep of MAC (paper §4.3, Fig. 4): one method variant per number of debate rounds.

``discover --rounds 1 2 3`` runs each MAC method whose debates have rounds
once per value, as its own method named ``"mac (rounds 2)"`` (an anonymised
one ``"mac@names (rounds 2)"``): its own row in every table, its own cache
key (the name and ``mac.rounds`` are in it), its own point in the report's
rounds plot (:mod:`agentcausal.discovery.analyses`). Methods without rounds
(statistical, the LLM baselines, ``mac_single``, whose single agent has no
exchange) run once. A single ``--rounds`` value sets ``mac.rounds`` and names
no variant.

This module only names and reads variants: :func:`expand_rounds` (the run's
method list), :func:`split_rounds` (name -> base name, rounds),
:func:`apply_rounds` (the base handler's name and the config the variant
runs with) and :func:`base_method` (the registered method under every suffix).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.3, Fig. 4.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

from agentcausal.exceptions import ConfigError

__all__ = [
    "ROUNDS_METHODS",
    "ROUNDS_RANGE",
    "rounds_variant",
    "expand_rounds",
    "split_rounds",
    "apply_rounds",
    "base_method",
    "file_stem",
]

#: methods whose debates have Affirmative-Negative rounds (``mac_single`` has no Negative)
ROUNDS_METHODS = ("mac", "dcm_only", "mdm_only")
#: the values ``MACSettings.rounds`` accepts
ROUNDS_RANGE = range(1, 6)

_VARIANT = re.compile(r"^(?P<base>\S+) \(rounds (?P<rounds>\d+)\)$")

C = TypeVar("C")


def rounds_variant(method: str, rounds: int) -> str:
    """The name of ``method`` run with ``rounds`` debate rounds.

    >>> rounds_variant("mac@names", 2)
    'mac@names (rounds 2)'
    """
    return f"{method} (rounds {rounds})"


def _check(rounds: int) -> int:
    if rounds not in ROUNDS_RANGE:
        raise ConfigError(f"rounds must be in 1-5 (MAC §4.3 varies 1 to 5), got {rounds}")
    return rounds


def expand_rounds(methods: Sequence[str], rounds: Sequence[int]) -> list[str]:
    """Each method with rounds once per value (in the order given), the others once.

    Parameters
    ----------
    methods : method names (resolved; anonymised ones as ``mac@names``)
    rounds : the ``--rounds`` values; one value (or none) names no variant

    Returns
    -------
    list of method names

    Raises
    ------
    ConfigError on a value outside 1-5.

    Examples
    --------
    >>> expand_rounds(["mac", "pc", "mac_single"], [1, 3])
    ['mac (rounds 1)', 'mac (rounds 3)', 'pc', 'mac_single']
    >>> expand_rounds(["mac", "pc"], [2])
    ['mac', 'pc']
    """
    values = list(dict.fromkeys(_check(int(r)) for r in rounds))
    if len(values) < 2:
        return list(methods)
    out: list[str] = []
    for m in methods:
        names = [rounds_variant(m, r) for r in values] if m.partition("@")[0] in ROUNDS_METHODS else [m]
        out += [n for n in names if n not in out]
    return out


def split_rounds(method: str) -> tuple[str, int | None]:
    """``"mac@names (rounds 2)"`` -> ``("mac@names", 2)``; a name without the suffix -> ``(name, None)``.

    Raises
    ------
    ConfigError on a rounds value outside 1-5, or rounds on a method without debate rounds.

    >>> split_rounds("mac (rounds 3)"), split_rounds("pc")
    (('mac', 3), ('pc', None))
    """
    match = _VARIANT.match(method.strip())
    if match is None:
        return method, None
    base = match["base"]
    if base.partition("@")[0] not in ROUNDS_METHODS:
        raise ConfigError(f"{method!r}: only {', '.join(ROUNDS_METHODS)} have debate rounds")
    return base, _check(int(match["rounds"]))


def apply_rounds(method: str, config: C) -> tuple[str, C]:
    """The handler name of ``method`` and the config it runs with.

    Parameters
    ----------
    method : a method name, possibly a rounds variant
    config : a ``DiscoveryConfig`` (anything with a ``mac`` field of ``MACSettings``)

    Returns
    -------
    (name without the rounds suffix, ``config`` with ``mac.rounds`` set to the variant's value); a plain
    name comes back with ``config`` unchanged.

    Raises
    ------
    ConfigError as :func:`split_rounds`.
    """
    base, rounds = split_rounds(method)
    if rounds is None:
        return method, config
    mac: Any = getattr(config, "mac")  # noqa: B009 (C is bound to BaseModel; the caller passes a DiscoveryConfig)
    update = {"mac": mac.model_copy(update={"rounds": rounds})}
    return base, config.model_copy(update=update)  # type: ignore[attr-defined]  # a DiscoveryConfig


def base_method(method: str) -> str:
    """The registered method under every suffix: ``"mac@names (rounds 2)"`` -> ``"mac"``.

    >>> base_method("mdm_only@all (rounds 4)")
    'mdm_only'
    """
    match = _VARIANT.match(method.strip())
    return (match["base"] if match else method).partition("@")[0]


def file_stem(method: str) -> str:
    """A method's name as a file name part: a rounds variant without spaces or brackets, others as they are.

    >>> file_stem("mac@names (rounds 2)"), file_stem("mac@names")
    ('mac@names_rounds2', 'mac@names')
    """
    base, rounds = split_rounds(method)
    return base if rounds is None else f"{base}_rounds{rounds}"
