"""The MAC paper's tables over several discovery runs (one backbone each): what ``agentcausal tables mac RUN...`` prints.

Built on :mod:`agentcausal.discovery.ranks` and :mod:`agentcausal.discovery.analyses` (their public functions:
:func:`~agentcausal.discovery.ranks.mean_ranks`, :func:`~agentcausal.discovery.ranks.win_tie_loss`,
:func:`~agentcausal.discovery.analyses.cost_multiples`, whose definitions those modules document); this module
only lays the numbers out as the paper's tables and names, for every cell, the published number it corresponds
to (:func:`published_cell`).

* **Table 1** is the paper's qualitative comparison of approaches (§1): nothing to compute; said so.
* **Table 2** (§4.2): per backbone, each method (MAC and its baselines) × dataset × SHD / NHD / F1 as
  mean ± sample std over seeds, with n (scored seeds); then the same averaged over backbones (mean ± std of
  the backbones' seed means, n = backbones).
* **Table 3** (§4.3, ablations): MAC beside ``mac_single``, ``dcm_only``, ``mdm_only``, laid out as Table 2.
* **Fig. 2** mean ranks and the §4.2 win counts over backbones × datasets, and **Fig. 5** cost multiples.

The paper's tables are images without their values in the text; the values the text states (mean ranks
2.0 / 1.6 / 1.4, first on 10 / 9 / 7 of 15 points, Earthquake 0 / 0 / 1.00 with Gemini-2.0-Flash,
16x-25x tokens) are given where a cell corresponds to one; every other cell names its place in the paper.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §1, §4.2-§4.4,
Tables 1-3, Figs. 2 and 5.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from agentcausal.discovery import analyses as A
from agentcausal.discovery import ranks as R
from agentcausal.discovery import scope as S
from agentcausal.discovery.variants import MethodVariant

__all__ = [
    "MAC_BACKBONES",
    "PAPER_DATASETS",
    "ABLATIONS",
    "mac_backbone",
    "published_cell",
    "table_cells",
    "over_backbones",
    "mac_tables_text",
]

#: the paper's three backbones (Table 2) and the model-name fragment (lower case) that identifies each
MAC_BACKBONES = (("GPT-4o", "gpt-4o"), ("Gemini-2.0-Flash", "gemini-2.0-flash"), ("DeepSeek-R1", "deepseek-r1"))
#: the paper's five datasets (§4.1), as the dataset loader names them
PAPER_DATASETS = ("earthquake", "cancer", "survey", "auto_mpg", "child")
#: MAC's ablations (Table 3 and §4.4's single-agent variant); never in Table 2's ranking
ABLATIONS = S.ABLATIONS
#: the metrics, in the paper's order
METRICS = S.RANKED_METRICS

_STATED = {  # the values the paper's text states, by (backbone, dataset, method)
    ("Gemini-2.0-Flash", "earthquake", "mac"): {"shd2": 0.0, "nhd": 0.0, "f1": 1.00},
    **{(b, "earthquake", "exact_search"): {"shd2": 0.0, "nhd": 0.0, "f1": 1.00} for b, _ in MAC_BACKBONES},
}
_FIRST_ON = {"Gemini-2.0-Flash": (10, 4), "DeepSeek-R1": (9, 5), "GPT-4o": (7, 7)}
_MEAN_RANK = {"shd2": 2.0, "nhd": 1.6, "f1": 1.4}


def mac_backbone(label: str) -> str | None:
    """The paper's backbone (:data:`MAC_BACKBONES`) a run's model label names, or None.

    >>> mac_backbone("openai-gpt4o:gpt-4o (discover-A)"), mac_backbone("vllm-deepseek-r1:deepseek-ai/DeepSeek-R1 (x)")
    ('GPT-4o', 'DeepSeek-R1')
    >>> mac_backbone("fake:fake-model (run)") is None
    True
    """
    low = label.lower()
    for name, frag in MAC_BACKBONES:
        if frag in low:
            return name
    return None


def metric_name(metric: str) -> str:
    """A metric as the MAC paper names it: its SHD is ours ``shd2`` (a reversed edge counts twice).

    >>> metric_name("shd2"), metric_name("shd"), metric_name("f1")
    ('SHD', 'SHD (reversal once)', 'F1')
    """
    return {"shd2": "SHD", "shd": "SHD (reversal once)"}.get(metric, metric.upper())


def published_cell(table: str, backbone: str, dataset: str, method: str, metric: str) -> str:
    """Which published number a Table 2 / Table 3 cell corresponds to, and its value where the text states one.

    >>> published_cell("Table 2", "Gemini-2.0-Flash", "earthquake", "mac", "f1")
    'Table 2, Gemini-2.0-Flash, earthquake, mac, F1: 1.00 (stated in §4.2)'
    >>> published_cell("Table 2", "fake:fake-model (r)", "asia", "pc", "shd2")
    "none: asia is not one of the paper's five datasets"
    """
    paper_backbone = mac_backbone(backbone) or (backbone if backbone in dict(MAC_BACKBONES) else None)
    if dataset not in PAPER_DATASETS:
        return f"none: {dataset} is not one of the paper's five datasets"
    if backbone == "over backbones":
        return f"none: {table} is per backbone; the paper averages over backbones only in its mean ranks (Fig. 2)"
    if paper_backbone is None:
        return f"none: {backbone} is not one of the paper's backbones (GPT-4o, Gemini-2.0-Flash, DeepSeek-R1)"
    where = f"{table}, {paper_backbone}, {dataset}, {method}, {metric_name(metric)}"
    stated = _STATED.get((paper_backbone or "", dataset, method), {}).get(metric)
    return f"{where}: {stated:.2f} (stated in §4.2)" if stated is not None else f"{where} (value in the table image)"


def _backbone_of(label: str) -> str:
    return mac_backbone(label) or label


def _summary(v: pd.Series) -> dict[str, Any]:
    """A cell's mean, sample std (NaN below two values: one seed or backbone has no spread to show) and n."""
    return {
        "mean": float(v.mean()) if len(v) else np.nan,
        "std": float(v.std(ddof=1)) if len(v) > 1 else np.nan,
        "n": len(v),
    }


