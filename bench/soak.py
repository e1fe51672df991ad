"""Soak (issue 32 item 6): ``attribute`` under injected faults, killed and resumed again and again, ends row for
row equal to a clean run.

::

    nice -n 10 .venv/bin/python -m bench.soak                                   # the issue's two hours
    nice -n 10 .venv/bin/python -m bench.soak --minutes 12 --every 120 --traces 40   # a shortened run

A synthetic corpus (``agentcausal_fakes.synthetic``, test double) is written as JSONL. The fake OpenAI server
(``agentcausal_fakes.fake_openai``, test double, in this process; the CLI runs in child processes) answers with
:class:`agentcausal_fakes.responders.BenchResponder`.

1. **Clean run** (first, so its request count can size the soak's latency): the CLI ``agentcausal attribute``
   on the corpus and ``--methods``, no faults, no kill, a fresh cache and run folder, server latency
   ``--clean-latency-ms``. Latency changes no answer of the fake server, only the wall time.
2. **Soak**: a new cache and run folder, the server with a fault schedule drawn once (seed ``--seed``): each
   request is faulted with probability ``--faults``, the fault drawn uniformly from HTTP 500, 502, 503, a
   timeout (the server waits 3 s past the profile's ``timeout_s``, 2 x latency + 3 s, before a 504) and a dropped connection. No
   content fault (malformed or truncated JSON): those are content failures, cached by design and kept by
   ``--resume``, so they would differ from the clean run legitimately. The CLI is started, and ``--every``
   seconds after each start it is killed, alternating ``kill -9`` (SIGKILL to the CLI's pid alone) and SIGTERM,
   then started again with ``--resume`` into the same ``--out`` and cache. After ``--minutes`` of soak no
   more kills: it is resumed until it exits 0 (every row computed). The server's latency is sized so that
   the clean run's requests at the profile's concurrency fill about the soak's time minus the CLI starts
   (``--latency-ms`` overrides it).
3. **Checks per kill**: the process tree (descendants of the CLI's pid and the rest of its session) is
   recorded just before the signal; 10 s after the CLI's exit none of them may be alive (leftovers are
   listed, then killed). The requests in flight at the server at the moment of the signal are recorded.
4. **Comparison**: ``results.parquet`` of both runs row for row on (trace_id, method, pred_step,
   pred_agent, status), timing, usage and ``reused`` columns ignored. Requests: a request is *answered* when
   the schedule did not fault it; its *key* is its whole JSON body (messages, schema, model, input).
   *Paid twice* = answered soak requests whose key an earlier answered soak request had; it may not exceed
   the requests in flight at the kills (those answers never reached the cache). The clean run's own
   repeats are reported beside it (DCFA's shared embedding cache can make one or two by timing).

Writes ``bench/results/soak.json`` and ``soak.md`` (``--name``), with the machine before and after
(:func:`bench.common.machine`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from agentcausal.traces.jsonl import write_jsonl
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from agentcausal_fakes.processes import alive, process_tree, reap
from agentcausal_fakes.responders import BenchResponder
from agentcausal_fakes.synthetic import synthetic_traces
from bench.common import REPO, RESULTS_DIR, machine, md_table, scratch_dir, write_result

__all__ = ["main", "fault_schedule", "compare_rows", "paid_twice"]

ANSWER = ["trace_id", "method", "pred_step", "pred_agent", "status"]
FAULT_KINDS = (500, 502, 503, "timeout", "drop")
#: the profile's client timeout is this many times the server's latency plus :data:`TIMEOUT_MARGIN_S`; a
#: "timeout" fault makes the server wait :data:`TIMEOUT_MARGIN_S` past it before its 504
TIMEOUT_FACTOR, TIMEOUT_MARGIN_S = 2.0, 3.0
LEFTOVER_WAIT_S = 10.0


def fault_schedule(n: int, rate: float, seed: int = 0) -> list[int | str | None]:
    """``n`` entries, one per request in arrival order: a fault of :data:`FAULT_KINDS` with probability ``rate``,
    else None (a normal reply)."""
    rng = random.Random(seed)
    return [rng.choice(FAULT_KINDS) if rng.random() < rate else None for _ in range(n)]


def client_timeout_s(latency_ms: float) -> float:
    """The profiles' ``timeout_s`` for a server latency: :data:`TIMEOUT_FACTOR` x latency + :data:`TIMEOUT_MARGIN_S`."""
    return round(TIMEOUT_FACTOR * latency_ms / 1000 + TIMEOUT_MARGIN_S, 1)


