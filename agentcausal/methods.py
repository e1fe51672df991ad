"""What a method of either half is (:class:`MethodSpec`), and a half's methods by name (:class:`MethodTable`).

Each half subclasses :class:`MethodSpec` for its own run signature
(:class:`~agentcausal.attribution.spec.AttributionSpec`, :class:`~agentcausal.discovery.spec.DiscoverySpec`).
Every method of both halves is listed once, explicitly, in :mod:`agentcausal.registry`, the one table above
both halves; nothing registers itself at import. The halves never import that registry (``.importlinter``):
their callers (the command line, the flows and tasks, the reports) hand them the specs or their half's table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from agentcausal.exceptions import ConfigError

__all__ = ["MethodSpec", "MethodTable"]


@dataclass(frozen=True, kw_only=True, eq=False)
class MethodSpec:
    """One method of either half: what runs, with which settings and prompts, calling which stages, needing what.

    Attributes
    ----------
    name : str, the CLI and results name (``all_at_once``, ``mac`` ...)
    run : the method's callable (its signature is its half's: each half's subclass narrows it)
    settings_model : frozen pydantic model class of its settings (every field has a default); None for a method
        with no settings model of its own (a statistical discovery method: its wall limit only)
    prompt_version : str, every prompt set's version joined with ``+`` (a record stores the one it used);
        empty for a method without prompts
    stages : tuple of the LLM stages it may call (for routing checks, cache keys and reports); empty = no LLM
    presets : mapping preset name -> settings field values (:mod:`agentcausal.settings`); empty = every preset
        is the model defaults
    needs_labels : True when it cannot run without the input's label (attribution: the trace's ground truth)
    needs_data : True when it reads a dataset's rows (discovery), not only its metadata

    A spec compares by identity: one object per method, listed once.
    """

    name: str
    run: Callable[..., Any]
    settings_model: type[BaseModel] | None
    prompt_version: str
    stages: tuple[str, ...]
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    needs_labels: bool = False
    needs_data: bool = False

    @property
    def needs_llm(self) -> bool:
        """True when it calls an LLM (it has a stage)."""
        return bool(self.stages)


T = TypeVar("T", bound=MethodSpec)


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
