"""DCFA's Table 1 and Figure 3 over several runs: what ``agentcausal tables dcfa RUN...`` prints.

* :func:`table1_cells`: Table 1 (subset × with/without truth × backbone), each cell agent-and-step (the
  headline, as DCFA's released ``evaluate.py`` scores) beside step-only, with n and the published number it
  corresponds to (:data:`DCFA_TABLE1`); :func:`table1_averages` the "Average" row;
* :func:`fig3_cells`: Figure 3's levels (:data:`agentcausal.attribution.paper_tables.WHO_WHEN_LEVELS`) per
  backbone;
* :func:`table1_backbone`, :func:`run_facts`: which row a run's model is and what the run was.

One run's tables (and the accuracy these cells count): :mod:`agentcausal.attribution.paper_tables`.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), Table 1, Figure 3.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from agentcausal.attribution.paper_tables import accuracy_by_level, dcfa_accuracy, outside_levels
from agentcausal.repeats import mean_std

__all__ = [
    "DCFA_TABLE1",
    "TABLE1_METHODS",
    "TABLE1_BACKBONES",
    "table1_backbone",
    "run_facts",
    "table1_cells",
    "table1_averages",
    "fig3_cells",
]


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
