"""The nightly loop's library half: read tonight's traces, keep the run folder's corpus, say what is new, sum up.

A nightly job (``flows/nightly.py``, the ``my-traces-nightly`` and ``my-phoenix-nightly`` deployments) reads a
folder of traces in any supported format or a Phoenix project's window, attributes the traces that are new or
changed since the last night into one run folder, and writes the blame back. This module is that loop
without Prefect:

1. :func:`read_tonight` reads the inputs, leaving out every unreadable file and invalid trace (a non-UTF-8
   file, a trace whose span tree is broken, ...), each named once, never stopping the night for them;
2. :func:`merge_corpus` keeps every trace the run folder has seen (``<run folder>/traces.jsonl``), tonight's
   new or changed traces replacing theirs by id, so the results store answers the old ones and
   ``results.parquet`` covers them all; it says whether anything is left to do (new or changed traces, or
   rows an earlier night did not compute: held back by the spend cap, or failed);
3. :func:`night_summary` reads the finished run folder: what was read, skipped, attributed, blamed,
   written back and spent tonight (``run.json``: rows and the actual spend of this invocation).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.model import Trace

__all__ = ["Tonight", "NightCorpus", "read_tonight", "merge_corpus", "night_summary", "CORPUS_FILE"]

#: the run folder's corpus: every trace it has seen, tonight's replacing earlier ones by id
CORPUS_FILE = "traces.jsonl"


class Tonight(NamedTuple):
    """What :func:`read_tonight` read.

    Attributes
    ----------
    traces : list of Trace, the valid traces tonight
    skipped : list of dict ``{"path", "field", "error"}``, one per input left out (``run.json``'s form)
    source : str, the inputs in words (the folder(s), or ``phoenix <url> project <name>``)
    """

    traces: list[Trace]
    skipped: list[dict[str, str | None]]
    source: str


class NightCorpus(NamedTuple):
    """The run folder's corpus for tonight (:func:`merge_corpus`).

    Attributes
    ----------
    traces : list of Trace, every trace the run folder holds tonight (earlier nights' first, in their order)
    new : list of str, ids of the traces new tonight
    changed : list of str, ids of the traces whose content changed since they were last read
    left_over : int, rows an earlier night did not compute (``not_run`` or ``failed`` in its ``run.json``)
    last_started : str or None, when the last night's run started (``run.json``'s ``started``)
    """

    traces: list[Trace]
    new: list[str]
    changed: list[str]
    left_over: int
    last_started: str | None

    @property
    def nothing_to_do(self) -> bool:
        """No new or changed trace, and every row of the last night computed: attributing would send nothing."""
        return bool(self.traces) and not self.new and not self.changed and not self.left_over


def read_tonight(
    paths: Sequence[str] = (),
    *,
    phoenix: Any = None,
    format: str = "auto",
    tool_agent: str | None = None,
) -> Tonight:
    """Tonight's traces: files and folders of any supported format, and/or a Phoenix query; invalid inputs named.

    Parameters
    ----------
    paths : trace files or folders (any format of :data:`agentcausal.traces.importers.FORMATS`, mixed)
    phoenix : a :class:`~agentcausal.tracers.phoenix.PhoenixQuery`, or None
    format : the files' format (``auto``: detected per file)
    tool_agent : agent name for tool-result steps (default: the calling agent)

    Returns
    -------
    Tonight: every file that matches no format or cannot be read (not UTF-8, malformed, ...) and every
    trace that cannot be imported (no content, a broken span tree) is in ``skipped``, one record each.

    Raises
    ------
    TraceFormatError
        If a path does not exist or two valid traces share an id (nothing is read then).
    TraceStoreError
        If the Phoenix server cannot be read, has no such project or refuses the filter.
    """
    from agentcausal.traces.importers import scan_imports
    from agentcausal.traces.io import check_unique_ids

    traces: list[Trace] = []
    invalid: list[TraceFormatError] = []
    where: list[str] = []
    if paths:
        scan = scan_imports(list(paths), format, tool_agent=tool_agent)
        traces += scan.traces
        invalid += scan.invalid
        where.append(", ".join(str(p) for p in paths))
    if phoenix is not None:
        from agentcausal.tracers.phoenix import load_phoenix

        origin = f"phoenix {phoenix.url} project {phoenix.project}"
        bad: list[tuple[str, str]] = []
        traces += load_phoenix(phoenix, tool_agent=tool_agent, invalid=bad)
        invalid += [TraceFormatError(why, path=origin, field=f"trace {tid}") for tid, why in bad]
        where.append(origin)
    check_unique_ids(traces)
    skipped = [{"path": e.path, "field": e.field, "error": e.detail} for e in invalid]
    return Tonight(traces, skipped, "; ".join(where))


def _run_meta(run_dir: Path) -> dict[str, Any]:
    try:
        meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def merge_corpus(run_dir: str | Path, tonight: Sequence[Trace]) -> NightCorpus:
    """The run folder's corpus with tonight's traces: new ones added, changed ones replaced (by id).

    Parameters
    ----------
    run_dir : the nightly run folder (its ``traces.jsonl`` and ``run.json``, when an earlier night wrote them)
    tonight : the traces read tonight

    Returns
    -------
    NightCorpus. A trace of an earlier night that tonight's window does not hold is kept: the run folder
    always answers for every trace it has seen. An unreadable line of the old corpus is dropped (its trace
    comes back when the inputs hold it again).
    """
    from agentcausal.traces.jsonl import iter_jsonl

    run_dir = Path(run_dir)
    old: dict[str, Trace] = {}
    if (run_dir / CORPUS_FILE).is_file():
        for _, t in iter_jsonl(run_dir / CORPUS_FILE):
            if isinstance(t, Trace):
                old[t.id] = t
    merged = dict(old)
    new, changed = [], []
    for t in tonight:
        before = old.get(t.id)
        if before is None:
            new.append(t.id)
        elif before.facts().sha256 != t.facts().sha256:
            changed.append(t.id)
        merged[t.id] = t
    meta = _run_meta(run_dir)
    got = meta.get("rows")
    rows: dict[str, Any] = got if isinstance(got, dict) else {}
    left_over = int(rows.get("not_run") or 0) + int(rows.get("failed") or 0)
    if old and not (run_dir / "results.parquet").is_file():
        left_over = max(left_over, len(old))  # a corpus without results: the last night stopped before them
    return NightCorpus(list(merged.values()), new, changed, left_over, meta.get("started"))


def night_summary(
    run_dir: str | Path,
    tonight: Tonight,
    corpus: NightCorpus,
    *,
    ran: bool,
    written: int | None = None,
    written_to: str | None = None,
    left_out: int = 0,
) -> dict[str, Any]:
    """One night in numbers, each saying how it was counted (the Prefect artifact's rows, the log's last line).

    Parameters
    ----------
    run_dir : the run folder
    tonight, corpus : what :func:`read_tonight` and :func:`merge_corpus` returned
    ran : whether the attribute run ran tonight (False: nothing new, nothing sent)
    written : annotations or OTLP records written back (None: no write-back)
    written_to : where they went (a Phoenix URL or a file)
    left_out : blamed rows that could not be written (no span id, ...)

    Returns
    -------
    dict: ``read`` (valid traces read tonight), ``skipped`` (inputs left out), ``new``, ``changed``,
    ``attributed`` (rows computed tonight: the run's rows less those the store answered, not run or failed),
    ``not_run`` (held back: spend cap or breaker, computed next night), ``failed``, ``blamed`` (blamed rows in
    the run folder), ``written``, ``written_to``, ``left_out``, ``spent_usd`` (this night, as ``run.json``'s
    ``spend`` prices the endpoint's reported tokens), ``run_total_usd`` (the run folder, every night).
    """
    meta = _run_meta(Path(run_dir)) if ran else {}
    rows = meta.get("rows") or {}
    spend = meta.get("spend") or {}
    total, store = int(rows.get("total") or 0), int(rows.get("from_store") or 0)
    not_run, failed = int(rows.get("not_run") or 0), int(rows.get("failed") or 0)
    blamed = None
    if ran:
        from agentcausal.tracers.blame import blamed_spans

        blamed = len(blamed_spans(run_dir).blamed)
    return {
        "read": len(tonight.traces),
        "skipped": len(tonight.skipped),
        "new": len(corpus.new),
        "changed": len(corpus.changed),
        "attributed": max(0, total - store - not_run - failed),
        "not_run": not_run,
        "failed": failed,
        "blamed": blamed,
        "written": written,
        "written_to": written_to,
        "left_out": left_out,
        "spent_usd": float(((spend.get("actual") or {}).get("total") or {}).get("usd") or 0.0),
        "run_total_usd": spend.get("run_total_usd"),
    }