def _profiles(path: Path, base_url: str, concurrency: int, model: str, timeout_s: float) -> Path:
    path.write_text(
        f'[limit_groups]\n"{model}" = {concurrency}\n\n'
        f'[profiles.bench]\nkind = "chat"\nbase_url = "{base_url}"\nmodel = "{model}"\n'
        f"max_concurrency = {concurrency}\ntimeout_s = {timeout_s:g}\ncontext_window = 128000\n"
        f'limit_group = "{model}"\n\n'
        f'[profiles.bench-embed]\nkind = "embedding"\nbase_url = "{base_url}"\nmodel = "{model}"\n'
        f'max_concurrency = {concurrency}\ntimeout_s = {timeout_s:g}\nlimit_group = "{model}"\n\n'
        '[routings.default]\ndefault = "bench"\nembed = "bench-embed"\n'
    )
    return path


def _env(prefect_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL" and not k.startswith("AGENTCAUSAL_")}
    env.update(
        PREFECT_HOME=str(prefect_home),
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONPATH=str(REPO) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
    )
    return env


class _Cli:
    """The ``attribute`` command line of one phase (corpus, methods, profiles, cache, run folder)."""

    def __init__(self, corpus: Path, methods: list[str], profiles: Path, cache: Path, out: Path, home: Path):
        self.args = [
            *["attribute", str(corpus)],
            *sum((["-m", m] for m in methods), []),
            *["--profiles", str(profiles), "--cache-dir", str(cache), "--out", str(out), "--no-progress"],
        ]
        self.out, self.env, self.logs = out, _env(home), out.parent / f"{out.name}-logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.starts = 0
        self.proc: subprocess.Popen | None = None

    def start(self, resume: bool) -> subprocess.Popen:
        self.starts += 1
        log = open(self.logs / f"{self.starts:03d}.log", "w")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "agentcausal", *self.args, *(["--resume"] if resume else [])],
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            return self.proc
        finally:
            log.close()

    def reap(self) -> None:
        """Kill the session of a CLI still running (this benchmark stopped early)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def last_lines(self, n: int = 3) -> list[str]:
        return (self.logs / f"{self.starts:03d}.log").read_text(errors="replace").splitlines()[-n:]


def _requests(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    with server._lock:
        return list(server.requests)


def _key(body: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in body.items() if k != "_auth"}, sort_keys=True)


def paid_twice(bodies: list[dict[str, Any]], faulted: list[bool]) -> dict[str, int]:
    """Requests, faulted, answered, distinct answered keys and answered repeats (answered - distinct) of one run.

    ``faulted[i]`` says whether request ``i`` (arrival order) got a fault instead of an answer.
    """
    answered = [_key(b) for b, f in zip(bodies, faulted) if not f]
    counts = Counter(answered)
    chat = sum(1 for b, f in zip(bodies, faulted) if not f and b.get("_path", "").endswith("/chat/completions"))
    return {
        "requests": len(bodies),
        "faulted": sum(faulted),
        "answered": len(answered),
        "answered_chat": chat,
        "answered_embeddings": len(answered) - chat,
        "distinct_answered": len(counts),
        "paid_twice": len(answered) - len(counts),
    }


def repeats(bodies: list[dict[str, Any]], faulted: list[bool], starts: list[int]) -> list[dict[str, Any]]:
    """Each answered request whose body an earlier answered request had: both indices (arrival order), the CLI
    start (1-based) each came in (``starts``: the server's request count at each start), path and schema."""
    first: dict[str, int] = {}
    out = []
    for i, (b, f) in enumerate(zip(bodies, faulted)):
        if f:
            continue
        k = _key(b)
        if k in first:
            j = first[k]
            out.append(
                {
                    "first": j,
                    "again": i,
                    "first_start": sum(1 for c in starts if c <= j),
                    "again_start": sum(1 for c in starts if c <= i),
                    "path": b.get("_path", ""),
                    "schema": (b.get("response_format") or {}).get("json_schema", {}).get("name", ""),
                }
            )
        else:
            first[k] = i
    return out


def compare_rows(soak: pd.DataFrame, clean: pd.DataFrame) -> dict[str, Any]:
    """Row-for-row comparison on :data:`ANSWER`: equal, row counts, and the differing rows (both sides)."""

    def norm(df: pd.DataFrame) -> pd.DataFrame:
        return df[ANSWER].astype(str).sort_values(["trace_id", "method"]).reset_index(drop=True)

    a, b = norm(soak), norm(clean)
    merged = a.merge(b, on=["trace_id", "method"], how="outer", suffixes=("_soak", "_clean"), indicator=True)
    cols = [c for c in ANSWER if c not in ("trace_id", "method")]
    differs = (merged["_merge"] != "both") | pd.concat(
        [merged[f"{c}_soak"] != merged[f"{c}_clean"] for c in cols], axis=1
    ).any(axis=1)
    diff = merged.loc[differs].drop(columns="_merge").fillna("(missing)").to_dict("records")
    dup = int(a.duplicated(["trace_id", "method"]).sum() + b.duplicated(["trace_id", "method"]).sum())
    return {
        "equal": not diff and dup == 0 and len(a) == len(b),
        "rows_soak": len(a),
        "rows_clean": len(b),
        "duplicate_keys": dup,
        "different_rows": len(diff),
        "differences": diff[:50],
        "status_soak": dict(Counter(a["status"])),
    }


def _wait(proc: subprocess.Popen, until: float | None, poll_s: float = 0.5) -> int | None:
    """The exit status, or None when ``until`` (monotonic) came first."""
    while until is None or time.monotonic() < until:
        rc = proc.poll()
        if rc is not None:
            return rc
        time.sleep(poll_s)
    return proc.poll()


def _run_clean(cli: _Cli, server: FakeOpenAIServer) -> dict[str, Any]:
    """Run to the end; also the seconds from the start to the server's first request (the CLI's start-up)."""
    t0 = time.monotonic()
    proc = cli.start(resume=False)
    first: float | None = None
    while proc.poll() is None:
        if first is None and server.count:
            first = time.monotonic() - t0
        time.sleep(0.2)
    return {
        "rc": proc.returncode,
        "wall_s": round(time.monotonic() - t0, 1),
        "startup_s": round(first if first is not None else time.monotonic() - t0, 1),
        "last_lines": cli.last_lines(),
    }


def _kill(proc: subprocess.Popen, sig: int, server: FakeOpenAIServer) -> dict[str, Any]:
    """Signal the CLI's pid; wait for its exit; then check that no process recorded before the signal lives."""
    before = process_tree(proc.pid)
    with server._lock:
        in_flight, at_signal = server.in_flight, server.count
    t0 = time.monotonic()
    os.kill(proc.pid, sig)
    try:
        rc: int | None = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        rc = None
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    exit_s = time.monotonic() - t0
    at_exit = server.count
    deadline = time.monotonic() + LEFTOVER_WAIT_S
    while alive(before) and time.monotonic() < deadline:
        time.sleep(0.25)
    left = {pid: before[pid] for pid in alive(before)}
    left.update(process_tree(proc.pid))
    reap(left)
    return {
        "signal": signal.Signals(sig).name,
        "rc": rc,
        "exit_s": round(exit_s, 2),
        "processes_before": len(before),
        "processes_before_cmd": sorted(cmd[:80] for cmd in before.values()),
        "left_after_10s": [f"{pid} {cmd}" for pid, cmd in sorted(left.items())],
        "in_flight_at_signal": in_flight,
        "requests_at_signal": at_signal,
        "requests_at_exit": at_exit,
    }


def _run_soak(cli: _Cli, server: FakeOpenAIServer, minutes: float, every: float, max_starts: int) -> dict[str, Any]:
    t0 = time.monotonic()
    stop_killing = t0 + minutes * 60
    kills: list[dict[str, Any]] = []
    exits: list[dict[str, Any]] = []
    sig_next = signal.SIGKILL
    rc: int | None = None
    start_counts: list[int] = []
    while cli.starts < max_starts:
        started = time.monotonic()
        start_counts.append(server.count)
        proc = cli.start(resume=cli.starts > 0)
        kill_at = started + every
        rc = _wait(proc, kill_at if kill_at < stop_killing else None)
        if rc is None:
            k = _kill(proc, sig_next, server)
            k["at_s"] = round(time.monotonic() - t0, 1)
            k["start"] = cli.starts
            k["stored_rows_log"] = cli.last_lines(1)
            kills.append(k)
            print(
                f"soak: kill {len(kills)} ({k['signal']}) at {k['at_s']} s, rc {k['rc']}, "
                f"{k['in_flight_at_signal']} in flight, {len(k['left_after_10s'])} left",
                flush=True,
            )
            sig_next = signal.SIGTERM if sig_next == signal.SIGKILL else signal.SIGKILL
            continue
        exits.append(
            {"start": cli.starts, "rc": rc, "at_s": round(time.monotonic() - t0, 1), "last_lines": cli.last_lines()}
        )
        print(f"soak: start {cli.starts} exited {rc} at {exits[-1]['at_s']} s", flush=True)
        if rc == 0:
            break
    return {
        "wall_s": round(time.monotonic() - t0, 1),
        "starts": cli.starts,
        "resumes": cli.starts - 1,
        "kills": kills,
        "exits": exits,
        "finished": rc == 0,
        "requests_at_starts": start_counts,
    }


def _markdown(p: dict[str, Any]) -> str:
    s, c, cmp_, req = p["soak"], p["clean"], p["comparison"], p["requests"]
    kills = s["kills"]
    verdict = "**equal**" if cmp_["equal"] else f"**different** ({cmp_['different_rows']} rows)"
    left = sum(len(k["left_after_10s"]) for k in kills)
    in_flight = sum(k["in_flight_at_signal"] for k in kills)
    lines = [
        f"# Soak: {p['config']['traces']} synthetic traces x {', '.join(p['config']['methods'])}",
        "",
        p["note"],
        "",
        f"Measured {p['machine_start']['when']} to {p['machine_end']['when']} at commit "
        f"{p['machine_start']['commit']}, {p['machine_start']['cpus']} CPUs, load average "
        f"{p['machine_start']['load_avg_1_5_15']} at the start, {p['machine_end']['load_avg_1_5_15']} at the end.",
        "",
        f"- Config: `--minutes {p['config']['minutes']:g} --every {p['config']['every']:g} "
        f"--traces {p['config']['traces']} --faults {p['config']['faults']:g}`, concurrency "
        f"{p['config']['concurrency']}, soak server latency {p['config']['latency_ms']:g} ms "
        f"({p['config']['latency_how']}), clean latency {p['config']['clean_latency_ms']:g} ms; faults "
        f"{', '.join(map(str, FAULT_KINDS))} (timeout: the server answers 504 after "
        f"{p['config']['timeout_fault_sleep_s']:g} s, the "
        f"client gives up at {p['config']['client_timeout_s']:g} s).",
        f"- Result: soak vs clean `results.parquet` on {', '.join(ANSWER)}: {verdict}; "
        f"{cmp_['rows_soak']} soak rows, {cmp_['rows_clean']} clean rows; soak statuses {cmp_['status_soak']}.",
        f"- Soak: {s['wall_s']:.0f} s, {len(kills)} kills "
        f"({sum(k['signal'] == 'SIGKILL' for k in kills)} SIGKILL, {sum(k['signal'] == 'SIGTERM' for k in kills)} "
        f"SIGTERM), {s['resumes']} resumes, finished: {s['finished']}; processes of the run alive 10 s after a "
        f"kill: {left}. Clean run: {c['wall_s']:.0f} s, exit {c['rc']}.",
        f"- Requests: soak {req['soak']['requests']} ({req['soak']['faulted']} faulted, {req['soak']['answered']} "
        f"answered, {req['soak']['distinct_answered']} distinct), clean {req['clean']['requests']} "
        f"({req['clean']['distinct_answered']} distinct). Paid twice (answered repeats of an answered request): "
        f"soak {req['soak']['paid_twice']}, clean {req['clean']['paid_twice']}; allowance (requests in flight at "
        f"the kills) {in_flight}: {'within' if req['paid_twice_within_allowance'] else 'NOT within'}. Answered "
        f"soak requests - clean requests: {req['soak']['answered'] - req['clean']['answered']}.",
        "",
        "## Kills",
        "",
        md_table(
            [
                {
                    "#": i + 1,
                    "at s": k["at_s"],
                    "signal": k["signal"],
                    "exit": k["rc"],
                    "exit s": k["exit_s"],
                    "processes": k["processes_before"],
                    "left": len(k["left_after_10s"]),
                    "in flight": k["in_flight_at_signal"],
                    "requests at signal": k.get("requests_at_signal"),
                    "at exit": k.get("requests_at_exit"),
                }
                for i, k in enumerate(kills)
            ]
        ),
        "## Exits without a kill",
        "",
        md_table([{"start": e["start"], "at s": e["at_s"], "exit": e["rc"]} for e in s["exits"]]),
    ]
    lines += [
        "## Answered twice",
        "",
        "Each answered soak request whose JSON body an earlier answered one had: arrival indices, the CLI start "
        "of each, and the first one's index minus the server's request count at the signal that ended its run "
        "(negative: it arrived before the signal, e.g. -1 = the last request before it).",
        "",
        md_table(req["repeats"]),
    ]
    if cmp_["differences"]:
        lines += ["## Differing rows (first 50)", "", md_table(cmp_["differences"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=120.0, help="soak wall time with kills (default 120)")
    p.add_argument("--every", type=float, default=600.0, help="seconds from each CLI start to its kill (600)")
    p.add_argument("--traces", type=int, default=200, help="synthetic traces (default 200)")
    p.add_argument("--methods", nargs="+", default=["all_at_once", "dcfa"], help="methods (all_at_once dcfa)")
    p.add_argument("--faults", type=float, default=0.1, help="share of requests faulted (default 0.1)")
    p.add_argument("--concurrency", type=int, default=4, help="the profile's max_concurrency (default 4)")
    p.add_argument("--latency-ms", type=float, default=None, help="soak server latency (default: sized, above)")
    p.add_argument("--clean-latency-ms", type=float, default=20.0, help="clean run's server latency (20)")
    p.add_argument("--seed", type=int, default=0, help="corpus and fault schedule seed (0)")
    p.add_argument("--name", default="soak", help="result file stem (default soak)")
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="result folder (default bench/results)")
    p.add_argument("--note", default="", help="a line put at the top of the markdown")
    args = p.parse_args(argv)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: the running CLI's session is killed
    start = machine()
    work = scratch_dir("agentcausal-soak-")
    corpus = write_jsonl(synthetic_traces(args.traces, seed=args.seed), work / "corpus.jsonl")
    print(f"soak: work folder {work}", flush=True)

    with FakeOpenAIServer(responder=BenchResponder(), latency_s=args.clean_latency_ms / 1000) as srv:
        timeout = client_timeout_s(args.clean_latency_ms)
        prof = _profiles(work / "clean.toml", srv.base_url, args.concurrency, "soak-clean", timeout)
        cli = _Cli(corpus, args.methods, prof, work / "cache-clean", work / "clean", work / "prefect-clean")
        try:
            clean = _run_clean(cli, srv)
        finally:
            cli.reap()
        clean_bodies = _requests(srv)
    print(f"soak: clean run exit {clean['rc']}, {len(clean_bodies)} requests, {clean['wall_s']} s", flush=True)
    if clean["rc"] != 0:
        print(f"soak: the clean run failed: {clean['last_lines']}", file=sys.stderr)
        return 1
    n_clean = len(clean_bodies)

    if args.latency_ms is not None:
        latency_ms, how = args.latency_ms, "given"
    else:  # fill the soak's time less one CLI start-up per cycle (the clean run's, to its first request)
        cycles = max(1.0, args.minutes * 60 / args.every)
        useful_s = max(60.0, args.minutes * 60 - cycles * min(clean["startup_s"], args.every / 2))
        latency_ms = 1000 * useful_s * args.concurrency / (n_clean * (1 + args.faults))
        how = (
            f"sized: {useful_s:.0f} s of requests x {args.concurrency} / {n_clean} clean requests x {1 + args.faults:g}"
        )
    timeout = client_timeout_s(latency_ms)
    schedule = fault_schedule(max(50 * n_clean, 10_000), args.faults, args.seed)
    with FakeOpenAIServer(
        responder=BenchResponder(),
        latency_s=latency_ms / 1000,
        faults=schedule,  # type: ignore[arg-type]  # a None entry: that request is answered normally
        timeout_sleep_s=timeout + TIMEOUT_MARGIN_S,
    ) as srv:
        prof = _profiles(work / "soak.toml", srv.base_url, args.concurrency, "soak-faulty", timeout)
        cli = _Cli(corpus, args.methods, prof, work / "cache-soak", work / "soak", work / "prefect-soak")
        try:
            soak = _run_soak(cli, srv, args.minutes, args.every, max_starts=int(args.minutes * 60 / args.every) + 20)
        finally:
            cli.reap()
        soak_bodies = _requests(srv)
    if len(soak_bodies) > len(schedule):
        print("soak: more requests than the fault schedule holds; the rest were not faulted", file=sys.stderr)
    faulted = [schedule[i] is not None if i < len(schedule) else False for i in range(len(soak_bodies))]

    if soak["finished"]:
        cmp_ = compare_rows(
            pd.read_parquet(work / "soak" / "results.parquet"), pd.read_parquet(work / "clean" / "results.parquet")
        )
    else:
        cmp_ = {
            "equal": False,
            "rows_soak": 0,
            "rows_clean": 0,
            "different_rows": -1,
            "differences": [],
            "status_soak": {},
            "duplicate_keys": 0,
            "error": "the soak did not finish",
        }
    req_soak = paid_twice(soak_bodies, faulted)
    req_clean = paid_twice(clean_bodies, [False] * len(clean_bodies))
    allowance = sum(k["in_flight_at_signal"] for k in soak["kills"])
    again = repeats(soak_bodies, faulted, soak["requests_at_starts"])
    for r in again:  # where the first answer came relative to the kill that ended its run (None: no kill)
        kill = next((k for k in soak["kills"] if k["start"] == r["first_start"]), None)
        r["first_minus_count_at_signal"] = None if kill is None else r["first"] - kill["requests_at_signal"]
    payload = {
        "config": {
            "minutes": args.minutes,
            "every": args.every,
            "traces": args.traces,
            "methods": args.methods,
            "faults": args.faults,
            "fault_kinds": list(map(str, FAULT_KINDS)),
            "concurrency": args.concurrency,
            "latency_ms": round(latency_ms, 1),
            "latency_how": how,
            "clean_latency_ms": args.clean_latency_ms,
            "seed": args.seed,
            "client_timeout_s": timeout,
            "timeout_fault_sleep_s": timeout + TIMEOUT_MARGIN_S,
        },
        "note": args.note,
        "machine_start": start,
        "machine_end": machine(),
        "clean": clean,
        "soak": soak,
        "comparison": cmp_,
        "requests": {
            "soak": req_soak,
            "clean": req_clean,
            "allowance_in_flight_at_kills": allowance,
            "repeats": again,
            "paid_twice_within_allowance": req_soak["paid_twice"] - req_clean["paid_twice"] <= allowance,
        },
        "processes_left_after_kills": sum(len(k["left_after_10s"]) for k in soak["kills"]),
    }
    j, m = write_result(args.name, payload, _markdown(payload), args.out)
    print(
        f"soak: rows {'equal' if cmp_['equal'] else 'DIFFERENT'}; {len(soak['kills'])} kills, "
        f"{soak['resumes']} resumes; wrote {j} and {m}",
        flush=True,
    )
    return 0 if cmp_["equal"] and payload["requests"]["paid_twice_within_allowance"] else 1


if __name__ == "__main__":
    sys.exit(main())
