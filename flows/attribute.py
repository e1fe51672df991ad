"""The ``attribute`` flow: every (trace, method) pair as a mapped, cached, retried task; then evaluation.

Wiring only: load the corpus, check methods and settings, map
``attribute_trace`` over (trace, method) (with ``--retry-failed``, the pairs
whose cached record is ``content_failed`` or ``degraded`` are mapped with a
cache refresh, so their new record replaces the old under the same key),
record failures that survive the retries as ``status="failed"`` rows (never
cached), mark rows served by Prefect's cache ``reused``, save Parquet,
evaluate, publish a Prefect table, markdown and progress artifacts.

Run it from Python::

    from flows.attribute import attribute
    run_dir = attribute(["data/examples"], methods=["all_at_once", "dcfa"], limit=4)
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefect import flow, unmapped
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, create_table_artifact, \
    update_progress_artifact
from prefect.futures import as_completed

from agentcausal.attribution.common import failed_attribution, resolve_methods
from agentcausal.attribution.paper_tables import speaker_mismatches
from agentcausal.repeats import mark_repeat
from agentcausal.report.attribution import table_records
from agentcausal.settings import RunSettings
from agentcausal.report.artifacts import ProgressLine, corpus_label, self_contained_markdown
from agentcausal.traces.model import Attribution
from flows import naming
from flows.runners import RunnerChoice, with_runner
from tasks.attribution import UncachedDegraded, attribute_options, attribute_task_key, attribute_trace, \
    evaluate_run, load_corpus, save_attributions
from tasks.common import RETRIED_STATUSES, stored_status, was_cached

__all__ = ["attribute", "run_attribute", "default_run_dir"]


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
    plan: dict[str, Any] | None = None,
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
    preset : settings preset (``paper``/``small``); None = the routing's (:mod:`agentcausal.presets`)
    repeats : runs per (trace, method), repeat index r = 0..repeats-1 (:mod:`agentcausal.repeats`)
    plan : the run plan (:mod:`agentcausal.plan`), stored in ``run.json`` as ``plan``

    Returns
    -------
    str, the run folder holding ``results.parquet``, ``run.json``, ``report.md``, ``accuracy.csv``.
    """
    settings = settings or RunSettings.from_env()
    from agentcausal.presets import routing_preset

    preset = preset or routing_preset(settings.profiles_path, settings.routing)
    resolved = resolve_methods(methods, method_settings, with_ground_truth=with_ground_truth, preset=preset)
    paths = naming.corpus_paths(paths, settings)  # empty: the Who&When folder of the settings, resolved now
    traces = load_corpus(paths, ids=ids, limit=limit, max_steps=max_steps, skip_invalid=skip_invalid)
    naming.add_run_tags(resolved, settings, preset=preset, subsets={t.source for t in traces})
    subject = corpus_label(paths)
    run_dir = out_dir or default_run_dir()
    triples = [(t, m, r) for t in traces for m in resolved for r in range(max(1, repeats))]
    pairs = [(t, m) for t, m, _ in triples]
    started = time.time()
    retry = [settings.retry_failed and not settings.refresh
             and stored_status(settings, attribute_task_key(t, m, resolved[m], settings, r)) in RETRIED_STATUSES
             for t, m, r in triples]
    futures: list = [None] * len(pairs)
    for refresh in (False, True):
        idx = [i for i, r in enumerate(retry) if r == refresh]
        if idx:
            mapped = attribute_trace.with_options(**attribute_options(settings, refresh=refresh)).map(
                trace=[pairs[i][0] for i in idx], method=[pairs[i][1] for i in idx],
                method_settings=[resolved[pairs[i][1]] for i in idx], settings=unmapped(settings),
                repeat=[triples[i][2] for i in idx])
            for i, f in zip(idx, mapped):
                futures[i] = f
    bar_id = create_progress_artifact(progress=0.0, key=naming.key("attribute-progress", subject),
                                      description=f"{len(pairs)} (trace, method) pairs")
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(pairs), unit="attribution", desc="attribute")
    line = ProgressLine(len(pairs), "attribute")  # plain lines when stderr is not a terminal
    for done, _ in enumerate(as_completed(list(futures)), 1):
        if bar is not None:
            bar.update(1)
        line.update(done)
        if done % max(1, len(pairs) // 20) == 0 or done == len(pairs):
            update_progress_artifact(bar_id, progress=100.0 * done / max(1, len(pairs)))
    if bar is not None:
        bar.close()
    attributions = []
    for (t, m, r), f in zip(triples, futures):
        res = f.result(raise_on_failure=False)  # the Attribution, or the exception that survived retries
        if isinstance(res, Attribution):  # own id always (never a record of a same-content trace)
            attributions.append(res.model_copy(update={"trace_id": t.id, "method": m,
                                                       "reused": res.reused or was_cached(f)}))
        elif isinstance(res, UncachedDegraded):  # fell back after a failure of the run: kept, not cached
            attributions.append(res.attribution.model_copy(update={"trace_id": t.id, "method": m}))
        else:  # raised: a failure of the run, not of the content; not cached, retried by the next run
            attributions.append(mark_repeat(failed_attribution(t.id, m, _as_exc(res), status="failed"), r))
    meta = {**(meta or {}), "corpus": [str(p) for p in paths], "methods": resolved, "routing": settings.routing,
            "models": {m: a.models for m, a in {a.method: a for a in attributions}.items()},
            "traces": len(traces), "started": dt.datetime.fromtimestamp(started).isoformat(timespec="seconds"),
            "wall_seconds": round(time.time() - started, 2), "profiles": str(settings.profiles_path or "packaged"),
            "retry_failed": settings.retry_failed, "refresh": settings.refresh,
            "preset": preset, "repeats": max(1, repeats), "plan": plan,
            "speaker_mismatch": speaker_mismatches(traces)}
    save_attributions(attributions, traces, run_dir, meta)
    report = evaluate_run(run_dir)
    create_table_artifact(table_records(report.evaluation.overall), key=naming.key("attribution-accuracy", subject),
                          description="Step, agent and both-correct accuracy per method")
    create_markdown_artifact(self_contained_markdown(report.markdown, run_dir),
                             key=naming.key("attribution-report", subject), description=f"run folder {run_dir}")
    return run_dir


def _as_exc(res: object) -> BaseException:
    return res if isinstance(res, BaseException) else RuntimeError(f"task failed: {res!r}"[:500])


def run_attribute(paths: Sequence[str], methods: Sequence[str], *, method_settings: Mapping[str, dict] | None = None,
                  settings: RunSettings | None = None, runner: RunnerChoice | None = None, **kw: Any) -> str:
    """Plain-Python entry point (CLI, demo): :func:`attribute` with list arguments, on ``runner``'s task runner."""
    return with_runner(attribute, runner)(
        paths=[str(p) for p in paths], methods=list(methods),
        method_settings={k: dict(v) for k, v in (method_settings or {}).items()} or None, settings=settings, **kw)
