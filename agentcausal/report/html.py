"""The standalone ``report.html`` of a run: title, facts, the PNG plots embedded, then the tables.

One self-contained file (images as base64 data URIs, no scripts, no
network), so it can be mailed or attached to a ticket. Table cells and
facts are HTML-escaped: trace text and LLM replies never become markup.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from agentcausal.report.plots import Figure

__all__ = ["html_report", "write_html_report", "attribution_tables"]

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 7px}
th{background:#f3f3f3}td{text-align:right}td:first-child{text-align:left}img{max-width:100%}
figure{margin:1em 0 2em}figcaption{font-weight:600;margin-bottom:.3em}ul.meta{font-size:14px}"""


def _table(df: pd.DataFrame) -> str:
    if df is None or df.empty:
        return "<p>(none)</p>"
    fmt = df.copy()
    for c in fmt.columns:
        if c in ("step_acc", "agent_acc", "both_acc"):
            fmt[c] = fmt[c].map(lambda v: "–" if pd.isna(v) else f"{100 * float(v):.1f}%")
    return fmt.to_html(index=False, escape=True, na_rep="–", float_format=lambda v: f"{v:,.3g}", border=0)


def html_report(title: str, meta: Mapping[str, object], figures: Sequence[Figure],
                tables: Sequence[tuple[str, pd.DataFrame]]) -> str:
    """The HTML text of a standalone report.

    Parameters
    ----------
    title : str
    meta : facts shown as a list under the title (corpus, methods, routing, run folder ...)
    figures : Figure records; those with a PNG are embedded (base64), the others skipped
    tables : (heading, DataFrame) pairs shown after the plots

    Returns
    -------
    str, a complete HTML document.
    """
    e = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'>", f"<title>{e(title)}</title>",
             f"<style>{_CSS}</style></head><body>", f"<h1>{e(title)}</h1>", "<ul class='meta'>"]
    parts += [f"<li><b>{e(str(k))}</b>: {e(str(v))}</li>" for k, v in meta.items()]
    parts.append("</ul><h2>Plots</h2>")
    for f in figures:
        if f.path is None or not Path(f.path).is_file():
            continue
        data = base64.b64encode(Path(f.path).read_bytes()).decode()
        parts.append(f"<figure><figcaption>{e(f.title)}</figcaption>"
                     f"<img alt='{e(f.title)}' src='data:image/png;base64,{data}'></figure>")
    for heading, df in tables:
        parts += [f"<h2>{e(heading)}</h2>", _table(df)]
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html_report(path: str | Path, title: str, meta: Mapping[str, object], figures: Sequence[Figure],
                      tables: Sequence[tuple[str, pd.DataFrame]]) -> Path:
    """Write :func:`html_report` to ``path``.

    Parameters
    ----------
    path : output file (``<run folder>/report.html``)
    title, meta, figures, tables : as in :func:`html_report`

    Returns
    -------
    Path of the file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_report(title, meta, figures, tables), encoding="utf-8")
    return path


def attribution_tables(ev: object) -> list[tuple[str, pd.DataFrame]]:
    """The tables of an attribution :class:`~agentcausal.attribution.evaluate.Evaluation`, in report order.

    Parameters
    ----------
    ev : Evaluation

    Returns
    -------
    list of (heading, DataFrame).
    """
    return [("Accuracy", ev.overall), ("Per subset", ev.by_subset), ("Per trace length (steps)", ev.by_length),
            ("|predicted step − true step|", ev.step_error_hist.reset_index()),
            ("Cost per trace (means)", ev.cost_per_trace), ("Cost per stage", ev.cost_by_stage),
            (f"Failed traces ({len(ev.failures)})", ev.failures)]
