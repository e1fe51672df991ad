"""The record of one discovery method on one dataset and seed (:class:`DiscoveryOutcome`), and why it is degraded.

A MAC run that fell back after a failed stage (coding executor to typed, an invalid Negative or Judge
reply) is ``status="degraded"`` (:func:`degradation` says why). The outcome's ``true_graph`` is the
truth when it was scored; the cache key holds no truth, and a run folder is scored against the
current truth. A run folder holds every outcome of a run in ``outcomes.jsonl``
(:class:`OutcomesWriter` line by line, :func:`save_outcomes`; :func:`iter_outcomes`, :func:`load_outcomes`).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ConfigDict

from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.exceptions import RunFileError
from agentcausal.records import RunRecord
from agentcausal.runs.folder import atomic_path, model_lines, write_run_meta

__all__ = ["DiscoveryOutcome", "degradation", "save_outcomes", "load_outcomes", "iter_outcomes", "OutcomesWriter"]


class DiscoveryOutcome(RunRecord):
    """One method on one dataset and seed: the graph (or the error) and what it cost (a
    :class:`~agentcausal.records.RunRecord`).

    Attributes
    ----------
    dataset, seed, n : what it ran on (``n`` rows)
    graph : CausalGraph or None (None on error)
    true_graph : CausalGraph or None, the truth it was scored against (a run folder's: the current one)
    data_hash : str, ``joblib.hash`` of the data and columns

    The fields every record holds (``method``, ``prompt_version``, ``models``, ``usage``, ``seconds``,
    ``error``, ``details``, ``status``, ``status_detail``, ``failure``, ``reused``) are :class:`RunRecord`'s;
    ``details`` holds the algorithm parameters, or the MAC debates and fusion sentences.
    """

    model_config = ConfigDict(frozen=True)
    dataset: str
    seed: int
    n: int
    graph: CausalGraph | None = None
    true_graph: CausalGraph | None = None
    data_hash: str = ""


def degradation(details: dict[str, Any]) -> str | None:
    """Why a MAC record is degraded (a fallback after a failed stage), or None.

    Reads ``details["degraded"]`` when a method sets it, the executor's
    ``fallback_reason`` (coding executor fell back to the typed one) and the
    debate notes (an invalid Negative or Judge reply made the Affirmative win).

    Parameters
    ----------
    details : the outcome's ``details`` (``MACResult`` as JSON, or a baseline's record)

    Returns
    -------
    str or None, ``"; "``-joined reasons.

    >>> degradation({"dcm": {"execution": {"fallback_reason": "sandbox unavailable"}, "debate": {"notes": []}}})
    'DCM executor: sandbox unavailable'
    >>> degradation({"choice": {}}) is None
    True
    """
    reasons: list[str] = []
    if not isinstance(details, dict):
        return None
    if details.get("degraded"):
        reasons.append(str(details["degraded"]))
    dcm = details["dcm"] if isinstance(details.get("dcm"), dict) else {}
    fb = dcm["execution"].get("fallback_reason") if isinstance(dcm.get("execution"), dict) else None
    if fb:
        reasons.append(f"DCM executor: {fb}")
    for stage in ("dcm", "mdm"):
        part = details[stage] if isinstance(details.get(stage), dict) else {}
        for note in part["debate"].get("notes", []) if isinstance(part.get("debate"), dict) else []:
            reasons.append(f"{stage.upper()}: {note}")
    return "; ".join(reasons)[:1000] if reasons else None


def save_outcomes(
    outcomes: Sequence[DiscoveryOutcome], run_dir: str | Path, meta: Mapping[str, Any] | None = None
) -> Path:
    """Write ``outcomes.jsonl`` (full records) and, with ``meta``, ``run.json`` to the run folder.

    Returns
    -------
    Path of the run folder.
    """
    run = Path(run_dir)
    writer = OutcomesWriter(run)
    for o in outcomes:
        writer.add(o)
    writer.close()
    if meta is not None:
        write_run_meta(run, meta)
    return run


def load_outcomes(run_dir: str | Path) -> list[DiscoveryOutcome]:
    """Read ``outcomes.jsonl`` back (:func:`iter_outcomes` as a list).

    Raises
    ------
    RunFileError
        If the file is missing or a line is not a valid outcome (torn by a kill); names the file and line.
    """
    return list(iter_outcomes(run_dir))


def iter_outcomes(run_dir: str | Path) -> Iterator[DiscoveryOutcome]:
    """The outcomes of ``outcomes.jsonl``, one line at a time.

    Raises
    ------
    RunFileError
        If the file is missing (at the call, before any outcome is read) or a line is not a valid outcome
        (torn by a kill, as that line is reached); names the file and line.
    """
    path = Path(run_dir) / "outcomes.jsonl"
    if not path.is_file():
        raise RunFileError("no outcomes.jsonl here; is this a run folder from `agentcausal discover`?", path=str(path))
    return _outcome_lines(path)


def _outcome_lines(path: Path) -> Iterator[DiscoveryOutcome]:
    with path.open(encoding="utf-8", errors="replace") as fh:
        yield from model_lines(fh, DiscoveryOutcome, "a valid outcome", path)


class OutcomesWriter:
    """``outcomes.jsonl`` written one outcome at a time (full records, one JSON line each); the file appears
    (atomically) when :meth:`close` is called.

    Parameters
    ----------
    run_dir : the run folder (created)
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / "outcomes.jsonl"
        self._atomic = atomic_path(self.path)
        self._fh = self._atomic.__enter__().open("w", encoding="utf-8")

    def add(self, outcome: DiscoveryOutcome) -> None:
        """Write one outcome's line."""
        self._fh.write(outcome.model_dump_json() + "\n")

    def close(self) -> Path:
        """Move the file into place; its path."""
        self._fh.close()
        self._atomic.__exit__(None, None, None)
        return self.path

    def abort(self) -> None:
        """Stop without a file (the temporary one removed; an earlier ``outcomes.jsonl`` stays)."""
        self._fh.close()
        stop = RuntimeError("writing stopped")
        self._atomic.__exit__(RuntimeError, stop, None)
