"""The tables the DCFA paper reports, from one run's results frame.

Every function reads a results frame (:func:`agentcausal.attribution.results.results_frame`,
one row per trace, method and repeat); DCFA's record is read from ``details_json``
(see :mod:`agentcausal.attribution.dcfa.method`).

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
* :func:`table1_cells`: Table 1 over several runs (subset × with/without truth × backbone), each cell
  agent-and-step (the headline) beside step-only, with n and the published number it corresponds to
  (:data:`DCFA_TABLE1`); :func:`table1_averages` the "Average" row; :func:`fig3_cells` Figure 3's
  levels per backbone. What ``agentcausal tables dcfa RUN...`` prints.

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
from collections.abc import Mapping, Sequence
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
    "accuracy_over_repeats",
    "speaker_mismatch",
    "speaker_mismatches",
    "DCFA_TABLE1",
    "TABLE1_METHODS",
    "TABLE1_BACKBONES",
    "table1_backbone",
    "run_facts",
    "table1_cells",
    "table1_averages",
    "fig3_cells",
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
    try:
        return json.loads(blob or "{}")
    except (TypeError, ValueError):
        return {}


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


def _dcfa_rows(df: pd.DataFrame, method: str = "dcfa") -> list[tuple[pd.Series, dict[str, Any]]]:
    return [(r, _details(r["details_json"])) for _, r in df[df["method"] == method].iterrows()]


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
    """Step and agent accuracy per method as mean ± sample std over repeats (``details["repeat"]``).

    Returns
    -------
    DataFrame: method, repeats, step_acc_mean, step_acc_std, agent_acc_mean, agent_acc_std.
    """
    d = df.assign(repeat=[repeat_of(_details(b)) for b in df["details_json"]])
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


#: method name -> its column in DCFA's Table 1, in the table's order
TABLE1_METHODS = {
    "all_at_once": "All-at-Once",
    "step_by_step": "Step-by-Step",
    "binary_search": "Binary-Search",
    "a2p": "A2P",
    "echo": "ECHO",
    "dcfa": "DCFA",
}

#: DCFA's Table 1 rows in order, each with the model-name fragments (lower case) that identify it;
#: the first row whose fragments all occur in a run's model names it
TABLE1_BACKBONES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Qwen3-Coder-30B", ("qwen3-coder-30b",)),
    ("DeepSeek-R1-32B", ("deepseek-r1", "32b")),
    ("Qwen3-235B", ("qwen3-235b",)),
    ("DeepSeek-R1-671B", ("deepseek-r1",)),
    ("GPT-5", ("gpt-5",)),
    ("Gemini-2.5-pro", ("gemini-2.5-pro",)),
)

_T1_ORDER = ("all_at_once", "step_by_step", "binary_search", "a2p", "echo", "dcfa")
_T1_VALUES = {
    "Qwen3-Coder-30B": ((11.90, 20.63, 13.49, 12.70, 23.02, 37.30), (1.72, 10.34, 6.67, 8.62, 13.79, 15.52)),
    "DeepSeek-R1-32B": ((22.22, 29.37, 30.16, 19.84, 30.95, 42.06), (5.17, 15.52, 6.90, 6.90, 18.97, 20.69)),
    "Qwen3-235B": ((30.95, 25.40, 21.43, 29.37, 36.50, 43.65), (3.45, 15.52, 12.07, 3.45, 17.24, 22.41)),
    "DeepSeek-R1-671B": ((16.67, 26.98, 32.54, 15.87, 40.48, 53.17), (3.45, 12.07, 5.17, 6.90, 20.69, 22.41)),
    "GPT-5": ((15.87, 27.78, 31.75, 15.87, 31.75, 47.62), (3.45, 13.79, 10.34, 13.79, 15.52, 24.14)),
    "Gemini-2.5-pro": ((26.98, 34.13, 25.40, 32.54, 30.95, 46.03), (5.17, 15.52, 6.90, 10.34, 13.79, 18.97)),
    "Average": ((20.77, 27.72, 25.13, 21.03, 32.28, 44.79), (3.74, 13.46, 8.33, 8.33, 16.67, 20.69)),
}

#: DCFA's Table 1 as published (step-level accuracy in %, with the ground truth shown, as its released
#: baselines always show it): (backbone row, subset, method) -> value; subsets as the results frame names them
DCFA_TABLE1: dict[tuple[str, str, str], float] = {
    (row, subset, method): values[k][i]
    for row, values in _T1_VALUES.items()
    for k, subset in enumerate(("Algorithm-Generated", "Hand-Crafted"))
    for i, method in enumerate(_T1_ORDER)
}


def table1_backbone(model: str) -> str | None:
    """The DCFA Table 1 row a model name belongs to (:data:`TABLE1_BACKBONES`), or None.

    >>> table1_backbone("vllm-deepseek-r1-32b:deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"), table1_backbone("gpt-4o")
    ('DeepSeek-R1-32B', None)
    >>> table1_backbone("openai-gpt5:gpt-5"), table1_backbone("vllm:Qwen/Qwen3-Coder-30B-A3B-Instruct")
    ('GPT-5', 'Qwen3-Coder-30B')
    """
    m = model.lower()
    for row, parts in TABLE1_BACKBONES:
        if all(p in m for p in parts):
            return row
    return None


def _json(blob: Any) -> dict[str, Any]:
    try:
        out = json.loads(blob or "{}")
    except (TypeError, ValueError):
        return {}
    return out if isinstance(out, dict) else {}


def _row_model(models_blob: Any) -> str | None:
    """The attributing model of one row: its first stage that is not LCE's local model nor an embedder."""
    models = _json(models_blob)
    picked = [v for k, v in sorted(models.items()) if "lce" not in k and "embed" not in k]
    return str(picked[0]) if picked else None


