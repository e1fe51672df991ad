"""Progress of a flow's task runs: a terminal bar, plain lines, and a Prefect progress artifact.

Wiring shared by the ``attribute`` and ``discover`` flows (:class:`RunProgress`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, cast
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact
from tqdm import tqdm

from agentcausal.report.artifacts import ProgressLine
from agentcausal.runs.heartbeat import Heartbeat, UsageMeter

__all__ = ["RunProgress"]


class RunProgress:
    """Progress of ``total`` jobs of which ``initial`` are done (reused) before any task runs.

    Shows a ``tqdm`` bar when ``bar`` is True, plain lines when stderr is not a terminal
    (:class:`~agentcausal.report.artifacts.ProgressLine`), and keeps a Prefect progress
    artifact (percent of jobs done) updated every twentieth of ``total`` and at the end. Without a terminal
    it also prints a heartbeat line every ``$AGENTCAUSAL_HEARTBEAT_S`` seconds (default 30) while the run
    goes on, finished items or not: items done, LLM calls and tokens so far
    (:class:`~agentcausal.runs.heartbeat.Heartbeat`).

    Parameters
    ----------
    total : int, jobs of the run
    initial : int, jobs already done
    desc : str, the bar's and the lines' label (``attribute``, ``discover``)
    unit : str, the bar's unit
    key : str, the progress artifact's key
    description : str, the progress artifact's description
    bar : bool, show the ``tqdm`` bar
    meter : UsageMeter or None, the run's calls and tokens of finished jobs (for the heartbeat)
    live : callable returning (calls, tokens) of the items in flight, or None (for the heartbeat)
    """

    def __init__(
        self,
        total: int,
        initial: int,
        *,
        desc: str,
        unit: str,
        key: str,
        description: str,
        bar: bool,
        meter: UsageMeter | None = None,
        live: Callable[[], tuple[int, int]] | None = None,
    ) -> None:
        self.total, self.done = total, initial
        # sync_compatible: called from sync code it returns the artifact's UUID, not a coroutine
        self.artifact = cast(UUID, create_progress_artifact(progress=0.0, key=key, description=description))
        self.bar: Any = None
        if bar:
            self.bar = tqdm(total=total, unit=unit, desc=desc, initial=initial)
        self.line = ProgressLine(total, desc)  # plain lines when stderr is not a terminal
        self.step = max(1, total // 20)
        self.heartbeat: Heartbeat | None = None
        if not bar and not sys.stderr.isatty():
            self.heartbeat = Heartbeat(desc, total, lambda: self.done, meter=meter, live=live).start()

    def advance(self, n: int = 1) -> None:
        """Record ``n`` more jobs done."""
        before, self.done = self.done, self.done + n
        if self.bar is not None:
            self.bar.update(n)
        self.line.update(self.done)
        if self.done // self.step != before // self.step or self.done == self.total:
            update_progress_artifact(self.artifact, progress=100.0 * self.done / max(1, self.total))

    def close(self) -> None:
        """Close the bar; stop the heartbeat."""
        if self.heartbeat is not None:
            self.heartbeat.stop()
        if self.bar is not None:
            self.bar.close()
