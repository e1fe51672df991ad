"""TEST DOUBLE: invented traces of a fixed shape, by seed, for the tests and the benchmarks."""

from __future__ import annotations

import random
from collections.abc import Iterator

from agentcausal.traces.model import Label, Step, Trace

__all__ = ["iter_synthetic_traces", "synthetic_traces"]


def iter_synthetic_traces(n: int, seed: int = 0) -> Iterator[Trace]:
    """``n`` invented traces of 5 to 20 steps with step contents of 200 to 1500 characters, one at a time
    (a corpus of 50,000 is written without holding it)."""
    rng = random.Random(seed)
    agents = ["Orchestrator", "WebSurfer", "Coder", "ComputerTerminal", "Assistant"]
    for k in range(n):
        steps = [
            Step(
                index=i,
                agent=rng.choice(agents),
                content=" ".join(f"w{rng.randrange(1000)}" for _ in range(rng.randrange(40, 300))),
            )
            for i in range(rng.randrange(5, 21))
        ]
        culprit = rng.randrange(len(steps))
        yield Trace(
            id=f"synthetic/{k}",
            source="synthetic",
            question=f"Synthetic question {k}?",
            ground_truth=f"answer {k}",
            steps=steps,
            label=Label(agent=steps[culprit].agent, step=culprit),
        )


def synthetic_traces(n: int, seed: int = 0) -> list[Trace]:
    """The traces of :func:`iter_synthetic_traces` as a list."""
    return list(iter_synthetic_traces(n, seed))
