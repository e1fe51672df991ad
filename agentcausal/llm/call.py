"""The call context of one method run: the gateway, the usage item, the sample index and the temperature.

Every attribution and discovery method takes an :class:`LLMCall` built by its half's job from the job
(``attribution.jobs.run_method``: the trace's usage item and the repeat index; ``discovery.jobs.run_discovery``:
the dataset's usage item, the sample index of (seed, repeat) and the method's temperature), and sends every
request through it, so no method threads ``item``, ``sample`` or ``temperature`` by hand. Its requests are
exactly the gateway's with those keyword arguments: sample 0 and temperature None are the gateway's defaults,
so a call context of a plain run sends, and caches under, what a bare ``Gateway.chat``/``structured`` would.

:class:`Routing` is what budget helpers read (a profile per stage): a Gateway, a ProfileSet (dry runs) and an
LLMCall each have it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel

from agentcausal.llm.profiles import Profile

if TYPE_CHECKING:
    import numpy as np

    from agentcausal.llm.gateway import Gateway

__all__ = ["LLMCall", "Routing"]

#: a reply model
M = TypeVar("M", bound=BaseModel)


class Routing(Protocol):
    """Anything that names the profile serving a stage (Gateway, ProfileSet, LLMCall)."""

    def profile_for(self, stage: str) -> Profile: ...


@dataclass(frozen=True)
class LLMCall:
    """The gateway and the request context of one method run.

    Attributes
    ----------
    gateway : Gateway, the routed (and, for discovery, namespaced) gateway
    item : str or None, the usage-ledger item every request is booked under (``"<trace>::<method>"``,
        ``"<dataset>:<seed>:<method>"``)
    sample : int >= 0, the LLM sample index (``Gateway.chat``'s ``sample``: 0 is the ordinary call; above 0
        cached apart and sent as ``seed`` where the profile takes one)
    temperature : float or None, the sampling temperature (None = the profile's)

    Raises
    ------
    ValueError
        If ``sample`` is negative.
    """

    gateway: Gateway
    item: str | None = None
    sample: int = 0
    temperature: float | None = None

    def __post_init__(self) -> None:
        if self.sample < 0:
            raise ValueError(f"sample must be >= 0, got {self.sample}")

    def chat(self, stage: str, messages: Sequence[dict[str, str]], *, max_tokens: int | None = None) -> str:
        """``Gateway.chat`` with this context's item, sample and temperature; raises what it raises."""
        return self.gateway.chat(
            stage, messages, item=self.item, max_tokens=max_tokens, sample=self.sample, temperature=self.temperature
        )

    def structured(
        self,
        stage: str,
        messages: Sequence[dict[str, str]],
        reply_model: type[M],
        *,
        max_tokens: int | None = None,
        schema: dict[str, Any] | None = None,
        context: Any = None,
    ) -> M:
        """``Gateway.structured`` (an instance of ``reply_model``) with this context's item, sample and
        temperature; ``schema`` and ``context`` as there. Raises what it raises (StructuredOutputError, ...)."""
        return self.gateway.structured(
            stage,
            messages,
            reply_model,
            item=self.item,
            max_tokens=max_tokens,
            sample=self.sample,
            temperature=self.temperature,
            schema=schema,
            context=context,
        )

    def embed(self, stage: str, texts: Sequence[str]) -> np.ndarray:
        """``Gateway.embed`` booked under this context's item: ndarray of shape (len(texts), dim), float32."""
        return self.gateway.embed(stage, texts, item=self.item)

    def profile_for(self, stage: str) -> Profile:
        """The profile serving ``stage`` (``Gateway.profile_for``; UnknownStageError)."""
        return self.gateway.profile_for(stage)

    def max_output_tokens(self, stage: str) -> int | None:
        """The completion-token ceiling of ``stage``'s profile (``Gateway.max_output_tokens``; None = none)."""
        return self.gateway.max_output_tokens(stage)
