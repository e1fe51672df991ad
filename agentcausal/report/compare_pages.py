"""The pages of a run comparison (:func:`agentcausal.report.compare.compare_runs`): ``compare.md``
(:func:`comparison_markdown`) and ``compare.html`` (:func:`comparison_html`, :func:`write_comparison_html`).

Both lead with what changed: the intro, one line naming the settings that differ (the whole table folded in a
``<details>`` block), then for attribution runs the agreement of blamed steps with κ and the traces whose
blamed step changed, then (labelled runs) the metrics with their paired tests and the flipped verdicts; cost
and the unpaired items last. With fewer than :data:`~agentcausal.report.agreement.MIN_INTERVAL_N` pairs an
interval cell says it is not meaningful instead of showing one, and κ carries Landis and Koch's word.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from agentcausal.report.agreement import AGREEMENT_NOTE, MIN_INTERVAL_N, kappa_word
from agentcausal.report.compare import Comparison, frame_rows, load_run_frame
from agentcausal.report.discovery_analyses import AnalysesReport, backbone_label, backbone_rank_sections
from agentcausal.report.html import html_table, human_number, page
from agentcausal.report.traces_html import trace_anchor

__all__ = ["comparison_markdown", "comparison_html", "write_comparison_html"]


def _fmt_metric(v: float, metric: str) -> str:
    if pd.isna(v):
        return "–"
    if "accuracy" in metric or metric == "both correct":
        return f"{100 * v:+.1f} pp" if metric.startswith("Δ") else f"{100 * v:.1f}%"
    return human_number(round(float(v), 3))


def _display(c: Comparison) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The three tables with formatted cells (strings) for markdown and HTML."""
    pct = c.kind == "attribution"
    met = pd.DataFrame(
        [
            {
                "method": r.method,
                "metric": r.metric,
                "n": int(r.n),
                "A": _fmt_metric(r.a, r.metric),
                "B": _fmt_metric(r.b, r.metric),
                "B − A": ("–" if pd.isna(r.diff) else f"{100 * r.diff:+.1f} pp")
                if pct
                else ("–" if pd.isna(r.diff) else f"{r.diff:+.3g}"),
                "test": r.test + (f" (A only {int(r.a_only)}, B only {int(r.b_only)})" if pct else ""),
                "p": "–" if pd.isna(r.p_value) else f"{r.p_value:.3g}",
            }
            for r in frame_rows(c.metrics, index=True)
        ]
    )

    def tok(v: float) -> str:
        return human_number(round(v))

    def sec(v: float) -> str:
        return human_number(round(v, 2))

    cost = pd.DataFrame(
        [
            {
                "method": r.method,
                "items": int(r.n),
                "reused A": int(r.a_reused),
                "reused B": int(r.b_reused),
                "tokens A this run": tok(r.a_run_tokens),
                "tokens A original": tok(r.a_tokens),
                "tokens B this run": tok(r.b_run_tokens),
                "tokens B original": tok(r.b_tokens),
                "tokens B − A original": f"{r.diff_tokens:+,.0f}",
                "seconds A this run": sec(r.a_run_seconds),
                "seconds A original": sec(r.a_seconds),
                "seconds B this run": sec(r.b_run_seconds),
                "seconds B original": sec(r.b_seconds),
                "seconds B − A original": f"{r.diff_seconds:+,.2f}",
            }
            for r in frame_rows(c.cost, index=True)
        ]
    )
    flipped = c.flipped
    if not flipped.empty:  # one row per (method, item), one column per metric: "A → B", blank when unchanged
        idx = ["method", *c.keys]
        f = flipped.assign(change=[f"{a} → {b}" for a, b in zip(flipped["a"], flipped["b"])])
        order = list(dict.fromkeys(f["metric"]))
        flipped = (
            f.pivot_table(index=idx, columns="metric", values="change", aggfunc="first")
            .reindex(columns=order)
            .fillna("")
            .reset_index()
        )
        flipped.columns.name = None
        if len(c.content_differs):  # flag the pairs whose contents differ (same id, edited content)
            diff = set(map(tuple, c.content_differs[c.keys].astype(str).itertuples(index=False)))
            flipped["content"] = [
                "differs" if tuple(str(v) for v in r) in diff else "same"
                for r in flipped[c.keys].itertuples(index=False)
            ]
    return met, flipped, cost


