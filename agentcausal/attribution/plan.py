"""The run plan of ``agentcausal attribute``: the traces by id, path and hash, the methods as they will run.

The schema is :mod:`agentcausal.runs.plan`'s (one for both verbs); this module builds an attribution
plan from trace paths (or traces already read, for an imported corpus).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentcausal.attribution.registry import get_method
from agentcausal.runs.plan import MethodPlan, Plan, PlanItem, SourceFile, absolute_path, missing_keys, \
    profile_params, routed_profiles, sha256_file, stage_models
from agentcausal.traces.io import _raise_all, scan_traces, select_traces

__all__ = ["attribute_plan"]


def attribute_plan(paths: Sequence[str], methods: Sequence[str] = (), *,
                   resolved: Mapping[str, Mapping[str, Any]],
                   preset: str, routing: str, profiles_path: str | None = None, ids: Sequence[str] | None = None,
                   limit: int | None = None, max_steps: int | None = None, repeats: int = 1,
                   skip_invalid: bool = False, traces: Sequence[tuple[str, Any]] | None = None,
                   sources: Sequence[SourceFile] | None = None, labels: SourceFile | None = None) -> Plan:
    """The plan of ``agentcausal attribute``.

    Parameters
    ----------
    paths : trace folders/files as given
    methods : method names
    resolved : method -> resolved settings (:func:`agentcausal.attribution.registry.resolve_methods`)
    preset : str, the preset the settings were resolved with
    routing, profiles_path : the routing and profiles file
    ids, limit, max_steps : the trace selection (:func:`agentcausal.traces.io.select_traces`)
    repeats : int, runs per (trace, method)
    skip_invalid : leave out invalid trace inputs (as the flow does with ``--skip-invalid``)
    traces : (file, Trace) pairs already read (imported formats); None = read ``paths``
    sources, labels : provenance of an imported corpus (:func:`source_files`); None when not imported

    Returns
    -------
    Plan

    Raises
    ------
    TraceFormatError, ConfigError
        On a malformed trace file or an unknown routing/method.
    """
    if traces is None:  # one read of the corpus: the traces and the file each came from
        scan = scan_traces(list(paths))
        if not skip_invalid:
            _raise_all(scan.invalid)
        traces = list(zip(scan.origins, scan.traces, strict=True))
    origin = {t.id: absolute_path(p) for p, t in traces}  # absolute: run.json read from any directory names the file
    traces = select_traces([t for _, t in traces], ids=ids, limit=limit, max_steps=max_steps)
    profiles = routed_profiles(profiles_path, routing)
    all_stages: list[str] = []
    mplans = {}
    for m in methods:
        spec = get_method(m)
        st = dict(resolved[m])
        stages = list(spec.stages)
        if st.get("with_ground_truth") is False:
            stages = [s for s in stages if not s.endswith(".embed")]  # the no-truth DCFA scores with a judge
        all_stages += stages
        mplans[m] = MethodPlan(preset=preset, variant="with_truth" if st.get("with_ground_truth", True) else "no_truth",
                               settings=st, stages=stage_models(profiles, stages),
                               profile_params=profile_params(profiles, stages))
    file_hash: dict[str, str | None] = {}
    for p in {origin[t.id] for t in traces}:
        file_hash[p] = sha256_file(Path(p)) if Path(p).is_file() else None
    items = [PlanItem(id=t.id, path=origin[t.id], sha256=t.content_hash(), file_sha256=file_hash[origin[t.id]])
             for t in traces]
    return Plan(kind="attribute", routing=routing, preset=preset, items=items, methods=mplans, repeats=repeats,
                missing_keys=missing_keys(profiles, all_stages),
                sources=list(sources) if sources is not None else None, labels=labels)


