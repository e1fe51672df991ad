"""The run plan of ``agentcausal attribute``: the traces by id, path and hash, the methods as they will run.

The schema is :mod:`agentcausal.runs.plan`'s (one for both verbs). :func:`attribute_plan` reads the
corpus as a stream (:func:`agentcausal.traces.io.iter_traces`): each trace is validated, selected
(``ids``, ``max_steps``, ``limit``, in that order), hashed, handed to the plan's writer as one item
and let go, so a corpus of any size is planned in the memory of one trace. Every input is read
before anything is refused: invalid ones are refused together at the end, or (``skip_invalid``)
listed in the plan's ``skipped``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agentcausal.attribution.estimate import TraceCalls, add_calls
from agentcausal.attribution.method_settings import resolve_methods
from agentcausal.attribution.plan_model import AttributionPlan, AttributionRequest
from agentcausal.attribution.scan_cache import ScanCache, TraceSummary
from agentcausal.attribution.spec import AttributionSpec
from agentcausal.exceptions import CorruptStoreError, InvalidTracesError, TraceFormatError
from agentcausal.methods import MethodTable
from agentcausal.runs.estimate import Estimator
from agentcausal.runs.items import remember_file_sha256
from agentcausal.runs.plan import (
    ITEMS_FILE,
    MethodPlan,
    PlanItem,
    PlanWriter,
    SourceFile,
    absolute_path,
    missing_keys,
    profile_params,
    routed_profiles,
    sha256_file,
    stage_models,
)
from agentcausal.settings import RunSettings, routing_preset
from agentcausal.traces.importers.labels import require_ground_truth
from agentcausal.traces.io import ReusedTrace, ScannedTrace, iter_traces
from agentcausal.traces.model import Trace

__all__ = ["attribute_plan", "method_plans", "plan_attribution"]


def method_plans(
    methods: Sequence[AttributionSpec[Any]], resolved: Mapping[str, Mapping[str, Any]], preset: str, profiles: Any
) -> tuple[dict[str, MethodPlan], list[str]]:
    """Each method as it will run (settings, stages with their models, what the profile applies), and every
    stage the run calls (the no-truth DCFA scores with a judge, not the embedder)."""
    stages_all: list[str] = []
    out = {}
    for spec in methods:
        st = dict(resolved[spec.name])
        stages = [s for s in spec.stages if st.get("with_ground_truth") is not False or not s.endswith(".embed")]
        stages_all += stages
        out[spec.name] = MethodPlan(
            preset=preset,
            variant="with_truth" if st.get("with_ground_truth", True) else "no_truth",
            settings=st,
            stages=stage_models(profiles, stages),
            profile_params=profile_params(profiles, stages),
        )
    return out, stages_all


def _scanned(
    paths: Sequence[str], traces: Sequence[tuple[str, Trace]] | None, scan: ScanCache | None
) -> Iterable[ScannedTrace | ReusedTrace | TraceFormatError]:
    if traces is None:
        return iter_traces(list(paths), reuse=scan.reuse if scan is not None else None)
    return (ScannedTrace(t, str(p), None) for p, t in traces)


def _scan_cache(
    scan_dir: str | Path | None, refresh: bool, resolved: Mapping[str, Any], profiles: Any
) -> ScanCache | None:
    if scan_dir is None:
        return None
    try:
        return ScanCache(
            scan_dir, context={"resolved": resolved, "profiles": profiles.model_dump(mode="json")}, refresh=refresh
        )
    except (CorruptStoreError, OSError) as exc:  # never stops a plan: every file is read
        print(f"agentcausal: plan-scan cache {scan_dir} not used ({exc}): every trace file is read", file=sys.stderr)
        return None


def attribute_plan(
    paths: Sequence[str],
    methods: Sequence[AttributionSpec[Any]] = (),
    *,
    resolved: Mapping[str, Mapping[str, Any]],
    preset: str,
    routing: str,
    profiles_path: str | None = None,
    ids: Sequence[str] | None = None,
    limit: int | None = None,
    max_steps: int | None = None,
    repeats: int = 1,
    skip_invalid: bool = False,
    traces: Sequence[tuple[str, Trace]] | None = None,
    sources: Sequence[SourceFile] | None = None,
    labels: SourceFile | None = None,
    require_truth: bool = False,
    items_file: str | Path | None = None,
    keep_items: int | None = None,
    scan_dir: str | Path | None = None,
    refresh: bool = False,
) -> AttributionPlan:
    """The plan of ``agentcausal attribute``, its items streamed into ``items_file`` (or kept in memory).

    Parameters
    ----------
    paths : trace folders/files as given
    methods : the methods, in order (specs of :data:`agentcausal.registry.ATTRIBUTION_METHODS`)
    resolved : method -> resolved settings (:func:`agentcausal.attribution.method_settings.resolve_methods`)
    preset : str, the preset the settings were resolved with
    routing, profiles_path : the routing and profiles file
    ids, limit, max_steps : the trace selection (as :func:`agentcausal.traces.io.select_traces`)
    repeats : int, runs per (trace, method)
    skip_invalid : leave out invalid trace inputs (listed on stderr and in the plan's ``skipped``)
    traces : (file, Trace) pairs already read (imported formats); None = read ``paths``
    sources, labels : provenance of an imported corpus (:func:`~agentcausal.runs.plan.source_files`)
    require_truth : refuse selected traces without ground truth (all named in one message)
    items_file : where the items are written, one line each (``plan.items.jsonl`` of the run folder);
        None keeps them in memory
    keep_items : items kept in memory at most when there is no file (a dry run shows the first)
    scan_dir : folder of the plan-scan cache (:mod:`agentcausal.attribution.scan_cache`): an unchanged JSONL
        file is planned from what an earlier plan read of it; None reads every file
    refresh : read no plan-scan record (store what is read)

    Returns
    -------
    AttributionPlan

    Raises
    ------
    TraceFormatError
        On a malformed trace input (each invalid one named, unless ``skip_invalid``), unknown ``ids``
        or no valid trace at all.
    ConfigError
        On an unknown routing, or (``require_truth``) selected traces without ground truth.
    """
    profiles = routed_profiles(profiles_path, routing)
    mplans, stages = method_plans(methods, resolved, preset, profiles)
    estimator = Estimator(profiles, times=repeats)
    writer = PlanWriter(items_file, keep=keep_items)
    invalid: list[TraceFormatError] = []
    wanted = set(ids) if ids is not None else None
    found: set[str] = set()
    seen_ids: list[str] = []  # only with ``ids``: the hint of an unknown id names a few real ones
    no_truth: list[str] = []
    file_hash: dict[str, str | None] = {}
    abs_paths: dict[str, str] = {}  # absolute (run.json read from any directory names the file), once per file
    chosen = {m: resolved[m] for m in mplans}
    counted = TraceCalls(methods, chosen, profiles)  # each method's settings validated, and budget taken, once
    scan = _scan_cache(scan_dir, refresh, chosen, profiles) if traces is None else None
    try:
        for x in _scanned(paths, traces, scan):
            if isinstance(x, TraceFormatError):
                invalid.append(x)
                if scan is not None and x.path:
                    scan.spoil(x.path)
                continue
            tid = x.id if isinstance(x, ReusedTrace) else x.trace.id
            summary = x.summary if isinstance(x, ReusedTrace) else None
            if wanted is not None:
                if len(seen_ids) < 1000:
                    seen_ids.append(tid)
                if tid not in wanted:
                    _spoil(scan, x)
                    continue
                found.add(tid)
            n_steps = summary.facts.n_steps if summary is not None else len(x.trace)  # type: ignore[union-attr]
            if (max_steps is not None and n_steps > max_steps) or (limit is not None and writer.count >= limit):
                _spoil(scan, x)
                continue
            if summary is None:
                t = x.trace  # type: ignore[union-attr]
                summary = TraceSummary(t.facts(), bool(t.ground_truth.strip()), counted(t))
                if scan is not None:
                    scan.record(x.path, tid, x.offset, summary)
            if require_truth and not summary.has_truth:
                no_truth.append(tid)
            path = abs_paths.get(x.path) or abs_paths.setdefault(x.path, absolute_path(x.path))
            if path not in file_hash:
                known = (scan.file_sha256.get(x.path), scan.file_stat.get(x.path)) if scan is not None else None
                file_hash[path] = _file_sha256(path, known)
            facts = summary.facts
            writer.add(
                PlanItem(
                    id=tid, path=path, offset=x.offset, sha256=facts.sha256, file_sha256=file_hash[path], facts=facts
                )
            )
            add_calls(estimator, summary.calls)
        if scan is not None:
            scan.flush()
            if scan.reused_files:
                print(
                    f"agentcausal: plan: {scan.reused_files} unchanged trace file(s) planned from the plan-scan cache "
                    f"(not parsed again)",
                    file=sys.stderr,
                )
        _refuse(invalid, skip_invalid, wanted, found, seen_ids, writer.count, paths)
        if no_truth:
            stand_ins = [SimpleNamespace(id=i, ground_truth="") for i in no_truth]  # the two fields it reads
            require_ground_truth(stand_ins)  # type: ignore[arg-type]  # stand-ins, not Traces
    except BaseException:
        writer.abort()
        raise
    finally:
        if scan is not None:
            scan.close()
    return writer.close(
        AttributionPlan,
        routing=routing,
        preset=preset,
        methods=mplans,
        repeats=repeats,
        missing_keys=missing_keys(profiles, stages),
        estimate=estimator.result(),
        sources=list(sources) if sources is not None else None,
        labels=labels,
        skipped=[{"path": e.path, "field": e.field, "error": e.detail} for e in invalid] if skip_invalid else None,
    )


def _file_sha256(path: str, known: tuple[str | None, os.stat_result | None] | None) -> str | None:
    """The sha256 of an item's file (``known``: what the plan-scan cache hashed, and the file's stat before), or
    None when it is no file; kept for this process's items (:func:`~agentcausal.runs.items.remember_file_sha256`)
    while the file stays the version that was hashed, so a task in this process does not hash it again."""
    sha, before = known if known is not None else (None, None)
    if sha is None:
        if not Path(path).is_file():
            return None
        try:
            before = os.stat(path)
        except OSError:
            before = None
        sha = sha256_file(path)
    if before is not None:
        remember_file_sha256(path, sha, before)
    return sha


def _spoil(scan: ScanCache | None, x: ScannedTrace | ReusedTrace) -> None:
    """A trace left out of the plan: its file (read, not reused) is not planned whole, so not stored."""
    if scan is not None and isinstance(x, ScannedTrace):
        scan.spoil(x.path)


def _refuse(
    invalid: list[TraceFormatError],
    skip_invalid: bool,
    wanted: set[str] | None,
    found: set[str],
    seen_ids: list[str],
    count: int,
    paths: Sequence[str],
) -> None:
    """Refuse the invalid inputs (all at once), unknown ids, or a corpus without a valid trace."""
    if invalid and not skip_invalid:
        raise invalid[0] if len(invalid) == 1 else InvalidTracesError(invalid)
    if invalid:
        print(f"agentcausal: skipping {len(invalid)} invalid trace input(s):", file=sys.stderr)
        for e in invalid:
            print(f"  {e}", file=sys.stderr)
    if wanted is not None and wanted - found:
        missing = [i for i in wanted if i not in found]
        some = sorted(seen_ids)[:5]
        hint = (
            f"; ids here look like {', '.join(some)}{' ...' if len(seen_ids) > 5 else ''}"
            if some
            else "; no traces were read"
        )
        raise TraceFormatError(f"unknown trace ids: {', '.join(sorted(missing)[:10])}{hint}")
    if not count:
        raise TraceFormatError("no valid trace to run", path=", ".join(str(p) for p in paths))


def plan_attribution(
    request: AttributionRequest,
    settings: RunSettings,
    methods: MethodTable[AttributionSpec[Any]],
    *,
    run_dir: str | Path,
) -> AttributionPlan:
    """The plan of an attribution request (what a scheduled ``attribute`` flow run is given): methods resolved
    under the preset (the request's, else the routing's), the plan's items streamed into
    ``<run_dir>/plan.items.jsonl``.

    Parameters
    ----------
    request : AttributionRequest, its ``paths`` already resolved (an empty ``paths`` is the flow's to fill)
    settings : RunSettings (routing, profiles file)
    methods : the table the request's methods are looked up in (:data:`agentcausal.registry.ATTRIBUTION_METHODS`)
    run_dir : the run folder

    Raises
    ------
    ConfigError, TraceFormatError
        As :func:`~agentcausal.attribution.method_settings.resolve_methods` and :func:`attribute_plan`.
    """
    preset = request.preset or routing_preset(settings.profiles_path, settings.routing)
    resolved = resolve_methods(
        methods, request.methods, request.method_settings, with_ground_truth=request.with_ground_truth, preset=preset
    )
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    return attribute_plan(
        request.paths,
        [methods[m] for m in resolved],
        resolved=resolved,
        preset=preset,
        routing=settings.routing,
        profiles_path=settings.profiles_path,
        items_file=Path(run_dir) / ITEMS_FILE,
        ids=request.ids,
        limit=request.limit,
        max_steps=request.max_steps,
        repeats=request.repeats,
        skip_invalid=request.skip_invalid,
        scan_dir=Path(settings.cache_dir) / "plan-scan",
        refresh=settings.refresh,
    )