def _differs_display(c: Comparison) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                **{k: r[k] for k in c.keys},
                "content hash A": str(r["a_hash"])[:12] + "…",
                "content hash B": str(r["b_hash"])[:12] + "…",
            }
            for _, r in c.content_differs.iterrows()
        ],
        columns=[*c.keys, "content hash A", "content hash B"],
    )


_COST_NOTE = (
    "Means per shared item. *this run*: what the run spent (0 for an item reused from an earlier run's "
    "results); *original*: what the item cost when it was computed. Seconds: the method's wall time."
)


def _unpaired_display(c: Comparison) -> pd.DataFrame:
    names = {"A": c.run_a.name, "B": c.run_b.name}
    return pd.DataFrame(
        [
            {
                "method": r.method,
                "only in": f"{r.only_in} ({names[r.only_in]})",
                "items": int(r.items),
                "what": "method not run in the other" if r.whole_method else "items missing in the other",
                "items (first 10)": r.which,
            }
            for r in frame_rows(c.unpaired, index=True)
        ],
        columns=["method", "only in", "items", "what", "items (first 10)"],
    )


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "(none)"
    cols = [str(x) for x in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines)


def _intro(c: Comparison) -> str:
    what = (
        "exact McNemar test on right/wrong per labelled trace (failed and undetermined count as wrong)"
        if c.kind == "attribution"
        else "Wilcoxon signed-rank test on the paired values"
    )
    if not _has_labels(c):
        what = "agreement of the blamed steps (no shared trace is labelled)"
    n = len(c.content_differs)
    differs = (
        f" {n} pair{'s' if n != 1 else ''} differ{'s' if n == 1 else ''} in content (same id, different "
        "content hash): paired anyway, listed under 'Same id, different content'."
        if n
        else ""
    )
    return (
        f"A = {c.run_a}, B = {c.run_b}; {c.kind} runs; {c.shared} shared items paired by "
        f"({', '.join(c.keys)}); per method: {what}" + ("; two-sided p-values." if _has_labels(c) else ".") + differs
    )


def _pct(v: float) -> str:
    return "–" if pd.isna(v) else f"{100 * v:.1f}%"


def _ci(lo: float, hi: float, pct: bool = True) -> str:
    if pd.isna(lo) or pd.isna(hi):
        return "–"
    return f"{_pct(lo)} – {_pct(hi)}" if pct else f"{lo:.2f} – {hi:.2f}"


#: an interval cell for fewer than MIN_INTERVAL_N pairs
_FEW = f"not meaningful (n < {MIN_INTERVAL_N})"


def _agreement_cells(r: Any) -> dict[str, str]:
    few = 0 < int(r.n) < MIN_INTERVAL_N
    return {
        "n": str(int(r.n)),
        "same step": "–" if not r.n else f"{int(r.k)}/{int(r.n)} ({_pct(r.agreement)})",
        "95% CI": _FEW if few else _ci(r.low, r.high),
        "chance": _pct(r.chance),
        "κ": "–" if pd.isna(r.kappa) else f"{r.kappa:.2f} ({kappa_word(r.kappa)})",
        "κ 95% CI": _FEW if few else _ci(r.kappa_low, r.kappa_high, False),
        "not compared": str(int(r.not_compared)),
    }


def _differs_line(c: Comparison) -> str:
    """One line naming what differs (the table itself is folded)."""
    if not len(c.differs):
        return _DIFFERS_NONE
    keys = [f"{r['key']}" if r["what"] == "settings" else f"{r['what']} {r['key']}" for _, r in c.differs.iterrows()]
    shown = ", ".join(keys[:8]) + (f", … (+{len(keys) - 8})" if len(keys) > 8 else "")
    return f"Settings that differ ({len(keys)}): {shown}."


