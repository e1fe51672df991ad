"""The ``attribute`` flow: every (trace, method) pair not yet finished as a cached, retried task; then evaluation.

Wiring only. The flow receives the run plan (:class:`agentcausal.runs.plan.Plan`:
items by id, path and sha256, methods with resolved settings; the CLI builds
it once, a Python caller may pass plain paths and the flow builds it), and
passes tasks plan items, never traces: each task loads its own trace from its
path and checks its hash (:mod:`agentcausal.runs.items`). It looks every (trace,
method) up in the results index (:mod:`agentcausal.resume`: reused rows need
no task run), submit the missing ones, one method at a time, as chunk tasks
``attribute_chunk`` of up to ``chunk_size`` traces (each trace cached on its
own as it finishes) or, for a small corpus or ``chunk_size=1``, one
``attribute_trace`` task per trace (with ``--retry-failed``, the pairs whose
stored record is ``content_failed`` or ``degraded`` are run again with a
cache refresh, so their new record replaces the old under the same key),
record failures that survive the retries as ``status="failed"`` rows (never
cached), mark reused rows ``reused`` (and list them in a table artifact),
save Parquet, evaluate, publish a Prefect table, markdown and progress artifacts.

Run it from Python::

    from flows.attribute import attribute
    run_dir = attribute(["data/examples"], methods=["all_at_once", "dcfa"], limit=4)
    run_dir = attribute([], plan=attribute_plan(...))   # what the CLI does
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefect import flow, unmapped
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.futures import as_completed
from prefect.utilities.annotations import quote

from agentcausal.attribution.jobs import failed_attribution
from agentcausal.attribution.registry import resolve_methods
from agentcausal.attribution.plan import attribute_plan
from agentcausal.runs.plan import Plan
from agentcausal.repeats import mark_repeat
from agentcausal.report.attribution import table_records
from agentcausal.runs.scheduling import chunk_length, chunked
from agentcausal.settings import RunSettings
from agentcausal.report.artifacts import corpus_label, self_contained_markdown
from agentcausal.traces.model import Attribution
from flows import naming
from flows.progress import RunProgress
from flows.runners import RunnerChoice, with_runner
from tasks.attribution import UncachedDegraded, attribute_chunk, attribute_options, attribute_task_key, \
    attribute_trace, evaluate_run, save_attributions
from tasks.common import plan_task_resume, result_index, was_cached

__all__ = ["attribute", "run_attribute", "default_run_dir", "DEFAULT_CHUNK_SIZE"]

#: traces per task by default (``--chunk-size``; :func:`agentcausal.runs.scheduling.chunk_length` keeps at least
#: 8 tasks per method, so small corpora keep one task run per trace); measured in bench/results/scale.json
DEFAULT_CHUNK_SIZE = 25


def default_run_dir(out_root: str = "runs") -> str:
    """``runs/attribute-YYYYmmdd-HHMMSS``."""
    return str(Path(out_root) / f"attribute-{dt.datetime.now():%Y%m%d-%H%M%S}")


@flow(name="attribute", log_prints=True, flow_run_name=naming.attribute_run_name)
def attribute(
    paths: list[str],
    methods: list[str] = ["all_at_once"],  # noqa: B006 (Prefect parameters are copied)
    method_settings: dict[str, dict[str, Any]] | None = None,
    settings: RunSettings | None = None,
    limit: int | None = None,
    ids: list[str] | None = None,
    max_steps: int | None = None,
    with_ground_truth: bool | None = None,
    out_dir: str | None = None,
    progress: bool = False,
    skip_invalid: bool = False,
    meta: dict[str, Any] | None = None,
    preset: str | None = None,
    repeats: int = 1,
    plan: Plan | dict[str, Any] | None = None,
    chunk_size: int | None = None,
) -> str:
    """Attribute every selected trace with every method; write a run folder; return its path.

    Parameters
    ----------
    paths : folders or files (Who&When folder or ``*.json``, our ``*.jsonl``)
    methods : registered method names
    method_settings : method -> settings values (defaults for the rest)
    settings : RunSettings (routing, cache folder, refresh); default from the environment
    limit, ids, max_steps : selection (see :func:`agentcausal.traces.io.select_traces`)
    with_ground_truth : override for every method that has the setting
    out_dir : the run folder; default ``runs/attribute-<timestamp>``
    progress : show a tqdm bar on stderr
    skip_invalid : leave out invalid trace files (and JSONL lines) instead of refusing the corpus
    meta : extra entries for ``run.json`` (the CLI passes ``{"skipped": [...]}``, the inputs it left out)
    preset : settings preset (``paper``/``small``); None = the routing's (:mod:`agentcausal.settings`)
    repeats : runs per (trace, method), repeat index r = 0..repeats-1 (:mod:`agentcausal.repeats`)
    plan : the run plan (:class:`agentcausal.runs.plan.Plan` or its JSON dict). When given, it is what runs: its
        items (traces by id, path and sha256), methods with their resolved settings, preset and repeats;
        ``methods``, ``method_settings``, ``with_ground_truth``, ``preset``, ``repeats``, the selection
        (``limit``, ``ids``, ``max_steps``) and ``skip_invalid`` are then not read, and ``paths`` only names
        the corpus in ``run.json``. None: the flow builds it from those arguments
        (:func:`agentcausal.attribution.plan.attribute_plan`, one read of the corpus). Stored in ``run.json`` as ``plan``.
    chunk_size : traces per task, at most (default :data:`DEFAULT_CHUNK_SIZE`; fewer when a method has
        under 8 chunks' worth, see :func:`agentcausal.runs.scheduling.chunk_length`); 1 = one cached task run per
        (trace, method); more = one task per chunk of one method's traces, each trace cached in the
        results index as it finishes

    Returns
    -------
    str, the run folder holding ``results.parquet``, ``run.json``, ``report.md``, ``accuracy.csv``.
    """
    settings = settings or RunSettings.from_env()
    paths = naming.corpus_paths(paths, settings)  # empty: the Who&When folder of the settings, resolved now
    if plan is None:
        from agentcausal.settings import routing_preset

        preset = preset or routing_preset(settings.profiles_path, settings.routing)
        resolved = resolve_methods(methods, method_settings, with_ground_truth=with_ground_truth, preset=preset)
        plan = attribute_plan(paths, list(resolved), resolved=resolved, preset=preset, routing=settings.routing,
                              profiles_path=settings.profiles_path, ids=ids, limit=limit, max_steps=max_steps,
                              repeats=max(1, repeats), skip_invalid=skip_invalid)
    plan = plan if isinstance(plan, Plan) else Plan.model_validate(plan)
    items, preset, repeats = plan.items, plan.preset, plan.repeats
    resolved = {m: dict(mp.settings) for m, mp in plan.methods.items()}
    naming.add_run_tags(resolved, settings, preset=preset)
    subject = corpus_label(paths)
    run_dir = out_dir or default_run_dir()
    triples = [(t, m, r) for t in items for m in resolved for r in range(max(1, repeats))]
    pairs = [(t, m) for t, m, _ in triples]
    started = time.time()
    keys = [attribute_task_key(t, m, resolved[m], settings, r) for t, m, r in triples]
    index = result_index(settings, "attribute")
    resume = plan_task_resume(keys, index, settings)
    run, rerun = resume.run, resume.rerun
    groups: list[tuple[list[int], Any, bool]] = []  # (positions, future, chunk task?) in submission order
    for idx, refresh in ((run, settings.refresh), (rerun, True)):
        for m in resolved:
            mine = [i for i in idx if pairs[i][1] == m]
            size = chunk_length(len(mine), chunk_size or DEFAULT_CHUNK_SIZE)
            if mine and size <= 1:  # one cached task run per (trace, repeat)
                mapped = attribute_trace.with_options(**attribute_options(settings, refresh=refresh)).map(
                    item=[pairs[i][0] for i in mine], method=unmapped(m), method_settings=unmapped(resolved[m]),
                    settings=unmapped(settings), repeat=[triples[i][2] for i in mine])
                groups += [([i], f, False) for i, f in zip(mine, mapped)]
                continue
            for chunk in chunked(mine, size):
                f = attribute_chunk.submit(quote([pairs[i][0] for i in chunk]), m, resolved[m], settings,
                                           repeats=[triples[i][2] for i in chunk],
                                           not_before=started if refresh else None)
                groups.append((chunk, f, True))
    results: dict[int, Any] = dict(resume.reused)
    shown = RunProgress(len(pairs), len(results), desc="attribute", unit="attribution", bar=progress,
                        key=naming.key("attribute-progress", subject),
                        description=f"{len(pairs)} (trace, method) pairs, {len(results)} reused")
    positions = {id(f): (chunk, is_chunk) for chunk, f, is_chunk in groups}
    for f in as_completed([f for _, f, _ in groups]):
        chunk, is_chunk = positions[id(f)]
        res = f.result(raise_on_failure=False)  # an Attribution, a list of them, or the exception left after retries
        for k, i in enumerate(chunk):
            results[i] = _one(res, k, f, is_chunk, index, keys[i], started)
        shown.advance(len(chunk))
    shown.close()
    attributions = []
    for i, (t, m, r) in enumerate(triples):
        res = results.get(i)
        if isinstance(res, Attribution):  # own id always (never a record of a same-content trace)
            attributions.append(res.model_copy(update={"trace_id": t.id, "method": m}))
        elif isinstance(res, UncachedDegraded):  # fell back after a failure of the run: kept, not cached
            attributions.append(res.attribution.model_copy(update={"trace_id": t.id, "method": m}))
        else:  # raised: a failure of the run, not of the content; not cached, retried by the next run
            attributions.append(mark_repeat(failed_attribution(t.id, m, _as_exc(res), status="failed"), r))
    _publish_reuse(attributions, len(resume.reused), subject)
    meta = {**(meta or {}), "corpus": [str(Path(p).resolve()) for p in paths], "methods": resolved,
            "routing": settings.routing,
            "models": {m: a.models for m, a in {a.method: a for a in attributions}.items()},
            "traces": len(items), "started": dt.datetime.fromtimestamp(started).isoformat(timespec="seconds"),
            "wall_seconds": round(time.time() - started, 2), "profiles": str(settings.profiles_path or "packaged"),
            "retry_failed": settings.retry_failed, "refresh": settings.refresh,
            "preset": preset, "repeats": max(1, repeats), "plan": plan.to_json_dict()}
    save_attributions(quote(attributions), quote(items), run_dir, meta)  # quote: Prefect visits no record
    report = evaluate_run(run_dir)
    naming.add_run_tags(resolved, settings, preset=preset, subsets=_subsets(report))
    create_table_artifact(table_records(report.evaluation.overall), key=naming.key("attribution-accuracy", subject),
                          description="Step, agent and both-correct accuracy per method")
    create_markdown_artifact(self_contained_markdown(report.markdown, run_dir),
                             key=naming.key("attribution-report", subject), description=f"run folder {run_dir}")
    return run_dir


def _subsets(report: Any) -> set[str]:
    """The corpus subsets (``Trace.source``) the evaluation found, for the run's tags."""
    by = report.evaluation.by_subset
    return {str(s) for s in by["subset"]} if "subset" in getattr(by, "columns", ()) else set()


def _one(res: Any, k: int, future: Any, chunk: bool, index: Any, key: str, started: float) -> Any:
    """The record of the k-th item of a finished task (stored in the index), or the exception that survived."""
    if chunk and isinstance(res, list):
        return res[k]  # the chunk task stored it
    if chunk:  # the chunk failed after its retries: its finished items are in the index
        return index.get(key, not_before=started) or res
    if isinstance(res, Attribution):
        res = res.model_copy(update={"reused": res.reused or was_cached(future)})
        index.put(key, res)
    return res


def _publish_reuse(rows: Sequence[Attribution], reused_from_index: int, subject: str) -> None:
    """A table artifact of the reused rows (first 1,000) and a log line with the counts."""
    reused = [a for a in rows if a.reused]
    print(f"attribute: {len(reused)} of {len(rows)} (trace, method) results reused "
          f"({reused_from_index} from the results index without a task run)")
    if reused:
        create_table_artifact(
            [{"trace_id": a.trace_id, "method": a.method, "status": a.status} for a in reused[:1000]],
            key=naming.key("attribute-reused", subject),
            description=(f"{len(reused)} of {len(rows)} results reused, {reused_from_index} of them from the results "
                         f"index (no task run){'; first 1,000 listed' if len(reused) > 1000 else ''}"))


def _as_exc(res: object) -> BaseException:
    return res if isinstance(res, BaseException) else RuntimeError(f"task failed: {res!r}"[:500])


def run_attribute(paths: Sequence[str], methods: Sequence[str], *, method_settings: Mapping[str, dict] | None = None,
                  settings: RunSettings | None = None, runner: RunnerChoice | None = None, **kw: Any) -> str:
    """Plain-Python entry point (CLI, demo): :func:`attribute` with list arguments, on ``runner``'s task runner."""
    return with_runner(attribute, runner)(
        paths=[str(p) for p in paths], methods=list(methods),
        method_settings={k: dict(v) for k, v in (method_settings or {}).items()} or None, settings=settings, **kw)
