"""The tables the DCFA paper reports, from one run's results frame.

Every function reads a results frame (:func:`agentcausal.attribution.results.results_frame`,
one row per trace, method and repeat); DCFA's record is read from ``details_json``
(see :mod:`agentcausal.attribution.dcfa.method`): its JSON text, or the record already parsed
(:func:`with_parsed_details`, so that a caller of several tables parses each record once).

* :func:`dcfa_accuracy`: the DCFA paper's "step accuracy" as its released
  ``evaluate.py`` computes it, agent **and** step right (Table 1), beside
  step-only accuracy, per method and subset, with n and the raw counts.
* :func:`accuracy_by_level`: step-only accuracy by the five trace-length levels
  of the released ``evaluate_in_different_length.py`` (the DCFA paper's
  Figure 3, on Hand-Crafted), with n per level.
* :func:`gca_only_accuracy`: DCFA without LCE from the *stored* GCA hypothesis of
  every ``dcfa`` row (the paper's Table 2, at no extra cost), and
  :func:`lce_effect`: what LCE did to it (fixed / broken / unchanged).
* :func:`lce_diagnostics`: expansions m (the paper's m ≈ 4.5), simulations, stop
  reasons, DED skipped, Correct fallbacks, degraded rows, and whether the labelled
  step reached the candidate set T^c, was a minor deviation or touched an edge.
* :func:`graph_stats`: edges per graph per subset (the paper's Table 5) and cap hits.
* :func:`signed_step_error_histogram`: predicted minus labelled step.
* :func:`accuracy_over_repeats`: mean ± std of accuracy over repeats (the paper's Table 4).
* :func:`speaker_mismatches`: traces whose labelled agent is not the speaker of the
  labelled step (they cannot score on agent level from the step alone).
* Table 1 and Figure 3 over several runs: :mod:`agentcausal.attribution.table1`.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), sections 5.3 and 5.4, Figure 3, Tables 2, 4 and 5.
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

import pandas as pd

from agentcausal.repeats import mean_std, repeat_of
from agentcausal.traces.model import Trace, TraceFacts, normalise_agent

__all__ = [
    "WHO_WHEN_LEVELS",
    "who_when_level",
    "dcfa_agent_token",
    "dcfa_accuracy",
    "accuracy_by_level",
    "outside_levels",
    "gca_only_accuracy",
    "lce_effect",
    "lce_diagnostics",
    "graph_stats",
    "signed_step_error_histogram",
    "with_parsed_details",
    "accuracy_over_repeats",
    "speaker_mismatch",
    "speaker_mismatches",
]

#: The five trace-length levels (inclusive step counts) of the DCFA paper's Figure 3, as its released
#: ``Automated_FA/evaluate_in_different_length.py`` defines them (the paper calls them "defined by the Who&When
#: benchmark"); the length is the number of steps (``len(history)``). A trace of 18, 30, 50 or 92 steps, or
#: outside 5..130, falls in no level and is left out, as that script leaves it out.
WHO_WHEN_LEVELS = (
    (5, 17, "Level 1"),
    (19, 29, "Level 2"),
    (31, 49, "Level 3"),
    (51, 91, "Level 4"),
    (93, 130, "Level 5"),
)

_TOKEN = re.compile(r"\s*(\w+)")


def _details(blob: Any) -> dict[str, Any]:
    if isinstance(blob, dict):  # parsed already (with_parsed_details)
        return blob
    if not isinstance(blob, (str, bytes, bytearray)) or not blob:  # nothing to parse (a report keeps DCFA's only)
        return {}
    try:
        return json.loads(blob)
    except (TypeError, ValueError):
        return {}


def with_parsed_details(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each ``details_json`` cell parsed into its dict once ({} where empty or not JSON), for a caller
    that reads several of these tables from one frame (a DCFA record is several KB of JSON); ``df`` itself is
    unchanged. A frame without the column is returned as it is."""
    if "details_json" not in df.columns:
        return df
    return df.assign(details_json=pd.Series([_details(b) for b in df["details_json"]], index=df.index, dtype=object))