def _agreement_display(c: Comparison) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(A vs B per method, methods of one run) as text tables."""
    runs = pd.DataFrame([{"method": r.method, **_agreement_cells(r)} for r in frame_rows(c.agreement, index=True)])
    names = {"A": c.run_a.name, "B": c.run_b.name}
    within = pd.DataFrame(
        [
            {
                "run": f"{r.run} ({names.get(r.run, r.run)})",
                "methods": f"{r.method_a} vs {r.method_b}",
                **_agreement_cells(r),
            }
            for r in frame_rows(c.method_agreement, index=True)
        ]
    )
    return runs, within


def _section_link(run_dir: Path, trace_id: str, base: Path | None) -> str:
    import os

    target = run_dir / "report.html"
    href = os.path.relpath(target, base) if base is not None else str(target)
    return f"{href}#{trace_anchor(trace_id)}"


def _blame_changed_display(c: Comparison) -> pd.DataFrame:
    def side(step: Any, agent: Any, conf: Any) -> str:
        if step is None or pd.isna(step):
            return "none"
        out = f"{int(step)}" + (f" ({agent})" if isinstance(agent, str) and agent else "")
        return out + (f", confidence {float(conf):.2f}" if conf is not None and not pd.isna(conf) else "")

    keys = [k for k in c.keys if k != "trace_id"]
    return pd.DataFrame(
        [
            {
                "method": r["method"],
                "trace": r["trace_id"],
                **{k: r[k] for k in keys},
                "A": side(r["step_a"], r["agent_a"], r["confidence_a"]),
                "B": side(r["step_b"], r["agent_b"], r["confidence_b"]),
            }
            for _, r in c.blame_changed.iterrows()
        ],
        columns=["method", "trace", *keys, "A", "B"],
    )


_DIFFERS_NONE = "Nothing differs: the same preset, settings, models, routing and corpus."


def _has_labels(c: Comparison) -> bool:
    return c.kind != "attribution" or bool((c.metrics.get("n", pd.Series(dtype=int)) > 0).any())


def _unlabelled_md(c: Comparison) -> list[str]:
    """The label-free sections of an attribution comparison (markdown)."""
    if c.kind != "attribution":
        return []
    runs, within = _agreement_display(c)
    changed = _blame_changed_display(c)
    return [
        "## Agreement of blamed steps, A vs B",
        "",
        AGREEMENT_NOTE,
        "",
        _md_table(runs),
        "",
        "## Agreement between methods of one run",
        "",
        _md_table(within) if len(within) else "(one method per run)",
        "",
        f"## Blamed step changed ({len(changed)})",
        "",
        f"Each trace's section: `{c.run_a}/report.html#t-<trace>` (A) and `{c.run_b}/report.html#t-<trace>` (B).",
        "",
        _md_table(changed),
        "",
    ]


def comparison_markdown(c: Comparison) -> str:
    """The comparison as markdown: what differs, agreement of blamed steps and the traces whose blamed step
    changed (attribution), metrics with tests (when labelled), flipped items, cost.

    Returns
    -------
    str
    """
    met, flipped, cost = _display(c)
    unp = _unpaired_display(c)
    head = "Flipped verdicts" if c.kind == "attribution" else "Items whose SHD changed"
    metrics = (
        ["## Metrics", "", _md_table(met), "", f"## {head} ({len(flipped)})", "", _md_table(flipped), ""]
        if _has_labels(c)
        else ["No shared trace is labelled: accuracy is not compared.", ""]
    )
    folded = (
        [
            f"<details><summary>What differs ({len(c.differs)}): the whole table</summary>",
            "",
            _md_table(c.differs),
            "",
            "</details>",
            "",
        ]
        if len(c.differs)
        else []
    )
    return "\n".join(
        [
            f"# Compare {c.run_a.name} (A) with {c.run_b.name} (B)",
            "",
            _intro(c),
            "",
            _differs_line(c),
            "",
            *_unlabelled_md(c),
            *folded,
            *metrics,
            "## Cost per item (means)",
            "",
            _COST_NOTE,
            "",
            _md_table(cost),
            "",
            f"## In one run only ({len(unp)}: not compared)",
            "",
            _md_table(unp),
            "",
            *_differs_md(c),
            *_backbone_ranks(c).markdown,
        ]
    )


def _backbone_ranks(c: Comparison):
    """Discovery runs: the MAC paper's mean ranks and win counts over both runs' backbones × datasets."""
    if c.kind != "discovery":
        return AnalysesReport([], [], [])
    return backbone_rank_sections({backbone_label(r): load_run_frame(r, "discovery") for r in (c.run_a, c.run_b)})


def _differs_md(c: Comparison) -> list[str]:
    if not len(c.content_differs):
        return []
    return [
        f"## Same id, different content ({len(c.content_differs)}: paired anyway)",
        "",
        _md_table(_differs_display(c)),
        "",
    ]


def comparison_html(c: Comparison, base: str | Path | None = None) -> str:
    """The comparison as a standalone HTML page (sortable tables, no network).

    Parameters
    ----------
    c : Comparison
    base : folder the page is written to: links to the runs' trace sections are relative to it
        (None: the run folders' paths as given)
    """
    e = html.escape
    met, flipped, cost = _display(c)
    unp = _unpaired_display(c)
    head = "Flipped verdicts" if c.kind == "attribution" else "Items whose SHD changed"
    where = None if base is None else Path(base)
    blocks = [
        f"<p class='note'>{e(_intro(c))}</p>",
        f"<p id='differs-line'>{e(_differs_line(c))}</p>",
    ]
    folded = (
        [
            f"<details><summary>What differs ({len(c.differs)}): the whole table</summary>",
            html_table(c.differs, table_id="differs"),
            "</details>",
        ]
        if len(c.differs)
        else []
    )
    if c.kind == "attribution":
        runs, within = _agreement_display(c)
        changed = _blame_changed_display(c)

        def links(v: Any, row: Any) -> tuple[str, str]:
            a = _section_link(c.run_a, str(v), where)
            b = _section_link(c.run_b, str(v), where)
            return f"{e(str(v))} (<a href='{e(a)}'>A</a> · <a href='{e(b)}'>B</a>)", ""

        blocks += [
            "<h2>Agreement of blamed steps, A vs B</h2>",
            f"<p class='note'>{e(AGREEMENT_NOTE)}</p>",
            html_table(runs, table_id="agreement"),
            "<h2>Agreement between methods of one run</h2>",
            html_table(within, table_id="method-agreement") if len(within) else "<p>(one method per run)</p>",
            f"<h2>Blamed step changed ({len(changed)})</h2>",
            html_table(
                changed,
                table_id="blame-changed",
                sortable=True,
                filterable=len(changed) > 10,
                cell_html={"trace": links},
            ),
        ]
    blocks += folded
    if _has_labels(c):
        blocks += [
            "<h2>Metrics</h2>",
            html_table(met, table_id="metrics", sortable=True),
            f"<h2>{e(head)} ({len(flipped)})</h2>",
            html_table(flipped, table_id="flipped", sortable=True, filterable=True),
        ]
    else:
        blocks.append("<p>No shared trace is labelled: accuracy is not compared.</p>")
    return page(
        f"Compare {c.run_a.name} (A) with {c.run_b.name} (B)",
        [
            *blocks,
            "<h2>Cost per item (means)</h2>",
            f"<p class='note'>{html.escape(_COST_NOTE)}</p>",
            html_table(cost, table_id="cost", sortable=True),
            f"<h2>In one run only ({len(unp)}: not compared)</h2>",
            html_table(unp, table_id="unpaired", sortable=True),
            *(
                [
                    f"<h2>Same id, different content ({len(c.content_differs)}: paired anyway)</h2>",
                    html_table(_differs_display(c), table_id="content_differs", sortable=True),
                ]
                if len(c.content_differs)
                else []
            ),
            *_backbone_ranks(c).html,
        ],
    )


def write_comparison_html(c: Comparison, path: str | Path) -> Path:
    """Write :func:`comparison_html` to ``path`` (folders created); also ``<stem>.json`` with the raw tables.

    Returns
    -------
    Path of the HTML file.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(comparison_html(c, base=p.parent), encoding="utf-8")
    raw = {
        "run_a": str(c.run_a),
        "run_b": str(c.run_b),
        "kind": c.kind,
        "keys": c.keys,
        "shared": c.shared,
        "differs": json.loads(c.differs.to_json(orient="records")),
        "agreement": json.loads(c.agreement.to_json(orient="records")) if len(c.agreement) else [],
        "method_agreement": json.loads(c.method_agreement.to_json(orient="records")) if len(c.method_agreement) else [],
        "blame_changed": json.loads(c.blame_changed.to_json(orient="records")) if len(c.blame_changed) else [],
        "metrics": json.loads(c.metrics.to_json(orient="records")),
        "flipped": json.loads(c.flipped.to_json(orient="records")),
        "cost": json.loads(c.cost.to_json(orient="records")),
        "unpaired": json.loads(c.unpaired.to_json(orient="records")),
        "content_differs": json.loads(c.content_differs.to_json(orient="records")),
    }
    p.with_suffix(".json").write_text(json.dumps(raw, indent=2), encoding="utf-8")
    return p
