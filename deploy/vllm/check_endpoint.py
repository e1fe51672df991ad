"""Check an OpenAI-compatible endpoint the way agentcausal's LCE stage uses it (no vllm import).

::

    python deploy/vllm/check_endpoint.py --url http://gpu-host:8000/v1
    python deploy/vllm/check_endpoint.py --url http://gpu-host:8000/v1 --profile vllm --model Qwen/Qwen3-Coder-30B-A3B-Instruct

Steps: ``GET /health`` (vLLM; skipped if absent), ``GET /v1/models`` lists the profile's model, then two
structured calls through :class:`agentcausal.llm.Gateway` (``response_format`` json_schema, no cache) whose
prompts share a long prefix, as LCE's counterfactual simulations of one trace do; prints the latencies and,
where the server exposes Prometheus ``/metrics``, its prefix-cache counters. Exit 0 when every step passed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

from pydantic import BaseModel, Field


class Ping(BaseModel):
    """The reply of the check: the number asked for and one word."""

    number: int = Field(description="the number in the question")
    word: str = Field(description="one word")


def _get(url: str, key: str | None) -> tuple[int, str]:
    req = urllib.request.Request(url)
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError as exc:
        return 0, str(exc)


def check(url: str, profile: str = "vllm", model: str | None = None, stage: str = "dcfa.lce") -> list[str]:
    """Run the checks; return the failures (empty when all passed). Prints progress."""
    from agentcausal.llm import Gateway, ProfileSet
    from agentcausal.llm.profiles import load_profiles

    url = url.rstrip("/")
    known = load_profiles(None, "default").profiles  # the packaged file or $AGENTCAUSAL_PROFILES
    if profile not in known:
        return [f"unknown profile {profile!r}; known: {', '.join(sorted(known))}"]
    prof = known[profile].model_copy(update={"base_url": url, **({"model": model} if model else {})})
    gw = Gateway(
        ProfileSet(profiles={profile: prof}, routings={"default": {"default": profile}}), cache_dir=None, max_retries=1
    )
    want = prof.model
    key = os.environ.get(prof.api_key_env) if prof.api_key_env else None
    failures: list[str] = []
    root = url[: -len("/v1")] if url.endswith("/v1") else url
    code, _ = _get(root + "/health", key)
    print(f"GET /health: {code or 'no connection'}")
    if code not in (200, 404):
        failures.append(f"/health answered {code or 'nothing'}")
    code, body = _get(url + "/models", key)
    ids = [m.get("id") for m in json.loads(body).get("data", [])] if code == 200 and body else []
    print(f"GET /v1/models: {code} {ids}")
    if want and want not in ids:
        failures.append(f"/v1/models does not list {want!r}")
    if failures:
        return failures
    prefix = "Context shared by both requests, as a trace is shared by its counterfactuals:\n" + "\n".join(
        f"step {i}: the agent checked item {i} and found nothing unusual." for i in range(60)
    )
    for n in (7, 8):
        t0 = time.perf_counter()
        msgs = [
            {"role": "system", "content": "Answer with one JSON object."},
            {"role": "user", "content": f"{prefix}\nReply with number {n} and the word ok."},
        ]
        try:
            reply = gw.structured(stage, msgs, Ping, max_tokens=40)
        except Exception as exc:  # report any failure of the path under test
            failures.append(f"structured call failed: {type(exc).__name__}: {exc}")
            break
        print(
            f"structured call {n}: {reply.model_dump()} in {time.perf_counter() - t0:.2f} s via {gw.model_for(stage)}"
        )
        if reply.number != n:
            failures.append(f"asked for number {n}, got {reply.number}")
    code, metrics = _get(root + "/metrics", key)
    lines = [ln for ln in metrics.splitlines() if "prefix_cache" in ln and not ln.startswith("#")]
    print("prefix cache metrics:" if lines else "prefix cache metrics: not exposed")
    for ln in lines[:6]:
        print("  " + ln)
    return failures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="base URL ending in /v1")
    p.add_argument("--profile", default="vllm", help="profile to point at the URL (default vllm)")
    p.add_argument("--model", default=None, help="model name override (default: the profile's)")
    p.add_argument("--stage", default="dcfa.lce", help="stage routed to the profile (default dcfa.lce)")
    a = p.parse_args(argv)
    failures = check(a.url, a.profile, a.model, a.stage)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print("OK" if not failures else f"{len(failures)} check(s) failed")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
