"""Importers: the traces people already record, as :class:`~agentcausal.traces.model.Trace`.

One module per format, each a pure function from a file to traces:

========================  ==============================================  ==========================================
``--format``              what                                            module
========================  ==============================================  ==========================================
``who-and-when``          Who&When JSON (``history``)                     :mod:`agentcausal.traces.whowhen`
``jsonl``                 our Trace JSONL                                 :mod:`agentcausal.traces.io`
``otel``                  OpenTelemetry GenAI spans, OTLP JSON            :mod:`.otel`
``openinference``         OpenInference spans: OTLP JSON or the Python    :mod:`.openinference`
                          console exporter's concatenated JSON
``ag2``                   AG2 runtime-log SQLite; AG2/AutoGen chat        :mod:`.ag2`
                          histories (``chat_history``, ``TaskResult``)
``langsmith``             LangSmith run export (JSONL with                :mod:`.langsmith`
                          ``dotted_order``)
========================  ==============================================  ==========================================

:func:`detect_format` picks the format of a file from its content;
:func:`import_traces` loads any mix of files. Span formats share the rules of
:mod:`._spans` (one trace per trace id, execution order, agent from the nearest
agent span, tool results as their own steps, span ids in step metadata).
Imported traces carry no ground truth; :mod:`.labels` adds it from a side file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers._spans import iter_json_values, spans_to_traces
from agentcausal.traces.model import Trace

__all__ = ["FORMATS", "SPAN_FORMATS", "detect_format", "detect_formats", "import_traces", "import_file"]

#: the values of ``--format`` (``auto`` detects per file)
FORMATS = ("auto", "who-and-when", "jsonl", "otel", "openinference", "ag2", "langsmith", "mast", "agentrx")

#: formats whose records are spans: the spans of every file are pooled, so a trace split over files is one trace
SPAN_FORMATS = ("otel", "openinference")

EXPECTED = ("Who&When JSON (an object with 'history'), our Trace JSONL ('steps' and 'question'), OTLP JSON "
            "('resourceSpans'), OpenInference console spans ('context' with 'span_id'), an AG2 runtime-log SQLite "
            "database or chat history (messages with 'content' and 'name'/'source'), a LangSmith run export "
            "('dotted_order'), MAST rows ('mast_annotation') or AgentRx rows ('trajectory_id')")


#: files a folder is expanded to (an explicitly named file may have any name)
FOLDER_SUFFIXES = (".json", ".jsonl", ".ndjson", ".db", ".sqlite", ".sqlite3")


def _is_sqlite(p: Path) -> bool:
    try:
        with p.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _classify(value: Any, text: str) -> str | None:
    oi = "openinference.span.kind" in text
    if isinstance(value, dict):
        keys = set(value)
        if keys & {"resourceSpans", "resource_spans"}:
            return "openinference" if oi else "otel"
        if keys & {"resourceLogs", "resource_logs"}:
            raise TraceFormatError("an OTLP logs file (GenAI content events v1.28-1.36); pass it with --logs "
                                   "beside its traces file")
        if isinstance(value.get("context"), dict) and "span_id" in value["context"]:
            return "openinference"
        if "history" in keys:
            return "who-and-when"
        if {"steps", "question"} <= keys:
            return "jsonl"
        if keys & {"dotted_order", "run_type"}:
            return "langsmith"
        if "mast_annotation" in keys:
            return "mast"
        if "trajectory_id" in keys:
            return "agentrx"
        if "chat_history" in keys or "messages" in keys:
            return "ag2"
        return None
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return _classify(value[0], text) if not ({"content"} <= set(value[0]) and set(value[0]) & {
            "name", "role", "source"}) else "ag2"
    return None


def detect_format(path: str | Path) -> str:
    """The format of one trace file (see :data:`FORMATS`), from its content.

    Parameters
    ----------
    path : a file, or a folder (Who&When folders and folders of ``*.json``/``*.jsonl`` read as ``who-and-when``)

    Returns
    -------
    str, one of :data:`FORMATS` other than ``auto`` (a folder: ``who-and-when``; see
    :func:`detect_formats` for folders of other files).

    Raises
    ------
    TraceFormatError
        If the file matches no format; the message names the file and what was expected.
        A ``.json``/``.jsonl`` file that is broken or matches no other format is given to the
        Who&When/Trace JSONL loader, whose message names the broken line or field.
    """
    from agentcausal.traces.io import input_refusal

    p = Path(path)
    if p.is_dir():
        return "who-and-when"
    native = {".json": "who-and-when", ".jsonl": "jsonl"}.get(p.suffix)
    refusal = input_refusal(p)  # nothing is opened: a FIFO, a device or a symlink loop never hangs or floods
    if refusal is not None:
        if native:  # the native loader refuses it by name (or --skip-invalid skips it)
            return native
        raise TraceFormatError(refusal, path=str(p))
    if _is_sqlite(p):
        return "ag2"
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        if native:
            return native
        raise TraceFormatError(f"cannot read as text: {exc}", path=str(p)) from exc
    try:
        first = next(iter_json_values(text), None)
    except (ValueError, RecursionError) as exc:
        if native:  # the native loader names the broken file and line
            return native
        raise TraceFormatError(f"not JSON ({exc}); expected {EXPECTED}", path=str(p)) from exc
    try:
        fmt = _classify(first, text) if first is not None else None
    except TraceFormatError as exc:
        raise TraceFormatError(str(exc), path=str(p)) from exc
    if fmt is None and native:  # the native loader says which field is wrong
        return native
    if fmt is None:
        raise TraceFormatError(f"matches no trace format; expected {EXPECTED}", path=str(p))
    return fmt


def detect_formats(paths: Sequence[str | Path], format: str = "auto") -> list[tuple[Path, str]]:  # noqa: A002
    """Each file to read with its format: a Who&When folder stays whole (``who-and-when``); any other
    folder is expanded to its files (hidden files skipped), each detected unless ``format`` names one.

    Raises
    ------
    TraceFormatError
        If a path does not exist, the format is unknown, or a file matches no format.
    """
    from agentcausal.traces.whowhen import SUBSETS

    if format not in FORMATS:
        raise TraceFormatError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    out: list[tuple[Path, str]] = []
    for raw in paths:
        p = Path(raw)
        if not os.path.lexists(p):  # a symlink loop or dangling link is named by the loader
            raise TraceFormatError("no such file or folder", path=str(p))
        if p.is_dir() and (p.name in SUBSETS or any((p / s).is_dir() for s in SUBSETS)):
            out.append((p, "who-and-when"))
        elif p.is_dir() and format in ("mast", "agentrx"):
            out.append((p, format))
        elif p.is_dir():
            files = sorted(f for f in p.iterdir() if f.suffix in FOLDER_SUFFIXES  # a FIFO or link too: the
                           and not f.name.startswith("."))  # loader names it, unopened
            if not files:
                raise TraceFormatError(f"folder holds no trace files ({', '.join(FOLDER_SUFFIXES)})", path=str(p))
            found = [(f, format if format != "auto" else detect_format(f)) for f in files if _unrefused(f, format)]
            if {fmt for _, fmt in found} == {"agentrx"}:  # labels and trajectories are joined per folder
                found = [(p, "agentrx")]
            out.extend(found)
        else:
            out.append((p, format if format != "auto" and _unrefused(p, format) else detect_format(p)))
    return out


def _unrefused(p: Path, format: str) -> bool:  # noqa: A002
    """True, or TraceFormatError when ``--format`` names a non-native format for a file that may not be
    read (FIFO, device, symlink loop, over the size limit): never opened. Native formats are named by
    their loader (and ``--skip-invalid`` can skip them)."""
    from agentcausal.traces.io import input_refusal

    if format in ("auto", "who-and-when", "jsonl") or p.is_dir():
        return True
    refusal = input_refusal(p)
    if refusal is not None:
        raise TraceFormatError(refusal, path=str(p))
    return True


def _span_records(fmt: str, path: Path, logs: str | Path | None) -> list:
    if fmt == "otel":
        from agentcausal.traces.importers.otel import otel_records

        return otel_records(path, logs=logs)
    from agentcausal.traces.importers.openinference import openinference_records

    return openinference_records(path)


def import_file(path: str | Path, format: str = "auto", *, logs: str | Path | None = None,  # noqa: A002
                tool_agent: str | None = None, skip_invalid: bool = False) -> list[Trace]:
    """Import one file (or folder) of the given format (``auto``: :func:`detect_format`).

    Parameters
    ----------
    path : the file
    format : one of :data:`FORMATS`
    logs : OTLP JSON logs file with GenAI content events (``otel`` v1.28–v1.36)
    tool_agent : agent name for tool steps (default: the calling agent's)
    skip_invalid : drop traces without content instead of raising

    Returns
    -------
    list of Trace

    Raises
    ------
    TraceFormatError
        If the file does not match the format, or a trace is invalid (content capture off ...).
    """
    return import_traces([path], format, logs=logs, tool_agent=tool_agent, skip_invalid=skip_invalid)


def import_traces(paths: Sequence[str | Path], format: str = "auto", *,  # noqa: A002
                  logs: str | Path | None = None, tool_agent: str | None = None,
                  skip_invalid: bool = False) -> list[Trace]:
    """Import any mix of trace files; each file's format is ``format`` or detected.

    Spans of the span formats (:data:`SPAN_FORMATS`) are pooled over all files before
    building traces, so a trace whose spans sit in several files is one trace.

    Parameters
    ----------
    paths : files or folders
    format : one of :data:`FORMATS`; ``auto`` detects per file
    logs, tool_agent, skip_invalid : see :func:`import_file`

    Returns
    -------
    list of Trace: the traces of each file in the order given (span formats after the rest,
    ordered by start time); ids are unique.

    Raises
    ------
    TraceFormatError
        If a path does not exist or matches no format, a file is malformed, a trace is
        invalid, or two traces share an id.
    """
    out: list[Trace] = []
    pooled: dict[str, list] = {}
    for p, fmt in detect_formats(paths, format):
        if fmt in ("who-and-when", "jsonl"):
            from agentcausal.traces.io import load_traces

            out.extend(load_traces([p], skip_invalid=skip_invalid))
        elif fmt in SPAN_FORMATS:
            pooled.setdefault(fmt, []).extend(_span_records(fmt, p, logs))
        elif fmt == "ag2":
            from agentcausal.traces.importers.ag2 import load_ag2

            out.extend(load_ag2(p, tool_agent=tool_agent, skip_invalid=skip_invalid))
        elif fmt == "langsmith":
            from agentcausal.traces.importers.langsmith import load_langsmith

            out.extend(load_langsmith(p, tool_agent=tool_agent, skip_invalid=skip_invalid))
        elif fmt == "mast":
            from agentcausal.traces.importers.mast import load_mast

            out.extend(load_mast(p))
        elif fmt == "agentrx":
            from agentcausal.traces.importers.agentrx import load_agentrx

            out.extend(load_agentrx(p))
    for fmt, records in pooled.items():
        out.extend(spans_to_traces(records, source=fmt, file=None, tool_agent=tool_agent, skip_invalid=skip_invalid))
    from agentcausal.traces.io import check_unique_ids

    check_unique_ids(out)
    return out