def _most_common(values: Sequence[Any]) -> Any:
    vals = [v for v in values if v is not None]
    return Counter(vals).most_common(1)[0][0] if vals else None


def _follows(method: str, settings: dict[str, Any]) -> str:
    """Whose released code a baseline row followed: ``dcfa_paper`` (DCFA's copy) or ``paper``."""
    if method not in ("all_at_once", "step_by_step", "binary_search"):
        return "-"
    dcfa = settings.get("variant") == "dcfa" if method == "step_by_step" else settings.get("temperature") == 0.0
    dcfa = dcfa and int(settings.get("empty_attempts", 1) or 1) > 1
    return "dcfa_paper" if dcfa else "paper (Who&When's copy)"


def run_facts(df: pd.DataFrame) -> dict[str, Any]:
    """The backbone and, per method, the truth setting and whose code it followed, of one run's results frame.

    Returns
    -------
    dict: ``model`` (the most common attributing ``profile:model``, or ``"unknown"``), ``backbone`` (its
    Table 1 row, or the model), ``methods``: method -> {``with_ground_truth``: bool, ``follows``: str}.
    """
    model = _most_common([_row_model(b) for b in df["models_json"]]) if "models_json" in df else None
    methods = {}
    for m, g in df.groupby("method", sort=True):
        settings = [_json(b) for b in g["settings_json"]] if "settings_json" in g else []
        truth = _most_common([s.get("with_ground_truth") for s in settings])
        methods[str(m)] = {
            "with_ground_truth": True if truth is None else bool(truth),
            "follows": _most_common([_follows(str(m), s) for s in settings if s]) or "-",
        }
    model = model or "unknown"
    return {"model": model, "backbone": table1_backbone(model) or model, "methods": methods}


_T1_SUBSETS = {"Algorithm-Generated": "Algorithm-generated", "Hand-Crafted": "Hand-crafted"}


def _published(backbone: str, subset: str, method: str, truth: bool) -> tuple[float | None, str]:
    col = TABLE1_METHODS.get(method)
    if col is None:
        return None, f"none: {method} is not a column of Table 1"
    if not truth:
        return None, "none: Table 1 shows the ground truth (its released baselines always do)"
    value = DCFA_TABLE1.get((backbone, subset, method))
    if value is None:
        known = backbone in _T1_VALUES or subset not in ("Algorithm-Generated", "Hand-Crafted")
        return None, "none: subset not in Table 1" if known else f"none: {backbone} is not a row of Table 1"
    return value, f"Table 1, {backbone}, {_T1_SUBSETS.get(subset, subset)}, {col}: {value:.2f}"


