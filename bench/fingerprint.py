"""What a change must leave as it was: ``python -m bench.fingerprint [--traces 40] [--out FILE]``.

Runs the ``attribute`` flow (thread runner) over ``--traces`` synthetic traces
(:func:`agentcausal_fakes.synthetic.iter_synthetic_traces`, one JSONL file) with every attribution method
``attribute --help`` lists, against the fake OpenAI server (test double, :mod:`bench.server`, latency 0)
one request at a time, on a fresh cache and a fixed model label; then the same flow again on that cache
(the rerun must send nothing).
Prints, and with ``--out`` writes as JSON, a sha256 per artefact of the run folder, over what does not
depend on the clock:

* ``results.parquet``: every column but the clock, ``reused`` and per-row usage, rows sorted by (trace,
  method), each value as JSON; beside it the run's sums of requests and tokens (an identical call is paid
  once, by whichever row asks first, so only the sums are compared; they can still move by a request or a
  few tokens where traces running at once embed overlapping texts or the fake server's responder sees them
  in another order);
* ``report.md``: without its cost sections and its timing and path lines (``seconds``, the run folder).

Two trees give the same fingerprint when a change left every record, score and report line as it was.
Compare them with ``diff`` of two ``--out`` files; a mismatch names the artefact.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from bench.common import scratch_dir

__all__ = ["fingerprint", "main"]

#: results.parquet columns that hold the clock (seconds, timestamps), whether this run paid for a row, or which of
#: two rows sharing an identical call paid for it (the first to ask; the sums over rows are compared instead)
_VOLATILE = re.compile(
    r"(seconds|_s$|^time|timestamp|started|finished|^reused$|wall|usage_json|requests|cache_hits|tokens|cost_usd)",
    re.IGNORECASE,
)
#: usage columns whose sum over the run is fixed (every identical call is paid once, by whichever row asks first)
_SUMMED = ("requests", "prompt_tokens", "completion_tokens")
#: report.md sections of usage and time (per-row usage depends on which row paid for a shared call)
_COST_SECTIONS = ("## Cost per", "## Cost:", "### Tokens by stage")
#: report.md lines that hold the clock or the scratch folder
_VOLATILE_LINE = re.compile(r"(\d+(\.\d+)? ?s\b|seconds|/tmp/|agentcausal-bench-|\d{4}-\d\d-\d\dT)")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _table_digest(path: Path) -> tuple[str, int, list[str]]:
    import pandas as pd

    df = pd.read_parquet(path)
    cols = sorted(c for c in df.columns if not _VOLATILE.search(c))
    rows = sorted(
        json.dumps([_plain(v) for v in vals], default=str, sort_keys=True)
        for vals in zip(*(df[c].tolist() for c in cols), strict=True)
    )
    sums = {c: int(df[c].fillna(0).sum()) for c in _SUMMED if c in df.columns}
    return _sha(json.dumps(cols) + "\n".join(rows)), len(df), cols, sums


def _plain(v: Any) -> Any:
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, float) and v != v:
        return None
    return v


def _report_digest(path: Path) -> str:
    lines, skip = [], False
    for ln in path.read_text().splitlines():
        if ln.startswith("#"):
            skip = ln.startswith(_COST_SECTIONS)
        if not skip and not _VOLATILE_LINE.search(ln):
            lines.append(ln)
    return _sha("\n".join(lines))


def fingerprint(traces: int = 40, log=print) -> dict[str, Any]:
    """Run every attribution method on ``traces`` synthetic traces twice; the digests of the first run's folder.

    Returns ``{"traces", "methods", "requests", "rerun_requests", "results_rows", "results_columns",
    "results.parquet", "usage_sums", "report.md", "rerun results.parquet"}`` and the two run folders (kept with
    ``AGENTCAUSAL_BENCH_KEEP=1``).
    """
    from agentcausal.attribution.plan_model import AttributionRequest
    from agentcausal.registry import ATTRIBUTION_METHODS
    from agentcausal.runs.options import RunOptions
    from agentcausal.settings import RunSettings
    from agentcausal_fakes.profiles import profiles_toml
    from bench.scale import _write_corpus
    from bench.server import ServerProcess
    from bench.throughput import _prefect_warmup
    from flows.attribute import run_attribute

    work = scratch_dir("agentcausal-bench-fingerprint-")
    corpus = work / "corpus.jsonl"
    _write_corpus(traces, corpus)
    methods = ATTRIBUTION_METHODS.names()
    log(f"  Prefect temporary API up in {_prefect_warmup():.1f} s; {traces} traces x {len(methods)} methods")
    out: dict[str, Any] = {"traces": traces, "methods": methods}
    with ServerProcess(latency_s=0.0) as server:
        toml = profiles_toml(work / "profiles.toml", server.base_url, 1, model="bench-fingerprint")
        settings = RunSettings(profiles_path=str(toml), cache_dir=str((work / "cache").resolve()), routing="default")
        for rep in ("first", "rerun"):
            server.reset()
            run_dir = Path(
                run_attribute(
                    AttributionRequest(paths=[str(corpus)], methods=methods),
                    RunOptions(out_dir=str(work / f"run-{rep}")),
                    settings=settings,
                )
            )
            out["requests" if rep == "first" else "rerun_requests"] = server.stats()["requests"]
            out[f"{rep}_run_dir"] = str(run_dir)
            if rep == "first":
                digest, n, cols, sums = _table_digest(run_dir / "results.parquet")
                out.update({"results_rows": n, "results_columns": cols, "results.parquet": digest, "usage_sums": sums})
                out["report.md"] = _report_digest(run_dir / "report.md")
            else:
                out["rerun results.parquet"] = _table_digest(run_dir / "results.parquet")[0]
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.fingerprint", description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=40, help="synthetic traces (default 40)")
    ap.add_argument("--out", default=None, help="write the fingerprint as JSON here")
    args = ap.parse_args(argv)
    from bench.run import _env

    _env()
    fp = fingerprint(args.traces)
    text = json.dumps(fp, indent=2, sort_keys=True)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
