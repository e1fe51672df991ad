"""Client CPU per LLM request, and where it goes: ``python -m bench.profile [--traces 2000] [--label L]``.

The ``attribute`` flow (:func:`flows.attribute.run_attribute`, the thread runner) over ``--traces``
synthetic traces (:func:`agentcausal_fakes.synthetic.iter_synthetic_traces`, one JSONL file) against the
fake OpenAI server (test double, :mod:`bench.server`: a child process, latency ``--latency-ms``, default
0, so the run is bound by the client alone), with All-at-Once and optionally DCFA (``--dcfa-traces``).
Prefect's temporary API is started first by a warm-up flow, and a 10-trace flow on its own cache
warms imports, HTTP clients and cache files; neither is timed.

Each method gets two runs on fresh caches:

* **measured** (this process, no profiler): :func:`bench.scale.scale_row` (first run only);
  ``cpu_ms_per_request`` = this process's CPU time (``time.process_time``: every thread, Prefect's
  included) during the flow call / requests at the server. Plan and report are in it.
* **profiled** (a spawned process of its own, on this process's Prefect API): ``cProfile`` on every
  thread (one profiler per thread, timer ``time.thread_time``: CPU, not wall), enabled before the
  warm-up and read before and after the run, so only the run counts. Inflated by the profiler (about
  3-5x); read it for shares, not absolute costs. Reported per phase (:data:`PHASES`): CPU ms per
  request of the phase's entry functions, and the top functions by self time inside the phase
  (a function called from several phases is split by its callers' times, as gprof does).

Rows carry the machine (CPU count, load average at the row's start and end): the machine is often
shared, and the load inflates CPU time little but wall time much. With ``--label`` the payload goes
into ``bench/results/profile.json`` under that label (other labels kept) and ``profile.md`` is
written from every label.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, in_fresh_process, machine, md_table, scratch_dir

__all__ = ["PHASES", "ThreadProfiles", "phase_table", "run_profile", "main"]

#: phase -> (entry functions as ``file suffix:function``; subtracted entry functions). A function's time
#: is inclusive (its callees), so nested phases are listed under their parent with a leading ``  ``.
PHASES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "plan": (("agentcausal/attribution/plan.py:plan_attribution",), ()),
    "  scan (read, validate, hash)": (
        ("agentcausal/traces/io.py:iter_traces", "agentcausal/traces/model.py:facts"),
        (),
    ),
    "  estimate": (("agentcausal/attribution/estimate.py:__call__",), ()),
    "submit (Prefect task runs)": (
        ("prefect/task_engine.py:run_task_sync", "prefect/tasks.py:submit"),
        ("agentcausal/runs/engine.py:run_chunk", "tasks/attribution.py:evaluate_run"),
    ),
    "items (a chunk's jobs)": (("agentcausal/runs/scheduling.py:one",), ()),
    "  load trace": (("agentcausal/runs/items.py:load_trace_item",), ()),
    "  prompt and reply model": (
        (
            "agentcausal/attribution/all_at_once.py:build_messages",
            "agentcausal/attribution/all_at_once.py:reply_model",
            "agentcausal/llm/dialect.py:reply_schema",
            "agentcausal/llm/dialect.py:chat_params",
            "agentcausal/llm/gateway.py:_key",
        ),
        (),
    ),
    "  request (HTTP)": (("agentcausal/llm/limits.py:post",), ()),
    "  parse": (
        (
            "pydantic/main.py:model_validate_json",
            "agentcausal/llm/dialect.py:extract_json",
            "agentcausal/llm/replies.py:strip_reasoning",
        ),
        (),
    ),
    "  cache (read, single flight, write)": (
        (
            "agentcausal/llm/gateway_cache.py:single_flight",
            "agentcausal/llm/gateway_cache.py:text",
            "agentcausal/llm/gateway_cache.py:put",
            "agentcausal/llm/gateway_cache.py:run_hit",
        ),
        (),
    ),
    "  cache write": (("agentcausal/llm/gateway_cache.py:put",), ()),
    "  record (usage, envelope, results store)": (
        (
            "agentcausal/llm/gateway.py:_record",
            "agentcausal/runs/store.py:put",
            "agentcausal/runs/envelope.py:stamp",
            "agentcausal/runs/envelope.py:usage_added",
            "agentcausal/attribution/method_settings.py:method_settings",
            "pydantic/main.py:model_copy",
            "pydantic/main.py:model_dump",
        ),
        (),
    ),
    "report": (
        (
            "agentcausal/runs/engine.py:finish",
            "tasks/attribution.py:evaluate_run",
            "flows/engine.py:publish_report",
        ),
        (),
    ),
    "  finish (records read back, results.parquet)": (("agentcausal/runs/engine.py:finish",), ()),
    "  evaluate, report.md and report.html": (("agentcausal/report/attribution.py:report_run",), ()),
    "    plots": (("agentcausal/report/plots.py:attribution_figures",), ()),
    "  artifacts": (("flows/engine.py:publish_report",), ()),
}

Func = tuple[str, int, str]  # pstats' (file, line, function)
Entry = list[Any]  # [primitive calls, calls, self time, inclusive time, {caller: (cc, nc, tt, ct)}]


# ------------------------------------------------------------------ profiling every thread
class ThreadProfiles:
    """``cProfile`` on this thread and every thread started after :meth:`start` (timer ``time.thread_time``).

    Python 3.11 has no profiler of all threads: ``threading.setprofile`` installs a hook in each new
    thread whose first event starts a profiler of its own there. :meth:`snapshot` merges them (without
    stopping them); subtract two snapshots (:func:`subtract`) to keep one stretch of the run.
    """

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def _hook(self, *_event: Any) -> None:
        prof = cProfile.Profile(time.thread_time)
        with self._lock:
            self.profiles.append(prof)
        prof.enable()

    def start(self) -> None:
        threading.setprofile(self._hook)
        self._hook()

    def stop(self) -> None:
        threading.setprofile(None)  # None removes the hook
        self.profiles[0].disable()  # this thread's; the others end with their threads

    def snapshot(self) -> dict[Func, Entry]:
        """The merged statistics so far, in pstats' layout."""
        out: dict[Func, Entry] = {}
        with self._lock:
            profiles = list(self.profiles)
        for prof in profiles:
            prof.snapshot_stats()
            for func, (cc, nc, tt, ct, callers) in prof.stats.items():
                have = out.get(func)
                if have is None:
                    out[func] = [cc, nc, tt, ct, dict(callers)]
                    continue
                have[0] += cc
                have[1] += nc
                have[2] += tt
                have[3] += ct
                for k, v in callers.items():
                    w = have[4].get(k)
                    have[4][k] = v if w is None else tuple(a + b for a, b in zip(w, v, strict=True))
        return out


