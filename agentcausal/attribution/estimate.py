"""How many calls each attribution method makes on one trace, and how large they are, with no request made.

:func:`attribution_calls` gives one trace's :class:`~agentcausal.runs.estimate.CallPattern` rows of a
method under its resolved settings; :class:`TraceCalls` every method's for one trace, which the plan
adds to its ``estimate`` (:class:`~agentcausal.runs.estimate.Estimator`, :func:`add_calls`). Prompt sizes come from the prompts a run
sends (the methods' own builders and :mod:`agentcausal.attribution.previews`, traces shortened to the
routed context windows); an earlier call's reply inside a later prompt is counted at its assumed
length (:data:`REPLY_TOKENS`). The call patterns:

* All-at-Once, A2P: 1 call.
* Step-by-Step: 1 to n calls (it stops at the first step judged decisive); question i holds the steps
  0..i, its size interpolated linearly between the first and the last question's.
* Binary-Search: the halvings until one step is left, ``floor(log2 n)`` to ``ceil(log2 n)`` calls (the
  smaller or the larger part each time); each prompt holds its segment, sized in proportion.
* ECHO: the scan and the panel (``small``: no panel when the scan lists no valid step); the panel's
  windows between one candidate and ``max_candidates``, each window after the first sized as the second
  (within the trace budget).
* DCFA: GCA's MDI and CGC (or MDI+CGC) and HG, always; LCE (unless ``use_lce`` is off) from nothing
  (a hypothesis without neighbours: no Correct, no Simulation, DED only under ``ded="code"``) to every
  other step scored once (``revisit`` off): Correct once, Simulations S(i) and S(i-1) per candidate
  (distinct requests only: at most n+1 without a named root, 2(n-1) with one), the no-truth judge per
  Simulation, the encoder per scoring batch (at most ``2 * max_iterations``), DED once.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025, arXiv:2505.00212, section 4;
Wang, Zehao et al. "DCFA: Dual-view Causal-inspired Attribution for Failure Reasoning in LLM-based
Multi-agent Systems" (code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), section 4 and appendix K.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentcausal.attribution import a2p, all_at_once, binary_search, echo, step_by_step
from agentcausal.attribution.baseline_settings import BASELINE_STAGE, trace_budget
from agentcausal.attribution.dcfa.correct import STAGE as LCE_STAGE
from agentcausal.attribution.dcfa.lce import EMBED_STAGE
from agentcausal.attribution.dcfa.preview import dcfa_previews
from agentcausal.attribution.method_settings import method_settings
from agentcausal.attribution.spec import AttributionSpec
from agentcausal.runs.estimate import CallPattern, Estimator, tokens_of
from agentcausal.traces.model import Trace

__all__ = [
    "REPLY_TOKENS",
    "TraceCalls",
    "attribution_calls",
    "add_calls",
]

#: assumed completion tokens of one reply, per call (a typical structured reply of that call; a method's
#: completion cap, where it sets one, bounds it). Correct's reply is the corrected trace: sized per trace.
REPLY_TOKENS: dict[str, int] = {
    "All-at-Once": 120,
    "Step-by-Step": 80,
    "Binary-Search": 60,
    "A2P": 350,
    "ECHO scan": 350,
    "ECHO panel": 500,
    "MDI": 350,
    "CGC": 450,
    "MDI+CGC": 700,
    "HG": 150,
    "Simulation": 250,
    "Judge (no truth)": 40,
    "DED": 200,
}


def _reply(call: str, cap: int | None) -> int:
    n = REPLY_TOKENS[call]
    return min(n, cap) if cap else n


def _baseline_budget(profiles: Any, s: Any) -> int | None:
    try:
        return trace_budget(profiles, s) if profiles is not None else None
    except Exception:  # an unrouted stage: the trace unshortened (the run refuses the routing up front)
        return None


def _all_at_once(trace: Trace, s: Any, profiles: Any, b: int | None) -> list[CallPattern]:
    p = tokens_of(all_at_once.build_messages(trace, s, b).messages)
    return [CallPattern(BASELINE_STAGE, "All-at-Once", 1, 1, p, _reply("All-at-Once", s.max_tokens))]


def _a2p(trace: Trace, s: Any, profiles: Any, b: int | None) -> list[CallPattern]:
    p = tokens_of(a2p.build_messages(trace, s, b)[0])
    return [CallPattern(BASELINE_STAGE, "A2P", 1, 1, p, _reply("A2P", s.max_tokens))]


def _step_by_step(trace: Trace, s: Any, profiles: Any, b: int | None) -> list[CallPattern]:
    n = len(trace)
    first = tokens_of(step_by_step.build_messages(trace, 0, s, b))
    last = tokens_of(step_by_step.build_messages(trace, n - 1, s, b)) if n > 1 else first
    return [
        CallPattern(
            BASELINE_STAGE, "Step-by-Step", 1, n, first, _reply("Step-by-Step", s.max_tokens), (first + last) / 2
        )
    ]


def _halvings(n: int, larger: bool) -> list[int]:
    """Segment lengths asked about, taking the larger (first) or the smaller (second) part each time."""
    out = []
    while n > 1:
        out.append(n)
        n = (n + 1) // 2 if larger else n // 2
    return out


def _binary_search(trace: Trace, s: Any, profiles: Any, b: int | None) -> list[CallPattern]:
    n = len(trace)
    if n < 2:
        return []
    full = tokens_of(binary_search.build_messages(trace, 0, n - 1, s, b))
    half_len = (n + 1) // 2
    half = tokens_of(binary_search.build_messages(trace, 0, half_len - 1, s, b)) if half_len > 1 else None
    per_step = max(0.0, (full - half) / (n - half_len)) if half is not None and n > half_len else full / n
    head = max(0.0, full - per_step * n)
    lo_path, hi_path = _halvings(n, larger=False), _halvings(n, larger=True)

    def mean(path: list[int]) -> float:
        return sum(head + per_step * m for m in path) / len(path)

    return [
        CallPattern(
            BASELINE_STAGE,
            "Binary-Search",
            len(lo_path),
            len(hi_path),
            mean(lo_path),
            _reply("Binary-Search", s.max_tokens),
            mean(hi_path),
        )
    ]


def _echo(trace: Trace, s: Any, profiles: Any, b: int | None) -> list[CallPattern]:
    n = len(trace)
    k = min(n, s.max_candidates or n)
    scan = tokens_of(echo.scan_messages(trace, s, b, k))
    cap = echo.panel_capacity(b)
    m = min(k, cap)
    # one panel of two windows is built (its global view is the costly part); each other window is sized as a
    # candidate's hierarchical view with the same share (building every window is quadratic in n)
    two_cands = [(0, ""), (min(1, n - 1), "")]
    two = tokens_of(echo.panel_messages(trace, s, b, "", two_cands))
    per = None if b is None else max(echo.MIN_WINDOW_CHARS, (b - max(echo.MIN_WINDOW_CHARS, b // 4)) // 2)
    window = tokens_of([{"content": echo.hierarchical_view(trace, min(1, n - 1), s, per)}]) + 12
    one = max(0, two - window)
    many: float = one + window * (m - 1)
    if b is not None:
        many = min(many, one + b / 4)
    one, many = one + REPLY_TOKENS["ECHO scan"], many + REPLY_TOKENS["ECHO scan"]
    return [
        CallPattern(BASELINE_STAGE, "ECHO scan", 1, 1, scan, _reply("ECHO scan", s.max_tokens)),
        CallPattern(
            BASELINE_STAGE,
            "ECHO panel",
            0 if s.prompts == "small" else 1,
            1,
            one,
            _reply("ECHO panel", s.max_tokens),
            many,
        ),
    ]


def _dcfa(trace: Trace, s: Any, profiles: Any, b: int | None) -> list[CallPattern]:
    n = len(trace)
    previews = dcfa_previews(trace, s, profiles)
    size = {p.call: tokens_of(p.messages) for p in previews}
    gca_replies = REPLY_TOKENS["MDI+CGC"] if s.mdi_cgc == "joint" else REPLY_TOKENS["MDI"] + REPLY_TOKENS["CGC"]
    trace_tokens = sum(len(st.content.encode("utf-8", "surrogatepass")) for st in trace.steps) / 4
    corrected = (
        trace_tokens if s.max_corrected_step_chars is None else min(trace_tokens, n * s.max_corrected_step_chars / 4)
    )
    out = []
    for p in previews:
        stage, call, t = p.stage, p.call, size[p.call]
        if call in ("MDI", "CGC", "MDI+CGC"):
            out.append(
                CallPattern(
                    stage, call, 1, 1, t + (REPLY_TOKENS["MDI"] if call == "CGC" else 0), _reply(call, s.gca_max_tokens)
                )
            )
        elif call == "HG":
            out.append(CallPattern(stage, call, 1, 1, t + gca_replies, _reply(call, s.hg_max_tokens)))
    if not s.use_lce:
        return out
    named = s.simulation == "code" and s.prompts == "paper"
    cands = max(0, n - 1)
    sims_high = 2 * cands if named else min(2 * cands, n + 1)
    corr_call = next(c for c in size if c.startswith("Correct"))
    out.append(
        CallPattern(
            LCE_STAGE,
            "Correct",
            0,
            1 if cands else 0,
            size[corr_call] + gca_replies,
            corrected + 50 if not s.correct_max_tokens else min(corrected + 50, s.correct_max_tokens),
        )
    )
    sim = max(size.get("Simulation S(i)", 0), size.get("Simulation S(i-1)", 0)) + corrected
    out.append(CallPattern(LCE_STAGE, "Simulation", 0, sims_high, sim, _reply("Simulation", s.simulation_max_tokens)))
    if not s.with_ground_truth:
        out.append(
            CallPattern(
                LCE_STAGE,
                "Judge (no truth)",
                0,
                sims_high,
                size["Judge (no truth)"] + REPLY_TOKENS["Simulation"],
                _reply("Judge (no truth)", s.judge_max_tokens),
            )
        )
    else:
        batches = min(cands, 2 * (s.max_iterations if s.max_iterations is not None else n))
        out.append(CallPattern(EMBED_STAGE, "Encoder", 0, batches, 2 * REPLY_TOKENS["Simulation"], 0))
    code_ded = s.ded == "code" and s.prompts == "paper"
    out.append(
        CallPattern(
            LCE_STAGE,
            "DED",
            1 if code_ded else 0,
            1,
            size["DED"] + REPLY_TOKENS["CGC"] + min(cands + 1, 2 * (s.max_iterations or n) + 1) * 60,
            _reply("DED", s.ded_max_tokens),
        )
    )
    return out


_PATTERNS = {
    "all_at_once": _all_at_once,
    "a2p": _a2p,
    "step_by_step": _step_by_step,
    "binary_search": _binary_search,
    "echo": _echo,
    "dcfa": _dcfa,
    "dcfa_gca_only": _dcfa,
}

#: how each method's calls are counted, said beside its estimate
_HOW = {
    "all_at_once": "1 call per trace",
    "a2p": "1 call per trace",
    "step_by_step": "1..n calls per trace (stops at the first step judged decisive; question i holds steps 0..i)",
    "binary_search": "floor(log2 n)..ceil(log2 n) calls per trace (one per halving)",
    "echo": "scan + panel per trace (panel: 1..max_candidates windows)",
    "dcfa": "GCA (MDI, CGC, HG) always; LCE from none (hypothesis without neighbours) to every step scored once: "
    "Correct, Simulations S(i)/S(i-1), encoder or no-truth judge, DED",
    "dcfa_gca_only": "GCA only (MDI, CGC, HG)",
}


#: the methods whose prompts hold the trace within the baselines' trace budget (:func:`_baseline_budget`)
_BUDGETED = frozenset({"all_at_once", "a2p", "step_by_step", "binary_search", "echo"})


class TraceCalls:
    """:func:`trace_calls` for one plan: what each method's estimate needs besides the trace (its validated
    settings, the baselines' trace budget under the routed profiles) taken once, not once per trace.

    Parameters
    ----------
    methods : the methods, in order (specs)
    resolved : method -> resolved settings (as the plan holds them; None: the method's defaults)
    profiles : the routed ProfileSet (context budgets); None: traces unshortened

    Calling it with a trace gives what :func:`trace_calls` gives; :meth:`calls` what :func:`attribution_calls`
    gives. A method whose settings do not validate fails the same way on every trace, as it would there.
    """

    def __init__(
        self,
        methods: Sequence[AttributionSpec[Any]],
        resolved: Mapping[str, Mapping[str, Any] | None],
        profiles: Any,
    ) -> None:
        self.methods = list(methods)
        self.resolved = resolved
        self.profiles = profiles
        self._ready: dict[str, tuple[Any, int | None] | Exception] = {}

    def _prepared(self, spec: AttributionSpec[Any], settings: Mapping[str, Any] | None) -> tuple[Any, int | None]:
        got = self._ready.get(spec.name)
        if got is None:
            try:
                st = _validated(spec, settings)
                got = (st, _baseline_budget(self.profiles, st) if spec.name in _BUDGETED else None)
            except Exception as exc:  # raised again, for each trace, as a trace's own estimate would raise it
                got = exc
            self._ready[spec.name] = got
        if isinstance(got, Exception):
            raise got.with_traceback(None)
        return got

    def calls(self, trace: Trace, spec: AttributionSpec[Any]) -> list[CallPattern]:
        """One trace's calls of the method ``spec`` (:func:`attribution_calls`).

        Raises
        ------
        ConfigError
            If its settings do not validate.
        KeyError
            If ``resolved`` has no settings for it.
        """
        settings = self.resolved[spec.name]
        fn = _PATTERNS.get(spec.name)
        if fn is None or len(trace) == 0:
            return []
        st, budget = self._prepared(spec, settings)
        return fn(trace, st, self.profiles, budget)

    def __call__(self, trace: Trace) -> dict[str, tuple[list[CallPattern], str]]:
        out: dict[str, tuple[list[CallPattern], str]] = {}
        for spec in self.methods:
            m = spec.name
            note = _HOW.get(m, "calls not modelled: not estimated")
            try:
                calls = self.calls(trace, spec)
            except Exception as exc:  # an estimate never stops a run: the trace is counted, not sized
                calls, note = [], f"not estimated for some traces ({type(exc).__name__}: {str(exc)[:120]})"
            out[m] = (calls, note)
        return out


def attribution_calls(
    trace: Trace, spec: AttributionSpec[Any], settings: Mapping[str, Any] | None = None, profiles: Any | None = None
) -> list[CallPattern]:
    """One trace's calls of the method ``spec`` (see the module docstring).

    Parameters
    ----------
    trace : Trace, n steps
    spec : AttributionSpec, the method
    settings : its resolved settings (as the plan holds them); None: its defaults
    profiles : the routed ProfileSet (context budgets); None: traces unshortened

    Returns
    -------
    list of CallPattern (empty for a method whose calls are not modelled here)

    Raises
    ------
    ConfigError
        If its settings do not validate.
    """
    return TraceCalls([spec], {spec.name: settings}, profiles).calls(trace, spec)


#: (method, settings as canonical JSON) -> the validated settings model (frozen): a plan validates each method's
#: settings once, not once per trace
_VALIDATED: dict[tuple[str, str], Any] = {}


def _validated(spec: AttributionSpec[Any], settings: Mapping[str, Any] | None) -> Any:
    values = dict(settings or {})
    key = (spec.name, json.dumps(values, sort_keys=True, default=repr))
    hit = _VALIDATED.get(key)
    if hit is None:
        hit = method_settings(spec.settings_model, values)
        if len(_VALIDATED) >= 256:
            _VALIDATED.clear()
        _VALIDATED[key] = hit
    return hit


def add_calls(est: Estimator, calls: Mapping[str, tuple[Sequence[CallPattern], str]]) -> None:
    """Add one trace's calls (a :class:`TraceCalls` result: method -> (calls, note)) to ``est``."""
    for m, (c, note) in calls.items():
        est.add(m, c, note=note)