def table1_cells(runs: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """DCFA's Table 1 over several runs: one row per (backbone, subset, truth, method), with n.

    Parameters
    ----------
    runs : run label (its folder) -> that run's results frame; each run is one backbone and one truth
        setting per method (the row's ``settings_json``), read by :func:`run_facts`

    Returns
    -------
    DataFrame: run, backbone, model, subset, truth ("with truth" / "without truth"), method, follows,
    n, agent_and_step_k, agent_and_step_acc, step_k, step_acc (:func:`dcfa_accuracy`: fractions),
    published (the Table 1 number in %, or NaN), published_cell (which cell of Table 1, or why none).
    Two runs of one (backbone, subset, truth, method) both appear, each under its run.
    """
    cols = [
        "run",
        "backbone",
        "model",
        "subset",
        "truth",
        "method",
        "follows",
        "n",
        "agent_and_step_k",
        "agent_and_step_acc",
        "step_k",
        "step_acc",
        "published",
        "published_cell",
    ]
    rows = []
    for label, df in runs.items():
        facts = run_facts(df)
        for r in dcfa_accuracy(df).to_dict("records"):
            mf = facts["methods"].get(str(r["method"]), {"with_ground_truth": True, "follows": "-"})
            value, cell = _published(facts["backbone"], str(r["subset"]), str(r["method"]), mf["with_ground_truth"])
            rows.append(
                {
                    "run": label,
                    "backbone": facts["backbone"],
                    "model": facts["model"],
                    "truth": "with truth" if mf["with_ground_truth"] else "without truth",
                    "follows": mf["follows"],
                    "published": float("nan") if value is None else value,
                    "published_cell": cell,
                    **r,
                }
            )
    out = pd.DataFrame(rows, columns=cols)
    order = {m: i for i, m in enumerate(TABLE1_METHODS)}
    rank = {b: i for i, (b, _) in enumerate(TABLE1_BACKBONES)}
    if len(out):
        out = out.assign(
            _m=[order.get(m, len(order)) for m in out["method"]], _b=[rank.get(b, len(rank)) for b in out["backbone"]]
        )
        out = out.sort_values(["subset", "truth", "_b", "backbone", "_m", "method", "run"], kind="stable")
        out = out.drop(columns=["_m", "_b"]).reset_index(drop=True)
    return out


def table1_averages(cells: pd.DataFrame) -> pd.DataFrame:
    """Table 1's "Average" row: per (subset, truth, method), the mean ± sample std over backbones.

    Parameters
    ----------
    cells : :func:`table1_cells`

    Returns
    -------
    DataFrame: subset, truth, method, backbones (how many were averaged), agent_and_step_mean,
    agent_and_step_std, step_mean, step_std (fractions; std 0 for one backbone), published (Table 1's
    Average in %, NaN where it has none), published_cell.
    """
    cols = [
        "subset",
        "truth",
        "method",
        "backbones",
        "agent_and_step_mean",
        "agent_and_step_std",
        "step_mean",
        "step_std",
        "published",
        "published_cell",
    ]
    rows = []
    for (sub, truth, m), g in cells.groupby(["subset", "truth", "method"], sort=False):
        per = g.groupby("backbone", sort=False)[["agent_and_step_acc", "step_acc"]].mean()  # a backbone once
        am, as_ = mean_std(list(per["agent_and_step_acc"]))
        sm, ss = mean_std(list(per["step_acc"]))
        value, cell = _published("Average", str(sub), str(m), truth == "with truth")
        rows.append(
            {
                "subset": sub,
                "truth": truth,
                "method": m,
                "backbones": len(per),
                "agent_and_step_mean": am,
                "agent_and_step_std": as_,
                "step_mean": sm,
                "step_std": ss,
                "published": float("nan") if value is None else value,
                "published_cell": cell + (f" (over its 6 backbones; here {len(per)})" if value is not None else ""),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def fig3_cells(runs: Mapping[str, pd.DataFrame], subset: str | None = "Hand-Crafted") -> pd.DataFrame:
    """Figure 3 over several runs: step-only accuracy per (backbone, truth, method, level), with n.

    Parameters
    ----------
    runs : run label -> results frame (as :func:`table1_cells`)
    subset : the subset whose lengths are levelled (Figure 3: Hand-Crafted); None = all

    Returns
    -------
    DataFrame: run, backbone, truth, method, level, n, step_k, step_acc, undetermined
    (:func:`accuracy_by_level`), outside (traces of the run in no level).
    """
    cols = ["run", "backbone", "truth", "method", "level", "n", "step_k", "step_acc", "undetermined", "outside"]
    frames = []
    for label, df in runs.items():
        facts = run_facts(df)
        lv = accuracy_by_level(df, subset)
        if lv.empty:
            continue
        truth = [
            "with truth" if facts["methods"].get(str(m), {}).get("with_ground_truth", True) else "without truth"
            for m in lv["method"]
        ]
        frames.append(lv.assign(run=label, backbone=facts["backbone"], truth=truth, outside=outside_levels(df, subset)))
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)
