"""A discovery method as run: a registered method and its variant (:class:`MethodVariant`), as typed data.

A variant is a registered method (``base``, :data:`agentcausal.discovery.registry.METHODS`) with neutral
variable ids (``anonymise``: ``names`` or ``all``, the memorisation control of
:mod:`agentcausal.discovery.data.anonymise`) and/or its own number of MAC debate rounds (``rounds``: the
rounds sweep of MAC paper §4.3, Fig. 4; ``discover --rounds 1 2 3`` runs each method with rounds once per
value). Its display name (:attr:`MethodVariant.name`: ``"mac"``, ``"mac@names"``, ``"mac (rounds 2)"``,
``"mac@names (rounds 2)"``) is the run's name for it in the plan, the results' ``method`` column, the
cache key and every table; :meth:`MethodVariant.parse` reads such a name back (the CLI's ``--method``
value, a results file's column). :func:`agentcausal.discovery.registry.variant` parses and checks a name
against the registered methods.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.3, Fig. 4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from agentcausal.exceptions import ConfigError

__all__ = ["ROUNDS_RANGE", "MethodVariant"]

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

    def with_rounds(self, rounds: int | None) -> MethodVariant:
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
