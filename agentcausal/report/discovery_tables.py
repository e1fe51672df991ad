"""The tables of a causal-discovery run: SHD, NHD, F1 (and skeleton F1) per dataset and method, mean ± std
over seeds.

* :func:`summary_table`: the frame, one row per (dataset, method); :func:`summary_text`, the fixed-width
  table the CLI prints with its conventions; :func:`table_records`, its rows for a Prefect table artifact.
* :func:`memorisation_text`: each LLM method's mean SHD / F1 per anonymise mode, side by side.

Every table reads the scored frame (:func:`agentcausal.discovery.evaluate.outcomes_frame`,
``results.parquet``) and states its conventions (:data:`~agentcausal.discovery.graphs.metrics.SHD_CONVENTION`,
:data:`~agentcausal.discovery.graphs.metrics.METRICS_FOOTER`, :data:`SECONDS_NOTE`, :data:`REUSED_NOTE`,
:data:`IDENTICAL_NOTE`).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §4, app. B.
"""

from __future__ import annotations

import textwrap
from typing import Any, cast

import pandas as pd

from agentcausal.discovery.graphs.metrics import METRIC_COLUMNS, METRICS_FOOTER, SHD_CONVENTION
from agentcausal.discovery.variants import MethodVariant
from agentcausal.registry import DISCOVERY_METHODS

__all__ = [
    "summary_table",
    "summary_text",
    "memorisation_text",
    "table_records",
    "IDENTICAL_NOTE",
    "SECONDS_NOTE",
    "REUSED_NOTE",
]

_METRICS = (*METRIC_COLUMNS, "precision", "recall")


def _identical_samples(g: pd.DataFrame) -> bool:
    """Two or more LLM samples, every one the same graph, none drawn above temperature 0: their std is 0
    because the samples are one answer repeated (the MAC paper's temperature 0), not because the method is
    stable."""
    ok = g[g["error"] == ""]
    base = MethodVariant.parse(str(g["method"].iloc[0])).base
    if len(ok) < 2 or base not in DISCOVERY_METHODS or not DISCOVERY_METHODS[base].needs_llm:
        return False
    temps = ok["temperature"] if "temperature" in ok else pd.Series([float("nan")] * len(ok))
    return ok["edges"].nunique() == 1 and bool(((temps.isna()) | (temps == 0)).all())


