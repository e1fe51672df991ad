"""Command-line options for spend (``attribute``, ``discover``): ``--max-cost``, ``--max-tokens``, ``--resume``,
``--check``, and what they print.

* ``--max-cost USD`` / ``--max-tokens N``: caps on **this invocation** (a night's): the run engine admits jobs
  by their expected cost and the spend measured so far, and holds back the rest as ``not_run (budget)``
  (:class:`agentcausal.runs.budget.BudgetGate`), so a run stops within one job's cost of the cap; the
  next invocation with ``--resume`` and ``--out RUN_DIR`` computes them (the results store and the LLM
  reply cache answer what was paid for, so no call is paid twice). What the run folder spent in all its
  invocations (``run.json``'s ``spend.run_total_usd``) is printed beside the cap. ``--max-cost`` with a
  routed profile that has no price is refused before anything is sent (:func:`refuse_unpriced_cap`).
* ``--dry-run`` prints the plan as JSON on stdout and the estimate table on stderr, offline;
  ``--dry-run --check`` also probes each routed endpoint and its key (``GET <base_url>/models``, a short
  timeout) and exits 2 with one line per missing key, refused key or unreachable endpoint.
* After a run, the actual spend beside the estimate (:func:`print_spend`, from ``run.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentcausal.exceptions import AgentCausalError, ConfigError
from agentcausal.runs.budget import spend_lines
from agentcausal.runs.estimate import estimate_table

__all__ = [
    "CHECK_TIMEOUT_S",
    "add_spend_arguments",
    "check_spend_arguments",
    "print_estimate",
    "probe_endpoints",
    "print_spend",
    "refuse_unpriced_cap",
    "spent_before",
]

#: seconds ``--check`` waits for each endpoint
CHECK_TIMEOUT_S = 5.0


def add_spend_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``--max-cost``, ``--max-tokens``, ``--check`` and (unless the verb has it already) ``--resume`` to a verb's
    parser."""
    g = p.add_argument_group("spend")
    g.add_argument(
        "--max-cost",
        type=float,
        default=None,
        metavar="USD",
        help="spend at most about USD in this invocation: a job is submitted while the spend so far plus the "
        "expected cost of the jobs in flight and its own stays within USD (expected: the mean measured cost "
        "per job of its method, before one the estimate's midpoint), so the run stops within one job's cost "
        "of the cap; the rest are marked 'not_run (budget)' and not cached, so the next --resume into the "
        "same --out runs them. Refused (exit 2, nothing sent) when a routed profile has no price",
    )
    g.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        metavar="N",
        help="the same cap on prompt + completion tokens of this invocation (as the endpoints report them); "
        "works without prices",
    )
    g.add_argument(
        "--check",
        action="store_true",
        help="with --dry-run: also probe each routed endpoint and its API key (GET /models, "
        f"{CHECK_TIMEOUT_S:g} s timeout); exit 2 with one line per missing key or unreachable endpoint",
    )
    if "--resume" not in p._option_string_actions:  # another option module may define it (ops: --out refusal)
        g.add_argument(
            "--resume",
            action="store_true",
            help="continue the run in --out RUN_DIR: finished jobs are read back from the results store "
            "and paid replies from the LLM cache, so only what is missing (failed, not_run) is computed",
        )


def check_spend_arguments(args: argparse.Namespace) -> None:
    """Refuse bad spend options before any work.

    Raises
    ------
    ConfigError
        If ``--max-cost`` or ``--max-tokens`` is not a non-negative number, or ``--check`` comes without
        ``--dry-run``.
    """
    mc = getattr(args, "max_cost", None)
    if mc is not None and (not math.isfinite(mc) or mc < 0):
        raise ConfigError(f"--max-cost must be a non-negative number of USD, got {mc:g}")
    mt = getattr(args, "max_tokens", None)
    if mt is not None and mt < 0:
        raise ConfigError(f"--max-tokens must be a non-negative number of tokens, got {mt}")
    if getattr(args, "check", False) and not getattr(args, "dry_run", False):
        raise ConfigError("--check goes with --dry-run (a run checks its endpoints itself)")


def refuse_unpriced_cap(
    args: argparse.Namespace, profiles_path: str | None, routing: str, stages: Iterable[str]
) -> None:
    """With ``--max-cost``: refuse, before anything is sent, a run whose ``stages`` route to a profile without a
    price (an embedded or local model is priced at $0; a dated price of 0 is a free tier).

    Raises
    ------
    ConfigError
        One line naming each unpriced profile with its stages, how to price it, and ``--max-tokens``
        (:func:`agentcausal.runs.budget.blind_cap_message`); also if the profiles file or routing does not exist.
    """
    if getattr(args, "max_cost", None) is None:
        return
    # start-up cost: loads openai, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.llm.profiles import load_profiles
    from agentcausal.runs.budget import refuse_blind_cap

    refuse_blind_cap(load_profiles(profiles_path, routing), stages, f"routing {routing!r}")