def subtract(before: dict[Func, Entry], after: dict[Func, Entry]) -> dict[Func, Entry]:
    """What ran between two snapshots of :meth:`ThreadProfiles.snapshot`."""
    out: dict[Func, Entry] = {}
    for func, (cc, nc, tt, ct, callers) in after.items():
        old = before.get(func)
        if old is None:
            out[func] = [cc, nc, tt, ct, dict(callers)]
            continue
        if nc - old[1] <= 0:
            continue
        edges = {}
        for k, v in callers.items():
            w = old[4].get(k)
            d = v if w is None else tuple(a - b for a, b in zip(v, w, strict=True))
            if d[1] > 0:
                edges[k] = d
        out[func] = [cc - old[0], nc - old[1], tt - old[2], ct - old[3], edges]
    return out


def _matches(func: Func, patterns: tuple[str, ...]) -> bool:
    where = f"{func[0]}:{func[2]}"
    return any(where.endswith(p) for p in patterns)


def _phase_shares(stats: dict[Func, Entry], roots: dict[Func, float], cut: set[Func]) -> dict[Func, float]:
    """Each function's share of its inclusive time spent in a phase: ``roots`` maps the phase's entry functions to
    their own share (1, or for a nested phase the share under its parent); any other function gets the in-phase
    time its callers pass down (edge time x the caller's share) over its own (gprof's assumption); nothing
    passes into ``cut``."""
    callees: dict[Func, list[tuple[Func, float]]] = {}
    for func, entry in stats.items():
        for caller, edge in entry[4].items():
            callees.setdefault(caller, []).append((func, edge[3]))
    share = dict(roots)
    for _ in range(30):  # the graph has cycles (recursion): a few sweeps settle it
        inflow: dict[Func, float] = {}
        for caller, s in share.items():
            for func, ct in callees.get(caller, ()):
                if func not in roots and func not in cut:
                    inflow[func] = inflow.get(func, 0.0) + ct * s
        new = dict(roots)
        for func, t in inflow.items():
            total = stats[func][3]
            new[func] = min(1.0, t / total) if total > 0 else 0.0
        if new == share:
            break
        share = new
    return share


