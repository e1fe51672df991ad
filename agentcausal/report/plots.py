"""Plots of a run: PNG files for the run folder and text bar charts for markdown (the Prefect UI).

Attribution runs (Who&When, DCFA):

* :func:`accuracy_by_length_png`: step and agent accuracy per trace-length bucket and method;
* :func:`step_error_png`: histogram of |predicted step − true step| per method;
* :func:`stage_cost_png`: prompt and completion tokens, and seconds, per (method, LLM stage).

Discovery runs (MAC and the statistical pool):

* :func:`shd_png`: SHD per dataset and method (mean ± std over seeds);
* :func:`stage_cost_png` again, from :func:`discovery_stage_usage`.

:func:`attribution_figures` and :func:`discovery_figures` draw every figure of
a run into its folder and return :class:`Figure` records;
:func:`figures_markdown` turns them into a markdown section whose charts are
text (unicode bars render in the Prefect UI, a terminal and any markdown
viewer) with links to the PNGs; :mod:`agentcausal.report.html` embeds the
PNGs in the standalone ``report.html``.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212 (step accuracy by
length, §4). Le, H. D. et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073 (SHD).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agentcausal.report.figure_cache import Figure, FigureCache, add_figure

__all__ = [
    "Figure",
    "text_bars",
    "text_histograms",
    "accuracy_by_length_png",
    "step_error_png",
    "stage_cost_png",
    "shd_png",
    "discovery_stage_usage",
    "StageUsage",
    "SHD_BARS_MAX_DATASETS",
    "attribution_figures",
    "discovery_figures",
    "figures_markdown",
]

#: order of the trace-length buckets on the x axis (``agentcausal.attribution.evaluate.LENGTH_BUCKETS``)
_BUCKET_ORDER = ("1-10", "11-30", "31-60", "61+")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    _plt().close(fig)
    return path


def text_bars(
    labels: Sequence[str], values: Sequence[float], *, width: int = 30, fmt: str = "{:.2f}", vmax: float | None = None
) -> str:
    """A horizontal bar chart in unicode block characters, one line per label.

    Parameters
    ----------
    labels : sequence of str
    values : sequence of float, same length; NaN is shown as ``–`` with no bar
    width : int, characters of the longest bar
    fmt : format of the value printed after each bar
    vmax : float or None, the value of a full-width bar (default: the largest value)

    Returns
    -------
    str (no trailing newline); ``"(no data)"`` when ``labels`` is empty.

    Raises
    ------
    ValueError
        If ``labels`` and ``values`` differ in length.

    Examples
    --------
    >>> print(text_bars(["pc", "mac"], [4, 2], width=4, fmt="{:.0f}"))
    pc  ████ 4
    mac ██   2
    """
    if len(labels) != len(values):
        raise ValueError(f"{len(labels)} labels but {len(values)} values")
    if not labels:
        return "(no data)"
    finite = [float(v) for v in values if not pd.isna(v)]
    top = vmax if vmax is not None else max(finite, default=0.0)
    pad = max(len(str(lab)) for lab in labels)
    lines = []
    for lab, v in zip(labels, values):
        if pd.isna(v):
            lines.append(f"{str(lab):<{pad}} {'':<{width}} –")
            continue
        eighths = int(round(8 * width * float(v) / top)) if top > 0 else 0
        bar = "█" * (eighths // 8) + ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")[eighths % 8]
        lines.append(f"{str(lab):<{pad}} {bar:<{width}} {fmt.format(float(v))}")
    return "\n".join(lines)


def text_histograms(rows: dict[str, Sequence[float]], bins: Sequence[str]) -> str:
    """Histograms as rows of vertical blocks (a sparkline per row, scaled to the largest count overall).

    Parameters
    ----------
    rows : name -> counts, one count per bin
    bins : bin labels (one character-wide column each, labels listed under the chart)

    Returns
    -------
    str; ``"(no data)"`` when ``rows`` is empty.

    Examples
    --------
    >>> print(text_histograms({"a": [4, 0, 2], "bb": [1, 1, 0]}, ["0", "1", ">=2"]))
    a  █ ▄  4 0 2
    bb ▂▂   1 1 0
    bins: 0, 1, >=2
    """
    if not rows:
        return "(no data)"
    top = max((float(v) for r in rows.values() for v in r), default=0.0)
    levels = " ▁▂▃▄▅▆▇█"
    pad = max(len(k) for k in rows)
    lines = []
    for name, counts in rows.items():
        spark = "".join(levels[int(round(8 * float(v) / top))] if top > 0 and v else " " for v in counts)
        lines.append(f"{name:<{pad}} {spark}  " + " ".join(f"{float(v):g}" for v in counts))
    lines.append("bins: " + ", ".join(bins))
    return "\n".join(lines)


def _grouped_bars(
    ax: Any, frame: pd.DataFrame, *, ylabel: str, yerr: pd.DataFrame | None = None, value_fmt: str | None = None
) -> None:
    """Bars of ``frame`` (rows on the x axis, one colour per column)."""
    n = max(1, len(frame.columns))
    w = 0.8 / n
    xs = range(len(frame.index))
    for j, col in enumerate(frame.columns):
        # a missing value (the method did not run there) draws no bar at all, never a bar of height 0
        keep = [i for i, v in enumerate(frame[col].to_numpy()) if pd.notna(v)]
        vals = [float(frame[col].iloc[i]) for i in keep]
        err = None
        if yerr is not None:  # counts and distances are >= 0: clip the lower whisker at 0
            e = [float(x) if pd.notna(x) else 0.0 for x in (yerr[col].iloc[i] for i in keep)]
            err = [[min(a, b) for a, b in zip(e, vals)], e]
        bars = ax.bar(
            [list(xs)[i] + (j - (n - 1) / 2) * w for i in keep],
            vals,
            w,
            label=str(col),
            yerr=err,
            capsize=2 if err is not None else 0,
        )
        if value_fmt:  # print values, so that a bar of height 0 is still read as 0
            ax.bar_label(bars, fmt=value_fmt, fontsize=7, padding=1)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([str(i) for i in frame.index], rotation=0 if len(frame.index) < 6 else 30, ha="center")
    ax.set_ylabel(ylabel)
    if n > 1:
        ax.legend(fontsize=8)


def accuracy_by_length_png(by_length: pd.DataFrame, path: str | Path) -> Path:
    """Step and agent accuracy per trace-length bucket, one bar per method.

    Parameters
    ----------
    by_length : DataFrame with columns method, length_bucket, labelled, step_acc, agent_acc
        (``Evaluation.by_length``; accuracies as fractions in [0, 1])
    path : output PNG

    Returns
    -------
    Path of the PNG.

    References
    ----------
    Zhang et al. 2025 (arXiv:2505.00212), §4: accuracy falls with trace length.
    """
    plt = _plt()
    df = by_length[by_length["labelled"] > 0] if "labelled" in by_length else by_length
    order = [b for b in _BUCKET_ORDER if b in set(df["length_bucket"])] + sorted(
        set(df["length_bucket"]) - set(_BUCKET_ORDER)
    )
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, col, name in zip(axes, ("step_acc", "agent_acc"), ("step-level", "agent-level")):
        wide = df.pivot_table(index="length_bucket", columns="method", values=col, aggfunc="first").reindex(order)
        n = df.groupby("length_bucket")["labelled"].max().reindex(order)
        wide.index = [f"{b}\n(n={int(k)})" for b, k in zip(order, n)]
        _grouped_bars(ax, 100 * wide, ylabel="accuracy (%)", value_fmt="%.0f")
        ax.set_xlabel("trace length (steps)")
        ax.set_title(f"{name} accuracy", fontsize=10)
        ax.set_ylim(0, 100)
    return _save(fig, path)


def step_error_png(hist: pd.DataFrame, path: str | Path) -> Path:
    """Histogram of |predicted step − true step| per method (``none`` = undetermined or failed).

    Parameters
    ----------
    hist : DataFrame indexed by method with columns ``"0"``, ``"1"``, ..., ``">=k"``, ``"none"``
        (``Evaluation.step_error_hist``; counts of labelled traces)
    path : output PNG

    Returns
    -------
    Path of the PNG.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    _grouped_bars(ax, hist.T, ylabel="traces")
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("|predicted step − true step|")
    ax.set_title("step deviation", fontsize=10)
    return _save(fig, path)