def print_estimate(
    plan: Any, max_cost: float | None = None, *, max_tokens: int | None = None, file: Any = None
) -> None:
    """The plan's estimate table (and how it compares with ``--max-cost``) on ``file`` (default stderr)."""

    out = file or sys.stderr
    est = getattr(plan, "estimate", None)
    if not est:
        print("estimate: none for this plan", file=out)
        return
    print(estimate_table(est), file=out)
    for flag, cap, high, shown in (
        ("--max-cost", max_cost, (est["total"].get("usd") or [None, None])[1], lambda v: f"${v:g}"),
        (
            "--max-tokens",
            max_tokens,
            est["total"]["prompt_tokens"][1] + est["total"]["completion_tokens"][1],
            lambda v: f"{int(v):,} tokens",
        ),
    ):
        if cap is None or high is None:  # a price unknown: --max-cost was refused before the estimate
            continue
        if high > cap:
            print(
                f"{flag} {shown(cap)} is below the estimate's high end ({shown(high)}): this invocation may stop "
                "early and mark the rest 'not_run (budget)' for the next one",
                file=out,
            )
        else:
            print(f"{flag} {shown(cap)} covers the estimate's high end ({shown(high)})", file=out)


def probe_endpoints(
    profiles_path: str | None, routing: str, stages: Iterable[str], *, timeout_s: float = CHECK_TIMEOUT_S
) -> tuple[list[str], list[str]]:
    """Probe every routed endpoint and key of ``stages``: (problems, fine), one line each.

    One ``GET <base_url>/models`` per distinct (endpoint, key variable) with the key when it is set; a
    missing key (an unset variable a profile needs), a refused key (HTTP 401/403) and an endpoint that
    refuses the connection, does not resolve or does not answer within ``timeout_s`` are problems. The
    embedded model and the local embedder are not probed (they run here).

    Raises
    ------
    ConfigError, UnknownStageError
        If the profiles file, the routing or a stage's route does not exist.
    """
    import httpx

    # start-up cost: loads openai, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.llm.profiles import load_profiles

    profiles = load_profiles(profiles_path, routing)
    groups: dict[tuple[str, str | None], list[tuple[str, Any]]] = {}
    for st in sorted(set(stages)):
        p = profiles.profile_for(st)
        groups.setdefault((p.base_url, p.api_key_env), []).append((st, p))
    problems: list[str] = []
    fine: list[str] = []
    for (url, env), members in groups.items():
        p = members[0][1]
        names = ", ".join(sorted({q.name for _, q in members}))
        where = f"profile {names}, stages {', '.join(st for st, _ in members)}"
        if p.is_embedded or p.is_local_embedder:
            fine.append(f"{where}: {'embedded model' if p.is_embedded else 'local embedder'}, runs here (not probed)")
            continue
        try:
            key = p.api_key()
            missing = False
        except AgentCausalError:
            key, missing = None, True
            problems.append(f"missing key: ${env} is unset ({where})")
        headers = {"Authorization": f"Bearer {key}"} if key and key != "not-needed" else {}
        try:
            r = httpx.get(url.rstrip("/") + "/models", headers=headers, timeout=timeout_s)
        except httpx.TimeoutException:
            problems.append(f"unreachable: {url} gave no answer to GET /models within {timeout_s:g} s ({where})")
            continue
        except (httpx.TransportError, ValueError) as exc:
            problems.append(f"unreachable: {url}: {str(exc) or type(exc).__name__} (GET /models; {where})")
            continue
        if r.status_code in (401, 403) and not missing:
            problems.append(f"key refused: {url} answered HTTP {r.status_code} to GET /models with ${env} ({where})")
        elif not missing:
            fine.append(
                f"{where}: {url} answered GET /models (HTTP {r.status_code})"
                + (f", key ${env} accepted" if env and key != "not-needed" else "")
            )
    return problems, fine


def run_check(profiles_path: str | None, routing: str, stages: Iterable[str]) -> int:
    """``--dry-run --check``: the probe's lines on stderr; 2 when any is a problem, else 0."""
    problems, fine = probe_endpoints(profiles_path, routing, stages)
    for line in fine:
        print(f"check: ok: {line}", file=sys.stderr)
    for line in problems:
        print(f"check: {line}", file=sys.stderr)
    if problems:
        print(f"agentcausal: error: --check found {len(problems)} problem(s); nothing was run", file=sys.stderr)
        return 2
    return 0


def spent_before(args: argparse.Namespace) -> float:
    """USD the run folder of ``--resume`` spent in its earlier invocations (``run.json``'s ``run_total_usd``; 0
    without ``--resume`` or a readable ``run.json``): reported beside this invocation's spend, not counted
    against ``--max-cost``."""
    if not getattr(args, "resume", False) or not getattr(args, "out", None):
        return 0.0
    try:
        spend = json.loads((Path(args.out) / "run.json").read_text(encoding="utf-8")).get("spend") or {}
        return float(spend.get("run_total_usd", (spend.get("actual") or {}).get("total", {}).get("usd", 0.0)))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0.0


def print_spend(run_dir: str | Path) -> None:
    """The actual spend of a finished run beside its estimate (``run.json``'s ``spend``), one line on stdout."""

    try:
        meta = json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if meta.get("spend"):
        print("\n".join(spend_lines(meta["spend"])))
