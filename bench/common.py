"""What every benchmark shares: the corpus, the fake profiles, machine facts, and the result writers."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import random
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agentcausal.llm import Gateway, Profile, ProfileSet
from agentcausal.traces.model import Label, Step, Trace

__all__ = ["RESULTS_DIR", "who_and_when_dir", "bench_corpus", "iter_synthetic_traces", "synthetic_traces",
           "bench_profiles", "bench_gateway", "profiles_toml", "machine", "write_result", "md_table"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parents[1]

#: share of Algorithm-Generated traces in the bench corpus (the development split has 84 of 123)
ALGORITHM_GENERATED_SHARE = 0.68


def who_and_when_dir() -> Path | None:
    """The Who&When development split: ``$AGENTCAUSAL_WHO_AND_WHEN_DIR``, ``../shared/data/who_and_when``
    or ``data/who_and_when``; None when none holds ``Algorithm-Generated``."""
    for cand in (os.environ.get("AGENTCAUSAL_WHO_AND_WHEN_DIR"), REPO.parent / "shared" / "data" / "who_and_when",
                 REPO / "data" / "who_and_when"):
        if cand and (Path(cand) / "Algorithm-Generated").is_dir():
            return Path(cand)
    return None


def iter_synthetic_traces(n: int, seed: int = 0) -> Iterator[Trace]:
    """``n`` invented traces of 5 to 20 steps with step contents of 200 to 1500 characters, one at a time
    (a corpus of 50,000 is written without holding it)."""
    rng = random.Random(seed)
    agents = ["Orchestrator", "WebSurfer", "Coder", "ComputerTerminal", "Assistant"]
    for k in range(n):
        steps = [Step(index=i, agent=rng.choice(agents),
                      content=" ".join(f"w{rng.randrange(1000)}" for _ in range(rng.randrange(40, 300))))
                 for i in range(rng.randrange(5, 21))]
        culprit = rng.randrange(len(steps))
        yield Trace(id=f"synthetic/{k}", source="synthetic", question=f"Synthetic question {k}?",
                    ground_truth=f"answer {k}", steps=steps, label=Label(agent=steps[culprit].agent, step=culprit))


def synthetic_traces(n: int, seed: int = 0) -> list[Trace]:
    """The traces of :func:`iter_synthetic_traces` as a list."""
    return list(iter_synthetic_traces(n, seed))


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
    return traces, (f"{len(traces)} Who&When development traces ({n_ag} Algorithm-Generated, "
                    f"{len(traces) - n_ag} Hand-Crafted, first in file order; "
                    f"{min(len(t) for t in traces)}-{max(len(t) for t in traces)} steps, "
                    f"median {chars[len(chars) // 2] / 1000:.1f}k characters)")


def bench_profiles(base_url: str, concurrency: int, *, model: str = "bench-model",
                   context_window: int = 128000, preset: str | None = None) -> ProfileSet:
    """Every chat stage and the embeddings on one fake endpoint, sharing one concurrency limit.

    Chat and embedding profiles name one ``limit_group`` (named after ``model``)
    of size ``concurrency``, so the gateway caps *all* requests in flight at
    ``concurrency`` (each profile alone would have its own limit, and DCFA's
    embeddings would add to the chat requests) and ``sum of latencies /
    concurrency`` is a true lower bound of the wall time. Use a new ``model``
    label per configuration: semaphores live for the process. ``preset`` is the
    method-settings preset the routing names (``agentcausal.settings``; None: the
    settings models' defaults, which are the ``paper`` preset).
    """
    common = dict(base_url=base_url, model=model, max_concurrency=concurrency, timeout_s=60.0, limit_group=model)
    return ProfileSet(
        profiles={"bench": Profile(name="bench", context_window=context_window, **common),
                  "bench-embed": Profile(name="bench-embed", kind="embedding", **common)},
        routings={"default": {"default": "bench", "embed": "bench-embed"}},
        limit_groups={model: concurrency},
        presets={"default": preset} if preset else {},
    )


def bench_gateway(base_url: str, concurrency: int, cache_dir: str | Path | None, *, model: str,
                  preset: str | None = None) -> Gateway:
    """A Gateway on :func:`bench_profiles` (its routing naming ``preset``), with a disk cache at ``cache_dir``."""
    return Gateway(bench_profiles(base_url, concurrency, model=model, preset=preset), cache_dir=cache_dir,
                   max_retries=2)


def profiles_toml(path: str | Path, base_url: str, concurrency: int, *, model: str,
                  context_window: int = 128000, preset: str | None = None) -> Path:
    """The same profiles as :func:`bench_profiles`, as a TOML file for ``RunSettings.profiles_path``."""
    text = (
        f'[limit_groups]\n"{model}" = {concurrency}\n\n'
        f'[profiles.bench]\nkind = "chat"\nbase_url = "{base_url}"\nmodel = "{model}"\n'
        f"max_concurrency = {concurrency}\ntimeout_s = 60\ncontext_window = {context_window}\n"
        f'limit_group = "{model}"\n\n'
        f'[profiles.bench-embed]\nkind = "embedding"\nbase_url = "{base_url}"\nmodel = "{model}"\n'
        f'max_concurrency = {concurrency}\ntimeout_s = 60\nlimit_group = "{model}"\n\n'
        '[routings.default]\ndefault = "bench"\nembed = "bench-embed"\n'
        + (f'preset = "{preset}"\n' if preset else "")
    )
    p = Path(path)
    p.write_text(text)
    return p


def machine() -> dict[str, Any]:
    """Where and when the numbers were measured: cores, load average, Python, commit."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    load = os.getloadavg()
    return {"when": dt.datetime.now().isoformat(timespec="seconds"), "cpus": os.cpu_count(),
            "load_avg_1_5_15": [round(x, 2) for x in load], "python": platform.python_version(),
            "platform": platform.platform(terse=True), "commit": commit}


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
