"""MAST-Data (MAD): multi-agent traces annotated with MAST failure modes, trace level only.

Each row (``MAD_human_labelled_dataset.json``, ``MAD_full_dataset.json``: a JSON array)::

    {"mas_name": "AG2", "llm_name": "gpt-4o", "benchmark_name": "GSM-Plus", "trace_id": 17,
     "trace": {"key": "...", "index": 17, "trajectory": "<raw framework log text>"},
     "mast_annotation": {"1.1": 0, "1.2": 1, ..., "3.3": 0}}

``trajectory`` is the framework's raw log text, so steps are cut at speaker
headers: AG2/AutoGen ``Name (to Recipient):`` lines and AgentChat console
``---------- Name ----------`` lines; a log with neither is cut into
paragraphs (agent: the MAS name). The question is the first step's text.
There is **no agent or step label** (and no ground-truth answer): traces load
with ``label=None`` and the annotated modes in ``metadata["failure_modes"]``;
the run report lists each trace's blamed step and agent beside them. Run with
``--no-ground-truth``.

Trace ids are ``mast/<mas_name>/<trace_id>``.

References
----------
Cemri, M. et al. "Why Do Multi-Agent LLM Systems Fail?" arXiv:2503.13657 (MAST taxonomy, MAD dataset;
CC-BY-4.0, Hugging Face ``mcemri/MAST-Data``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agentcausal.exceptions import DatasetError, TraceFormatError
from agentcausal.traces.importers._fetch import fetch_files
from agentcausal.traces.model import Step, Trace

__all__ = ["MAST_REPO", "MAST_FILES", "MAST_MODES", "split_trajectory", "parse_mast_row", "load_mast", "fetch_mast"]

#: the dataset repository on the Hugging Face hub
MAST_REPO = "mcemri/MAST-Data"
#: its files; ``fetch_mast`` downloads the human-labelled one unless asked for all
MAST_FILES = ("MAD_human_labelled_dataset.json", "MAD_full_dataset.json")

#: MAST's 14 failure modes (arXiv:2503.13657, Figure 1)
MAST_MODES = {
    "1.1": "Disobey task specification",
    "1.2": "Disobey role specification",
    "1.3": "Step repetition",
    "1.4": "Loss of conversation history",
    "1.5": "Unaware of termination conditions",
    "2.1": "Conversation reset",
    "2.2": "Fail to ask for clarification",
    "2.3": "Task derailment",
    "2.4": "Information withholding",
    "2.5": "Ignored other agent's input",
    "2.6": "Reasoning-action mismatch",
    "3.1": "Premature termination",
    "3.2": "No or incorrect verification",
    "3.3": "Weak verification",
}

_HEADERS = (
    re.compile(r"^(?P<agent>[^\n()]{1,80}?) \(to (?P<to>[^\n()]{1,80})\):[ \t]*$", re.M),
    re.compile(r"^-{5,} (?:\w+ \()?(?P<agent>[\w\-. ]{1,80}?)\)? -{5,}[ \t]*$", re.M),
)
_RULE = re.compile(r"^\s*-{10,}\s*$", re.M)


def split_trajectory(text: str, *, default_agent: str = "unknown") -> list[tuple[str, str]]:
    """Cut a raw multi-agent log into ``(agent, content)`` steps at speaker headers (see module docstring).

    >>> split_trajectory("user (to Coder):\\nadd 2+2\\n\\n----------\\nCoder (to user):\\n4\\n")
    [('user', 'add 2+2'), ('Coder', '4')]
    """
    for pat in _HEADERS:
        hits = list(pat.finditer(text))
        if hits:
            out = []
            for h, nxt in zip(hits, hits[1:] + [None]):
                body = text[h.end() : nxt.start() if nxt else len(text)]
                body = _RULE.sub("", body).strip()
                out.append((h.group("agent").strip(), body))
            return out
    return [(default_agent, p.strip()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def _modes(annotation: Any) -> list[str]:
    if not isinstance(annotation, dict):
        return []
    on = [k for k, v in annotation.items() if v in (1, True, "1", "yes", "Yes", "True", "true")]
    return [f"{k} {MAST_MODES.get(k, '')}".strip() for k in sorted(on)]


def parse_mast_row(row: dict[str, Any]) -> Trace:
    """One MAD row as a Trace (no label; modes in ``metadata["failure_modes"]``).

    Raises
    ------
    TraceFormatError
        If the row has no ``trace.trajectory`` text or it yields no step.
    """
    mas = str(row.get("mas_name", "mas"))
    tid = f"mast/{mas}/{row.get('trace_id', (row.get('trace') or {}).get('index', ''))}"
    trace = row.get("trace")
    traj = trace.get("trajectory") if isinstance(trace, dict) else trace
    if not isinstance(traj, str) or not traj.strip():
        raise TraceFormatError(f"trace {tid!r}: no trace.trajectory text")
    steps = [
        Step(index=i, agent=a, role=a, content=c) for i, (a, c) in enumerate(split_trajectory(traj, default_agent=mas))
    ]
    if not steps:
        raise TraceFormatError(f"trace {tid!r}: trajectory yields no step")
    meta: dict[str, Any] = {k: row[k] for k in ("mas_name", "llm_name", "benchmark_name") if k in row}
    meta["failure_modes"] = _modes(row.get("mast_annotation"))
    return Trace(
        id=tid, source=f"MAST/{mas}", question=steps[0].content[:4000], ground_truth="", steps=steps, metadata=meta
    )


def load_mast(path: str | Path, *, which: str = "human") -> list[Trace]:
    """Load MAD rows from a file, or from a folder written by :func:`fetch_mast`.

    Parameters
    ----------
    path : a MAD JSON file (array of rows), or the folder holding them
    which : in a folder, ``"human"`` (``MAD_human_labelled_dataset.json``) or ``"full"``

    Returns
    -------
    list of Trace, ids ``mast/<mas_name>/<trace_id>`` (a repeated id gets ``#2``, ``#3`` ...).

    Raises
    ------
    DatasetError
        If the folder lacks the file.
    TraceFormatError
        If the file is not a JSON array of rows.
    """
    p = Path(path)
    if p.is_dir():
        f = p / MAST_FILES[0 if which == "human" else 1]
        if not f.is_file():
            raise DatasetError(
                f"{f} not found; run `agentcausal data fetch mast` or set AGENTCAUSAL_MAST_DIR", name="mast"
            )
        p = f
    try:
        rows = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceFormatError(f"cannot read as JSON: {exc}", path=str(p)) from exc
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list):
        raise TraceFormatError("expected a JSON array of MAD rows", path=str(p))
    out: list[Trace] = []
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise TraceFormatError(f"row {i} is not an object", path=str(p))
        try:
            t = parse_mast_row(row)
        except TraceFormatError as exc:
            raise TraceFormatError(str(exc), path=str(p)) from exc
        n = seen[t.id] = seen.get(t.id, 0) + 1
        out.append(t if n == 1 else t.model_copy(update={"id": f"{t.id}#{n}"}))
    return out


def fetch_mast(dest: str | Path, *, full: bool = False, timeout_s: float = 60.0, overwrite: bool = False) -> Path:
    """Download MAD from the Hugging Face hub (``mcemri/MAST-Data``, CC-BY-4.0) into ``dest``.

    Parameters
    ----------
    dest : folder
    full : also the full dataset (≈200 MB); default only the human-labelled file (2.7 MB)
    timeout_s, overwrite : see :func:`agentcausal.traces.importers._fetch.fetch_files`

    Raises
    ------
    DatasetError
        If offline or ``dest`` holds data and not ``overwrite``.
    """
    files = MAST_FILES if full else MAST_FILES[:1]
    return fetch_files("mast", MAST_REPO, files, dest, timeout_s=timeout_s, overwrite=overwrite)
