"""Labels from outside a trace: ground truth and the annotated decisive error, from a side file.

Imported traces carry no ground truth (the correct final answer) and no label.
A labels file is JSON Lines, one object per trace, with Who&When's keys::

    {"trace_id": "5b8e...c60c", "ground_truth": "71 C", "mistake_agent": "researcher",
     "mistake_step": 2, "mistake_reason": "misread the pressure"}
    {"trace_id": "a1f0...", "ground_truth": "Paris", "mistake_span_id": "eee1...b174"}

``mistake_step`` is 0-based (as in Who&When; a numeric string is accepted).
``mistake_span_id`` names the blamed span instead of, or besides, the step
(TRAIL-style); ``mistake_agent`` defaults to that step's agent. Every key but
``trace_id`` (alias ``id``) is optional.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from agentcausal.exceptions import ConfigError, TraceFormatError
from agentcausal.traces.importers._spans import norm_id
from agentcausal.traces.model import Label, Trace

__all__ = ["TraceLabel", "read_labels", "apply_labels", "traces_without_truth", "require_ground_truth"]

log = logging.getLogger(__name__)


class TraceLabel(BaseModel):
    """One line of a labels file."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    trace_id: str
    ground_truth: str | None = None
    mistake_agent: str | None = None
    mistake_step: int | None = None
    mistake_span_id: str | None = None
    mistake_reason: str = ""

    @field_validator("mistake_step", mode="before")
    @classmethod
    def _int(cls, v: object) -> object:
        return int(v.strip()) if isinstance(v, str) and v.strip().lstrip("-").isdigit() else (None if v == "" else v)


def read_labels(path: str | Path) -> dict[str, TraceLabel]:
    """Read a labels JSONL file.

    Parameters
    ----------
    path : file, one JSON object per line (blank lines ignored)

    Returns
    -------
    dict trace id -> TraceLabel

    Raises
    ------
    TraceFormatError
        If a line is not a JSON object with ``trace_id``/``id``, or a trace id repeats.
    """
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TraceFormatError(f"cannot read labels: {exc}", path=str(p)) from exc
    out: dict[str, TraceLabel] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if isinstance(data, dict) and "trace_id" not in data and "id" in data:
                data["trace_id"] = data["id"]
            lab = TraceLabel.model_validate(data)
        except (json.JSONDecodeError, ValidationError) as exc:
            raise TraceFormatError(
                f"labels line {n}: expected an object with trace_id and Who&When's keys: {str(exc)[:300]}", path=str(p)
            ) from exc
        if lab.trace_id in out:
            raise TraceFormatError(f"labels line {n}: trace id {lab.trace_id!r} labelled twice", path=str(p))
        out[lab.trace_id] = lab
    return out


def _apply(t: Trace, lab: TraceLabel) -> Trace:
    step = lab.mistake_step
    if lab.mistake_span_id:
        sid = norm_id(lab.mistake_span_id)
        hits = [s.index for s in t.steps if norm_id(s.metadata.get("span_id", "")) == sid]
        if not hits:
            raise TraceFormatError(f"trace {t.id!r}: mistake_span_id {lab.mistake_span_id} is no step's span")
        if step is not None and step != hits[0]:
            raise TraceFormatError(
                f"trace {t.id!r}: mistake_step {step} is not the step of mistake_span_id "
                f"{lab.mistake_span_id} (step {hits[0]})"
            )
        step = hits[0]
    label = t.label
    if step is not None:
        if not 0 <= step < len(t.steps):
            raise TraceFormatError(f"trace {t.id!r}: mistake_step {step} out of range 0..{len(t.steps) - 1}")
        label = Label(agent=lab.mistake_agent or t.steps[step].agent, step=step, reason=lab.mistake_reason)
    update: dict[str, object] = {"label": label}
    if lab.ground_truth is not None:
        update["ground_truth"] = lab.ground_truth
    return t.model_copy(update=update)


def apply_labels(traces: Sequence[Trace], labels: Mapping[str, TraceLabel]) -> list[Trace]:
    """Traces with ground truth and labels set from ``labels`` (traces without a line are unchanged).

    Parameters
    ----------
    traces : sequence of Trace
    labels : trace id -> TraceLabel (see :func:`read_labels`)

    Returns
    -------
    list of Trace, same order. Labels naming no trace are logged as a warning.

    Raises
    ------
    TraceFormatError
        If a step is out of range, a span id is no step's span, or step and span id disagree.
    """
    known = {t.id for t in traces}
    unknown = [k for k in labels if k not in known]
    if unknown:
        log.warning("labels for %d trace id(s) not among the traces: %s", len(unknown), ", ".join(unknown[:10]))
    return [_apply(t, labels[t.id]) if t.id in labels else t for t in traces]


def traces_without_truth(traces: Sequence[Trace]) -> list[str]:
    """Ids of the traces whose ground truth (correct final answer) is empty."""
    return [t.id for t in traces if not t.ground_truth.strip()]


def require_ground_truth(traces: Sequence[Trace]) -> None:
    """Refuse traces without ground truth, all named in one message.

    Raises
    ------
    ConfigError
        If any trace has an empty ground truth.
    """
    missing = traces_without_truth(traces)
    if missing:
        shown = ", ".join(missing[:20]) + (f" ... ({len(missing) - 20} more)" if len(missing) > 20 else "")
        raise ConfigError(
            f"{len(missing)} trace(s) have no ground truth (the correct final answer): {shown}; "
            "give it in a labels file (--labels labels.jsonl, key ground_truth) or run with "
            "--no-ground-truth"
        )
