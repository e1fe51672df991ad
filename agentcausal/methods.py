"""The method table both halves share: typed method specs listed explicitly, looked up by name.

Each half lists its methods in one :class:`MethodTable`, built from the specs its method modules define
and import explicitly (:data:`agentcausal.attribution.registry.METHODS`,
:data:`agentcausal.discovery.registry.METHODS`); nothing registers itself at import. The table sits in
each half, not above both, because the halves are independent (``.importlinter``) and each half's
plan, jobs and cache keys look their methods up by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, Protocol, TypeVar

from agentcausal.exceptions import ConfigError

__all__ = ["NamedSpec", "MethodTable"]


class NamedSpec(Protocol):
    """What a table holds: a spec with a ``name``."""

    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=NamedSpec)


class MethodTable(Generic[T]):
    """Method specs by name, in the order listed; iterating gives the names.

    Parameters
    ----------
    half : str, the half's word in errors (``attribution``, ``discovery``)
    specs : the specs, each name once

    Raises
    ------
    ValueError on a name listed twice (a table that would drop a method).
    """

    def __init__(self, half: str, specs: Iterable[T]) -> None:
        self.half = half
        self.specs: dict[str, T] = {}
        for s in specs:
            if s.name in self.specs:
                raise ValueError(f"{half} method {s.name!r} listed twice")
            self.specs[s.name] = s

    def names(self) -> list[str]:
        """The method names, in the order listed."""
        return list(self.specs)

    def __contains__(self, name: object) -> bool:
        return name in self.specs

    def __iter__(self) -> Iterator[str]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def __getitem__(self, name: str) -> T:
        """The spec called ``name``.

        Raises
        ------
        ConfigError on an unknown name; the message lists the known ones.
        """
        if name not in self.specs:
            raise ConfigError(f"unknown {self.half} method {name!r}; choose from: {', '.join(self.specs)}")
        return self.specs[name]
