"""A run's blamed spans as OTLP JSON log records of OpenTelemetry GenAI evaluation events.

Each blamed span (:mod:`agentcausal.tracers.blame`) becomes one log record with
event name ``gen_ai.evaluation.result``, parented to the evaluated span
(``traceId``/``spanId``, as the conventions ask), with the attributes

* ``gen_ai.evaluation.name`` (required): ``decisive_error.<method>``;
* ``gen_ai.evaluation.score.label``: ``decisive error``;
* ``gen_ai.evaluation.score.value``: the method's confidence, only where it has one
  (conditionally required: "if applicable"; never invented);
* ``gen_ai.evaluation.explanation``: the reason, the quoted evidence and the fix;
* ``agentcausal.*``: method, run, preset, model, step, agent, status (and repeat when > 0);
  where the run has them ``agentcausal.evidence``, ``agentcausal.fix.step``,
  ``agentcausal.fix.content``, ``agentcausal.fix.outcome``, ``agentcausal.fix.outcome_score``
  (DCFA's corrected content of the blamed step and the outcome simulated with it),
  ``agentcausal.fix_note`` ("no correction proposed"), ``agentcausal.candidates`` (the ranked
  candidates as JSON text) and ``agentcausal.confidence_is`` (how the score was computed): the
  same fields a Phoenix annotation carries.

The file holds one ``LogsData`` document (OTLP JSON encoding: hex ids, int64 as
strings, enums as integers), which the OpenTelemetry Collector's ``otlpjsonfile``
receiver and any OTLP/HTTP JSON endpoint (``POST /v1/logs``) accept. A row
whose trace or span id is not an OpenTelemetry id (32 / 16 hex digits; e.g. the
OpenAI Agents SDK's own ``trace_…`` ids) is left out and listed.

References
----------
OpenTelemetry semantic conventions for generative AI, event ``gen_ai.evaluation.result``
(Development), github.com/open-telemetry/semantic-conventions-genai (``model/gen-ai/events.yaml``);
OTLP/JSON encoding, https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any, NamedTuple

from agentcausal import __version__
from agentcausal.runs.folder import atomic_write_text
from agentcausal.tracers.blame import LABEL, blamed_spans, evaluation_name

__all__ = ["EVENT_NAME", "evaluation_logs", "write_evaluation_logs", "ExportResult"]

#: the GenAI evaluation event
EVENT_NAME = "gen_ai.evaluation.result"

#: OpenTelemetry log severity INFO
_SEVERITY_INFO = 9

_HEX32 = re.compile(r"[0-9a-f]{32}")
_HEX16 = re.compile(r"[0-9a-f]{16}")


def _value(v: Any) -> dict[str, Any]:
    """A Python value as an OTLP JSON ``AnyValue``."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    return {"stringValue": json.dumps(v, ensure_ascii=False, default=str, sort_keys=True)}


def _kv(items: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in items.items() if v is not None]


def _extra(b: Any) -> dict[str, Any]:
    """The evidence, fix, candidates and score's provenance of a blamed span as ``agentcausal.*`` attributes."""
    fix = b.fix or {}
    return {
        "agentcausal.evidence": b.evidence,
        "agentcausal.evidence_note": b.evidence_note,
        "agentcausal.fix.step": fix.get("step"),
        "agentcausal.fix.content": fix.get("content"),
        "agentcausal.fix.outcome": fix.get("outcome"),
        "agentcausal.fix.outcome_score": fix.get("outcome_score"),
        "agentcausal.fix_note": b.fix_note,
        "agentcausal.candidates": b.candidates,
        "agentcausal.confidence_is": b.confidence_is,
    }


def evaluation_logs(blame: Any, *, now_ns: int | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``LogsData`` document of a run's blamed spans, and the rows left out.

    Parameters
    ----------
    blame : RunBlame (:func:`agentcausal.tracers.blame.blamed_spans`)
    now_ns : int, optional; the observed time (default: now)

    Returns
    -------
    (document, left_out): the OTLP JSON ``LogsData`` as a dict (one resource ``service.name=agentcausal``,
    one scope ``agentcausal``, one record per blamed span), and ``{"trace_id", "method", "repeat",
    "why"}`` for every row not written (the run's unplaced rows, and ids that are not OpenTelemetry ids).
    """
    observed = now_ns if now_ns is not None else time.time_ns()
    at = blame.finished_ns or observed
    records, left = [], list(blame.unplaced)
    for b in blame.blamed:
        tid, sid = b.trace_id.lower(), b.span_id.lower()
        if not (_HEX32.fullmatch(tid) and _HEX16.fullmatch(sid)):
            left.append(
                {
                    "trace_id": b.trace_id,
                    "method": b.method,
                    "repeat": b.repeat,
                    "why": "trace or span id is not an OpenTelemetry id (32 / 16 hex digits)",
                }
            )
            continue
        attrs = {
            "gen_ai.evaluation.name": evaluation_name(b.method),
            "gen_ai.evaluation.score.label": LABEL,
            "gen_ai.evaluation.score.value": b.confidence,
            "gen_ai.evaluation.explanation": b.explanation,
            "agentcausal.method": b.method,
            "agentcausal.run": blame.run,
            "agentcausal.preset": blame.preset,
            "agentcausal.model": b.model or None,
            "agentcausal.step": b.step,
            "agentcausal.agent": b.agent,
            "agentcausal.status": b.status,
            "agentcausal.repeat": b.repeat or None,
            **_extra(b),
        }
        records.append(
            {
                "timeUnixNano": str(at),
                "observedTimeUnixNano": str(observed),
                "severityNumber": _SEVERITY_INFO,
                "severityText": "INFO",
                "eventName": EVENT_NAME,
                "attributes": _kv(attrs),
                "traceId": tid,
                "spanId": sid,
            }
        )
    doc = {
        "resourceLogs": [
            {
                "resource": {"attributes": _kv({"service.name": "agentcausal"})},
                "scopeLogs": [{"scope": {"name": "agentcausal", "version": __version__}, "logRecords": records}],
            }
        ]
    }
    return doc, left


class ExportResult(NamedTuple):
    """What :func:`write_evaluation_logs` wrote: the file, the number of records, the rows left out."""

    path: Path
    written: int
    left_out: list[dict[str, Any]]


def write_evaluation_logs(run_dir: str | Path, path: str | Path, *, methods: Any = None) -> ExportResult:
    """Write a run folder's blamed spans as an OTLP JSON logs file (see the module docstring), atomically.

    Parameters
    ----------
    run_dir : attribution run folder
    path : the file to write (one ``LogsData`` JSON document on one line)
    methods : only these methods' results (default all)

    Returns
    -------
    ExportResult

    Raises
    ------
    RunFileError
        If the run folder's results cannot be read.
    """
    doc, left = evaluation_logs(blamed_spans(run_dir, methods=methods))
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(p, json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    n = sum(len(sl["logRecords"]) for rl in doc["resourceLogs"] for sl in rl["scopeLogs"])
    return ExportResult(p, n, left)