def stage_cost_png(cost: pd.DataFrame, path: str | Path) -> Path:
    """Prompt and completion tokens (stacked) and seconds per (method, stage), as horizontal bars.

    Parameters
    ----------
    cost : DataFrame with columns method, stage, prompt_tokens, completion_tokens, seconds
        (totals over the run; ``Evaluation.cost_by_stage`` or :func:`discovery_stage_usage`)
    path : output PNG

    Returns
    -------
    Path of the PNG.
    """
    plt = _plt()
    labels = [f"{m} · {s}" for m, s in zip(cost["method"], cost["stage"])]
    ys = list(range(len(labels)))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 1.2 + 0.35 * max(1, len(labels))), sharey=True)
    pt = cost["prompt_tokens"].fillna(0).to_numpy()
    ct = cost["completion_tokens"].fillna(0).to_numpy()
    a1.barh(ys, pt, label="prompt")
    a1.barh(ys, ct, left=pt, label="completion")
    a1.set_xlabel("tokens")
    a1.legend(fontsize=8)
    a2.barh(ys, cost["seconds"].fillna(0).to_numpy(), color="tab:gray")
    a2.set_xlabel("seconds (summed over calls)")
    a1.set_yticks(ys)
    a1.set_yticklabels(labels, fontsize=8)
    a1.invert_yaxis()
    a1.set_title("tokens by stage", fontsize=10)
    a2.set_title("time by stage", fontsize=10)
    return _save(fig, path)