def who_when_level(n_steps: int) -> str | None:
    """The :data:`WHO_WHEN_LEVELS` label of a trace length, or None between or outside the levels.

    >>> who_when_level(10), who_when_level(19), who_when_level(130), who_when_level(18), who_when_level(131)
    ('Level 1', 'Level 2', 'Level 5', None, None)
    """
    for lo, hi, name in WHO_WHEN_LEVELS:
        if lo <= n_steps <= hi:
            return name
    return None


def _step_acc(g: pd.DataFrame, col: str = "step_correct") -> float:
    lab = g[g["true_step"].notna()]
    return float(lab[col].fillna(False).astype(bool).mean()) if len(lab) else float("nan")


def dcfa_agent_token(pred: Any) -> str:
    """The agent name DCFA's ``evaluate.py`` reads from a prediction: the first run of word characters
    after optional spaces (``Agent Name:\\s*([\\w_]+)``), else ``"Unknown_Agent"``.

    >>> dcfa_agent_token("Orchestrator (thought)"), dcfa_agent_token(" Web_Surfer"), dcfa_agent_token(None)
    ('Orchestrator', 'Web_Surfer', 'Unknown_Agent')
    """
    m = _TOKEN.match(pred) if isinstance(pred, str) else None
    return m.group(1) if m else "Unknown_Agent"


