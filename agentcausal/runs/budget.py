"""Spend, during and after a run: the ``--max-cost`` / ``--max-tokens`` gate and the actual spend, free of either
half (the plan's estimate they read: :mod:`agentcausal.runs.estimate`):

* **Gate** (:class:`BudgetGate`): ``--max-cost USD`` and/or ``--max-tokens N`` cap **this invocation** (a
  night's; earlier invocations into the run folder are reported beside it, not counted). The run engine asks
  the gate before submitting each chunk: a chunk is admitted by its jobs' *expected* cost (the running mean of
  the measured cost per job of its method this invocation, before any the midpoint of the plan's estimate)
  added to the measured spend so far and the expected cost in flight; one that does not fit waits for the
  chunks in flight and is refused, with every later chunk that costs anything, when it still does not fit,
  so a run stops within one job's cost of the cap (the full rule: :class:`BudgetGate`). ``--max-cost`` over a
  routed profile without a price is refused before anything is sent (:func:`refuse_blind_cap`, one line
  naming the profiles; an embedded or local model is priced at $0). The refused jobs get a ``not_run`` record
  with ``status_detail="budget"`` (:func:`not_run_record`), never stored, so the next invocation computes
  them and reuses the rest.
* **Actual** (:class:`SpendTally`): what the records paid this run (requests, tokens, dollars per
  method; a reused record paid nothing), written to ``run.json`` beside the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from agentcausal.exceptions import AgentCausalError, ConfigError
from agentcausal.runs.estimate import fmt_range, price_note, round_money

__all__ = [
    "BudgetGate",
    "BudgetExceeded",
    "UNITS",
    "unpriced_stages",
    "blind_cap_message",
    "refuse_blind_cap",
    "not_run_record",
    "record_cost",
    "record_tokens",
    "SpendTally",
    "spend_line",
    "spend_lines",
]


class BudgetExceeded(AgentCausalError, kind="budget"):
    """The spend cap (``--max-cost`` / ``--max-tokens``) left no room for this job (its record is ``not_run``,
    ``status_detail="budget"``)."""


def unpriced_stages(profiles: Any, stages: Iterable[str]) -> dict[str, list[str]]:
    """The routed profiles of ``stages`` that have no price: profile name -> its stages (empty: every one priced).

    An embedded or local model, a priced profile and a dated price of 0 (a free tier) are priced
    (:func:`price_note`); a stage without a route is left to the route check.
    """
    out: dict[str, list[str]] = {}
    for st in sorted(set(stages)):
        try:
            prof = profiles.profile_for(st)
        except AgentCausalError:
            continue
        if not price_note(prof)[1]:
            out.setdefault(prof.name, []).append(st)
    return out


def blind_cap_message(unpriced: Mapping[str, Iterable[str]], where: str | None = None) -> str:
    """The one line refusing ``--max-cost`` over unpriced profiles (profile -> stages), and how to go on."""
    named = "; ".join(f"{p} ({', '.join(s)})" for p, s in unpriced.items())
    return (
        f"--max-cost cannot weigh what it would spend: no price for profile(s) {named}"
        + (f" in {where}" if where else "")
        + "; price each in a profiles file (price_prompt_per_1k, price_completion_per_1k in USD per 1,000 tokens "
        'and prices_as_of = "YYYY-MM-DD"; a free server: 0 with a date) and pass --profiles FILE, or cap tokens '
        "instead with --max-tokens N"
    )


def refuse_blind_cap(profiles: Any, stages: Iterable[str], where: str | None = None) -> None:
    """Raise when ``--max-cost`` would route a stage of ``stages`` to a profile without a price.

    Raises
    ------
    ConfigError
        One line naming each unpriced profile with its stages, how to price it, and ``--max-tokens``.
    """
    unpriced = unpriced_stages(profiles, stages)
    if unpriced:
        raise ConfigError(blind_cap_message(unpriced, where))


def not_run_record(half: Any, job: Any, cap: str) -> Any:
    """The ``not_run`` record of a job the cap held back (never stored: the next run computes it).

    ``cap``: the cap as the gate says it (:meth:`BudgetGate.describe`).
    """
    why = f"not run: {cap} reached before this job; the next invocation (--resume into the same run folder) computes it"
    rec = half.failed(job, BudgetExceeded(why))
    # the reason as people read it: a job held back is no error, so no exception class before it
    return rec.model_copy(update={"status": "not_run", "status_detail": "budget", "error": why})


def record_cost(record: Any) -> float:
    """USD a record's calls cost (the ``cost_usd`` of its usage stages: the gateway's ledger priced by the profiles)."""
    return float(sum(float(u.get("cost_usd", 0) or 0) for u in (record.usage or {}).values()))


def record_tokens(record: Any) -> int:
    """Prompt + completion tokens a record's calls used, as the endpoints reported them (cache hits: 0)."""
    return sum(
        int(u.get("prompt_tokens", 0) or 0) + int(u.get("completion_tokens", 0) or 0)
        for u in (record.usage or {}).values()
    )


