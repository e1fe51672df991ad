"""Load the Who&When benchmark (both subsets) into :class:`~agentcausal.traces.model.Trace`.

Who&When holds failed multi-agent runs, one JSON object per file, in two subsets:

* **Algorithm-Generated** (CaptainAgent / AG2 teams): ``history[i]`` has
  ``content``, ``role`` and ``name``; **the agent is** ``name``.
* **Hand-Crafted** (Magentic-One): ``history[i]`` has ``content`` and ``role``;
  **the agent is** ``role`` cut at the first space
  (``"Orchestrator (thought)"`` gives ``"Orchestrator"``); step 0 is the human query.

``mistake_step`` is a string holding a **0-based** index into ``history``
(ASCII digits only: ``"²"`` or ``"٣"`` is refused, as is a number too long to be a step); a JSON number
is read too when it is whole (``2`` or ``2.0``), never ``2.5`` or ``true``.
Text fields are normalised at load (:mod:`agentcausal.traces.text`): lone
surrogates become U+FFFD, ``null`` content is empty, a list of text parts is
joined, any other content type is refused naming the file and step. A step
whose ``name`` and ``role`` are both missing or null has the agent
``"unknown"`` (:data:`UNKNOWN_AGENT`), which matches no labelled agent.
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
import math
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from agentcausal.exceptions import DatasetError, InputFileError, InvalidTracesError, TraceFormatError
from agentcausal.input_files import loads_json, read_input_text
from agentcausal.traces.download import check_dest_free, download
from agentcausal.traces.model import Label, Step, Trace
from agentcausal.traces.text import clean_text, content_text, optional_text

__all__ = [
    "SUBSETS",
    "UNKNOWN_AGENT",
    "WHO_AND_WHEN_ZIP_URL",
    "agent_of",
    "parse_who_and_when",
    "load_who_and_when_file",
    "load_who_and_when",
    "who_and_when_files",
    "fetch_who_and_when",
]

#: the two subsets, as folder names
SUBSETS = ("Algorithm-Generated", "Hand-Crafted")

#: archive of the public repository; the data lives under ``Who&When/`` inside it
WHO_AND_WHEN_ZIP_URL = "https://codeload.github.com/ag2ai/Agents_Failure_Attribution/zip/refs/heads/main"


#: the agent of a step whose ``name`` and ``role`` are both missing or null
UNKNOWN_AGENT = "unknown"


def agent_of(entry: dict[str, Any]) -> str:
    """The speaking agent of one ``history`` entry.

    ``name`` when present (Algorithm-Generated), else ``role`` cut at the first
    space (Hand-Crafted). A ``null`` or empty ``name`` counts as absent; when
    ``role`` is missing, null or empty too, the agent is :data:`UNKNOWN_AGENT`
    (``"unknown"``), a name that matches no labelled agent.

    Parameters
    ----------
    entry : dict with ``role`` and optionally ``name`` (strings or null)

    Returns
    -------
    str

    Examples
    --------
    >>> agent_of({"role": "Orchestrator (-> WebSurfer)", "content": ""})
    'Orchestrator'
    >>> agent_of({"role": "user", "name": "Excel_Expert", "content": ""})
    'Excel_Expert'
    >>> agent_of({"role": None, "name": None, "content": ""})
    'unknown'
    """
    name = entry.get("name")
    if isinstance(name, str) and name.strip():
        return clean_text(name.strip())
    role = entry.get("role")
    role = clean_text(role).strip() if isinstance(role, str) else ""
    return role.split(" ", 1)[0] if role else UNKNOWN_AGENT


#: a step index as text: ASCII digits (a sign is read so that "-1" is named as out of range), at most 9 of them
_STEP = re.compile(r"-?[0-9]{1,9}")


def _step_text(raw: Any) -> tuple[str | None, str]:
    """``mistake_step`` as digits, or (None, why not). Who&When writes a string (``"2"``); a JSON number is read
    too when it is whole (``2``, ``2.0``: the same number in JSON), never a fraction, a boolean or another type."""
    expected = 'expected a 0-based step index, a string of ASCII digits as Who&When writes it ("2") or a whole number'
    if isinstance(raw, str):
        text = raw.strip()
        return (text, "") if _STEP.fullmatch(text) else (None, f"{raw[:40]!r} is not a step index ({expected})")
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        kind = (
            "a boolean"
            if isinstance(raw, bool)
            else f"a JSON {'object' if isinstance(raw, dict) else 'array' if isinstance(raw, list) else type(raw).__name__}"
        )
        return None, f"{kind} is not a step index ({expected})"
    if isinstance(raw, float) and not (math.isfinite(raw) and raw.is_integer()):
        return None, f"{raw!r} is not a whole step index ({expected})"
    text = str(int(raw))
    return (text, "") if _STEP.fullmatch(text) else (None, f"{text[:40]} is not a step index ({expected})")


def _field(problems: list[TraceFormatError], fn: Any, value: Any, field: str, **kw: Any) -> str:
    try:
        return fn(value, field=field, **kw)
    except TraceFormatError as exc:
        problems.append(exc)
        return ""


def parse_who_and_when(data: dict[str, Any], trace_id: str, *, source: str = "", path: str | None = None) -> Trace:
    """One Who&When JSON object as a :class:`Trace`.

    Text fields are normalised as :mod:`agentcausal.traces.text` says: lone
    surrogates become U+FFFD, ``null`` content becomes ``""``, a list of text
    parts is joined; any other content type is refused. Every bad field of the
    object is found before raising, and the one error lists them all.

    Parameters
    ----------
    data : dict, the parsed JSON of one file
    trace_id : str, e.g. ``"Hand-Crafted/20"``
    source : str, the subset name
    path : str, optional; the file, for the error

    Returns
    -------
    Trace, with ``label`` from ``mistake_agent``/``mistake_step``/``mistake_reason``
    when present, and the remaining fields (``question_ID``, ``level`` ...) in ``metadata``.

    Raises
    ------
    TraceFormatError
        If ``history`` is missing or empty, an entry is not an object, a
        content is not text (number, boolean, object, non-text part), ``role``
        or ``name`` is not text or null, ``question`` is missing or empty, or
        ``mistake_step`` is not a step index in range (ASCII digits). ``field`` names the first bad field (``history[3].content``);
        the message names each.
    """
    history = data.get("history")
    if not isinstance(history, list) or not history:
        raise TraceFormatError(f"trace {trace_id!r}: 'history' must be a non-empty list", path=path)
    problems: list[TraceFormatError] = []
    steps: list[Step] = []
    for i, entry in enumerate(history):
        if not isinstance(entry, dict):
            problems.append(TraceFormatError("is not an object", field=f"history[{i}]"))
            continue
        role = _field(problems, optional_text, entry.get("role"), f"history[{i}].role")
        _field(problems, optional_text, entry.get("name"), f"history[{i}].name")
        content = _field(problems, content_text, entry.get("content"), f"history[{i}].content")
        steps.append(Step(index=i, agent=agent_of(entry), role=role, content=content))
    question = _field(problems, optional_text, data.get("question"), "question", numbers=True)
    if not question.strip() and not any(p.field == "question" for p in problems):
        problems.append(
            TraceFormatError(
                "missing or empty: every method is asked about the task the agents were given", field="question"
            )
        )
    gt_key = "ground_truth" if "ground_truth" in data else "groundtruth"
    gt = _field(problems, optional_text, data.get(gt_key), gt_key, numbers=True)
    label = None
    if "mistake_step" in data and data["mistake_step"] not in (None, ""):
        raw = data["mistake_step"]
        step = None
        text, why = _step_text(raw)
        if text is None:
            problems.append(TraceFormatError(why, field="mistake_step"))
        else:
            step = int(text)
            if not 0 <= step < len(history):
                problems.append(TraceFormatError(f"{step} out of range 0..{len(history) - 1}", field="mistake_step"))
                step = None
        agent = _field(problems, optional_text, data.get("mistake_agent"), "mistake_agent")
        reason = _field(problems, optional_text, data.get("mistake_reason"), "mistake_reason")
        if step is not None:
            label = Label(agent=agent, step=step, reason=reason)
    if problems:
        listed = "; ".join(str(p) for p in problems[:10])
        more = f"; and {len(problems) - 10} more" if len(problems) > 10 else ""
        err = TraceFormatError(f"trace {trace_id!r}: {listed}{more}", path=path)
        err.field = problems[0].field  # the first bad field; the message names each
        raise err
    skip = {
        "history",
        "question",
        "ground_truth",
        "groundtruth",
        "mistake_agent",
        "mistake_step",
        "mistake_reason",
        "system_prompt",
    }
    metadata = {
        k: (clean_text(v) if isinstance(v, str) else v)
        for k, v in data.items()
        if k not in skip and isinstance(v, (str, int, float, bool))
    }
    return Trace(
        id=trace_id, source=source, question=question, ground_truth=gt, steps=steps, label=label, metadata=metadata
    )


def load_who_and_when_file(
    path: str | Path, *, subset: str | None = None, trace_id: str | None = None, root: str | Path | None = None
) -> Trace:
    """Load one Who&When file.

    The file is read by :func:`agentcausal.input_files.read_input_text` (a
    regular file within the size limit; JSON within the depth and digit limits).

    Parameters
    ----------
    path : path to ``<subset>/<n>.json``
    subset : str, optional; default the parent folder's name
    trace_id : str, optional; default ``"<subset>/<stem>"``
    root : the folder it was found in (a symlink must stay inside it); None when named directly

    Returns
    -------
    Trace with id ``trace_id`` (by default ``"<subset>/<stem>"``).

    Raises
    ------
    TraceFormatError
        If the file is not a regular file (a FIFO, a device, a symlink loop, a
        symlink out of ``root``), is over the size limit, cannot be read, is not
        JSON (the message names line and column), nests too deeply or holds a
        too-long integer, or is not a valid Who&When object (see :func:`parse_who_and_when`).
    """
    p = Path(path)
    subset = subset or p.parent.name
    try:
        data = loads_json(read_input_text(p, root=root))
    except InputFileError as exc:
        raise TraceFormatError(exc.detail if exc.path else f"cannot read as JSON: {exc.detail}", path=str(p)) from exc
    except json.JSONDecodeError as exc:
        raise TraceFormatError(
            f"cannot read as JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", path=str(p)
        ) from exc
    if not isinstance(data, dict):
        raise TraceFormatError("expected a JSON object", path=str(p))
    return parse_who_and_when(data, trace_id or f"{subset}/{p.stem}", source=subset, path=str(p))


def _numeric_key(p: Path) -> tuple[int, str]:
    return (int(p.stem), p.stem) if p.stem.isdigit() else (10**9, p.stem)


def who_and_when_files(root: str | Path, subsets: Sequence[str] = SUBSETS) -> list[tuple[Path, str]]:
    """The files of a Who&When folder with their subsets, subset by subset, in numeric order.

    Parameters
    ----------
    root : path holding ``Algorithm-Generated/`` and/or ``Hand-Crafted/`` (or a subset folder)
    subsets : subset names to read

    Returns
    -------
    list of (file, subset)

    Raises
    ------
    DatasetError
        If the folder does not exist or holds none of the subsets.
    """
    root = Path(root)
    if not root.is_dir():
        raise DatasetError(
            f"folder {root} not found; run `agentcausal data fetch who-and-when` or set AGENTCAUSAL_WHO_AND_WHEN_DIR",
            name="who-and-when",
        )
    if root.name in SUBSETS:
        folders = [root]
    else:
        folders = [root / s for s in subsets if (root / s).is_dir()]
    if not folders:
        raise DatasetError(f"{root} holds none of the subsets {', '.join(subsets)}", name="who-and-when")
    return [(f, folder.name) for folder in folders for f in sorted(folder.glob("*.json"), key=_numeric_key)]


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
        If one file is malformed; :class:`~agentcausal.exceptions.InvalidTracesError`
        (a subclass) listing each when several are.
    """
    traces: list[Trace] = []
    errors: list[TraceFormatError] = []
    for f, subset in who_and_when_files(root, subsets):
        try:
            traces.append(load_who_and_when_file(f, subset=subset))
        except TraceFormatError as exc:
            errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InvalidTracesError(errors)
    return traces


def fetch_who_and_when(
    dest: str | Path, *, url: str = WHO_AND_WHEN_ZIP_URL, timeout_s: float = 60.0, overwrite: bool = False
) -> Path:
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
    check_dest_free(dest, name="who-and-when", overwrite=overwrite, hint="pass overwrite=True (--force) to replace it")
    blob = download(
        url,
        name="who-and-when",
        timeout_s=timeout_s,
        offline_hint="This machine seems offline; copy the `Who&When/` folder of "
        f"https://github.com/ag2ai/Agents_Failure_Attribution into {dest} by hand, or point "
        "AGENTCAUSAL_WHO_AND_WHEN_DIR at an existing copy",
    )
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