def dcfa_accuracy(df: pd.DataFrame) -> pd.DataFrame:
    """Step accuracy as the DCFA paper reports it (Table 1), per (method, subset), over labelled rows.

    "Step accuracy (agent and step)" is what DCFA's released ``evaluate.py`` computes and names
    step accuracy: the step equal to the label **and** the agent token
    (:func:`dcfa_agent_token`) equal to the labelled agent, exactly (case-sensitive), divided by
    every labelled trace (a trace without a prediction, here an undetermined or failed row,
    counts as wrong, as a file without a prediction does there). Beside it, step-only accuracy,
    the paper's "step-level accuracy" as its text defines it (App. C) and as its
    ``evaluate_in_different_length.py`` scores Figure 3. n is the traces of this run, which is
    the subset's size only when the run covers the whole subset.

    Returns
    -------
    DataFrame: method, subset, n, agent_and_step_k, agent_and_step_acc, step_k, step_acc (fractions).
    """
    cols = ["method", "subset", "n", "agent_and_step_k", "agent_and_step_acc", "step_k", "step_acc"]
    rows = []
    lab = df[df["true_step"].notna()]
    for (m, sub), g in lab.groupby(["method", "subset"], sort=True):
        step_ok = [pd.notna(p) and int(p) == int(t) for p, t in zip(g["pred_step"], g["true_step"])]
        both = [
            ok and dcfa_agent_token(a if pd.notna(a) else None) == str(t)
            for ok, a, t in zip(step_ok, g["pred_agent"], g["true_agent"])
        ]
        n = len(g)
        rows.append(
            {
                "method": m,
                "subset": sub,
                "n": n,
                "agent_and_step_k": sum(both),
                "agent_and_step_acc": sum(both) / n,
                "step_k": sum(step_ok),
                "step_acc": sum(step_ok) / n,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def accuracy_by_level(df: pd.DataFrame, subset: str | None = "Hand-Crafted") -> pd.DataFrame:
    """Step-only accuracy per (method, :data:`WHO_WHEN_LEVELS` level) over labelled rows (of ``subset``;
    None = all), the DCFA paper's Figure 3 as ``evaluate_in_different_length.py`` computes it.

    Rows of a length in no level are left out (counted by :func:`outside_levels`). An undetermined
    or failed row counts as wrong and is in n; the released script leaves a trace without a
    prediction out of n, so its n is ``n - undetermined`` (the column says how many).

    Returns
    -------
    DataFrame: method, level, n, step_k, step_acc (fraction in [0, 1]), undetermined.
    """
    d = df if subset is None else df[df["subset"] == subset]
    d = d[d["true_step"].notna()]
    d = d.assign(level=pd.Series([who_when_level(int(n)) for n in d["n_steps"]], index=d.index))
    d = d[d["level"].notna()]
    rows = []
    for (m, lv), g in d.groupby(["method", "level"], sort=True):
        k = int(g["step_correct"].fillna(False).astype(bool).sum())
        rows.append(
            {
                "method": m,
                "level": lv,
                "n": len(g),
                "step_k": k,
                "step_acc": k / len(g),
                "undetermined": int((g["pred_step"].isna()).sum()),
            }
        )
    return pd.DataFrame(rows, columns=["method", "level", "n", "step_k", "step_acc", "undetermined"])


def outside_levels(df: pd.DataFrame, subset: str | None = "Hand-Crafted") -> int:
    """Traces (distinct ids, labelled, of ``subset``) whose length lies in no :data:`WHO_WHEN_LEVELS` level."""
    d = df if subset is None else df[df["subset"] == subset]
    d = d[d["true_step"].notna()]
    return int(d.loc[[who_when_level(int(n)) is None for n in d["n_steps"]], "trace_id"].nunique())


def _dcfa_rows(df: pd.DataFrame, method: str = "dcfa") -> list[tuple[dict[Hashable, Any], dict[str, Any]]]:
    cols = [c for c in ("subset", "true_step", "step_correct", "details_json") if c in df.columns]
    rows = df.loc[df["method"] == method, cols]
    return [(r, _details(r["details_json"])) for r in rows.to_dict("records")]


def gca_only_accuracy(df: pd.DataFrame, method: str = "dcfa") -> pd.DataFrame:
    """DCFA without LCE, scored from the GCA hypothesis stored with every ``method`` row.

    Returns
    -------
    DataFrame: subset, n (labelled rows with a hypothesis), gca_step_k, gca_step_acc, dcfa_step_k,
    dcfa_step_acc (step-only; fractions beside the counts of correct rows).
    """
    rows = []
    for r, d in _dcfa_rows(df, method):
        h = (d.get("hypothesis") or {}).get("step")
        if pd.isna(r["true_step"]) or h is None:
            continue
        rows.append({"subset": r["subset"], "gca": int(h) == int(r["true_step"]), "dcfa": bool(r["step_correct"])})
    t = pd.DataFrame(rows, columns=["subset", "gca", "dcfa"])
    out = [
        {
            "subset": s,
            "n": len(g),
            "gca_step_k": int(g["gca"].sum()),
            "gca_step_acc": g["gca"].mean(),
            "dcfa_step_k": int(g["dcfa"].sum()),
            "dcfa_step_acc": g["dcfa"].mean(),
        }
        for s, g in t.groupby("subset", sort=True)
    ]
    return pd.DataFrame(out, columns=["subset", "n", "gca_step_k", "gca_step_acc", "dcfa_step_k", "dcfa_step_acc"])


def lce_effect(df: pd.DataFrame, method: str = "dcfa") -> pd.DataFrame:
    """What LCE did to the GCA hypothesis, counted per subset.

    fixed: hypothesis wrong, final right; broken: hypothesis right, final wrong;
    unchanged_right / unchanged_wrong: both right / both wrong (on step level).

    Returns
    -------
    DataFrame: subset, fixed, broken, unchanged_right, unchanged_wrong.
    """
    cols = ["fixed", "broken", "unchanged_right", "unchanged_wrong"]
    acc: dict[str, Counter] = {}
    for r, d in _dcfa_rows(df, method):
        h = (d.get("hypothesis") or {}).get("step")
        if pd.isna(r["true_step"]) or h is None:
            continue
        hyp_ok, fin_ok = int(h) == int(r["true_step"]), bool(r["step_correct"])
        key = (
            "unchanged_right" if hyp_ok and fin_ok else "broken" if hyp_ok else "fixed" if fin_ok else "unchanged_wrong"
        )
        acc.setdefault(r["subset"], Counter())[key] += 1
    return pd.DataFrame(
        [{"subset": s, **{c: int(c_.get(c, 0)) for c in cols}} for s, c_ in sorted(acc.items())],
        columns=["subset", *cols],
    )


def lce_diagnostics(df: pd.DataFrame, method: str = "dcfa") -> pd.DataFrame:
    """LCE's economy and reach per subset (means over ``method`` rows that ran LCE).

    Returns
    -------
    DataFrame: subset, traces, expansions_m (accepted pivot moves), evaluated (neighbours scored),
    simulations (distinct counterfactual traces simulated), stop_<reason> counts per direction,
    ded_skipped, correct_fallbacks, degraded (LCE failed, hypothesis kept), label_in_candidates,
    label_was_deviation, label_on_edge (fractions over labelled rows).
    """
    acc: dict[str, Counter[str]] = {}
    for r, d in _dcfa_rows(df, method):
        lce = d.get("lce")
        if lce is None:
            continue
        a = acc.setdefault(r["subset"], Counter())
        a["traces"] += 1
        if lce.get("error") and "path" not in lce:
            a["degraded"] += 1
            continue
        a["expansions_m"] += len(lce.get("path", []))
        a["evaluated"] += len(lce.get("evaluated", []))
        a["simulations"] += len(lce.get("outcomes", []))
        for _direction, why in (lce.get("stopped") or {}).items():
            a[f"stop_{why}"] += 1
        a["ded_skipped"] += bool((lce.get("decision") or {}).get("skipped"))
        a["correct_fallbacks"] += lce.get("correct_fallback") is not None
        if not pd.isna(r["true_step"]):
            t = int(r["true_step"])
            a["labelled"] += 1
            a["label_in_candidates"] += t in lce.get("candidates", [])
            a["label_was_deviation"] += t in [x["step"] for x in d.get("deviations", [])]
            a["label_on_edge"] += any(t in e for e in d.get("edges", []))
    rows = []
    for s, a in sorted(acc.items()):
        ran = max(1, a["traces"] - a["degraded"])
        lab = max(1, a["labelled"])
        row = {"subset": s, "traces": int(a["traces"]), "degraded": int(a["degraded"])}
        for k in ("expansions_m", "evaluated", "simulations"):
            row[k] = a[k] / ran
        for k in sorted(k for k in a if k.startswith("stop_")):
            row[k] = int(a[k])
        row.update(
            ded_skipped=int(a["ded_skipped"]),
            correct_fallbacks=int(a["correct_fallbacks"]),
            label_in_candidates=a["label_in_candidates"] / lab,
            label_was_deviation=a["label_was_deviation"] / lab,
            label_on_edge=a["label_on_edge"] / lab,
        )
        rows.append(row)
    return pd.DataFrame(rows)


def graph_stats(df: pd.DataFrame) -> pd.DataFrame:
    """Dependency-graph statistics per (method, subset) of every DCFA row with a graph.

    Returns
    -------
    DataFrame: method, subset, graphs, edges_mean, edges_max, cap_hits (graphs whose searched graph the
    ``max_edges`` cap cut), capped_mean (edges cut), not_causal_mean (judged edges rejected).
    """
    rows = []
    for (m, s), g in df.groupby(["method", "subset"], sort=True):
        recs = [_details(b) for b in g["details_json"]]
        recs = [d for d in recs if "edges" in d]
        if not recs:
            continue
        edges = [len(d["edges"]) for d in recs]
        capped = [int((d.get("dropped_edges") or {}).get("capped", 0)) for d in recs]
        nc = [int((d.get("dropped_edges") or {}).get("not_causal", 0)) for d in recs]
        rows.append(
            {
                "method": m,
                "subset": s,
                "graphs": len(recs),
                "edges_mean": sum(edges) / len(edges),
                "edges_max": max(edges),
                "cap_hits": sum(c > 0 for c in capped),
                "capped_mean": sum(capped) / len(recs),
                "not_causal_mean": sum(nc) / len(recs),
            }
        )
    return pd.DataFrame(
        rows,
        columns=["method", "subset", "graphs", "edges_mean", "edges_max", "cap_hits", "capped_mean", "not_causal_mean"],
    )


def signed_step_error_histogram(df: pd.DataFrame, max_bin: int = 5) -> pd.DataFrame:
    """Counts of predicted minus labelled step per method (negative = too early), over labelled rows.

    Columns ``"<=-max_bin"``, ``-max_bin+1`` .. ``max_bin-1``, ``">=max_bin"`` and ``"none"``
    (undetermined or failed); indexed by method.
    """
    cols = [f"<=-{max_bin}", *[str(i) for i in range(-max_bin + 1, max_bin)], f">={max_bin}", "none"]
    out = {}
    for m, g in df[df["true_step"].notna()].groupby("method", sort=True):
        c = dict.fromkeys(cols, 0)
        for p, t in zip(g["pred_step"], g["true_step"]):
            if pd.isna(p):
                c["none"] += 1
                continue
            e = int(p) - int(t)
            c[cols[0] if e <= -max_bin else f">={max_bin}" if e >= max_bin else str(e)] += 1
        out[m] = c
    return pd.DataFrame.from_dict(out, orient="index", columns=cols).rename_axis("method")


def accuracy_over_repeats(df: pd.DataFrame) -> pd.DataFrame:
    """Step and agent accuracy per method as mean ± sample std over repeats (``details["repeat"]``, or the frame's
    ``repeat`` column when it has one).

    Returns
    -------
    DataFrame: method, repeats, step_acc_mean, step_acc_std, agent_acc_mean, agent_acc_std.
    """
    d = df if "repeat" in df.columns else df.assign(repeat=[repeat_of(_details(b)) for b in df["details_json"]])
    rows = []
    for m, g in d.groupby("method", sort=True):
        per = [(_step_acc(h), _step_acc(h, "agent_correct")) for _, h in g.groupby("repeat", sort=True)]
        sm, ss = mean_std([p[0] for p in per])
        am, as_ = mean_std([p[1] for p in per])
        rows.append(
            {
                "method": m,
                "repeats": len(per),
                "step_acc_mean": sm,
                "step_acc_std": ss,
                "agent_acc_mean": am,
                "agent_acc_std": as_,
            }
        )
    return pd.DataFrame(
        rows, columns=["method", "repeats", "step_acc_mean", "step_acc_std", "agent_acc_mean", "agent_acc_std"]
    )


def speaker_mismatch(trace_id: str, facts: TraceFacts) -> dict[str, Any] | None:
    """``{trace_id, step, labelled_agent, speaker}`` when the labelled agent is not the speaker of the labelled
    step (names as in the trace; compared after :func:`~agentcausal.traces.model.normalise_agent`), else None."""
    if facts.label_step is None or facts.label_speaker is None or facts.label_agent is None:
        return None
    if normalise_agent(facts.label_speaker) == normalise_agent(facts.label_agent):
        return None
    return {
        "trace_id": trace_id,
        "step": facts.label_step,
        "labelled_agent": facts.label_agent,
        "speaker": facts.label_speaker,
    }


def speaker_mismatches(traces: Sequence[Trace]) -> list[dict[str, Any]]:
    """The labelled traces whose labelled agent is not the speaker of the labelled step (:func:`speaker_mismatch`)."""
    return [m for t in traces if (m := speaker_mismatch(t.id, t.facts())) is not None]