#: above this many datasets ``shd.png`` is a box per method over the datasets, not a bar group per dataset (whose
#: figure grew with the datasets: 1,000 of them drew a 130,450-pixel-wide image)
SHD_BARS_MAX_DATASETS = 40


def shd_png(results: pd.DataFrame, path: str | Path) -> Path:
    """Structural Hamming distance per dataset and method, mean ± std over seeds (lower is better).

    Up to :data:`SHD_BARS_MAX_DATASETS` datasets: a bar group per dataset, one bar per method. Above: one box per
    method over the datasets' seed means (the figure grows with methods, not datasets; every dataset's value is in
    ``summary.csv`` and in the text chart).

    Parameters
    ----------
    results : DataFrame with columns dataset, method, shd (one row per dataset, seed and method;
        ``agentcausal.discovery.evaluate.outcomes_frame``); NaN SHD (failed runs) is left out
    path : output PNG

    Returns
    -------
    Path of the PNG.

    References
    ----------
    Le et al. 2024 (arXiv:2407.15073), §4: SHD per dataset and method.
    """
    plt = _plt()
    g = results.dropna(subset=["shd"]).groupby(["dataset", "method"], sort=False)["shd"]
    mean = g.mean().unstack("method")
    if len(mean.index) > SHD_BARS_MAX_DATASETS:
        fig, ax = plt.subplots(figsize=(4.5 + 0.8 * len(mean.columns), 3.4))
        methods = [str(c) for c in mean.columns]
        ax.boxplot([mean[c].dropna().to_numpy() for c in mean.columns], tick_labels=methods)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("SHD (lower is better)")
        ax.set_title(f"SHD by method over {len(mean.index)} datasets (each a mean over seeds)", fontsize=10)
        return _save(fig, path)
    std = g.std().unstack("method")
    fig, ax = plt.subplots(figsize=(4.5 + 1.3 * max(1, len(mean.index)), 3.4))
    _grouped_bars(ax, mean, ylabel="SHD (lower is better)", yerr=std, value_fmt="%.1f")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("dataset")
    ax.set_title("SHD by dataset and method", fontsize=10)
    return _save(fig, path)


class StageUsage:
    """Tokens and seconds per (method, stage), summed over discovery outcomes as they come (:meth:`add`), for
    :func:`discovery_stage_usage` and a report that reads its outcomes once."""

    KEYS = ("calls", "requests", "prompt_tokens", "completion_tokens", "seconds")

    def __init__(self, outcomes: Iterable[Any] = ()) -> None:
        self._acc: dict[tuple[str, str], dict[str, float]] = {}
        for o in outcomes:
            self.add(o)

    def add(self, o: Any) -> None:
        """Count one outcome (reads ``method``, ``usage`` and ``seconds``)."""
        usage = o.usage or {"(no LLM)": {"seconds": o.seconds}}
        for stage, u in usage.items():
            d = self._acc.setdefault((o.method, stage), dict.fromkeys(self.KEYS, 0.0))
            for k in self.KEYS:
                d[k] += float(u.get(k, 0) or 0)

    def frame(self) -> pd.DataFrame:
        """The totals: columns method, stage, calls, requests, prompt_tokens, completion_tokens, seconds."""
        rows = [{"method": m, "stage": s, **d} for (m, s), d in sorted(self._acc.items())]
        return pd.DataFrame(rows, columns=["method", "stage", *self.KEYS])


def discovery_stage_usage(outcomes: Iterable[Any]) -> pd.DataFrame:
    """Tokens and seconds per (method, stage) summed over discovery outcomes (:class:`StageUsage`).

    Parameters
    ----------
    outcomes : iterable of ``agentcausal.discovery.outcome.DiscoveryOutcome`` (reads ``method``,
        ``usage`` and ``seconds``); a method without LLM calls shows as stage ``(no LLM)`` with
        its wall time

    Returns
    -------
    DataFrame with columns method, stage, calls, requests, prompt_tokens, completion_tokens, seconds.
    """
    return StageUsage(outcomes).frame()


#: the columns of ``Evaluation.by_length`` and ``cost_by_stage`` that :func:`accuracy_by_length_png` and
#: :func:`stage_cost_png` draw: a figure is kept by these (a rerun whose rows were reused, or whose calls were cache
#: hits, draws the same pictures and copies them)
LENGTH_DRAWN = ("method", "length_bucket", "labelled", "step_acc", "agent_acc")
STAGE_DRAWN = ("method", "stage", "prompt_tokens", "completion_tokens", "seconds")


