"""What every benchmark shares: the corpus, machine facts, and the result writers (the fake endpoint's
profiles and the synthetic traces are test doubles: :mod:`agentcausal_fakes`)."""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from agentcausal.traces.model import Trace
from agentcausal_fakes.synthetic import synthetic_traces

__all__ = [
    "on_parent_api",
    "in_fresh_process",
    "RESULTS_DIR",
    "who_and_when_dir",
    "bench_corpus",
    "machine",
    "write_result",
    "md_table",
    "reset_peak_rss",
    "peak_rss_mb",
]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parents[1]

#: share of Algorithm-Generated traces in the bench corpus (the development split has 84 of 123)
ALGORITHM_GENERATED_SHARE = 0.68


def scratch_dir(prefix: str) -> Path:
    """A new folder under the system's temporary directory, removed when this process exits.

    Set ``AGENTCAUSAL_BENCH_KEEP=1`` to keep it for inspection. A process killed by a signal leaves it behind.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if os.environ.get("AGENTCAUSAL_BENCH_KEEP") != "1":
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def who_and_when_dir() -> Path | None:
    """The Who&When development split: ``$AGENTCAUSAL_WHO_AND_WHEN_DIR``, ``../shared/data/who_and_when``
    or ``data/who_and_when``; None when none holds ``Algorithm-Generated``."""
    for cand in (
        os.environ.get("AGENTCAUSAL_WHO_AND_WHEN_DIR"),
        REPO.parent / "shared" / "data" / "who_and_when",
        REPO / "data" / "who_and_when",
    ):
        if cand and (Path(cand) / "Algorithm-Generated").is_dir():
            return Path(cand)
    return None


def bench_corpus(n: int = 50) -> tuple[list[Trace], str]:
    """The throughput corpus: ``n`` Who&When development traces, else ``n`` synthetic ones.

    The Who&When selection is fixed: the first ``round(0.68 n)`` Algorithm-Generated
    and the first remaining Hand-Crafted traces in numeric file order (the split's
    own mix of the two subsets). The data is read in place, never copied into the repo.

    Returns
    -------
    (traces, description of the corpus)
    """
    root = who_and_when_dir()
    if root is None:
        return synthetic_traces(n), f"{n} synthetic traces (5-20 steps; Who&When split not found)"
    from agentcausal.traces.whowhen import load_who_and_when

    ag = load_who_and_when(root, subsets=("Algorithm-Generated",))
    hc = load_who_and_when(root, subsets=("Hand-Crafted",))
    n_ag = min(len(ag), round(ALGORITHM_GENERATED_SHARE * n))
    traces = ag[:n_ag] + hc[: n - n_ag]
    chars = sorted(sum(len(s.content) for s in t.steps) for t in traces)
    return traces, (
        f"{len(traces)} Who&When development traces ({n_ag} Algorithm-Generated, "
        f"{len(traces) - n_ag} Hand-Crafted, first in file order; "
        f"{min(len(t) for t in traces)}-{max(len(t) for t in traces)} steps, "
        f"median {chars[len(chars) // 2] / 1000:.1f}k characters)"
    )


def machine() -> dict[str, Any]:
    """Where and when the numbers were measured: cores, load average, Python, commit."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    load = os.getloadavg()
    return {
        "when": dt.datetime.now().isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "load_avg_1_5_15": [round(x, 2) for x in load],
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "commit": commit,
    }


def md_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A GitHub markdown table of ``rows`` (floats to 3 significant digits)."""
    if not rows:
        return "_no rows_\n"
    cols = list(columns or rows[0].keys())

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        return "" if v is None else str(v)

    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    out += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(out) + "\n"


def write_result(name: str, payload: dict[str, Any], markdown: str, out_dir: Path = RESULTS_DIR) -> tuple[Path, Path]:
    """Write ``<name>.json`` and ``<name>.md`` into ``out_dir``; return both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    j, m = out_dir / f"{name}.json", out_dir / f"{name}.md"
    j.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    m.write_text(markdown)
    return j, m


def reset_peak_rss() -> str:
    """Reset this process's peak RSS to its current RSS where Linux allows; the scope ``rss_mb`` then has."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return "row"
    except OSError:
        return "process so far"


def peak_rss_mb() -> float:
    """This process's peak resident memory, MB (``VmHWM``; else ``ru_maxrss``).

    ``VmHWM`` starts again at ``exec``; ``ru_maxrss`` does not (Linux keeps the largest of the process's
    images, so a child spawned from a large parent reports the parent's peak when its own is smaller)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)  # kB
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


@contextlib.contextmanager
def on_parent_api(api_url: str) -> Iterator[None]:
    """Run this fresh bench process's flows on the parent's temporary Prefect API at ``api_url``, as a command runs
    on an API this project started: without flow-run heartbeats.

    Call it before Prefect is imported here. With ``PREFECT_API_URL`` set, :func:`flows.api_server.unwatched_heartbeats_off`
    takes the API for the user's and keeps Prefect's heartbeats, whose thread every flow joins at its end (up to
    a second per flow, ``bench/README.md``, "Where a rerun's second goes").
    """
    os.environ["PREFECT_API_URL"] = api_url
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def _on_api(api_url: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:  # pragma: no cover - in the child
    with on_parent_api(api_url):
        return fn(*args)


def in_fresh_process(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a fresh (spawned) process on this process's temporary Prefect API (:func:`on_parent_api`),
    which a warm-up flow must have started; its return value. ``fn`` and ``args`` must pickle (``fn`` a module's
    own function); an exception in the child is raised here."""
    from prefect.server.api.server import SubprocessASGIServer

    api_url = SubprocessASGIServer().api_url  # a per-process singleton
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as child:
        return child.submit(_on_api, api_url, fn, args).result()