#: the units a cap is kept in: ``usd`` (``--max-cost``) and ``tokens`` (``--max-tokens``)
UNITS = ("usd", "tokens")


def _midpoint_per_job(row: Mapping[str, Any], unit: str) -> float | None:
    """A method's expected USD or tokens per job from its estimate row: the low-high midpoint / jobs."""
    jobs = row.get("jobs") or 0
    if not jobs:
        return 0.0
    if unit == "usd":
        usd = row.get("usd")
        return None if usd is None else (usd[0] + usd[1]) / 2 / jobs
    lo = (row.get("prompt_tokens") or [0, 0])[0] + (row.get("completion_tokens") or [0, 0])[0]
    hi = (row.get("prompt_tokens") or [0, 0])[1] + (row.get("completion_tokens") or [0, 0])[1]
    return (lo + hi) / 2 / jobs


class BudgetGate:
    """Which chunks this invocation may submit under ``--max-cost`` and/or ``--max-tokens`` (the rule below).

    The caps are **this invocation's** (a night's): what earlier invocations into the same run folder spent is
    reported beside them (``spent_before``, ``run.json``'s ``spend.run_total_usd``), never counted against them.

    The rule, for each cap (USD, or prompt + completion tokens):

    * a job's **expected** cost is the running mean of the measured cost of the jobs of its method this
      invocation finished and paid for (a job that paid nothing, its replies all in the LLM cache, is left
      out), and before the first of them, the plan's estimate: the midpoint of the method's low-high
      estimate per job (:class:`Estimator`);
    * ``spent`` is what the finished jobs measured (the records' usage: ``cost_usd``, or tokens as the
      endpoint reported them; a job of a failed chunk with no record counts its expected cost);
    * with nothing in flight, a chunk is **admitted** when ``spent + its expected cost <= cap``; beside
      chunks in flight, when ``spent + 2 x (their expected cost + its own) <= cap`` (room for each job in
      flight to cost twice what is expected), so work runs in parallel far from the cap and one chunk at a
      time close to it;
    * a chunk that does not fit **waits** for the chunks in flight; if it still does not fit with none in
      flight, it is refused and so is every later chunk that costs anything: they become ``not_run``
      (``status_detail="budget"``, never stored), so the next invocation computes them and reuses the rest;
    * until one job of a method has finished this invocation, its jobs go one at a time (the estimate may be
      off; the first measured job replaces it);
    * a chunk expected to cost nothing (no LLM call, the embedded model under ``--max-cost``) always runs.

    So the run stops within one job's cost of the cap: the refusal leaves less than one expected job of
    room, and the spend passes the cap only by what the last job, run alone, cost beyond its expectation
    (given that no job in flight beside others cost more than twice its expectation).

    Parameters
    ----------
    max_cost : float or None, USD for this invocation
    per_job : dict method -> expected USD per job before any is measured (None: the price is unknown; a gate
        refuses to be built over it, :meth:`from_plan`)
    spent_before : float, USD the run folder's earlier invocations spent (reported only)
    max_tokens : int or None, prompt + completion tokens for this invocation
    tokens_per_job : dict method -> expected tokens per job before any is measured

    Raises
    ------
    ValueError
        If a cap is negative or not a number, no cap is given, or ``max_cost`` is given with a method whose
        expected USD is None.
    """

    def __init__(
        self,
        max_cost: float | None,
        per_job: Mapping[str, float | None] | None = None,
        spent_before: float = 0.0,
        *,
        max_tokens: float | None = None,
        tokens_per_job: Mapping[str, float] | None = None,
    ) -> None:
        self.caps: dict[str, float] = {}
        for unit, cap in (("usd", max_cost), ("tokens", max_tokens)):
            if cap is None:
                continue
            if not (isinstance(cap, (int, float)) and math.isfinite(cap) and cap >= 0):
                raise ValueError(f"a {unit} cap must be a number >= 0, got {cap!r}")
            self.caps[unit] = float(cap)
        if not self.caps:
            raise ValueError("a budget gate needs max_cost or max_tokens")
        blind = sorted(m for m, v in (per_job or {}).items() if v is None)
        if "usd" in self.caps and blind:
            raise ValueError(f"max_cost cannot weigh methods without a price: {', '.join(blind)}")
        self.max_cost, self.max_tokens = max_cost, max_tokens
        self._start = {
            "usd": {m: float(v or 0.0) for m, v in (per_job or {}).items()},
            "tokens": {m: float(v or 0.0) for m, v in (tokens_per_job or {}).items()},
        }
        self._paid: dict[str, dict[str, list[float]]] = {u: {} for u in UNITS}  # unit -> method -> [sum, jobs]
        self._finished: dict[str, int] = {}  # method -> jobs finished this invocation
        self.spent_before = float(spent_before)
        self.spent = dict.fromkeys(UNITS, 0.0)
        self.in_flight: dict[int, tuple[str, int, dict[str, float]]] = {}  # chunk -> (method, jobs, expected)
        self.stopped = False
        self.refused_jobs = 0
        self.stopped_at: dict[str, Any] | None = None

    @classmethod
    def from_plan(
        cls, plan: Any, max_cost: float | None = None, spent_before: float = 0.0, *, max_tokens: float | None = None
    ) -> "BudgetGate":
        """A gate from a plan's ``estimate`` (:class:`Estimator`'s result).

        Raises
        ------
        ConfigError
            If ``max_cost`` is given and the plan has no estimate, or a stage of a method has no price (one line
            naming the profiles: :func:`blind_cap_message`).
        """
        est = getattr(plan, "estimate", None) or {}
        methods = est.get("methods", {})
        if max_cost is not None and not est:
            raise ConfigError("--max-cost needs the plan's estimate, and this plan has none: plan the run again")
        if max_cost is not None and (est.get("unpriced") or any(r.get("usd") is None for r in methods.values())):
            raise ConfigError(blind_cap_message(est.get("unpriced") or {"(a routed profile)": ["?"]}))
        return cls(
            max_cost,
            {m: _midpoint_per_job(r, "usd") for m, r in methods.items()},
            spent_before,
            max_tokens=max_tokens,
            tokens_per_job={m: _midpoint_per_job(r, "tokens") or 0.0 for m, r in methods.items()},
        )

    def describe(self) -> str:
        """The caps in words: ``--max-cost $0.5 for this invocation``, ``--max-tokens 20,000 ...``."""
        parts = []
        if self.max_cost is not None:
            parts.append(f"--max-cost ${self.max_cost:g}")
        if self.max_tokens is not None:
            parts.append(f"--max-tokens {int(self.max_tokens):,}")
        return " and ".join(parts) + " for this invocation"

    def expected(self, method: str, unit: str) -> float:
        """Expected USD or tokens of one job of ``method``: the running mean of its paid jobs, else the estimate."""
        total, n = self._paid[unit].get(method, (0.0, 0))
        return total / n if n else self._start[unit].get(method, 0.0)

    def chunk_estimate(self, chunk: Any, unit: str = "usd") -> float:
        """Expected USD (or tokens) of ``chunk``: its jobs times the expected cost of one job of its method."""
        return len(chunk.jobs) * self.expected(chunk.method, unit)

    def _free(self, chunk: Any) -> bool:
        return all(self.chunk_estimate(chunk, u) <= 0 for u in self.caps)

    def fits(self, chunk: Any) -> bool:
        """Whether ``chunk`` fits now (the rule in the class docstring); a chunk expected to cost nothing always does."""
        if self._free(chunk):
            return True
        if self.stopped:
            return False
        if not self._finished.get(chunk.method) and any(m == chunk.method for m, _, _ in self.in_flight.values()):
            return False  # the method's first job runs alone, until one is measured
        for unit, cap in self.caps.items():
            held = sum(e[unit] for _, _, e in self.in_flight.values())
            need = self.chunk_estimate(chunk, unit) + held
            if self.spent[unit] + (need if not self.in_flight else 2 * need) > cap * (1 + 1e-9) + 1e-12:
                return False
        return True

    def admit(self, chunk: Any) -> bool:
        """True: submit ``chunk`` (its expected cost is held in flight). False: the cap is reached (the caller
        waited for the chunks in flight first); every later chunk that costs anything is refused too."""
        if not self.fits(chunk):
            if not self.stopped:
                self.stopped_at = {
                    "method": chunk.method,
                    **{f"expected_{u}": round_money(self.chunk_estimate(chunk, u)) for u in self.caps},
                }
            self.stopped = True
            self.refused_jobs += len(chunk.jobs)
            return False
        self.in_flight[id(chunk)] = (
            chunk.method,
            len(chunk.jobs),
            {u: self.chunk_estimate(chunk, u) for u in UNITS},
        )
        return True

    def settle(self, chunk: Any, measured: Iterable[tuple[float, float]]) -> None:
        """A submitted chunk finished: ``measured`` holds (USD, tokens) of each of its jobs with a record this
        invocation; its other jobs (a failed chunk's) count their expected cost."""
        method, jobs, held = self.in_flight.pop(id(chunk), (chunk.method, len(chunk.jobs), {}))
        done = list(measured)
        for usd, tokens in done:
            for unit, v in (("usd", usd), ("tokens", tokens)):
                self.spent[unit] += v
                if v > 0:
                    s = self._paid[unit].setdefault(method, [0.0, 0])
                    s[0] += v
                    s[1] += 1
        missing = max(0, jobs - len(done))
        for unit in UNITS:
            per = held.get(unit, 0.0) / jobs if jobs else 0.0
            self.spent[unit] += missing * per
        self._finished[method] = self._finished.get(method, 0) + len(done)

    def facts(self) -> dict[str, Any]:
        """For ``run.json``'s ``spend.budget``."""
        return {
            "max_cost_usd": self.max_cost,
            "max_tokens": self.max_tokens,
            "spent_usd": round_money(self.spent["usd"]),
            "spent_tokens": int(round(self.spent["tokens"])),
            "spent_before_usd": round_money(self.spent_before),
            "run_total_usd": round_money(self.spent_before + self.spent["usd"]),
            "stopped": self.stopped,
            "stopped_at": self.stopped_at,
            "not_run": self.refused_jobs,
            "expected_per_job": {
                u: {m: round_money(self.expected(m, u)) for m in sorted(set(self._start[u]) | set(self._paid[u]))}
                for u in self.caps
            },
            "how": "for this invocation (earlier invocations into the run folder reported, not counted): a chunk "
            "is admitted when spent + its expected cost <= the cap with nothing in flight, or spent + 2 x "
            "(expected cost in flight + its own) <= the cap beside chunks in flight; refused, with every later "
            "chunk that costs anything, when it still does not fit with none in flight; "
            "expected cost per job = the running mean of the jobs of its method measured this invocation, "
            "before one the midpoint of the plan's estimate; spent = the records' cost_usd and tokens (a "
            "job of a failed chunk counts its expected cost)",
        }


