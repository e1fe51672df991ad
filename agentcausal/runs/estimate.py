"""Spend, before a run: the plan's estimate of requests, tokens and dollars, free of either half (each half says
how its methods call, in its own ``estimate`` module: :mod:`agentcausal.attribution.estimate`,
:mod:`agentcausal.discovery.estimate`). The gate and the actual spend: :mod:`agentcausal.runs.budget`.

Each item's calls of each method as :class:`CallPattern` rows (a
stage, a call, how many of them at least and at most, prompt and completion tokens per call), summed
per method and stage and priced by the routed profile of each stage. Prompt tokens are the rendered
prompt's UTF-8 bytes / 4 (:data:`TOKEN_RULE`, the rule the gateway's context-window guard uses,
:func:`agentcausal.llm.window.prompt_size`); completion tokens are an assumed typical reply per call
(each half's table, capped by the method's completion cap), never a server's count. Hidden reasoning
tokens, repair requests after an invalid reply and a client's retries are not counted. A range
(``low``..``high``) where the number of calls depends on the replies (Step-by-Step's stop, DCFA's
search). Prices: ``price_prompt_per_1k`` / ``price_completion_per_1k`` of the profile with their
``prices_as_of`` date; an embedded or local model costs $0 and says so; a remote profile without a
price is "price unknown" (its dollars are None, never 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agentcausal.exceptions import AgentCausalError

__all__ = [
    "TOKEN_RULE",
    "CallPattern",
    "price_note",
    "Estimator",
    "estimate_table",
    "tokens_of",
    "round_money",
    "fmt_range",
]

#: how prompt tokens are counted, said beside every estimate
TOKEN_RULE = "prompt tokens = rendered prompt's UTF-8 bytes / 4 (the context-window guard's rule)"

_FIGURES = ("requests", "prompt_tokens", "completion_tokens")


def tokens_of(messages: Iterable[Mapping[str, Any]]) -> int:
    """Estimated prompt tokens of chat messages (:data:`TOKEN_RULE`)."""
    # start-up cost: the CLI imports this module for its options; llm.window loads pydantic (via traces.render)
    from agentcausal.llm.window import prompt_size

    return prompt_size(messages)[0]


class CallPattern(NamedTuple):
    """One kind of call a method makes on one item.

    Attributes
    ----------
    stage : str, the routed stage (``baseline``, ``dcfa.gca``, ``mac.debate`` ...)
    call : str, the paper's name of the call
    low, high : float, how many such calls at least and at most on this item
    prompt_tokens : float, per call (low end: the smallest of them, when their sizes differ)
    completion_tokens : float, per call (an assumed typical reply, see the half's table)
    prompt_tokens_high : float or None, per call at the high end (None: ``prompt_tokens``)
    """

    stage: str
    call: str
    low: float
    high: float
    prompt_tokens: float
    completion_tokens: float
    prompt_tokens_high: float | None = None


def price_note(profile: Any) -> tuple[str, bool]:
    """How a profile's tokens are priced: (note, known).

    ``"$0: embedded model (local)"``, ``"$0: local embedder"``, ``"prices as of DATE"``, ``"prices undated"``
    (prices without a date) or ``"price unknown"`` (a remote profile with no price: never counted as $0).
    """
    if getattr(profile, "is_embedded", False):
        return "$0: embedded model (local)", True
    if getattr(profile, "is_local_embedder", False):
        return "$0: local embedder (in-process)", True
    if profile.price_prompt_per_1k or profile.price_completion_per_1k:
        return (f"prices as of {profile.prices_as_of}" if profile.prices_as_of else "prices undated"), True
    if profile.prices_as_of:  # a dated price of 0: a free tier
        return f"$0 (prices as of {profile.prices_as_of})", True
    return "price unknown", False


def _usd(profile: Any, prompt: float, completion: float) -> float:
    return prompt / 1000 * profile.price_prompt_per_1k + completion / 1000 * profile.price_completion_per_1k


@dataclass
class _Sums:
    low: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_FIGURES, 0.0))
    high: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_FIGURES, 0.0))

    def add(self, c: CallPattern, times: int) -> None:
        ph = c.prompt_tokens if c.prompt_tokens_high is None else c.prompt_tokens_high
        for end, n, p in ((self.low, c.low, c.prompt_tokens), (self.high, c.high, ph)):
            end["requests"] += n * times
            end["prompt_tokens"] += n * p * times
            end["completion_tokens"] += n * c.completion_tokens * times


class Estimator:
    """The plan's estimate, summed one item at a time (the corpus is never held).

    Parameters
    ----------
    profiles : a :class:`~agentcausal.llm.profiles.ProfileSet` under the run's routing (prices, embedded or not)
    times : int, jobs per (item, method): ``repeats`` (attribute), ``seeds x repeats`` (discover)

    Examples
    --------
    >>> from agentcausal.llm.profiles import Profile, ProfileSet
    >>> p = Profile(name="p", base_url="http://h/v1", model="m", price_prompt_per_1k=0.001,
    ...             price_completion_per_1k=0.002, prices_as_of="2026-05-01")
    >>> e = Estimator(ProfileSet(profiles={"p": p}, routings={"default": {"default": "p"}}))
    >>> e.add("aao", [CallPattern("baseline", "All-at-Once", 1, 1, 1000, 500)])
    >>> e.result()["total"]["usd"]
    [0.002, 0.002]
    """

    def __init__(self, profiles: Any, *, times: int = 1) -> None:
        self.profiles, self.times = profiles, max(1, times)
        self._sums: dict[str, dict[tuple[str, str], _Sums]] = {}
        self._items: dict[str, int] = {}
        self._notes: dict[str, list[str]] = {}

    def add(self, method: str, calls: Iterable[CallPattern], *, note: str | None = None) -> None:
        """Take one item's calls of ``method`` (``note``: how they were counted, once per method)."""
        by = self._sums.setdefault(method, {})
        self._items[method] = self._items.get(method, 0) + 1
        for c in calls:
            by.setdefault((c.stage, c.call), _Sums()).add(c, self.times)
        if note and note not in self._notes.setdefault(method, []):
            self._notes[method].append(note)

    def _profile(self, stage: str) -> Any | None:
        try:
            return self.profiles.profile_for(stage)
        except AgentCausalError:
            return None

    def result(self) -> dict[str, Any]:
        """The estimate as JSON: per method its jobs, per call and in total the ``[low, high]`` of requests,
        prompt and completion tokens and ``usd`` (None where a stage's price is unknown), the price of each
        stage, and how it was computed (``how``)."""
        methods: dict[str, Any] = {}
        total = {k: [0.0, 0.0] for k in (*_FIGURES, "usd")}
        unknown_total = False
        prices: dict[str, str] = {}
        unpriced: dict[str, list[str]] = {}  # profile -> its stages whose price is unknown
        for m, by in self._sums.items():
            mt = {k: [0.0, 0.0] for k in (*_FIGURES, "usd")}
            unknown, local = False, True
            calls = []
            for (stage, call), s in by.items():
                prof = self._profile(stage)
                note, known = price_note(prof) if prof is not None else ("unrouted", False)
                prices[stage] = f"{prof.name}:{prof.model}: {note}" if prof is not None else "unrouted"
                if not known:
                    names = unpriced.setdefault(prof.name if prof is not None else "(unrouted)", [])
                    names += [stage] if stage not in names else []
                local &= note.startswith("$0: ")
                usd = (
                    [
                        _usd(prof, s.low["prompt_tokens"], s.low["completion_tokens"]),
                        _usd(prof, s.high["prompt_tokens"], s.high["completion_tokens"]),
                    ]
                    if known
                    else None
                )
                row = {
                    "stage": stage,
                    "call": call,
                    **{k: [_round(s.low[k]), _round(s.high[k])] for k in _FIGURES},
                    "usd": None if usd is None else [round_money(usd[0]), round_money(usd[1])],
                    "price": note,
                }
                calls.append(row)
                for k in _FIGURES:
                    mt[k][0] += s.low[k]
                    mt[k][1] += s.high[k]
                if usd is None:
                    unknown = True
                else:
                    mt["usd"][0] += usd[0]
                    mt["usd"][1] += usd[1]
            for k in (*_FIGURES, "usd"):
                total[k][0] += mt[k][0]
                total[k][1] += mt[k][1]
            unknown_total |= unknown
            jobs = self._items.get(m, 0) * self.times
            methods[m] = {
                "jobs": jobs,
                **{k: [_round(v[0]), _round(v[1])] for k, v in mt.items() if k != "usd"},
                "usd": None if unknown else [round_money(mt["usd"][0]), round_money(mt["usd"][1])],
                "usd_known_part": [round_money(mt["usd"][0]), round_money(mt["usd"][1])] if unknown else None,
                "usd_per_job_high": None if unknown or not jobs else mt["usd"][1] / jobs,
                "local": local,
                "calls": calls,
                "how": self._notes.get(m, []),
            }
        for m, n in self._items.items():  # a method with no LLM call on any item
            methods.setdefault(
                m,
                {
                    "jobs": n * self.times,
                    **{k: [0, 0] for k in _FIGURES},
                    "usd": [0.0, 0.0],
                    "usd_known_part": None,
                    "usd_per_job_high": 0.0,
                    "local": True,
                    "calls": [],
                    "how": self._notes.get(m, []),
                },
            )
        return {
            "methods": methods,
            "total": {
                **{k: [_round(v[0]), _round(v[1])] for k, v in total.items() if k != "usd"},
                "usd": None if unknown_total else [round_money(total["usd"][0]), round_money(total["usd"][1])],
                "usd_known_part": [round_money(total["usd"][0]), round_money(total["usd"][1])]
                if unknown_total
                else None,
                "local": all(r["local"] for r in methods.values()),
            },
            "prices": prices,
            "unpriced": {p: sorted(st) for p, st in sorted(unpriced.items())},
            "times": self.times,
            "how": [
                TOKEN_RULE,
                "completion tokens = an assumed typical reply per call (capped by the method's "
                "completion cap); hidden reasoning tokens, repairs of invalid replies and retries not counted",
                "low..high: the fewest and the most calls the method's search can make",
                "jobs reused from the results store or replies in the LLM cache cost less: not deducted",
            ],
        }


def _round(x: float) -> int:
    return int(math.ceil(x - 1e-9))


def round_money(x: float) -> float:
    return round(x, 6)


def fmt_range(lo: float, hi: float, *, money: bool = False) -> str:
    f = (lambda v: f"${v:,.4f}") if money else (lambda v: f"{int(v):,}")
    return f(lo) if abs(hi - lo) < 1e-12 else f"{f(lo)}–{f(hi)}"


def estimate_table(estimate: Mapping[str, Any]) -> str:
    """The estimate as a text table (what ``--dry-run`` prints to stderr): one row per method and a total,
    then the price of each stage and how the numbers were computed."""
    head = f"{'method':<24} {'jobs':>6} {'requests':>15} {'prompt tokens':>23} {'completion tokens':>21} {'USD':>21}"
    lines = ["estimate (before any request):", head]

    def usd(row: Mapping[str, Any]) -> str:
        if row.get("usd") is not None:
            return "$0 (local)" if row.get("local") else fmt_range(*row["usd"], money=True)
        part = row.get("usd_known_part")
        return "price unknown" + (f" (+{fmt_range(*part, money=True)})" if part and part[1] else "")

    for m, r in estimate["methods"].items():
        lines.append(
            f"{m:<24} {r['jobs']:>6} {fmt_range(*r['requests']):>15} {fmt_range(*r['prompt_tokens']):>23} "
            f"{fmt_range(*r['completion_tokens']):>21} {usd(r):>21}"
        )
    t = estimate["total"]
    jobs = sum(r["jobs"] for r in estimate["methods"].values())
    lines.append(
        f"{'total':<24} {jobs:>6} {fmt_range(*t['requests']):>15} {fmt_range(*t['prompt_tokens']):>23} "
        f"{fmt_range(*t['completion_tokens']):>21} {usd(t):>21}"
    )
    lines.append("prices: " + "; ".join(f"{st} -> {p}" for st, p in sorted(estimate.get("prices", {}).items())))
    for m, r in estimate["methods"].items():
        for h in r.get("how", []):
            lines.append(f"  {m}: {h}")
    lines += [f"  {h}" for h in estimate.get("how", [])]
    return "\n".join(lines)