def phase_table(stats: dict[Func, Entry], requests: int, top: int = 8) -> list[dict[str, Any]]:
    """One row per phase of :data:`PHASES`: CPU ms per request of its entry functions (less the subtracted
    ones; a nested phase only under its parent) and its ``top`` functions by self time inside the phase, plus
    the profile's total."""
    per = 1000.0 / max(requests, 1)
    total = sum(e[2] for e in stats.values())
    rows: list[dict[str, Any]] = []
    parent: dict[Func, float] | None = None
    for name, (entries, minus) in PHASES.items():
        found = [f for f in stats if _matches(f, entries)]
        cut = {f for f in stats if _matches(f, minus)}
        nested = name.startswith(" ") and parent is not None
        if nested:  # the share of each entry function's time that its callers under the parent pass down
            assert parent is not None
            roots = {}
            for f in found:
                t = sum(e[3] * parent.get(c, 0.0) for c, e in stats[f][4].items() if c not in found)
                passed = min(1.0, t / stats[f][3]) if stats[f][3] > 0 else 0.0
                roots[f] = max(passed, parent.get(f, 0.0))  # one of the parent's own entry functions: its share
        else:
            roots = dict.fromkeys(found, 1.0)
        share = _phase_shares(stats, roots, cut)
        if not nested:
            parent = share
        # an entry function called from another entry function of the phase counts once; a subtracted one (always
        # called under the phase's entry functions, in the same thread or not: its callers may not be recorded)
        # takes its inclusive time away
        inclusive = sum(
            (stats[f][3] - sum(e[3] for c, e in stats[f][4].items() if c in roots)) * s for f, s in roots.items()
        )
        inclusive -= sum(stats[f][3] for f in cut)
        selfs = sorted(((stats[f][2] * s, f) for f, s in share.items() if s > 0), reverse=True)[:top]
        rows.append(
            {
                "phase": name,
                "cpu_ms_per_request": round(inclusive * per, 3),
                "share": round(inclusive / total, 3) if total else None,
                "top_self": [
                    {"ms_per_request": round(t * per, 3), "function": f"{_short(f[0])}:{f[1]}({f[2]})"}
                    for t, f in selfs
                ],
            }
        )
    rows.append({"phase": "total (every thread)", "cpu_ms_per_request": round(total * per, 3), "share": 1.0})
    return rows