class SpendTally:
    """What this run paid, per method: requests, prompt and completion tokens and USD of the records it
    computed (a reused record paid nothing this run)."""

    def __init__(self, before: float = 0.0) -> None:
        self.by_method: dict[str, dict[str, float]] = {}
        self.before = before  # USD the run folder's earlier invocations spent (--resume)

    def add(self, method: str, record: Any) -> None:
        t = self.by_method.setdefault(
            method, {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "usd": 0.0, "jobs_paid": 0}
        )
        if record.reused or record.status == "not_run":
            return
        t["jobs_paid"] += 1
        for u in (record.usage or {}).values():
            t["requests"] += int(u.get("requests", 0) or 0)
            t["prompt_tokens"] += int(u.get("prompt_tokens", 0) or 0)
            t["completion_tokens"] += int(u.get("completion_tokens", 0) or 0)
            t["usd"] += float(u.get("cost_usd", 0) or 0)

    def facts(self, estimate: Mapping[str, Any] | None) -> dict[str, Any]:
        """``run.json``'s ``spend``: the actual per method and in total, beside the plan's estimate."""
        methods = {m: {**t, "usd": round_money(t["usd"])} for m, t in self.by_method.items()}
        total = {
            k: sum(t[k] for t in self.by_method.values())
            for k in ("requests", "prompt_tokens", "completion_tokens", "jobs_paid")
        }
        total["usd"] = round_money(sum(t["usd"] for t in self.by_method.values()))
        est = estimate or {}
        return {
            "run_total_usd": round_money(self.before + total["usd"]),
            "before_usd": round_money(self.before),
            "actual": {
                "methods": methods,
                "total": total,
                "how": "the records' usage this run (tokens the endpoint reported, priced by the profiles; "
                "cache hits and reused records cost 0)",
            },
            "estimate": {
                "methods": {
                    m: {k: r.get(k) for k in ("requests", "prompt_tokens", "completion_tokens", "usd")}
                    for m, r in est.get("methods", {}).items()
                },
                "total": est.get("total"),
                "how": est.get("how"),
            }
            if est
            else None,
        }


