"""Load the Who&When benchmark (both subsets) into :class:`~agentcausal.traces.model.Trace`.

Who&When holds failed multi-agent runs, one JSON object per file, in two subsets:

* **Algorithm-Generated** (CaptainAgent / AG2 teams): ``history[i]`` has
  ``content``, ``role`` and ``name``; **the agent is** ``name``.
* **Hand-Crafted** (Magentic-One): ``history[i]`` has ``content`` and ``role``;
  **the agent is** ``role`` cut at the first space
  (``"Orchestrator (thought)"`` gives ``"Orchestrator"``); step 0 is the human query.

``mistake_step`` is a string holding a **0-based** index into ``history``.
Older files spell ``ground_truth`` as ``groundtruth``; both are accepted.
Trace ids are ``"<subset>/<file stem>"``, e.g. ``"Algorithm-Generated/38"``.

:func:`fetch_who_and_when` downloads the benchmark from its public home
(GitHub ``ag2ai/Agents_Failure_Attribution``, folder ``Who&When/``).

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated
Failure Attribution of LLM Multi-Agent Systems." ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from agentcausal.exceptions import DatasetError, TraceFormatError
from agentcausal.traces.model import Label, Step, Trace

__all__ = [
    "SUBSETS",
    "WHO_AND_WHEN_ZIP_URL",
    "agent_of",
    "parse_who_and_when",
    "load_who_and_when_file",
    "load_who_and_when",
    "fetch_who_and_when",
]

#: the two subsets, as folder names
SUBSETS = ("Algorithm-Generated", "Hand-Crafted")

#: archive of the public repository; the data lives under ``Who&When/`` inside it
WHO_AND_WHEN_ZIP_URL = "https://codeload.github.com/ag2ai/Agents_Failure_Attribution/zip/refs/heads/main"


def agent_of(entry: dict[str, Any]) -> str:
    """The speaking agent of one ``history`` entry.

    ``name`` when present (Algorithm-Generated), else ``role`` cut at the first
    space (Hand-Crafted).

    Parameters
    ----------
    entry : dict with ``role`` and optionally ``name``

    Returns
    -------
    str

    Examples
    --------
    >>> agent_of({"role": "Orchestrator (-> WebSurfer)", "content": ""})
    'Orchestrator'
    >>> agent_of({"role": "user", "name": "Excel_Expert", "content": ""})
    'Excel_Expert'
    """
    name = entry.get("name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    role = str(entry.get("role", "")).strip()
    return role.split(" ", 1)[0] if role else "unknown"


def parse_who_and_when(data: dict[str, Any], trace_id: str, *, source: str = "") -> Trace:
    """One Who&When JSON object as a :class:`Trace`.

    Parameters
    ----------
    data : dict, the parsed JSON of one file
    trace_id : str, e.g. ``"Hand-Crafted/20"``
    source : str, the subset name

    Returns
    -------
    Trace, with ``label`` from ``mistake_agent``/``mistake_step``/``mistake_reason``
    when present, and the remaining fields (``question_ID``, ``level`` ...) in ``metadata``.

    Raises
    ------
    TraceFormatError
        If ``history`` is missing or empty, an entry is not an object, or
        ``mistake_step`` is not an integer in range.
    """
    history = data.get("history")
    if not isinstance(history, list) or not history:
        raise TraceFormatError(f"trace {trace_id!r}: 'history' must be a non-empty list", path=None)
    steps: list[Step] = []
    for i, entry in enumerate(history):
        if not isinstance(entry, dict):
            raise TraceFormatError(f"trace {trace_id!r}: history[{i}] is not an object")
        steps.append(
            Step(index=i, agent=agent_of(entry), role=str(entry.get("role", "")), content=str(entry.get("content", "")))
        )
    label = None
    if "mistake_step" in data and data["mistake_step"] not in (None, ""):
        try:
            step = int(str(data["mistake_step"]).strip())
        except ValueError as exc:
            raise TraceFormatError(f"trace {trace_id!r}: mistake_step {data['mistake_step']!r} is not an integer") from exc
        if not 0 <= step < len(steps):
            raise TraceFormatError(f"trace {trace_id!r}: mistake_step {step} out of range 0..{len(steps) - 1}")
        label = Label(agent=str(data.get("mistake_agent", "")), step=step, reason=str(data.get("mistake_reason", "")))
    gt = data.get("ground_truth", data.get("groundtruth", ""))
    skip = {"history", "question", "ground_truth", "groundtruth", "mistake_agent", "mistake_step",
            "mistake_reason", "system_prompt"}
    metadata = {k: v for k, v in data.items() if k not in skip and isinstance(v, (str, int, float, bool))}
    return Trace(id=trace_id, source=source, question=str(data.get("question", "")), ground_truth=str(gt),
                 steps=steps, label=label, metadata=metadata)


def load_who_and_when_file(path: str | Path, *, subset: str | None = None) -> Trace:
    """Load one Who&When file.

    Parameters
    ----------
    path : path to ``<subset>/<n>.json``
    subset : str, optional; default the parent folder's name

    Returns
    -------
    Trace with id ``"<subset>/<stem>"``.

    Raises
    ------
    TraceFormatError
        If the file is not JSON or not a Who&When object.
    """
    p = Path(path)
    subset = subset or p.parent.name
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TraceFormatError(f"cannot read as JSON: {exc}", path=str(p)) from exc
    if not isinstance(data, dict):
        raise TraceFormatError("expected a JSON object", path=str(p))
    try:
        return parse_who_and_when(data, f"{subset}/{p.stem}", source=subset)
    except TraceFormatError as exc:
        raise TraceFormatError(str(exc), path=str(p)) from exc


def _numeric_key(p: Path) -> tuple[int, str]:
    return (int(p.stem), p.stem) if p.stem.isdigit() else (10**9, p.stem)


def load_who_and_when(root: str | Path, subsets: Sequence[str] = SUBSETS) -> list[Trace]:
    """Load every trace of the given subsets from a Who&When folder.

    Parameters
    ----------
    root : path holding ``Algorithm-Generated/`` and/or ``Hand-Crafted/``
        (a subset folder itself is accepted too)
    subsets : sequence of subset names to read

    Returns
    -------
    list of Trace, subset by subset, files in numeric order.

    Raises
    ------
    DatasetError
        If the folder does not exist or holds none of the subsets.
    TraceFormatError
        If a file is malformed.
    """
    root = Path(root)
    if not root.is_dir():
        raise DatasetError(f"folder {root} not found; run `agentcausal data fetch who-and-when` "
                           "or set AGENTCAUSAL_WHO_AND_WHEN_DIR", name="who-and-when")
    if root.name in SUBSETS:
        folders = [root]
    else:
        folders = [root / s for s in subsets if (root / s).is_dir()]
    if not folders:
        raise DatasetError(f"{root} holds none of the subsets {', '.join(subsets)}", name="who-and-when")
    traces: list[Trace] = []
    for folder in folders:
        for f in sorted(folder.glob("*.json"), key=_numeric_key):
            traces.append(load_who_and_when_file(f, subset=folder.name))
    return traces


def fetch_who_and_when(dest: str | Path, *, url: str = WHO_AND_WHEN_ZIP_URL, timeout_s: float = 60.0,
                       overwrite: bool = False) -> Path:
    """Download Who&When from its public GitHub home into ``dest``.

    The repository archive is downloaded, and the JSON files under its
    ``Who&When/<subset>/`` folders are written to ``dest/<subset>/`` (no code).

    Parameters
    ----------
    dest : folder to create (e.g. ``data/who_and_when``)
    url : zip archive URL of the repository
    timeout_s : float, network timeout in seconds
    overwrite : bool, replace an existing non-empty ``dest``

    Returns
    -------
    Path, ``dest``.

    Raises
    ------
    DatasetError
        If the download fails (offline, blocked, HTTP error), the archive holds
        no ``Who&When/`` data, or ``dest`` already holds data and ``overwrite`` is False.
    """
    dest = Path(dest)
    if dest.is_dir() and any(dest.iterdir()) and not overwrite:
        raise DatasetError(f"{dest} already holds data; pass overwrite=True (--force) to replace it",
                           name="who-and-when")
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 (fixed https URL)
            blob = resp.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DatasetError(
            f"cannot download {url}: {exc}. This machine seems offline; copy the `Who&When/` folder of "
            f"https://github.com/ag2ai/Agents_Failure_Attribution into {dest} by hand, or point "
            "AGENTCAUSAL_WHO_AND_WHEN_DIR at an existing copy",
            name="who-and-when",
        ) from exc
    try:
        zf = zipfile.ZipFile(io.BytesIO(blob))
    except zipfile.BadZipFile as exc:
        raise DatasetError(f"{url} did not return a zip archive", name="who-and-when") from exc
    members = _data_members(zf.namelist())
    if not members:
        raise DatasetError(f"archive from {url} holds no Who&When/<subset>/*.json files", name="who-and-when")
    tmp = Path(tempfile.mkdtemp(prefix=".who_and_when-", dir=dest.parent if dest.parent.exists() else None))
    for name, (subset, fname) in members.items():
        (tmp / subset).mkdir(exist_ok=True)
        (tmp / subset / fname).write_bytes(zf.read(name))
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(tmp), str(dest))
    return dest


def _data_members(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    out = {}
    for n in names:
        parts = n.split("/")
        if len(parts) >= 3 and parts[-3] == "Who&When" and parts[-2] in SUBSETS and parts[-1].endswith(".json"):
            out[n] = (parts[-2], parts[-1])
    return out
