"""A discovery method as run: a listed method and its variant (:class:`MethodVariant`), as typed data, and the
variant checked against its method's spec (:class:`RunVariant`).

A variant is a listed method (``base``, :data:`agentcausal.registry.DISCOVERY_METHODS`) with neutral
variable ids (``anonymise``: ``names`` or ``all``, the memorisation control of
:mod:`agentcausal.discovery.data.anonymise`) and/or its own number of MAC debate rounds (``rounds``: the
rounds sweep of MAC paper §4.3, Fig. 4; ``discover --rounds 1 2 3`` runs each method with rounds once per
value). Its display name (:attr:`MethodVariant.name`: ``"mac"``, ``"mac@names"``, ``"mac (rounds 2)"``,
``"mac@names (rounds 2)"``) is the run's name for it in the plan, the results' ``method`` column, the
cache key and every table; :meth:`MethodVariant.parse` reads such a name back (the CLI's ``--method``
value, a results file's column). :func:`variant` parses and checks a name against a table of methods (the
caller's: this package never imports the registry); :func:`resolve_methods`, :func:`with_anonymise` and
:func:`expand_rounds` build a run's variants.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.3, Fig. 4.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Self

from agentcausal.discovery.data.anonymise import ANONYMISE_MODES
from agentcausal.exceptions import ConfigError

if TYPE_CHECKING:
    from agentcausal.discovery.spec import DiscoverySpec
    from agentcausal.methods import MethodTable

__all__ = [
    "ROUNDS_RANGE",
    "MethodVariant",
    "RunVariant",
    "variant",
    "resolve_methods",
    "with_anonymise",
    "expand_rounds",
]

#: the values ``MACSettings.rounds`` accepts
ROUNDS_RANGE = range(1, 6)

_NAME = re.compile(r"^(?P<base>[^@\s]+)(?:@(?P<mode>[^@\s]*))?(?: \(rounds (?P<rounds>\d+)\))?$")


@dataclass(frozen=True)
class MethodVariant:
    """One discovery method as run.

    Attributes
    ----------
    base : str, the registered method (``mac``, ``pc`` ...)
    anonymise : str, ``none``, ``names`` or ``all`` (:mod:`agentcausal.discovery.data.anonymise`)
    rounds : int or None, MAC's debate rounds for this variant (1-5); None = the config's ``mac.rounds``

    Raises
    ------
    ConfigError on ``rounds`` outside 1-5.
    """

    base: str
    anonymise: str = "none"
    rounds: int | None = None

    def __post_init__(self) -> None:
        if self.rounds is not None and self.rounds not in ROUNDS_RANGE:
            raise ConfigError(f"rounds must be in 1-5 (MAC §4.3 varies 1 to 5), got {self.rounds}")

    @classmethod
    def parse(cls, name: str) -> MethodVariant:
        """The variant a display name names; a name outside the grammar is a base method of that name.

        Raises
        ------
        ConfigError on a rounds value outside 1-5.

        >>> MethodVariant.parse("mac@names (rounds 2)")
        MethodVariant(base='mac', anonymise='names', rounds=2)
        >>> MethodVariant.parse("pc")
        MethodVariant(base='pc', anonymise='none', rounds=None)
        """
        m = _NAME.match(name.strip())
        if m is None:
            return cls(name)
        return cls(m["base"], m["mode"] or "none", None if m["rounds"] is None else int(m["rounds"]))

    def with_rounds(self, rounds: int | None) -> Self:
        """This variant with ``rounds`` debate rounds (None: the config's)."""
        return replace(self, rounds=rounds)

    @property
    def plain(self) -> str:
        """The name without the anonymise mode: ``"mac@names (rounds 2)"`` -> ``"mac (rounds 2)"``."""
        return self.base if self.rounds is None else f"{self.base} (rounds {self.rounds})"

    @property
    def name(self) -> str:
        """The display name: ``base``, then ``@mode`` when anonymised, then `` (rounds r)`` for a rounds variant.

        >>> MethodVariant("mac", "names", 2).name, MethodVariant("pc").name
        ('mac@names (rounds 2)', 'pc')
        """
        mode = "" if self.anonymise == "none" else f"@{self.anonymise}"
        return f"{self.base}{mode}" + ("" if self.rounds is None else f" (rounds {self.rounds})")

    @property
    def file_stem(self) -> str:
        """The name as a file name part: a rounds variant without spaces or brackets.

        >>> MethodVariant("mac", "names", 2).file_stem, MethodVariant("mac", "names").file_stem
        ('mac@names_rounds2', 'mac@names')
        """
        return replace(self, rounds=None).name + ("" if self.rounds is None else f"_rounds{self.rounds}")


@dataclass(frozen=True, kw_only=True)
class RunVariant(MethodVariant):
    """A :class:`MethodVariant` checked against the spec of its method, which it carries (``spec``): what a run
    runs under the variant's name.

    Raises
    ------
    ConfigError on an unknown anonymise mode, a mode on a method without an LLM, rounds on a method without
    debate rounds or outside 1-5, or a ``base`` that is not ``spec``'s name.
    """

    spec: DiscoverySpec = field(repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        spec, name = self.spec, self.name
        if self.base != spec.name:
            raise ConfigError(f"variant {name!r} is not of method {spec.name!r}")
        if self.anonymise not in ANONYMISE_MODES:
            raise ConfigError(f"unknown anonymise mode in {name!r}; choose from {', '.join(ANONYMISE_MODES)}")
        if self.anonymise != "none" and not spec.needs_llm:
            raise ConfigError(f"{name!r}: anonymising only applies to LLM methods ({spec.name} calls none)")
        if self.rounds is not None and not spec.has_rounds:
            raise ConfigError(f"{name!r}: {spec.name} has no debate rounds")


@lru_cache(maxsize=256)
def _variant(table: MethodTable[DiscoverySpec], name: str) -> RunVariant:
    v = MethodVariant.parse(name.strip().lower().replace("-", "_"))
    return RunVariant(v.base, v.anonymise, v.rounds, spec=table[v.base])  # unknown: ConfigError naming the known


def variant(table: MethodTable[DiscoverySpec], method: str | MethodVariant) -> RunVariant:
    """The checked variant of a method name (``"DCM-only"``, ``"mac@names (rounds 2)"``) or of a variant, its
    method looked up in ``table`` (:data:`agentcausal.registry.DISCOVERY_METHODS`).

    Raises
    ------
    ConfigError on an unknown method (the message lists the known ones), or as :class:`RunVariant`.

    >>> from agentcausal.registry import DISCOVERY_METHODS
    >>> variant(DISCOVERY_METHODS, "DCM-only@names").name
    'dcm_only@names'
    """
    return _variant(table, method.name if isinstance(method, MethodVariant) else method)


def resolve_methods(table: MethodTable[DiscoverySpec], names: Sequence[str]) -> list[RunVariant]:
    """Check method names up front (as :func:`variant`); ``"statistical"`` expands to the methods of ``table``
    that call no LLM (the five pool algorithms).

    Raises
    ------
    ConfigError on an unknown name (the message lists the valid ones).
    """
    out: list[RunVariant] = []
    stat = [m for m in table if not table[m].needs_llm]
    for name in names:
        key = name.lower().replace("-", "_")
        for k in stat if key in ("statistical", "stat") else [key]:
            if (v := variant(table, k)) not in out:
                out.append(v)
    return out


def with_anonymise(methods: Sequence[RunVariant], modes: Sequence[str]) -> list[RunVariant]:
    """Each LLM method once per memorisation-control mode (``mac``, ``mac@names``, ``mac@all``...).

    Statistical methods are kept once; mode ``none`` keeps the plain name.

    Raises
    ------
    ConfigError on an unknown mode.
    """
    out: list[RunVariant] = []
    for m in methods:
        for mode in modes if m.spec.needs_llm else ["none"]:
            if (v := RunVariant(m.base, mode, spec=m.spec)) not in out:
                out.append(v)
    return out


def expand_rounds(methods: Sequence[RunVariant], rounds: Sequence[int]) -> list[RunVariant]:
    """Each method with debate rounds once per ``--rounds`` value (in the order given), the others once; one
    value (or none) names no variant (it sets ``mac.rounds``).

    Raises
    ------
    ConfigError on a value outside 1-5.
    """
    for r in rounds:
        if int(r) not in ROUNDS_RANGE:
            raise ConfigError(f"rounds must be in 1-5 (MAC §4.3 varies 1 to 5), got {r}")
    values = list(dict.fromkeys(int(r) for r in rounds))
    if len(values) < 2:
        return list(methods)
    out: list[RunVariant] = []
    for m in methods:
        names = [m.with_rounds(r) for r in values] if m.spec.has_rounds else [m]
        out += [n for n in names if n not in out]
    return out