def spend_lines(spend: Mapping[str, Any]) -> list[str]:
    """:func:`spend_line`, then (for more than one method) one line per method: this run's spend beside its estimate."""
    out = [spend_line(spend)]
    methods = spend["actual"]["methods"]
    est = (spend.get("estimate") or {}).get("methods") or {}
    if len(methods) > 1:
        for m, a in methods.items():
            e = est.get(m) or {}
            usd = e.get("usd")
            shown = (fmt_range(*usd, money=True) if usd is not None else "price unknown") if e else "-"
            reqs = fmt_range(*e["requests"]) if e.get("requests") else "-"
            out.append(
                f"  {m}: ${a['usd']:,.4f}, {_requests(a['requests'])} this run; estimate {shown}, "
                f"{_requests(reqs) if reqs != '-' else '-'}"
            )
    return out


def _requests(n: int | str) -> str:
    """``n`` requests, singular for one (``n``: a count, or a range as :func:`fmt_range` writes it).

    >>> _requests(1), _requests(1200), _requests("1-3")
    ('1 request', '1,200 requests', '1-3 requests')
    """
    shown = f"{n:,}" if isinstance(n, int) else str(n)
    return f"{shown} request" + ("" if shown == "1" else "s")


def spend_line(spend: Mapping[str, Any]) -> str:
    """One console line: the actual spend beside the estimate (``run.json``'s ``spend``)."""
    a = spend["actual"]["total"]
    line = (
        f"spend: ${a['usd']:,.4f} this run ({_requests(a['requests'])}, {a['prompt_tokens']:,} prompt + "
        f"{a['completion_tokens']:,} completion tokens as the endpoint reported, priced by the profiles)"
    )
    est = (spend.get("estimate") or {}).get("total")
    if est:
        usd = est.get("usd")
        money = fmt_range(*usd, money=True) if usd is not None else "price unknown"
        line += (
            f"; estimate {money}, {_requests(fmt_range(*est['requests']))} (chars/4 tokens, assumed reply "
            "lengths, as if no reply were cached)"
        )
    b = spend.get("budget")
    if b:
        caps = []
        if b.get("max_cost_usd") is not None:
            caps.append(f"--max-cost ${b['max_cost_usd']:g}")
        if b.get("max_tokens") is not None:
            caps.append(f"--max-tokens {int(b['max_tokens']):,} ({int(b.get('spent_tokens', 0)):,} tokens spent)")
        line += f"; {' and '.join(caps)} for this invocation"
        if b["not_run"]:
            line += f": {b['not_run']} job(s) not run (budget); the next invocation with --resume computes them"
    if spend.get("before_usd") or b:
        line += f"; ${spend['run_total_usd']:,.4f} for the run folder with its earlier invocations"
    return line
