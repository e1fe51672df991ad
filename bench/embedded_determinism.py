"""Which server condition changes the embedded model's temperature-0 replies (a benchmark, not a test).

Each run starts a fresh embedded llama.cpp server (:func:`agentcausal.llm.local.start_server`) and
sends one fixed set of structured requests built from ``data/examples`` (step-by-step questions over a
growing trace prefix, so prompts share prefixes as the methods' prompts do), at temperature 0 with
``logprobs``. It writes each reply's text and per-token log-probabilities, so two runs can be compared
bit for bit: a log-probability that differs is a different computation even where the text agrees.

::

    python -m bench.embedded_determinism run --condition sequential --out /tmp/a.json
    python -m bench.embedded_determinism run --condition reversed   --out /tmp/b.json
    python -m bench.embedded_determinism compare /tmp/a.json /tmp/b.json

Conditions (each on a fresh server; the server options are those of ``start_server`` unless named):

* ``sequential``: the requests one at a time, in order (1 CPU thread unless named);
* ``reversed``: one at a time, in reverse order (each prompt meets another slot and prompt-cache state);
* ``concurrent``: two at a time (two slots decode in one batch);
* ``repeated``: every request twice, the second reply recorded (its whole prompt is in the cache);
* ``threads1`` / ``threads2``: sequential with 1 or 2 CPU threads;
* any of them with ``--set NAME=VALUE`` server options (``cache_prompt=false``, ``n_parallel=1``,
  ``cache_ram_mib=0``, ``n_ubatch=...``) and ``--deterministic`` (the embedded profile's
  reproducible mode, :func:`agentcausal.llm.local.start_server`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = {
    "type": "object",
    "properties": {"reason": {"type": "string", "maxLength": 160}, "error": {"type": "boolean"}},
    "required": ["reason", "error"],
}


GUIDE = " ".join(
    f"Rule {i}: an error is a step whose content contradicts the problem, an earlier step or a "
    f"tool output, or that skips a check the plan asked for; rule {i} applies to every agent."
    for i in range(24)
)


def prompts(long: bool = False) -> list[dict]:
    """Step-by-step questions over the example traces: trace prefix 0..i, "is step i an error?".

    ``long`` puts a fixed guide of about 700 tokens first, so every prompt spans more than one
    512-token prefill batch and a reused prefix moves the batch boundaries."""
    out = []
    for name in ("wrong_unit_at_step_2.json", "misread_tool_output_at_step_4.json"):
        trace = json.loads((ROOT / "data" / "examples" / name).read_text())
        steps = trace["history"]
        for i in range(len(steps)):
            text = "\n".join(
                f"Step {j} - {s.get('name') or s.get('role')}: {s['content']}" for j, s in enumerate(steps[: i + 1])
            )
            out.append(
                {
                    "id": f"{name.split('.')[0]}#{i}",
                    "messages": [
                        {
                            "role": "system",
                            "content": "You check one step of a multi-agent conversation for errors."
                            + (" " + GUIDE if long else ""),
                        },
                        {
                            "role": "user",
                            "content": f"Problem: {trace['question']}\nConversation so far:\n{text}\n\n"
                            f"Does step {i} contain an error that derails the solution? "
                            "Give a short reason, then true or false.",
                        },
                    ],
                }
            )
    return out


def run(
    condition: str,
    out: Path,
    sets: list[str],
    deterministic: bool,
    max_tokens: int,
    limit: int,
    temperature: float = 0.0,
    long: bool = False,
) -> None:
    import openai

    from agentcausal.llm.local import start_server
    from agentcausal.llm.packaged import packaged_model_path

    options = _options(sets)
    threads = {"threads1": 1, "threads2": 2}.get(condition, 1)  # 1 thread holds up on a busy machine
    n_parallel = int(options.pop("n_parallel", 2))
    srv = start_server(
        packaged_model_path("qwen2.5-coder-0.5b-instruct-q4_k_m"),
        n_parallel=n_parallel,
        ctx_per_slot=4096,
        threads=threads,
        deterministic=deterministic,
        server_options=options,
    )
    client = openai.OpenAI(base_url=srv.base_url, api_key=srv.api_key, timeout=600, max_retries=0)
    reqs = prompts(long)[:limit]
    order = list(reversed(reqs)) if condition == "reversed" else reqs

    def one(r: dict) -> tuple[str, dict]:
        t0 = time.perf_counter()
        resp = client.chat.completions.create(
            model="m",
            messages=r["messages"],
            temperature=temperature,
            max_tokens=max_tokens,
            logprobs=True,
            top_logprobs=1,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "Check", "schema": SCHEMA, "strict": False},
            },
        )
        ch = resp.choices[0]
        lps = [t.logprob for t in (ch.logprobs.content or [])] if ch.logprobs else []
        return r["id"], {
            "text": ch.message.content,
            "logprobs": lps,
            "seconds": time.perf_counter() - t0,
            "cached_tokens": getattr(getattr(resp.usage, "prompt_tokens_details", None), "cached_tokens", None),
        }

    t0 = time.perf_counter()
    if condition == "concurrent":
        with ThreadPoolExecutor(2) as pool:
            results = dict(pool.map(one, order))
    elif condition == "repeated":  # every prompt twice: the second reply comes from a fully cached prompt
        for r in order:
            one(r)
        results = dict(one(r) for r in order)
    else:
        results = dict(one(r) for r in order)
    wall = time.perf_counter() - t0
    srv.stop()
    out.write_text(
        json.dumps(
            {
                "condition": condition,
                "options": options,
                "n_parallel": n_parallel,
                "threads": threads,
                "deterministic": deterministic,
                "wall_s": wall,
                "temperature": temperature,
                "long": long,
                "results": results,
            },
            indent=1,
        )
    )
    print(f"{condition}: {len(results)} requests in {wall:.1f} s -> {out}")


METHODS = ("all_at_once", "binary_search", "step_by_step")
EXAMPLES = ("wrong_unit_at_step_2.json", "misread_tool_output_at_step_4.json")


def _replies(cache_dir: Path) -> dict[str, str]:
    """Every chat reply a gateway cached: cache key -> text."""
    from agentcausal.llm.reply_cache import ReplyCache

    cache = ReplyCache(cache_dir)
    try:
        return {k: v["text"] for k in cache.iterkeys() if (v := cache.get(k)) is not None and "text" in v}
    finally:
        cache.close()


def _options(sets: list[str]) -> dict[str, object]:
    options: dict[str, object] = {}
    for s in sets:
        k, _, v = s.partition("=")
        options[k] = {"true": True, "false": False}.get(v.lower(), int(v) if v.lstrip("-").isdigit() else v)
    if "flash_attn_type" in options:  # an enum in xllamacpp
        import xllamacpp

        options["flash_attn_type"] = xllamacpp.llama_flash_attn_type(options["flash_attn_type"])
    return options


def _mac_run(gw, dataset: str):
    """MAC (small preset, typed executor) on one bnlearn dataset, n = 1000, seed 0: {item: (edges, status)}."""
    from agentcausal.discovery.config import DiscoveryConfig
    from agentcausal.discovery.data.datasets import load_dataset
    from agentcausal.discovery.jobs import run_discovery
    from agentcausal.discovery.mac import settings as mac_settings
    from agentcausal.discovery.variants import variant
    from agentcausal.registry import DISCOVERY_METHODS
    from agentcausal.settings import preset_values

    mac = mac_settings.MACSettings(**{**preset_values(mac_settings.PRESETS, "small"), "executor": "typed"})
    out = run_discovery(
        variant(DISCOVERY_METHODS, "mac"), load_dataset(dataset, n=1000, seed=0), gw, DiscoveryConfig(mac=mac), seed=0
    )
    edges = sorted(map(list, out.graph.directed_edges())) if out.graph is not None else None
    return {f"mac/{dataset}": [edges, out.status]}


def methods(
    reproducible: bool,
    out: Path,
    runs: int,
    sets: list[str] | None = None,
    workload: str = "baselines",
) -> None:
    """Run the Who&When baselines (small preset) on the example traces, or MAC on Earthquake
    (``workload="mac"``), ``runs`` times in this process, each with a fresh LLM cache and two items at a
    time (as the flows do), on one embedded server."""
    import os
    import resource
    import tempfile
    import urllib.request

    from agentcausal.attribution.jobs import run_method
    from agentcausal.llm import Gateway, load_profiles, local
    from agentcausal.registry import ATTRIBUTION_METHODS
    from agentcausal.traces.io import load_traces

    os.environ["AGENTCAUSAL_PROFILE_EMBEDDED_REPRODUCIBLE"] = "true" if reproducible else "false"
    if sets:  # llama.cpp options for this experiment
        import functools

        local.start_server = functools.partial(local.start_server, server_options=_options(sets))
    profiles = load_profiles(None, "default")
    assert profiles.profiles["embedded"].reproducible is reproducible
    sent: list[dict] = []  # every request, in the order sent, with its reply
    real_request = Gateway._request

    def logged(self, stage, profile, messages, params, timer):
        out = real_request(self, stage, profile, messages, params, timer)
        sent.append({"messages": messages, "params": {k: v for k, v in params.items()}, "reply": out[0]})
        return out

    Gateway._request = logged
    traces = load_traces([ROOT / "data" / "examples" / n for n in EXAMPLES])
    pairs = [(ATTRIBUTION_METHODS[m], t) for m in METHODS for t in traces]
    record = []
    for i in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            gw = Gateway(profiles, cache_dir=Path(tmp) / "llm")
            c0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            if workload == "mac":
                rows = _mac_run(gw, "earthquake")
            else:
                with ThreadPoolExecutor(2) as pool:
                    atts = list(pool.map(lambda mt: run_method(mt[1], mt[0], gw), pairs))  # noqa: B023 (used within this iteration)
                rows = {f"{a.method}/{a.trace_id}": [a.step, a.agent, a.status] for a in atts}
            wall = time.perf_counter() - t0
            c1 = resource.getrusage(resource.RUSAGE_SELF)
            replies = _replies(Path(tmp) / "llm")
            gw.close()
        url = local.ensure_embedded_server(profiles.profiles["embedded"]).removesuffix("/v1")
        key = local.embedded_api_key(url + "/v1")
        req = urllib.request.Request(url + "/metrics", headers={"Authorization": f"Bearer {key}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            metrics = {
                ln.split()[0]: float(ln.split()[1])
                for ln in r.read().decode().splitlines()
                if ln.startswith("llamacpp:") and len(ln.split()) == 2
            }
        record.append(
            {
                "run": i,
                "wall_s": wall,
                "cpu_s": (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime),
                "attributions": rows,
                "replies": replies,
                "server_metrics_cumulative": metrics,
                "requests": list(sent),
            }
        )
        sent.clear()
        print(f"run {i}: {len(replies)} replies, {wall:.0f} s wall, {record[-1]['cpu_s']:.0f} s CPU", flush=True)
    threads = profiles.profiles["embedded"].threads or local.default_threads()
    out.write_text(
        json.dumps({"reproducible": reproducible, "workload": workload, "threads": threads, "runs": record}, indent=1)
    )
    base = record[0]
    for r in record[1:]:
        same = sum(r["replies"].get(k) == v for k, v in base["replies"].items())
        rows = sum(r["attributions"][k] == v for k, v in base["attributions"].items())
        print(
            f"run {r['run']} vs run 0: replies identical {same}/{len(base['replies'])}, "
            f"attribution rows identical {rows}/{len(base['attributions'])}"
        )


def compare(a: Path, b: Path) -> int:
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    same_text = same_lp = 0
    for k, x in ra["results"].items():
        y = rb["results"][k]
        same_text += x["text"] == y["text"]
        same_lp += x["logprobs"] == y["logprobs"]
        if x["text"] != y["text"]:
            print(f"  {k}: text differs:\n    {x['text']!r}\n    {y['text']!r}")
        elif x["logprobs"] != y["logprobs"]:
            d = max(abs(p - q) for p, q in zip(x["logprobs"], y["logprobs"], strict=False))
            print(f"  {k}: same text, log-probabilities differ (max |d| {d:.2e})")
    n = len(ra["results"])
    print(
        f"{ra['condition']} vs {rb['condition']}: text identical {same_text}/{n}, "
        f"log-probabilities identical {same_lp}/{n}; wall {ra['wall_s']:.0f} s vs {rb['wall_s']:.0f} s"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.embedded_determinism", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run")
    r.add_argument(
        "--condition",
        required=True,
        choices=["sequential", "reversed", "concurrent", "repeated", "threads1", "threads2"],
    )
    r.add_argument("--out", required=True, type=Path)
    r.add_argument("--set", action="append", default=[], dest="sets", metavar="NAME=VALUE")
    r.add_argument("--deterministic", action="store_true")
    r.add_argument("--max-tokens", type=int, default=24)
    r.add_argument("--limit", type=int, default=7, help="the first N requests (default 7)")
    r.add_argument("--temperature", type=float, default=0.0, help="sent without a seed (default 0)")
    r.add_argument("--long", action="store_true", help="prompts over 512 tokens (a shared 700-token guide first)")
    m = sub.add_parser("methods", help="the baselines on the example traces, several fresh-cache runs")
    m.add_argument("--reproducible", action="store_true")
    m.add_argument("--runs", type=int, default=2)
    m.add_argument("--workload", choices=["baselines", "mac"], default="baselines")
    m.add_argument("--set", action="append", default=[], dest="sets", metavar="NAME=VALUE")
    m.add_argument("--out", required=True, type=Path)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args(argv)
    if args.verb == "methods":
        methods(args.reproducible, args.out, args.runs, args.sets, args.workload)
        return 0
    if args.verb == "run":
        run(
            args.condition,
            args.out,
            args.sets,
            args.deterministic,
            args.max_tokens,
            args.limit,
            args.temperature,
            args.long,
        )
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