#: what the note after an LLM method's row says (and why)
IDENTICAL_NOTE = "identical samples: std not informative"
IDENTICAL_EXPLAINED = (
    f"{IDENTICAL_NOTE}: every sample of that LLM method was the same graph at temperature 0 "
    "(the profile's, as in the MAC paper), so its std is 0 by construction; a preset's "
    "sampling_temperature (e.g. --preset small, or --set mac.sampling_temperature=0.7) draws "
    "distinct samples when a run asks for several."
)


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds of SHD, NHD, F1 (and skeleton F1) per dataset and method.

    Returns
    -------
    DataFrame indexed by (dataset, method) with columns ``<metric>_mean``,
    ``<metric>_std``, ``runs``, ``errors`` and ``identical_samples`` (an LLM method whose two or
    more samples were all the same graph at temperature 0: its std says nothing, see
    :data:`IDENTICAL_NOTE`).
    """
    if df.empty:
        return pd.DataFrame()
    # rows grouped by dataset (in order of first appearance), methods in order of first appearance
    df = df.assign(
        dataset=pd.Categorical(df["dataset"], categories=list(dict.fromkeys(df["dataset"]))),
        method=pd.Categorical(df["method"], categories=list(dict.fromkeys(df["method"]))),
    )
    g = df.groupby(["dataset", "method"], sort=True, observed=True)
    out = g[list(_METRICS)].agg(["mean", "std"])
    out.columns = [f"{a}_{b}" for a, b in out.columns]  # type: ignore[str-unpack]  # (metric, statistic) pairs
    out["runs"] = g.size()
    out["errors"] = g["error"].apply(lambda s: int((s != "").sum()))
    if "status" in df:
        out["degraded"] = g["status"].apply(lambda s: int((s == "degraded").sum()))
        out["reused"] = g["reused"].apply(lambda s: int(s.astype(bool).sum()))
    same = {k: _identical_samples(part) for k, part in g} if "edges" in df else {}
    out["identical_samples"] = [bool(same.get(k, False)) for k in out.index]
    out["seconds_mean"] = g["seconds"].mean()
    out["n"] = g["n"].agg(lambda s: "/".join(str(int(v)) for v in dict.fromkeys(s)))
    return out


#: what the "s" column measures
SECONDS_NOTE = (
    "s: mean wall time of the method per run in seconds, timed around the whole method call: for a "
    "statistical algorithm it includes starting its worker process (often more than the algorithm "
    "itself on a small dataset), for an LLM method the waits for the endpoint; a reused run shows the "
    "time it took when computed."
)
#: what the "reused" column counts
REUSED_NOTE = "reused: runs taken from an earlier run's results (cache), which cost this run nothing."

#: characters per line of the legend under the fixed-width table (the table itself is about 110 wide)
LEGEND_WIDTH = 110


def _cell(mean: float, std: float, digits: int) -> str:
    if pd.isna(mean):
        return "–"
    s = f"{mean:.{digits}f}"
    return s if pd.isna(std) or std == 0 else f"{s}±{std:.{digits}f}"


def summary_text(df: pd.DataFrame, *, reversal_cost: int = 1) -> str:
    """The SHD / NHD / F1 table as fixed-width text, one row per (dataset, method), with the conventions.

    Parameters
    ----------
    df : DataFrame from :func:`outcomes_frame`
    reversal_cost : int, only for the caption

    Returns
    -------
    str
    """
    if df.empty:
        return "(no results)"
    s = summary_table(df)
    digits = {"shd": 1, "shd2": 1, "nhd": 3, "f1": 2, "skeleton_f1": 2}
    lines = [
        f"{'dataset':<11} {'n':>6} {'method':<14} "
        + " ".join(f"{h:>11}" for h in METRIC_COLUMNS.values())
        + f" {'s':>6} {'runs':>4} {'reused':>6}"
    ]
    for key, r in s.iterrows():
        ds, m = cast(tuple[str, str], key)  # a two-level index: (dataset, method)
        err = f"  ({r['errors']} failed)" if r["errors"] else ""
        err += f"  ({int(r['degraded'])} degraded)" if r.get("degraded", 0) else ""
        err += f"  ({IDENTICAL_NOTE})" if r.get("identical_samples", False) else ""
        cells = " ".join(f"{_cell(r[f'{k}_mean'], r[f'{k}_std'], digits[k]):>11}" for k in METRIC_COLUMNS)
        reused = int(r["reused"]) if "reused" in r and pd.notna(r["reused"]) else 0
        lines.append(f"{ds:<11} {r['n']:>6} {m:<14} {cells} {r.seconds_mean:>6.1f} {int(r.runs):>4} {reused:>6}{err}")
    caption = (
        METRICS_FOOTER
        if reversal_cost == 1
        else f"{SHD_CONVENTION[reversal_cost]} in the SHD column. " + METRICS_FOOTER
    )
    legend = f"{caption} n: rows of data. Mean±std over seeds. {SECONDS_NOTE} {REUSED_NOTE}" + (
        f" {IDENTICAL_EXPLAINED}" if bool(s.get("identical_samples", pd.Series(dtype=bool)).any()) else ""
    )
    lines.append(textwrap.fill(legend, width=LEGEND_WIDTH, break_on_hyphens=False))  # a terminal's width, not one line
    return "\n".join(lines)


def memorisation_text(df: pd.DataFrame) -> str:
    """Memorisation control: each LLM method's mean SHD / F1 per anonymise mode, side by side.

    Methods named ``m@names`` / ``m@all`` (:func:`agentcausal.discovery.variants.with_anonymise`) are
    grouped with ``m``; columns ``none``, ``names``, ``all``.

    Parameters
    ----------
    df : DataFrame from :func:`~agentcausal.discovery.evaluate.outcomes_frame`

    Returns
    -------
    str, fixed-width text; empty when no method was anonymised.
    """
    variants = [MethodVariant.parse(str(m)) for m in df["method"]]  # "mac@names (rounds 2)": mac (rounds 2), names
    if all(v.anonymise == "none" for v in variants):
        return ""
    d = df.assign(base=[v.plain for v in variants], mode=[v.anonymise for v in variants])
    d = d[d["base"].isin(set(d.loc[d["mode"] != "none", "base"]))]
    g = d.groupby(["dataset", "n", "base", "mode"], sort=False)[["shd", "f1"]].mean()
    modes = [m for m in ("none", "names", "all") if m in set(d["mode"])]
    lines = [f"{'dataset':<11} {'n':>6} {'method':<14} " + " ".join(f"{m:>13}" for m in modes)]
    for (ds, n, base), _ in d.groupby(["dataset", "n", "base"], sort=False):
        cells = []
        for m in modes:
            if (ds, n, base, m) in g.index:
                r = g.loc[(ds, n, base, m)]  # type: ignore[index]  # a four-level index
                cells.append(f"{r.shd:.1f} / {r.f1:.2f}" if not pd.isna(r.shd) else "–")
            else:
                cells.append("")
        lines.append(f"{ds:<11} {n:>6} {base:<14} " + " ".join(f"{c:>13}" for c in cells))
    lines.append(
        "Cells: mean SHD / F1 over seeds. none: as is; names: neutral variable ids, descriptions kept; "
        "all: ids only (descriptions, state names and domain dropped)."
    )
    return "\n".join(lines)


def table_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Summary rows as JSON-able dicts (for a Prefect table artifact).

    Parameters
    ----------
    df : DataFrame from :func:`~agentcausal.discovery.evaluate.outcomes_frame`

    Returns
    -------
    list of dict, one per (dataset, method): metrics as ``mean±std`` text, runs, errors, reused, note, seconds.
    """
    s = summary_table(df)
    if s.empty:
        return []
    out = []
    for key, r in s.iterrows():
        ds, m = cast(tuple[str, str], key)  # a two-level index: (dataset, method)
        digits = {"shd": 2, "shd2": 2, "nhd": 3, "f1": 2, "skeleton_f1": 2}
        out.append(
            {
                "dataset": ds,
                "n": r["n"],
                "method": m,
                **{h: _cell(r[f"{k}_mean"], r[f"{k}_std"], digits[k]) for k, h in METRIC_COLUMNS.items()},
                "runs": int(r.runs),
                "errors": int(r.errors),
                "reused": int(r["reused"]) if "reused" in r else 0,
                "note": IDENTICAL_NOTE if r.get("identical_samples", False) else "",
                "seconds": round(float(r.seconds_mean), 2),
            }
        )
    return out
