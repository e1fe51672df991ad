"""AgentRx: failed agent trajectories with step-level failure labels and a root-cause failure.

The dataset (Hugging Face ``microsoft/AgentRx``, CC-BY-4.0) has two kinds of
JSON Lines files, joined here by ``trajectory_id``:

* labels (``tau_retail.jsonl``, ``magentic_one.jsonl``), one row per failed trajectory::

      {"trajectory_id": "...", "failure_summary": "...",
       "failures": [{"failure_id": "F1", "step_number": 7, "step_reason": "...",
                     "failure_category": "Misinterpretation of tool output", ...}, ...],
       "root_cause_failure_id": "F1"}

* trajectories (``tau_retail_dataset.jsonl``, ``magentic_dataset.jsonl``): the
  messages of each trajectory under ``traj`` (τ-bench), ``trajectory``,
  ``messages``, ``history`` or ``steps``; each message has ``role``/``content``
  and optionally ``name``/``source`` and a 1-based ``index``.

The root cause is the failure named by ``root_cause_failure_id`` (or
``root_cause``), else the one flagged ``is_root_cause``, else the earliest
failure. ``step_number`` counts messages from 1 (the τ-bench ``index``; when
messages carry ``index``, the step is the message with that index); it
becomes our 0-based ``Label.step``. The agent of a message is ``name`` or
``source``, else its ``role`` (as in Who&When). Every failure is kept in
``metadata["failures"]``; the ground truth is τ-bench's expected ``outputs``
when the trajectory carries them.

Trace ids are ``agentrx/<trajectory_id>``.

References
----------
Barke, S. et al. "AgentRx: Diagnosing AI Agent Failures from Execution Trajectories." arXiv preprint, 2026
(dataset card: https://huggingface.co/datasets/microsoft/AgentRx).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcausal.exceptions import DatasetError, TraceFormatError
from agentcausal.traces.importers._fetch import fetch_files
from agentcausal.traces.importers._spans import message_text
from agentcausal.traces.model import Label, Step, Trace

__all__ = ["AGENTRX_REPO", "AGENTRX_FILES", "load_agentrx", "fetch_agentrx"]

AGENTRX_REPO = "microsoft/AgentRx"
AGENTRX_FILES = ("tau_retail.jsonl", "magentic_one.jsonl", "tau_retail_dataset.jsonl", "magentic_dataset.jsonl")
_MSG_KEYS = ("traj", "trajectory", "messages", "history", "steps")


def _rows(p: Path) -> list[dict[str, Any]]:
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"cannot read: {exc}", path=str(p)) from exc
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(f"line {n}: not JSON: {exc}", path=str(p)) from exc
        if not isinstance(row, dict):
            raise TraceFormatError(f"line {n}: not an object", path=str(p))
        out.append(row)
    return out


def _tid(row: dict[str, Any]) -> str | None:
    for k in ("trajectory_id", "task_id", "id"):
        if row.get(k) is not None:
            return str(row[k])
    return None


def _messages(row: dict[str, Any]) -> list[Any] | None:
    for k in _MSG_KEYS:
        v = row.get(k)
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except json.JSONDecodeError:
                continue
        if isinstance(v, list) and v:
            return v
    return None


def _root(labels: dict[str, Any]) -> dict[str, Any] | None:
    fails = [f for f in labels.get("failures") or [] if isinstance(f, dict) and f.get("step_number") is not None]
    if not fails:
        return None
    rc = labels.get("root_cause_failure_id", labels.get("root_cause"))
    if isinstance(rc, dict) and rc.get("step_number") is not None:
        return rc
    hit = next((f for f in fails if rc is not None and str(f.get("failure_id")) == str(rc)), None)
    hit = hit or next((f for f in fails if f.get("is_root_cause") in (True, 1, "true", "yes")), None)
    return hit or min(fails, key=lambda f: int(f["step_number"]))


def _trace(tid: str, traj: dict[str, Any], labels: dict[str, Any] | None, source: str) -> Trace:
    msgs = _messages(traj) or []
    steps, index_of = [], {}
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            m = {"role": "unknown", "content": m}
        agent = m.get("name") or m.get("source") or str(m.get("role", "unknown")).split(" ", 1)[0] or "unknown"
        content = message_text(m.get("content"))
        if m.get("tool_calls"):
            content = "\n".join(t for t in (content, message_text(m["tool_calls"])) if t)
        steps.append(
            Step(
                index=i,
                agent=str(agent),
                role=str(m.get("role", "")),
                content=content,
                metadata={"message_index": m.get("index", i + 1)},
            )
        )
        index_of[m.get("index", i + 1)] = i
    if not steps:
        raise TraceFormatError(f"trace agentrx/{tid}: no messages (looked for {', '.join(_MSG_KEYS)})")
    question = next((s.content for s in steps if s.role == "user"), steps[0].content)
    label = None
    meta: dict[str, Any] = {"trajectory_id": tid}
    if labels:
        meta["failure_summary"] = labels.get("failure_summary", "")
        meta["failures"] = labels.get("failures") or []
        root = _root(labels)
        if root is not None:
            sn = int(root["step_number"])
            step = index_of.get(sn, sn - 1)
            if not 0 <= step < len(steps):
                raise TraceFormatError(
                    f"trace agentrx/{tid}: root-cause step_number {sn} outside the {len(steps)} messages"
                )
            reason = ": ".join(str(x) for x in (root.get("failure_category"), root.get("step_reason")) if x)
            label = Label(agent=steps[step].agent, step=step, reason=reason)
    info = traj["info"] if isinstance(traj.get("info"), dict) else {}
    outputs = (info.get("task") or {}).get("outputs") if isinstance(info.get("task"), dict) else None
    gt = ", ".join(str(o) for o in outputs) if isinstance(outputs, list) else str(traj.get("ground_truth", ""))
    return Trace(
        id=f"agentrx/{tid}", source=source, question=question, ground_truth=gt, steps=steps, label=label, metadata=meta
    )


def load_agentrx(path: str | Path) -> list[Trace]:
    """Load AgentRx trajectories with their root-cause labels.

    Parameters
    ----------
    path : a folder of the dataset's ``*.jsonl`` files (as :func:`fetch_agentrx` writes), or one JSONL
        file whose rows hold both the messages and the ``failures``

    Returns
    -------
    list of Trace (``label`` from the root-cause failure; unlabelled trajectories have ``label=None``),
    ordered by file and row.

    Raises
    ------
    DatasetError
        If the folder holds no ``*.jsonl``.
    TraceFormatError
        If a row is malformed, a labelled trajectory has no messages, or a step is out of range.
    """
    p = Path(path)
    files = sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
    if not files:
        raise DatasetError(
            f"{p} holds no *.jsonl; run `agentcausal data fetch agentrx` or set AGENTCAUSAL_AGENTRX_DIR", name="agentrx"
        )
    trajs: dict[str, tuple[dict[str, Any], str]] = {}
    labels: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for f in files:
        source = "AgentRx/" + f.stem.replace("_dataset", "")
        for row in _rows(f):
            tid = _tid(row)
            if tid is None:
                raise TraceFormatError("row without trajectory_id", path=str(f))
            if tid not in order:
                order.append(tid)
            if "failures" in row:
                labels[tid] = row
            if _messages(row) is not None:
                trajs[tid] = (row, source)
    missing = [t for t in order if t in labels and t not in trajs]
    if missing:
        raise TraceFormatError(
            f"{len(missing)} labelled trajectories have no messages: {', '.join(missing[:10])}; "
            "put the trajectory files (tau_retail_dataset.jsonl, magentic_dataset.jsonl) beside "
            "the labels",
            path=str(p),
        )
    return [_trace(t, trajs[t][0], labels.get(t), trajs[t][1]) for t in order if t in trajs]


def fetch_agentrx(dest: str | Path, *, timeout_s: float = 60.0, overwrite: bool = False) -> Path:
    """Download AgentRx (labels and trajectories) from the Hugging Face hub into ``dest``.

    Raises
    ------
    DatasetError
        If offline or ``dest`` holds data and not ``overwrite``.
    """
    return fetch_files("agentrx", AGENTRX_REPO, AGENTRX_FILES, dest, timeout_s=timeout_s, overwrite=overwrite)