def _drawn(table: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    return table[[c for c in columns if c in table.columns]]


def attribution_figures(ev: Any, run_dir: str | Path, *, cache: FigureCache | None = None) -> list[Figure]:
    """Draw every plot of an attribution run into its folder.

    Parameters
    ----------
    ev : ``agentcausal.attribution.evaluate.Evaluation``
    run_dir : the run folder (PNG files go straight into it)
    cache : figures kept by the columns they draw (:mod:`agentcausal.report.figure_cache`; :data:`LENGTH_DRAWN`,
        the step-error histogram, :data:`STAGE_DRAWN`); None: drawn

    Returns
    -------
    list of Figure: ``accuracy_by_length``, ``step_error``, ``stage_cost`` (``path`` None where a
    table was empty).
    """
    run = Path(run_dir)
    figs: list[Figure] = []
    bl = ev.by_length[ev.by_length["labelled"] > 0]
    add_figure(
        figs,
        "accuracy_by_length",
        "Step accuracy by trace length",
        text_bars(
            [f"{m} {b}" for m, b in zip(bl["method"], bl["length_bucket"])],
            list(100 * bl["step_acc"]),
            fmt="{:.0f}%",
            vmax=100.0,
        ),
        lambda p: accuracy_by_length_png(ev.by_length, p) if len(bl) else None,
        run,
        _drawn(ev.by_length, LENGTH_DRAWN),
        cache=cache,
    )
    h = ev.step_error_hist
    add_figure(
        figs,
        "step_error",
        "|predicted step − true step| (traces)",
        text_histograms({str(m): list(h.loc[m]) for m in h.index}, [str(c) for c in h.columns]),
        lambda p: step_error_png(h, p) if len(h) else None,
        run,
        h,
        cache=cache,
    )
    c = ev.cost_by_stage
    add_figure(
        figs,
        "stage_cost",
        "Tokens by stage (prompt + completion, run total)",
        text_bars(
            [f"{m} · {s}" for m, s in zip(c["method"], c["stage"])],
            list(c["prompt_tokens"] + c["completion_tokens"]),
            fmt="{:,.0f}",
        ),
        lambda p: stage_cost_png(c, p) if len(c) else None,
        run,
        _drawn(c, STAGE_DRAWN),
        cache=cache,
    )
    return figs


def discovery_figures(
    results: pd.DataFrame, stage_usage: pd.DataFrame, run_dir: str | Path, *, cache: FigureCache | None = None
) -> list[Figure]:
    """Draw every plot of a discovery run into its folder.

    Parameters
    ----------
    results : DataFrame from ``agentcausal.discovery.evaluate.outcomes_frame``
    stage_usage : tokens and seconds per (method, stage): :func:`discovery_stage_usage` (or :class:`StageUsage`)
    run_dir : the run folder
    cache : FigureCache or None: a plot drawn before from the same columns is copied, not drawn

    Returns
    -------
    list of Figure: ``shd``, ``stage_cost``.
    """
    run = Path(run_dir)
    figs: list[Figure] = []
    ok = results.dropna(subset=["shd"]) if "shd" in results else results
    mean = ok.groupby(["dataset", "method"], sort=False)["shd"].mean() if len(ok) else pd.Series(dtype=float)
    add_figure(
        figs,
        "shd",
        "SHD by dataset and method (mean over seeds; lower is better)",
        text_bars([f"{d} · {m}" for d, m in mean.index], list(mean), fmt="{:.1f}"),
        lambda p: shd_png(results, p) if len(ok) else None,
        run,
        _drawn(results, ("dataset", "method", "shd")),  # what shd_png reads
        cache=cache,
    )
    c = stage_usage
    add_figure(
        figs,
        "stage_cost",
        "Seconds by stage (run total)",
        text_bars([f"{m} · {s}" for m, s in zip(c["method"], c["stage"])], list(c["seconds"]), fmt="{:.1f} s"),
        lambda p: stage_cost_png(c, p) if len(c) else None,
        run,
        _drawn(c, STAGE_DRAWN),
        cache=cache,
    )
    return figs


def figures_markdown(figs: Sequence[Figure], *, html_name: str | None = "report.html") -> str:
    """A ``## Plots`` markdown section: each figure as a text chart plus a link to its PNG.

    Parameters
    ----------
    figs : sequence of Figure
    html_name : the standalone HTML report beside it (linked at the top), or None

    Returns
    -------
    str, markdown starting with a blank line.
    """
    lines = ["", "## Plots", ""]
    if html_name:
        lines += [f"The PNG files sit in the run folder; [{html_name}]({html_name}) shows them with the tables.", ""]
    for f in figs:
        lines += [f"### {f.title}", "", "```text", f.text, "```", ""]
        if f.path is not None:
            lines += [f"PNG: [{f.path.name}]({f.path.name})", ""]
    return "\n".join(lines)
