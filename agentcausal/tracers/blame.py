"""The blamed spans of an attribution run: what the trace-store writers send back.

One :class:`BlamedSpan` per results row whose method blamed a step that has a
span id (traces imported from span formats keep each step's span id; the
results frame carries the blamed step's ``span_id``). Rows without one (the
method found no decisive step, failed, or the trace came from a file without
span ids) are listed in :attr:`RunBlame.unplaced` with the reason.

Everything is read through the run folder's public loaders
(:func:`agentcausal.attribution.results.load_results`, :func:`~agentcausal.runs.folder.load_run_meta`);
nothing is recomputed. ``confidence``, ``evidence``, ``candidates`` and the fix
(``corrected_action``: the corrected content of the blamed step and the outcome
simulated with it) are read when the results carry those columns, and are None
otherwise: a score is never invented. A DCFA row whose corrector left the
blamed step as it was has no fix and says so (``fix_note``: "no correction
proposed").
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from agentcausal.attribution.results import load_results
from agentcausal.repeats import repeat_of
from agentcausal.runs.folder import load_run_meta

__all__ = ["BlamedSpan", "RunBlame", "blamed_spans", "LABEL", "NO_CORRECTION", "evaluation_name"]

#: the label every written annotation carries: the span holds the decisive error the method found
LABEL = "decisive error"

#: ``fix_note`` of a DCFA row whose corrector left the blamed step as it was (up to whitespace)
NO_CORRECTION = "no correction proposed"

#: characters of the fix's content and outcome in an explanation (the metadata hold them whole)
FIX_CHARS = 500


def evaluation_name(method: str) -> str:
    """The annotation / evaluation name of one method's results: ``decisive_error.<method>``.

    >>> evaluation_name("dcfa")
    'decisive_error.dcfa'
    """
    return f"decisive_error.{method}"


class BlamedSpan(NamedTuple):
    """One method's blamed step of one trace, as a span to annotate.

    Attributes
    ----------
    trace_id : str, the trace's id (the OpenTelemetry trace id for span imports)
    span_id : str, the blamed step's span id
    method : str
    step : int, the 0-based blamed step
    agent : str or None
    reason : str, the method's one-paragraph reason
    evidence : str or None, a verbatim quote from the blamed step, when the results hold one
    confidence : float or None, in [0, 1] where the method defines one; None otherwise (never invented)
    candidates : list or None, the ranked candidates, when the results hold them
    status : str, ``complete`` or ``degraded``
    models : dict, stage -> model name
    repeat : int, the repeat index (0 for a run without ``--repeats``)
    fix : dict or None, the corrected action (``step``, ``content``, ``outcome``, ``outcome_score``,
        ``source``): DCFA's corrected content of the blamed step and the outcome simulated with it, A2P's
        action and prediction
    fix_note : str or None, why there is no fix where the method makes one (:data:`NO_CORRECTION`)
    evidence_note : str or None, why there is no evidence where it was asked for
    confidence_is : str or None, how the confidence was computed (DCFA: which simulated trace)
    """

    trace_id: str
    span_id: str
    method: str
    step: int
    agent: str | None
    reason: str
    evidence: str | None
    confidence: float | None
    candidates: list[Any] | None
    status: str
    models: dict[str, str]
    repeat: int
    fix: dict[str, Any] | None = None
    fix_note: str | None = None
    evidence_note: str | None = None
    confidence_is: str | None = None

    @property
    def explanation(self) -> str:
        """The reason, then the quoted evidence and the fix (or why there is none), each where there is one."""
        parts = [self.reason.strip()] if self.reason.strip() else []
        if self.evidence:
            parts.append(f"Evidence: \u201c{self.evidence}\u201d")
        if self.fix:
            line = f"Fix: step {self.fix.get('step')} \u2192 \u201c{_cut(self.fix.get('content'))}\u201d"
            if self.fix.get("outcome"):
                line += f"; simulated outcome with it: \u201c{_cut(self.fix['outcome'])}\u201d"
            parts.append(line)
        elif self.fix_note:
            parts.append(f"Fix: {self.fix_note}.")
        return "\n\n".join(parts)

    def metadata(self) -> dict[str, Any]:
        """What a write-back carries beside the label, score and explanation: the evidence, the fix and the
        ranked candidates (each only when there is one), and how the score was computed."""
        out: dict[str, Any] = {}
        for k in ("evidence", "evidence_note", "fix", "fix_note", "candidates", "confidence_is"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out

    @property
    def model(self) -> str:
        """The model(s) that decided, comma-separated (from ``models``)."""
        return ", ".join(sorted(set(self.models.values())))


class RunBlame(NamedTuple):
    """What :func:`blamed_spans` read from a run folder.

    Attributes
    ----------
    run : str, the run's name (``run.json`` ``name``, else the folder name): written with every annotation
    run_dir : str, the folder
    preset : str or None, the run's method-settings preset
    started : str or None, ISO time the run started
    finished_ns : int or None, when the run finished (start + wall seconds), ns since the epoch
    blamed : list of BlamedSpan
    unplaced : list of dict ``{"trace_id", "method", "repeat", "why"}``: rows with nothing to annotate
    """

    run: str
    run_dir: str
    preset: str | None
    started: str | None
    finished_ns: int | None
    blamed: list[BlamedSpan]
    unplaced: list[dict[str, Any]]


def _opt(row: Any, col: str) -> Any:
    v = getattr(row, col, None)
    if v is None:
        return None
    try:
        if isinstance(v, float) and math.isnan(v):
            return None
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return None
    except TypeError:
        pass
    return v


def _cut(text: Any, n: int = FIX_CHARS) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: n - 1] + "\u2026"


def _fix_note(method: str, details: Any, step: int, fix: Any) -> str | None:
    """:data:`NO_CORRECTION` for a DCFA row whose corrector ran and left the blamed step as it was."""
    if fix or not method.startswith("dcfa") or not isinstance(details, dict):
        return None
    lce = details.get("lce")
    corrected = lce.get("corrected_steps") if isinstance(lce, dict) else None
    return NO_CORRECTION if isinstance(corrected, list) and step not in corrected else None


def _json_col(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def _finished_ns(meta: dict[str, Any]) -> int | None:
    import datetime as dt

    try:
        start = dt.datetime.fromisoformat(str(meta["started"]))
    except (KeyError, ValueError):
        return None
    if start.tzinfo is None:
        start = start.astimezone()  # run.json writes local time without an offset
    return int((start.timestamp() + float(meta.get("wall_seconds") or 0.0)) * 1e9)


def blamed_spans(run_dir: str | Path, *, methods: Sequence[str] | None = None) -> RunBlame:
    """The blamed spans of an attribution run folder.

    Parameters
    ----------
    run_dir : run folder written by ``agentcausal attribute`` (``results.parquet``, ``run.json``)
    methods : only these methods (default all)

    Returns
    -------
    RunBlame

    Raises
    ------
    RunFileError
        If ``results.parquet`` or ``run.json`` is missing, torn or lacks the result columns.
    """
    d = Path(run_dir)
    df = load_results(d)
    meta = load_run_meta(d)
    if methods:
        df = df[df["method"].isin(list(methods))]
    blamed: list[BlamedSpan] = []
    unplaced: list[dict[str, Any]] = []
    for row in df.itertuples(index=False):
        details = _json_col(_opt(row, "details_json")) or {}
        repeat = repeat_of(details if isinstance(details, dict) else {})
        step, span = _opt(row, "pred_step"), _opt(row, "span_id")
        why = None
        if _opt(row, "error") is not None or row.status in ("failed", "content_failed"):
            why = f"the method failed ({row.status})"
        elif step is None:
            why = "the method found no decisive step"
        elif not span:
            why = "the blamed step has no span id (the trace was not imported from spans)"
        if why:
            unplaced.append({"trace_id": row.trace_id, "method": row.method, "repeat": repeat, "why": why})
            continue
        conf = _opt(row, "confidence")
        cands = _json_col(_opt(row, "candidates"))
        fix = _json_col(_opt(row, "corrected_action"))
        fix = fix if isinstance(fix, dict) and fix.get("changed", True) else None
        how = details.get("confidence_is") if isinstance(details, dict) and conf is not None else None
        blamed.append(
            BlamedSpan(
                trace_id=str(row.trace_id),
                span_id=str(span),
                method=str(row.method),
                step=int(step),
                agent=_opt(row, "pred_agent"),
                reason=str(_opt(row, "reason") or ""),
                evidence=_opt(row, "evidence") or None,
                confidence=None if conf is None else float(conf),
                candidates=cands if isinstance(cands, list) else None,
                status=str(row.status),
                models=_json_col(_opt(row, "models_json")) or {},
                repeat=repeat,
                fix=fix,
                fix_note=_fix_note(str(row.method), details, int(step), fix),
                evidence_note=_opt(row, "evidence_note") or None,
                confidence_is=str(how) if how else None,
            )
        )
    preset = meta.get("preset")
    return RunBlame(
        run=str(meta.get("name") or d.resolve().name),
        run_dir=str(d),
        preset=None if preset is None else str(preset),
        started=None if meta.get("started") is None else str(meta["started"]),
        finished_ns=_finished_ns(meta),
        blamed=blamed,
        unplaced=unplaced,
    )
