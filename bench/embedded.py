"""Benchmark 5 (opt-in, long): every attribution method on a fixed selection of the development split,
with the embedded model (the default routing: Qwen2.5-Coder-0.5B through llama.cpp on the CPU).

The selection is the ``k`` shortest Algorithm-Generated traces by characters
(ties by file number), so it is fixed for a given split and grows from the
cheapest end. Each (trace, method) runs alone through
:func:`agentcausal.attribution.jobs.run_method`, one after the other, and the
results are rewritten after every run, so an interrupted run keeps what it
measured. The LLM cache is ``cache/bench-embedded`` (not the project's
``cache/llm``), so numbers are not served from another run's cache; rerunning
reuses it, and the ``cache_hits`` column shows that.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentcausal.attribution.evaluate import agent_match, step_match
from agentcausal.attribution.jobs import run_method
from agentcausal.attribution.method_settings import resolve_methods
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.settings import RunSettings
from agentcausal.traces.model import Trace
from bench.common import REPO, md_table

__all__ = ["embedded_preset", "embedded_selection", "run_embedded", "embedded_markdown"]


def embedded_preset(preset: str | None = None, settings: RunSettings | None = None) -> str:
    """The method-settings preset of an embedded run: ``preset`` when given, else the one the active
    routing names in the profiles file (:func:`agentcausal.settings.routing_preset`; ``small`` for the
    default routing, whose model is the embedded 0.5B one).

    >>> embedded_preset("paper")
    'paper'
    >>> embedded_preset(settings=RunSettings(routing="default"))
    'small'
    """
    if preset:
        return preset
    from agentcausal.settings import routing_preset

    rs = settings or RunSettings.from_env()
    return routing_preset(rs.profiles_path, rs.routing)


def embedded_selection(root: Path, k: int) -> list[Trace]:
    """The ``k`` shortest Algorithm-Generated traces (by characters of all steps) of the split at ``root``."""
    from agentcausal.traces.whowhen import load_who_and_when

    ag = load_who_and_when(root, subsets=("Algorithm-Generated",))
    ag.sort(key=lambda t: (sum(len(s.content) for s in t.steps), int(t.id.rsplit("/", 1)[-1])))
    return ag[:k]


def run_embedded(
    traces: Sequence[Trace],
    methods: Sequence[str] | None = None,
    *,
    preset: str | None = None,
    cache_dir: Path = REPO / "cache" / "bench-embedded",
    on_row: Callable[[list], None] | None = None,
    log=print,
) -> dict[str, Any]:
    """Every method on every trace with the default routing; one row per (trace, method).

    Parameters
    ----------
    traces : the traces (:func:`embedded_selection`)
    methods : method names; None = every registered method
    preset : ``"paper"``, ``"small"`` or None (the routing's preset, :func:`embedded_preset`:
        ``small`` for the default routing)
    cache_dir, on_row, log : the LLM cache folder, a callback after every row, the progress printer

    Returns
    -------
    dict with ``preset`` (the preset used), ``rows`` (trace, method, steps, seconds, requests,
    cache hits, prompt and completion tokens, predicted and true step, step/agent correct, error)
    and ``summary`` per method (means per trace, accuracies).
    """
    methods = list(methods or sorted(ATTRIBUTION_METHODS))
    rs = RunSettings.from_env(cache_dir=str(cache_dir))
    preset = embedded_preset(preset, rs)
    settings = resolve_methods(ATTRIBUTION_METHODS, methods, preset=preset)
    gw = rs.gateway()  # replies under <cache_dir>/llm
    rows: list[dict[str, Any]] = []
    try:
        for t in traces:
            for m in methods:
                t0 = time.perf_counter()
                a = run_method(t, ATTRIBUTION_METHODS[m], gw, settings.get(m))
                wall = time.perf_counter() - t0
                tot = {
                    k: sum(u.get(k, 0) for u in a.usage.values())
                    for k in ("requests", "cache_hits", "prompt_tokens", "completion_tokens")
                }
                label = t.label
                row = {
                    "trace": t.id,
                    "method": m,
                    "steps": len(t),
                    "kchars": round(sum(len(s.content) for s in t.steps) / 1000, 1),
                    "seconds": round(wall, 1),
                    **{k: int(v) for k, v in tot.items()},
                    "pred_step": a.step,
                    "true_step": label.step if label else None,
                    "step_correct": step_match(a.step, label.step if label else None),
                    "agent_correct": agent_match(a.agent, label.agent if label else None),
                    "model": ", ".join(sorted(set(a.models.values()))),
                    "error": a.error,
                }
                rows.append(row)
                log(
                    f"  {t.id} {m}: {row['seconds']:.0f} s, {row['prompt_tokens']} prompt + "
                    f"{row['completion_tokens']} completion tokens, step {a.step} (true {row['true_step']})"
                    f"{' ERROR ' + a.error[:120] if a.error else ''}"
                )
                if on_row is not None:
                    on_row(rows)
    finally:
        gw.close()
    return {
        "traces": [t.id for t in traces],
        "methods": methods,
        "preset": preset,
        "rows": rows,
        "summary": summarise(rows),
    }


def summarise(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in dict.fromkeys(r["method"] for r in rows):
        g = [r for r in rows if r["method"] == m]
        out.append(
            {
                "method": m,
                "traces": len(g),
                "errors": sum(1 for r in g if r["error"]),
                "seconds_per_trace": round(statistics.mean(r["seconds"] for r in g), 1),
                "requests_per_trace": round(statistics.mean(r["requests"] for r in g), 1),
                "prompt_tokens_per_trace": round(statistics.mean(r["prompt_tokens"] for r in g)),
                "completion_tokens_per_trace": round(statistics.mean(r["completion_tokens"] for r in g)),
                "cache_hits": sum(r["cache_hits"] for r in g),
                "step_accuracy": round(statistics.mean(1.0 if r["step_correct"] else 0.0 for r in g), 2),
                "agent_accuracy": round(statistics.mean(1.0 if r["agent_correct"] else 0.0 for r in g), 2),
            }
        )
    return out


def embedded_markdown(payload: dict[str, Any], machine: dict[str, Any]) -> str:
    models = sorted({m for r in payload["rows"] for m in r["model"].split(", ") if m})
    return (
        "# Embedded-model accuracy and cost per trace\n\n"
        f"Model: {', '.join(models) or '-'} (default routing). Method-settings preset: "
        f"{payload.get('preset') or 'not recorded (a run before presets were recorded)'}. "
        f"Traces: {', '.join(payload['traces'])} "
        "(the shortest Algorithm-Generated traces of the development split). With so few traces the "
        "accuracies say little; the seconds and tokens per trace are the point. Methods run one after "
        "the other on one LLM cache, so a call another method already made is a cache hit (`dcfa_gca_only` "
        "repeats DCFA's GCA calls, so it costs nothing after `dcfa`: its cost is DCFA's GCA part). "
        f"Machine: {machine['cpus']} cores, load average {machine['load_avg_1_5_15']}, {machine['when']}.\n\n"
        + md_table(payload["summary"])
        + "\n## Per trace\n\n"
        + md_table(
            payload["rows"],
            [
                "trace",
                "method",
                "steps",
                "kchars",
                "seconds",
                "requests",
                "cache_hits",
                "prompt_tokens",
                "completion_tokens",
                "pred_step",
                "true_step",
                "step_correct",
                "agent_correct",
                "error",
            ],
        )
    )
