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
SCHEMA = {"type": "object", "properties": {"reason": {"type": "string", "maxLength": 160},
                                           "error": {"type": "boolean"}},
          "required": ["reason", "error"]}


def prompts() -> list[dict]:
    """Step-by-step questions over the example traces: trace prefix 0..i, "is step i an error?"."""
    out = []
    for name in ("wrong_unit_at_step_2.json", "misread_tool_output_at_step_4.json"):
        trace = json.loads((ROOT / "data" / "examples" / name).read_text())
        steps = trace["history"]
        for i in range(len(steps)):
            text = "\n".join(f"Step {j} - {s.get('name') or s.get('role')}: {s['content']}" for j, s in
                             enumerate(steps[: i + 1]))
            out.append({"id": f"{name.split('.')[0]}#{i}", "messages": [
                {"role": "system", "content": "You check one step of a multi-agent conversation for errors."},
                {"role": "user", "content": f"Problem: {trace['question']}\nConversation so far:\n{text}\n\n"
                                            f"Does step {i} contain an error that derails the solution? "
                                            "Give a short reason, then true or false."}]})
    return out


def run(condition: str, out: Path, sets: list[str], deterministic: bool, max_tokens: int, limit: int,
        temperature: float = 0.0) -> None:
    import openai

    from agentcausal.llm.local import packaged_model_path, start_server

    options: dict[str, object] = {}
    for s in sets:
        k, _, v = s.partition("=")
        options[k] = {"true": True, "false": False}.get(v.lower(), int(v) if v.lstrip("-").isdigit() else v)
    threads = {"threads1": 1, "threads2": 2}.get(condition, 1)  # 1 thread holds up on a busy machine
    n_parallel = int(options.pop("n_parallel", 2))
    srv = start_server(packaged_model_path("qwen2.5-coder-0.5b-instruct-q4_k_m"), n_parallel=n_parallel,
                       ctx_per_slot=4096, threads=threads, deterministic=deterministic, server_options=options)
    client = openai.OpenAI(base_url=srv.base_url, api_key=srv.api_key, timeout=600, max_retries=0)
    reqs = prompts()[:limit]
    order = list(reversed(reqs)) if condition == "reversed" else reqs

    def one(r: dict) -> tuple[str, dict]:
        t0 = time.perf_counter()
        resp = client.chat.completions.create(
            model="m", messages=r["messages"], temperature=temperature, max_tokens=max_tokens, logprobs=True,
            top_logprobs=1, response_format={"type": "json_schema",
                                             "json_schema": {"name": "Check", "schema": SCHEMA, "strict": False}})
        ch = resp.choices[0]
        lps = [t.logprob for t in (ch.logprobs.content or [])] if ch.logprobs else []
        return r["id"], {"text": ch.message.content, "logprobs": lps, "seconds": time.perf_counter() - t0,
                         "cached_tokens": getattr(getattr(resp.usage, "prompt_tokens_details", None),
                                                  "cached_tokens", None)}

    t0 = time.perf_counter()
    if condition == "concurrent":
        with ThreadPoolExecutor(2) as pool:
            results = dict(pool.map(one, order))
    else:
        results = dict(one(r) for r in order)
    wall = time.perf_counter() - t0
    srv.stop()
    out.write_text(json.dumps({"condition": condition, "options": options, "n_parallel": n_parallel,
                               "threads": threads, "deterministic": deterministic, "wall_s": wall,
                               "temperature": temperature,
                               "results": results}, indent=1))
    print(f"{condition}: {len(results)} requests in {wall:.1f} s -> {out}")


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
    print(f"{ra['condition']} vs {rb['condition']}: text identical {same_text}/{n}, "
          f"log-probabilities identical {same_lp}/{n}; wall {ra['wall_s']:.0f} s vs {rb['wall_s']:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.embedded_determinism", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run")
    r.add_argument("--condition", required=True,
                   choices=["sequential", "reversed", "concurrent", "threads1", "threads2"])
    r.add_argument("--out", required=True, type=Path)
    r.add_argument("--set", action="append", default=[], dest="sets", metavar="NAME=VALUE")
    r.add_argument("--deterministic", action="store_true")
    r.add_argument("--max-tokens", type=int, default=24)
    r.add_argument("--limit", type=int, default=7, help="the first N requests (default 7)")
    r.add_argument("--temperature", type=float, default=0.0, help="sent without a seed (default 0)")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args(argv)
    if args.verb == "run":
        run(args.condition, args.out, args.sets, args.deterministic, args.max_tokens, args.limit, args.temperature)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
