"""The method table both halves share: typed method specs listed explicitly, looked up by name.

Each half lists its methods in one :class:`MethodTable` of the specs its method modules define, imported
explicitly (:data:`agentcausal.attribution.registry.METHODS`, :data:`agentcausal.discovery.registry.METHODS`);
nothing registers itself at import. A table sits in each half, not above both, because the halves are
independent (``.importlinter``) and each half's plan, jobs and cache keys look their methods up by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, Protocol, TypeVar

from agentcausal.exceptions import ConfigError

__all__ = ["MethodTable"]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


class MethodTable(Generic[T]):
    """Method specs by name, in the order listed (``half``: the half's word in errors); iterating gives the names.

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
        return list(self.specs)

    def __contains__(self, name: object) -> bool:
        return name in self.specs

    def __iter__(self) -> Iterator[str]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def __getitem__(self, name: str) -> T:
        """The spec called ``name``; ConfigError naming the known methods when there is none."""
        if name not in self.specs:
            raise ConfigError(f"unknown {self.half} method {name!r}; choose from: {', '.join(self.specs)}")
        return self.specs[name]
