"""The standalone ``report.html`` of a run: title, run facts, tables first, then sections, plots and graphs.

One self-contained file (images as base64 data URIs, graphs as inline SVG,
one small inline script for sorting and filtering tables, no network), so it
can be mailed or attached to a ticket. Table cells and facts are
HTML-escaped: trace text and LLM replies never become markup. Numbers are
formatted for people (:func:`human_number`: ``1,740``, ``0.125``, never
``1.74e+03``).
"""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agentcausal.report.plots import Figure
from agentcausal.report.svg import SVG_CSS

__all__ = [
    "html_report",
    "write_html_report",
    "human_number",
    "html_table",
    "facts_table",
    "facts_markdown",
    "facts_line",
    "folded_facts",
    "readable_value",
    "page",
    "TABLE_SCRIPT",
]

_CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 7px;
vertical-align:top}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
img{max-width:100%}figure{margin:1em 0 2em}figcaption{font-weight:600;margin-bottom:.3em}
.scroll{overflow-x:auto;max-width:100%}table.sortable th{cursor:pointer}
table.sortable th:after{content:" ⇅";color:#aaa}
td.right{background:#e3f5e3}td.wrong{background:#fbe3e3}td.failed{background:#eee;color:#777}
tr.blamed td{background:#fff1c2}tr.truth td:first-child{border-left:4px solid #2a8f2a}
tr.blamed.truth td{background:#d8f0c8}span.badge{display:inline-block;background:#e34040;color:#fff;border-radius:3px;
padding:0 4px;margin:0 2px;font-size:11px}span.badge.true{background:#2a8f2a}td.content{white-space:pre-wrap;
max-width:720px;font-family:ui-monospace,monospace;font-size:12px}details summary{cursor:pointer}
.graphs{display:flex;flex-wrap:wrap;gap:1em}.graphs figure{margin:0;border:1px solid #eee;padding:.4em}
p.legend{font-size:12px}p.note{font-size:13px;color:#555}input.filter{margin:.3em 0;padding:3px;width:20em}
table.facts td{text-align:left}td.text{min-width:16em}details.facts{margin:.3em 0 1em;font-size:13px}
tr.blame td{background:#fffbea;font-size:12px}q{background:#fff1c2}mark{background:#ffd966}
span.note{color:#777;font-size:12px}td.id{word-break:break-all;max-width:11em;font-size:12px}
table#blamed td.text{min-width:10em;max-width:26em}"""

#: sorts a ``table.sortable`` by the clicked column (numbers numerically) and filters rows by the
#: ``input.filter`` whose ``data-table`` names the table's id (case-insensitive substring of the row text)
TABLE_SCRIPT = """document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',
function(){var t=th.closest('table'),b=t.tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th),
d=th.dataset.dir==='asc'?-1:1;th.dataset.dir=d>0?'asc':'desc';var r=Array.prototype.slice.call(b.rows);
function v(x){var c=x.cells[i];var s=c?(c.dataset.v!==undefined?c.dataset.v:c.textContent.trim()):'';
var n=parseFloat(s.replace(/,/g,''));return isNaN(n)||!/^[-+0-9.,%]+$/.test(s)?s.toLowerCase():n;}
r.sort(function(a,c){var x=v(a),y=v(c);if(typeof x!==typeof y){x=String(x);y=String(y);}
return x<y?-d:x>y?d:0;});r.forEach(function(x){b.appendChild(x);});});});
document.querySelectorAll('input.filter').forEach(function(inp){inp.addEventListener('input',function(){
var q=inp.value.toLowerCase(),t=document.getElementById(inp.dataset.table);
Array.prototype.forEach.call(t.tBodies[0].rows,function(r){r.style.display=
r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});});"""

_PCT = ("step_acc", "agent_acc", "both_acc")


def human_number(v: Any, *, digits: int = 3) -> str:
    """A number as people read it: thousands separators, no exponent, about ``digits`` significant digits.

    Parameters
    ----------
    v : int, float, bool, None or anything else (returned as ``str``)
    digits : int, significant digits for fractions below 1

    Returns
    -------
    str; ``–`` for None and NaN.

    Examples
    --------
    >>> human_number(1740.0), human_number(12.3456), human_number(0.0012345), human_number(3), human_number(None)
    ('1,740', '12.35', '0.00123', '3', '–')
    """
    if v is None or v is pd.NA:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int) or (hasattr(v, "dtype") and v.dtype.kind in "iu"):
        return f"{int(v):,}"
    if isinstance(v, float) or (hasattr(v, "dtype") and v.dtype.kind == "f"):
        f = float(v)
        if math.isnan(f):
            return "–"
        if f == int(f) and abs(f) < 1e15:
            return f"{int(f):,}"
        if abs(f) >= 100:
            return f"{f:,.0f}"
        if abs(f) >= 1:
            return f"{f:,.2f}"
        return f"{f:.{digits}g}" if abs(f) >= 1e-4 else f"{f:.2e}"
    return str(v)


def _cell(v: Any, col: str) -> tuple[str, str]:
    """(text, css class) of a table cell."""
    if type(v) is str and col not in _PCT:  # the common case of text tables: the text itself
        return v, ""
    if col in _PCT:
        try:
            return ("–" if v is None or pd.isna(v) else f"{100 * float(v):.1f}%"), "num"
        except (TypeError, ValueError):
            return str(v), ""
    if isinstance(v, (int, float)) and not isinstance(v, bool) or (hasattr(v, "dtype") and v.dtype.kind in "iuf"):
        return human_number(v), "num"
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "–", ""
    return str(v), ""


def html_table(
    df: pd.DataFrame | None,
    *,
    table_id: str | None = None,
    sortable: bool = False,
    filterable: bool = False,
    cell_html: Mapping[str, Any] | None = None,
) -> str:
    """A DataFrame as an HTML table with formatted, escaped cells.

    Parameters
    ----------
    df : DataFrame (its index is ignored; reset it first to show it)
    table_id : str, the table's id (needed for ``filterable``)
    sortable : bool, headers sort on click (:data:`TABLE_SCRIPT`)
    filterable : bool, a text box above the table filters its rows
    cell_html : column -> function(value, row) returning ``(html, css class)`` for cells that are
        markup (links, badges); the function must escape any text it includes

    Returns
    -------
    str; ``<p>(none)</p>`` for an empty or missing frame.
    """
    if df is None or df.empty:
        return "<p>(none)</p>"
    e = html.escape
    cell_html = cell_html or {}
    cols = [str(c) for c in df.columns]
    attrs = (f' id="{e(table_id)}"' if table_id else "") + (' class="sortable"' if sortable else "")
    out = []
    if filterable and table_id:
        out.append(f'<input class="filter" data-table="{e(table_id)}" placeholder="filter rows…" type="search">')
    out.append(
        f'<div class="scroll"><table{attrs}><thead><tr>'
        + "".join(f"<th>{e(c)}</th>" for c in cols)
        + "</tr></thead><tbody>"
    )
    for row in df.itertuples(index=False):
        rec = dict(zip(cols, row))
        cells = []
        for c in cols:
            if c in cell_html:
                h, cls = cell_html[c](rec[c], rec)
            else:
                t, cls = _cell(rec[c], c)
                h = e(t)
            cells.append(f'<td class="{cls}">{h}</td>' if cls else f"<td>{h}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _fact(v: Any) -> str:
    e = html.escape
    if isinstance(v, Mapping):
        if not v:
            return "–"
        if all(x in (None, "", {}, []) for x in v.values()):  # e.g. methods without settings: their names
            return e(", ".join(str(k) for k in v))
        return (
            "<table class='facts'>"
            + "".join(f"<tr><th>{e(str(k))}</th><td>{_fact(x)}</td></tr>" for k, x in v.items())
            + "</table>"
        )
    if isinstance(v, (list, tuple)):
        if all(not isinstance(x, (Mapping, list, tuple)) for x in v):
            return e(", ".join(human_number(x) if isinstance(x, (int, float)) else str(x) for x in v)) or "–"
        return "<br>".join(_fact(x) for x in v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return e(human_number(v))
    if isinstance(v, str) and v[:1] in "[{":
        try:
            return _fact(json.loads(v))
        except ValueError:
            pass
    return e(str(v))


def facts_table(meta: Mapping[str, Any]) -> str:
    """Run facts as a two-column table; lists as comma-separated text, mappings as nested tables.

    Parameters
    ----------
    meta : mapping of fact name -> value (JSON-like)

    Returns
    -------
    str, HTML.
    """
    if not meta:
        return ""
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{_fact(v)}</td></tr>" for k, v in meta.items())
    return f"<table class='facts'>{rows}</table>"


def readable_value(v: Any) -> str:
    """A JSON-like value as plain text (no Python reprs): lists comma-separated, mappings ``k = v; …``.

    ``None`` reads "none", an empty list or mapping "none", booleans "yes" / "no"; nested mappings are
    bracketed: ``mac = (rounds = 2; executor = coding)``.

    Returns
    -------
    str
    """
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, Mapping):
        if not v:
            return "none"
        return "; ".join(
            f"{k} = " + (f"({readable_value(x)})" if isinstance(x, Mapping) and x else readable_value(x))
            for k, x in v.items()
        )
    if isinstance(v, (list, tuple, set, frozenset)):
        return ", ".join(readable_value(x) for x in v) if v else "none"
    return str(v)


def facts_markdown(meta: Mapping[str, Any]) -> list[str]:
    """Run facts as markdown lines (the header of a ``report.md``), readable text rather than Python reprs.

    A scalar or list is one bullet (``- **corpus**: data/examples, more``); a mapping whose values include
    mappings (per-method settings, a run config) is a bullet followed by a two-column table, one row per
    key, its settings as ``name = value; …``; any other mapping is one bullet of ``key = value; …``.

    Parameters
    ----------
    meta : mapping of fact name -> value (JSON-like)

    Returns
    -------
    list of str (markdown lines, ending with a blank line when a table closes the list)
    """
    lines: list[str] = []
    for k, v in meta.items():
        if isinstance(v, Mapping) and any(isinstance(x, Mapping) for x in v.values()):
            lines += [f"- **{k}**:", "", f"  | {k} | settings |", "  |---|---|"]
            lines += [
                "  | " + str(name).replace("|", "\\|") + " | " + readable_value(x).replace("|", "\\|") + " |"
                for name, x in v.items()
            ]
            lines.append("")
        else:
            lines.append(f"- **{k}**: {readable_value(v)}")
    return lines


def _figures(figures: Sequence[Figure]) -> str:
    e = html.escape
    parts = []
    for f in figures:
        if f.path is None or not Path(f.path).is_file():
            continue
        data = base64.b64encode(Path(f.path).read_bytes()).decode()
        parts.append(
            f"<figure><figcaption>{e(f.title)}</figcaption>"
            f"<img alt='{e(f.title)}' src='data:image/png;base64,{data}'></figure>"
        )
    return "\n".join(parts)


def page(title: str, blocks: Sequence[str]) -> str:
    """A complete HTML document: the title, then ``blocks`` (HTML strings) in order, the table script last.

    Parameters
    ----------
    title : str (escaped)
    blocks : sequence of HTML fragments (already escaped)

    Returns
    -------
    str
    """
    e = html.escape
    return "\n".join(
        [
            "<!doctype html><html><head><meta charset='utf-8'>",
            f"<title>{e(title)}</title>",
            f"<style>{_CSS}\n{SVG_CSS}</style></head><body>",
            f"<h1>{e(title)}</h1>",
            *blocks,
            f"<script>{TABLE_SCRIPT}</script></body></html>",
        ]
    )


def facts_line(
    meta: Mapping[str, Any], keys: Sequence[str] = ("corpus", "methods", "routing", "preset", "traces", "run folder")
) -> str:
    """The few facts a reader needs first, on one line: ``corpus: …  ·  methods: …`` (HTML; ``""`` if none).

    A ``methods`` mapping (per-method settings) is shown by its names.
    """
    parts = []
    for k in keys:
        if k not in meta or meta[k] in (None, "", [], {}):
            continue
        v = meta[k]
        text = ", ".join(str(x) for x in v) if isinstance(v, Mapping) else readable_value(v)
        parts.append(f"<b>{html.escape(k)}</b>: {html.escape(text)}")
    return "<p class='note'>" + " &nbsp;·&nbsp; ".join(parts) + "</p>" if parts else ""


def folded_facts(meta: Mapping[str, Any], summary: str = "Run settings (methods, models, settings)") -> str:
    """:func:`facts_table` folded in a closed ``<details>`` block (``""`` without facts)."""
    table = facts_table(meta)
    return f"<details class='facts'><summary>{html.escape(summary)}</summary>{table}</details>" if table else ""


def html_report(
    title: str,
    meta: Mapping[str, object],
    figures: Sequence[Figure],
    tables: Sequence[tuple[str, pd.DataFrame]],
    *,
    sections: Sequence[str] = (),
    lead: Sequence[str] = (),
) -> str:
    """The HTML text of a standalone report: one line of facts, the settings folded, ``lead``, the tables, then
    ``sections``, then the plots.

    Parameters
    ----------
    title : str
    meta : facts (corpus, methods, routing, run folder ...): the main ones on one line
        (:func:`facts_line`), all of them as a table folded in a ``<details>`` block
    figures : Figure records; those with a PNG are embedded (base64), the others skipped
    tables : (heading, DataFrame) pairs shown after ``lead``
    sections : HTML fragments placed after the tables and before the plots
    lead : HTML fragments placed first, right under the facts (an attribution report's blamed steps)

    Returns
    -------
    str, a complete HTML document.
    """
    e = html.escape
    blocks = [facts_line(meta), folded_facts(meta), *lead]
    for heading, df in tables:
        blocks += [f"<h2>{e(heading)}</h2>", html_table(df)]
    blocks += list(sections)
    figs = _figures(figures)
    if figs:
        blocks += ["<h2>Plots</h2>", figs]
    return page(title, blocks)


def write_html_report(
    path: str | Path,
    title: str,
    meta: Mapping[str, object],
    figures: Sequence[Figure],
    tables: Sequence[tuple[str, pd.DataFrame]],
    *,
    sections: Sequence[str] = (),
    lead: Sequence[str] = (),
) -> Path:
    """Write :func:`html_report` to ``path``.

    Parameters
    ----------
    path : output file (``<run folder>/report.html``)
    title, meta, figures, tables, sections, lead : as in :func:`html_report`

    Returns
    -------
    Path of the file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_report(title, meta, figures, tables, sections=sections, lead=lead), encoding="utf-8")
    return path