def table_cells(frames: Mapping[str, pd.DataFrame], methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean ± sample std over seeds per (backbone, dataset, method, metric), with n.

    Parameters
    ----------
    frames : backbone label (:func:`agentcausal.report.discovery_analyses.backbone_label`) -> scored frame
    methods : the methods kept (None: all)

    Returns
    -------
    DataFrame: backbone, dataset, method, metric, mean, std (NaN for one seed), n (seeds scored).
    """
    rows = []
    for label, df in frames.items():
        d = df if methods is None else df[df["method"].isin(list(methods))]
        for (ds, m), g in d.groupby(["dataset", "method"], sort=False):
            for metric in METRICS:
                if metric not in g:
                    continue
                v = g[metric].dropna()
                rows.append(
                    {
                        "backbone": label,
                        "dataset": ds,
                        "method": m,
                        "metric": metric,
                        **_summary(v),
                    }
                )
    return pd.DataFrame(rows, columns=["backbone", "dataset", "method", "metric", "mean", "std", "n"])


def over_backbones(cells: pd.DataFrame) -> pd.DataFrame:
    """The backbones' seed means averaged: per (dataset, method, metric) mean ± sample std over backbones.

    Returns
    -------
    DataFrame: dataset, method, metric, mean, std (NaN for one backbone), n (backbones).
    """
    rows = []
    for (ds, m, metric), g in cells.groupby(["dataset", "method", "metric"], sort=False):
        v = g["mean"].dropna()
        rows.append(
            {
                "dataset": ds,
                "method": m,
                "metric": metric,
                **_summary(v),
            }
        )
    return pd.DataFrame(rows, columns=["dataset", "method", "metric", "mean", "std", "n"])


def _fmt(mean: float, std: float, n: int, unit: str) -> str:
    if pd.isna(mean):
        return f"- (n={n})"
    sd = "" if pd.isna(std) else f" ± {std:.2f}"
    return f"{mean:.2f}{sd} (n={n} {unit})"


def _block(cells: pd.DataFrame, table: str, backbone: str, unit: str) -> list[str]:
    """One Table 2 / 3 block: rows methods, columns dataset × metric; then each cell's published place."""
    datasets = [d for d in PAPER_DATASETS if d in set(cells["dataset"])] + sorted(
        set(cells["dataset"]) - set(PAPER_DATASETS)
    )
    methods = list(dict.fromkeys(cells["method"]))
    head = ["method", *[f"{d} {metric_name(m)}" for d in datasets for m in METRICS]]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by = {(r["dataset"], r["method"], r["metric"]): r for r in cells.to_dict("records")}
    for m in methods:
        row = [m]
        for d in datasets:
            for metric in METRICS:
                r = by.get((d, m, metric))
                row.append(_fmt(r["mean"], r["std"], int(r["n"]), unit) if r else "-")
        out.append("| " + " | ".join(row) + " |")
    out += ["", "Published cells:"]
    for (d, m, metric), _r in by.items():
        out.append(f"- {m}, {d}, {metric_name(metric)}: {published_cell(table, backbone, d, m, metric)}")
    return [*out, ""]


def _analysis(a: S.Analysis) -> list[str]:
    t = a.table
    if t.empty:
        return ["(no rows)", ""]
    head = list(t.columns)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in t.to_dict("records"):
        lines.append("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in r.values()) + " |")
    return [*lines, "", f"n: {a.n}; {a.convention}", ""]


def mac_tables_text(frames: Mapping[str, pd.DataFrame], costs: Mapping[str, pd.DataFrame] | None = None) -> str:
    """MAC's Tables 1-3, Fig. 2's mean ranks, §4.2's win counts and Fig. 5's cost multiples, as markdown.

    Parameters
    ----------
    frames : backbone label -> scored frame of that run (one run per backbone)
    costs : backbone label -> :func:`~agentcausal.discovery.analyses.cost_frame` of that run (optional)

    Returns
    -------
    str: every cell with its n, each followed by the published number it corresponds to.
    """
    labels = list(frames)
    out = [
        f"# MAC's tables (arXiv:2407.15073) from {len(labels)} run(s): " + ", ".join(labels),
        "",
        "## Table 1",
        "",
        "Table 1 is the paper's qualitative comparison of approaches (§1): it holds no number to compute.",
        "",
    ]
    main_methods = sorted(
        {str(m) for f in frames.values() for m in f["method"] if MethodVariant.parse(str(m)).base not in ABLATIONS}
    )
    main_methods = [m for m in main_methods if MethodVariant.parse(m).rounds is None]
    abl = [m for m in ("mac", *ABLATIONS) if any((f["method"] == m).any() for f in frames.values())]
    for table, methods, title in (
        ("Table 2", main_methods, "MAC and its baselines (§4.2)"),
        ("Table 3", abl, "MAC and its ablations (§4.3, §4.4)"),
    ):
        cells = table_cells(frames, methods)
        out += [f"## {table}: {title}, mean ± sample std over seeds", ""]
        if cells.empty:
            out += ["No scored rows of these methods in the runs.", ""]
            continue
        for label in labels:
            c = cells[cells["backbone"] == label]
            if len(c):
                out += [f"### {label}", "", *_block(c, table, label, "seeds")]
        if len(labels) > 1:
            out += [
                f"### Averaged over {len(labels)} backbones (mean ± sample std of the backbones' seed means)",
                "",
                *_block(over_backbones(cells), table, "over backbones", "backbones"),
            ]
    stacked = S.stack_backbones(dict(frames))
    ranked = stacked[stacked["method"].isin(main_methods)] if len(stacked) else stacked
    out += ["## Fig. 2: mean ranks over backbones × datasets (ranks.mean_ranks)", ""]
    out += _analysis(R.mean_ranks(ranked))
    out += [
        "Published (§4.2, Fig. 2): MAC's mean rank "
        + ", ".join(f"{metric_name(m)} {v:.1f}" for m, v in _MEAN_RANK.items())
        + " over the paper's 5 datasets × 3 backbones, among MAC and its nine baselines.",
        "",
        "## §4.2 first on k of N per backbone (ranks.first_places; pairwise win/tie/loss beside: ranks.win_tie_loss)",
        "",
    ]
    for label in labels:
        f = frames[label]
        main = f[f["method"].isin(main_methods)]
        out += [f"### {label}", "", *_analysis(R.first_places(main)), *_analysis(R.win_tie_loss(main))]
        paper = mac_backbone(label)
        first = _FIRST_ON.get(paper or "")
        out += [
            (
                f"Published (§4.2): MAC with {paper} is first on {first[0]} and second on {first[1]} of 15 "
                "points (5 datasets × 3 metrics)."
            )
            if first
            else "Published: none for this backbone (not one of the paper's three).",
            "",
        ]
    if costs:
        out += ["## Fig. 5: cost multiples of the zero-shot baseline (analyses.cost_multiples)", ""]
        for label, c in costs.items():
            out += [f"### {label}", "", *_analysis(A.cost_multiples(c))]
        out += [
            "Published (§4.4): the full system uses 16x to 25x the tokens of standard baselines; the dollar "
            "figures are in Fig. 5 only.",
            "",
        ]
    return "\n".join(out)