def _short(path: str) -> str:
    for marker in ("site-packages/", "/lib/python3", "/work/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path[-60:]


# ------------------------------------------------------------------ runs
def _corpus(n: int, work: Path) -> tuple[Path, list[str]]:
    from bench.scale import _write_corpus

    path = work / f"corpus-{n}.jsonl"
    return path, _write_corpus(n, path)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def measured_row(method: str, n: int, concurrency: int, server: Any, work: Path) -> dict[str, Any]:
    """The flow on ``n`` traces in this process without a profiler (:func:`bench.scale.scale_row`, first run
    only); the row with ``cpus`` and the load average at its start and end."""
    from bench.scale import scale_row

    corpus, ids = _corpus(n, work)
    load0 = _load()
    row = scale_row(corpus, ids, method, concurrency, server, work, label=f"m-{method}-{time.time_ns()}", rerun=False)
    keep = ("method", "traces", "concurrency", "latency_s", "requests", "wall_s", "cpu_s", "cpu_ms_per_request")
    return {
        **{k: row[k] for k in keep},
        "rows_ok": row["rows_ok"],
        "cpus": os.cpu_count(),
        "load_avg_1_at_start": load0[0],
        "load_avg_1_5_15_at_end": _load(),
    }


def _profiled(
    method: str, n: int, concurrency: int, base_url: str, latency_s: float, work: str, top: int
) -> dict[str, Any]:  # pragma: no cover - runs in a spawned process
    """The profiled run in this (fresh) process on the parent's Prefect API and fake server."""
    profiles = ThreadProfiles()
    profiles.start()
    from bench.scale import scale_row

    class _Server:  # the parent's server: its URL and latency; the request count comes from the parent
        def __init__(self) -> None:
            self.base_url, self.latency_s = base_url, latency_s

        def reset(self) -> None:
            pass

        def stats(self) -> dict[str, Any]:
            return {"requests": 0, "max_in_flight": 0}

    w = Path(work)
    warm, warm_ids = _corpus(10, w)
    scale_row(warm, warm_ids, method, concurrency, _Server(), w, label=f"pw-{method}-{time.time_ns()}", rerun=False)  # type: ignore[arg-type]
    corpus, ids = _corpus(n, w)
    before, cpu0 = profiles.snapshot(), time.process_time()
    scale_row(corpus, ids, method, concurrency, _Server(), w, label=f"p-{method}-{time.time_ns()}", rerun=False)  # type: ignore[arg-type]
    cpu = time.process_time() - cpu0
    after = profiles.snapshot()
    profiles.stop()
    stats = subtract(before, after)
    if os.environ.get("AGENTCAUSAL_BENCH_KEEP") == "1":
        import marshal

        out = w / f"profile-{method}.pstats"
        out.write_bytes(marshal.dumps({k: (v[0], v[1], v[2], v[3], v[4]) for k, v in stats.items()}))
        print(f"  profile of {method} kept in {out} (pstats.Stats reads it)")
    return {"stats": stats, "profiled_cpu_s": cpu, "top": top}


def profiled_phases(method: str, n: int, concurrency: int, server: Any, work: Path, top: int) -> dict[str, Any]:
    """The profiled run in a fresh process (see the module docstring): phases per request and the run's CPU."""
    server.reset()
    out = in_fresh_process(_profiled, method, n, concurrency, server.base_url, server.latency_s, str(work), top)
    # HTTP requests of the profiled stretch: calls of the gateway's request hook (the warm-up's are not in it)
    requests = sum(e[1] for f, e in out["stats"].items() if _matches(f, ("agentcausal/llm/limits.py:count_request",)))
    return {
        "method": method,
        "traces": n,
        "requests": requests,
        "profiled_cpu_ms_per_request": round(1000 * out["profiled_cpu_s"] / max(requests, 1), 2),
        "phases": phase_table(out["stats"], requests, top),
    }


def run_profile(
    *,
    traces: int = 2000,
    dcfa_traces: int = 0,
    concurrency: int = 1,
    latency_s: float = 0.0,
    profile: bool = True,
    top: int = 8,
    log=print,
) -> dict[str, Any]:
    """Measured rows (and profiles) of All-at-Once on ``traces`` and DCFA on ``dcfa_traces`` (0: none)."""
    from bench.scale import scale_row
    from bench.server import ServerProcess
    from bench.throughput import _prefect_warmup

    work = scratch_dir("agentcausal-bench-profile-")
    plan = [("all_at_once", traces)] + ([("dcfa", dcfa_traces)] if dcfa_traces else [])
    payload: dict[str, Any] = {"rows": [], "profiles": [], "machine_at_start": machine()}
    log(f"  Prefect temporary API up in {_prefect_warmup():.1f} s")
    with ServerProcess(latency_s=latency_s) as server:
        for method, n in plan:
            warm, warm_ids = _corpus(10, work)
            scale_row(
                warm, warm_ids, method, concurrency, server, work, label=f"w-{method}-{time.time_ns()}", rerun=False
            )
            row = measured_row(method, n, concurrency, server, work)
            payload["rows"].append(row)
            log(
                f"  {method} n={n} c={concurrency}: {row['requests']} requests, {row['cpu_ms_per_request']} ms CPU "
                f"per request, wall {row['wall_s']} s, load {row['load_avg_1_at_start']} -> "
                f"{row['load_avg_1_5_15_at_end'][0]} on {row['cpus']} CPUs"
            )
            if profile:
                prof = profiled_phases(method, n, concurrency, server, work, top)
                payload["profiles"].append(prof)
                log(f"  profiled ({method}): {prof['profiled_cpu_ms_per_request']} ms CPU per request")
                for ph in prof["phases"]:
                    log(f"    {ph['phase']:<44} {ph['cpu_ms_per_request']:8.3f} ms/request")
    payload["machine"] = machine()
    return payload


def profile_markdown(stored: dict[str, Any]) -> str:
    """``profile.md``: every label's measured rows, then the phases of each profile."""
    out = [
        "# Client CPU per LLM request (bench/profile.py)\n\n"
        "The `attribute` flow on the thread runner against the fake server (latency 0 unless said): "
        "`cpu_ms_per_request` = the flow's process CPU (every thread; plan and report included) / requests. "
        "Phases come from a separate profiled run (cProfile on every thread, CPU time; 3-5x inflated: "
        "read the shares). The machine is shared with other work: each row carries the load average.\n"
    ]
    for label, res in stored.items():
        m = res.get("machine", {})
        out.append(f"\n## {label}\n\ncommit {m.get('commit')}, {m.get('when')}, {m.get('cpus')} CPUs\n\n")
        if res.get("note"):
            out.append(f"{res['note']}\n\n")
        out.append(md_table(res["rows"]))
        for prof in res.get("profiles", []):
            out.append(
                f"\nPhases of {prof['method']} ({prof['traces']} traces, {prof['requests']} requests; profiled "
                f"{prof['profiled_cpu_ms_per_request']} ms CPU per request):\n\n"
            )
            out.append(md_table([{k: v for k, v in ph.items() if k != "top_self"} for ph in prof["phases"]]))
            for ph in prof["phases"]:
                if ph.get("top_self"):
                    tops = "; ".join(f"{t['function']} {t['ms_per_request']}" for t in ph["top_self"][:5])
                    out.append(f"\n- {ph['phase'].strip()}: {tops}")
            out.append("\n")
    return "".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=2000, help="All-at-Once traces (default 2000)")
    ap.add_argument("--dcfa-traces", type=int, default=0, help="DCFA traces (default 0: none)")
    ap.add_argument("--concurrency", type=int, default=1, help="the profile's max_concurrency (default 1)")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="fake server latency (default 0)")
    ap.add_argument("--no-profile", action="store_true", help="measured rows only")
    ap.add_argument("--top", type=int, default=8, help="functions listed per phase (default 8)")
    ap.add_argument("--label", default=None, help="store under this label in bench/results/profile.json")
    args = ap.parse_args(argv)
    from bench.run import _env

    _env()
    payload = run_profile(
        traces=args.traces,
        dcfa_traces=args.dcfa_traces,
        concurrency=args.concurrency,
        latency_s=args.latency_ms / 1000,
        profile=not args.no_profile,
        top=args.top,
    )
    if args.label:
        path = RESULTS_DIR / "profile.json"
        stored = json.loads(path.read_text()) if path.is_file() else {}
        stored[args.label] = payload
        path.write_text(json.dumps(stored, indent=2, default=str) + "\n")
        (RESULTS_DIR / "profile.md").write_text(profile_markdown(stored))
        print(f"stored under {args.label!r} in {path} and profile.md")


if __name__ == "__main__":
    main()
