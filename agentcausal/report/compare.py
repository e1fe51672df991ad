"""Compare two run folders: per method, the metrics side by side with paired tests on the shared items.

Attribution runs (``results.parquet`` of the ``attribute`` flow): items are
(trace, seed, repeat) — ``seed`` / ``repeat`` / ``sample`` columns are used
when both runs have them. Per method and metric (step, agent, both correct;
labelled traces only; failed and undetermined answers count as wrong, as in
the evaluation) the accuracies of A and B, their difference, and the exact
McNemar test on the discordant pairs: with b items right in A only and c
right in B only, p = the two-sided binomial test of b successes in b + c
trials at 1/2 (p = 1 when b + c = 0). The traces whose verdict flipped are
listed.

Discovery runs (``outcomes.jsonl``): items are (dataset, seed, repeat). Per
method and metric (the run tables' columns,
:data:`~agentcausal.discovery.graphs.metrics.METRIC_COLUMNS`: SHD, SHD₂, NHD, F1,
skeleton F1) the means of A and B, the mean
difference, and the Wilcoxon signed-rank test on the paired values
(``scipy.stats.wilcoxon``, two-sided, zero differences dropped; p = 1 when
every difference is 0). Items whose SHD changed are listed.

Without labels (:mod:`agentcausal.report.agreement`): a "what differs" table
(preset, per-method settings, models, corpus, routing from both ``run.json``
files, traces only one run has, prompt versions); per method the agreement of the
two runs' blamed steps (share of shared traces blaming the same step, with n, a
bootstrap interval, the agreement expected by chance from each trace's step
count, and κ); the same between the methods of each run; and the traces whose
blamed step changed, linked to their sections of each run's ``report.html``. The
accuracy tests above are shown only when some shared trace is labelled.

Cost: per method, mean tokens (prompt + completion) and seconds per shared item,
each both "this run" (what the run spent: 0 for a reused item, from the
``run_*`` columns) and "original" (what the item cost when it was computed).

Same id, different content: items are paired by id, so an edited trace (or a
dataset sampled differently) keeps its id with a different content hash
(``trace_hash`` of ``results.parquet``: :meth:`Trace.content_hash`; ``data_hash``
of a discovery outcome). Such pairs are still compared (the user may want the
edit's effect) but counted and listed (``content_differs``), named in the intro
and warned about by the CLI.

Unpaired: methods present in only one run, and items of a shared method
present in only one run, are listed (never silently dropped).

The pages (``compare.md``, ``compare.html``) are :mod:`agentcausal.report.compare_pages`'s.

References
----------
McNemar, Q. "Note on the sampling error of the difference between correlated proportions or percentages."
Psychometrika 12, 1947. doi:10.1007/BF02295996. Wilcoxon, F. "Individual comparisons by ranking methods."
Biometrics Bulletin 1(6), 1945. doi:10.2307/3001968.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple

import pandas as pd

from agentcausal.attribution.results import load_results
from agentcausal.discovery.graphs.metrics import METRIC_COLUMNS
from agentcausal.exceptions import CompareError
from agentcausal.report.agreement import (
    blame_changes,
    method_agreement,
    run_agreement,
    run_differences,
    with_repeat,
)
from agentcausal.report.discovery_load import load_scored
from agentcausal.runs.folder import load_run_meta

__all__ = ["Comparison", "compare_runs", "load_run_frame", "mcnemar_exact", "wilcoxon_paired", "run_kind", "frame_rows"]

RunKind = Literal["attribution", "discovery"]

_ATTR_METRICS = {"step_correct": "step accuracy", "agent_correct": "agent accuracy", "both_correct": "both correct"}
_DISC_METRICS = dict(METRIC_COLUMNS)  # the one convention of every discovery table
_REPEAT_COLS = ("seed", "repeat", "sample")


class Comparison(NamedTuple):
    """The comparison of run A with run B.

    Attributes
    ----------
    kind : ``"attribution"`` or ``"discovery"``
    run_a, run_b : Path
    keys : the columns pairing items (e.g. ``["trace_id"]`` or ``["dataset", "seed"]``)
    shared : int, items (over all methods) present in both runs
    metrics : per (method, metric): n (paired items), a, b (accuracy as a fraction, or mean), diff (b − a),
        test (``McNemar exact`` / ``Wilcoxon``), a_only / b_only (McNemar's discordant counts:
        right in A only / in B only; NaN for Wilcoxon), p_value
    flipped : per changed item: method, item key columns, metric, a, b
    cost : per method: n, a_reused, b_reused (items reused from an earlier run), then means per item of
        a_tokens, b_tokens, diff_tokens, a_seconds, b_seconds, diff_seconds (original cost: what the item
        cost when computed) and a_run_tokens, b_run_tokens, a_run_seconds, b_run_seconds (this run's cost:
        0 for a reused item)
    unpaired : per (method, run) with items in only one run: method, only_in (``"A"`` / ``"B"``),
        items (count), whole_method (the other run lacks the method), which (the item keys, first 10)
    content_differs : per paired item (over all methods) whose content hash differs between the runs:
        the item key columns, a_hash, b_hash (full sha256 / joblib hash); empty when every pair has the same
        content or a run predates content hashes
    differs : what differs between the runs (:func:`~agentcausal.report.agreement.run_differences`): what,
        key, A, B
    agreement : attribution: per method, the agreement of A's and B's blamed steps
        (:func:`~agentcausal.report.agreement.run_agreement`)
    method_agreement : attribution: per run (``A``/``B``) and pair of its methods, the same
    blame_changed : attribution: per method and item whose blamed step differs: the steps, agents and
        confidences of A and B (:func:`~agentcausal.report.agreement.blame_changes`)
    """

    kind: RunKind
    run_a: Path
    run_b: Path
    keys: list[str]
    shared: int
    metrics: pd.DataFrame
    flipped: pd.DataFrame
    cost: pd.DataFrame
    unpaired: pd.DataFrame = pd.DataFrame(columns=["method", "only_in", "items", "whole_method", "which"])
    content_differs: pd.DataFrame = pd.DataFrame(columns=["a_hash", "b_hash"])
    differs: pd.DataFrame = pd.DataFrame(columns=["what", "key", "A", "B"])
    agreement: pd.DataFrame = pd.DataFrame()
    method_agreement: pd.DataFrame = pd.DataFrame()
    blame_changed: pd.DataFrame = pd.DataFrame()

    def content_warning(self) -> str | None:
        """One line when some pairs differ in content (``N pairs differ in content …``), else None."""
        n = len(self.content_differs)
        if not n:
            return None
        names = [" ".join(str(r[k]) for k in self.keys) for _, r in self.content_differs.iterrows()]
        shown = ", ".join(names[:5]) + (f" … (+{n - 5})" if n > 5 else "")
        return (
            f"{n} pair{'s' if n != 1 else ''} differ{'s' if n == 1 else ''} in content (same id, different "
            f"content hash; paired anyway): {shown}"
        )


_HASH_COL = {"attribution": "trace_hash", "discovery": "data_hash"}


def frame_rows(df: pd.DataFrame, *, index: bool = False) -> Iterator[Any]:
    """``df.itertuples(index=index)``: one named tuple per row, an attribute per column (typed Any: the
    columns are known at run time)."""
    return df.itertuples(index=index)


def _content_differs(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], hcol: str) -> pd.DataFrame:
    """The paired items (unique keys) whose content hash differs; items without a hash (older runs) are skipped."""
    cols = keys + ["a_hash", "b_hash"]
    if hcol not in a.columns or hcol not in b.columns:
        return pd.DataFrame(columns=cols)
    ha = a[keys + [hcol]].drop_duplicates(keys).rename(columns={hcol: "a_hash"})
    hb = b[keys + [hcol]].drop_duplicates(keys).rename(columns={hcol: "b_hash"})
    m = ha.merge(hb, on=keys)
    known = m["a_hash"].fillna("").astype(str).ne("") & m["b_hash"].fillna("").astype(str).ne("")
    return m[known & (m["a_hash"] != m["b_hash"])][cols].reset_index(drop=True)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts.

    Parameters
    ----------
    a_only : int, items right in A and wrong in B
    b_only : int, items wrong in A and right in B

    Returns
    -------
    float in [0, 1]; 1.0 when there are no discordant pairs.

    Examples
    --------
    >>> mcnemar_exact(3, 0)
    0.25
    """
    from scipy.stats import binomtest

    n = int(a_only) + int(b_only)
    if n == 0:
        return 1.0
    return float(binomtest(int(a_only), n, 0.5, alternative="two-sided").pvalue)


def wilcoxon_paired(a: list[float], b: list[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired values (zero differences dropped).

    Returns
    -------
    float; 1.0 when every difference is zero; NaN with no pairs.
    """
    from scipy.stats import wilcoxon

    d = [y - x for x, y in zip(a, b) if pd.notna(x) and pd.notna(y)]
    if not d:
        return float("nan")
    if all(v == 0 for v in d):
        return 1.0
    return float(wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)


def _a(word: str) -> str:
    """``word`` with its indefinite article: "an attribution", "a discovery"."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def run_kind(run_dir: str | Path) -> RunKind:
    """``"discovery"`` when the folder has ``outcomes.jsonl``, ``"attribution"`` when it has ``results.parquet``.

    Raises
    ------
    CompareError
        If it has neither.
    """
    d = Path(run_dir)
    if (d / "outcomes.jsonl").is_file():
        return "discovery"
    if (d / "results.parquet").is_file():
        return "attribution"
    raise CompareError(f"{d} is not a run folder (no results.parquet or outcomes.jsonl)", run_a=str(d), run_b="")


def load_run_frame(run_dir: Path, kind: RunKind) -> pd.DataFrame:
    """One run's scored frame with its cost columns: ``tokens`` and ``run_tokens`` (prompt + completion,
    original and this run's: 0 for a reused row), ``run_seconds`` and a boolean ``reused``."""
    if kind == "attribution":
        df = load_results(run_dir)
    else:
        df = load_scored(run_dir)
    reused = df["reused"].fillna(False).astype(bool) if "reused" in df else pd.Series(False, index=df.index)
    tokens = df["prompt_tokens"].fillna(0) + df["completion_tokens"].fillna(0)
    if "run_prompt_tokens" in df and "run_completion_tokens" in df:
        run_tokens = df["run_prompt_tokens"].fillna(0) + df["run_completion_tokens"].fillna(0)
    else:  # older run folders: only the reused flag tells this run's cost
        run_tokens = tokens.where(~reused, 0)
    return df.assign(tokens=tokens, run_tokens=run_tokens, reused=reused, run_seconds=df["seconds"].where(~reused, 0.0))


def _unpaired(a: pd.DataFrame, b: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per (method, run), the items present in only one of the two runs."""
    rows = []
    for side, this, other in (("A", a, b), ("B", b, a)):
        other_methods = set(other["method"])
        for method, g in this.groupby("method", sort=True):
            items = g[keys].drop_duplicates()
            whole = method not in other_methods
            if not whole:
                there = other.loc[other["method"] == method, keys].drop_duplicates()
                items = items.merge(there, on=keys, how="left", indicator=True)
                items = items[items["_merge"] == "left_only"][keys]
            if items.empty:
                continue
            names = [" ".join(str(v) for v in r) for r in items.itertuples(index=False)]
            rows.append(
                {
                    "method": method,
                    "only_in": side,
                    "items": len(items),
                    "whole_method": whole,
                    "which": ", ".join(names[:10]) + (f" … (+{len(names) - 10})" if len(names) > 10 else ""),
                }
            )
    return pd.DataFrame(rows, columns=["method", "only_in", "items", "whole_method", "which"])


def compare_runs(run_a: str | Path, run_b: str | Path) -> Comparison:
    """Compare two run folders of the same kind on their shared items.

    Parameters
    ----------
    run_a, run_b : run folders (both attribution or both discovery)

    Returns
    -------
    Comparison

    Raises
    ------
    CompareError
        If the runs are of different kinds or share no (method, item) pair.
    """
    a_dir, b_dir = Path(run_a), Path(run_b)
    kind = run_kind(a_dir)
    if run_kind(b_dir) != kind:
        raise CompareError(
            f"cannot compare {_a(kind)} run ({a_dir}) with {_a(run_kind(b_dir))} run ({b_dir})",
            run_a=str(a_dir),
            run_b=str(b_dir),
        )
    a, b = load_run_frame(a_dir, kind), load_run_frame(b_dir, kind)
    if kind == "attribution":  # repeats pair by their index (details_json), only when a run has repeats
        a, b = with_repeat(a), with_repeat(b)
        if not ((a["repeat"] > 0).any() or (b["repeat"] > 0).any()):
            a, b = a.drop(columns="repeat"), b.drop(columns="repeat")
    base = ["trace_id"] if kind == "attribution" else ["dataset"]
    keys = base + [c for c in _REPEAT_COLS if c in a.columns and c in b.columns]
    metrics = _ATTR_METRICS if kind == "attribution" else _DISC_METRICS
    cols = (
        keys
        + ["method", *metrics, "tokens", "seconds", "run_tokens", "run_seconds", "reused"]
        + (["true_step"] if kind == "attribution" else [])
    )
    m = a[cols].merge(b[[c for c in cols if c != "true_step"]], on=keys + ["method"], suffixes=("_a", "_b"))
    if m.empty:
        raise CompareError(
            f"{a_dir} and {b_dir} share no (method, {', '.join(keys)}) item; nothing to compare",
            run_a=str(a_dir),
            run_b=str(b_dir),
        )
    rows, flips, costs = [], [], []
    for method, g in m.groupby("method", sort=True):
        for col, name in metrics.items():
            if kind == "attribution":
                lab = g[g["true_step"].notna()]
                x = lab[f"{col}_a"].fillna(False).astype(bool)
                y = lab[f"{col}_b"].fillna(False).astype(bool)
                a_only, b_only = int((x & ~y).sum()), int((~x & y).sum())
                rows.append(
                    {
                        "method": method,
                        "metric": name,
                        "n": len(lab),
                        "a": float(x.mean()) if len(lab) else float("nan"),
                        "b": float(y.mean()) if len(lab) else float("nan"),
                        "diff": float(y.mean() - x.mean()) if len(lab) else float("nan"),
                        "test": "McNemar exact",
                        "a_only": a_only,
                        "b_only": b_only,
                        "p_value": mcnemar_exact(a_only, b_only) if len(lab) else float("nan"),
                    }
                )
                for r in frame_rows(lab[x != y]):
                    rec = r._asdict()
                    flips.append(
                        {
                            "method": method,
                            **{k: rec[k] for k in keys},
                            "metric": name,
                            "a": "right" if rec[f"{col}_a"] else "wrong",
                            "b": "right" if rec[f"{col}_b"] else "wrong",
                        }
                    )
            else:
                ok = g[g[f"{col}_a"].notna() & g[f"{col}_b"].notna()]
                rows.append(
                    {
                        "method": method,
                        "metric": name,
                        "n": len(ok),
                        "a": float(ok[f"{col}_a"].mean()) if len(ok) else float("nan"),
                        "b": float(ok[f"{col}_b"].mean()) if len(ok) else float("nan"),
                        "diff": float((ok[f"{col}_b"] - ok[f"{col}_a"]).mean()) if len(ok) else float("nan"),
                        "test": "Wilcoxon",
                        "a_only": float("nan"),
                        "b_only": float("nan"),
                        "p_value": wilcoxon_paired(list(ok[f"{col}_a"]), list(ok[f"{col}_b"])),
                    }
                )
                if col == "shd":
                    for r in frame_rows(ok[ok["shd_a"] != ok["shd_b"]]):
                        rec = r._asdict()
                        flips.append(
                            {
                                "method": method,
                                **{k: rec[k] for k in keys},
                                "metric": name,
                                "a": rec["shd_a"],
                                "b": rec["shd_b"],
                            }
                        )
        costs.append(
            {
                "method": method,
                "n": len(g),
                "a_reused": int(g["reused_a"].sum()),
                "b_reused": int(g["reused_b"].sum()),
                "a_tokens": float(g["tokens_a"].mean()),
                "b_tokens": float(g["tokens_b"].mean()),
                "diff_tokens": float(g["tokens_b"].mean() - g["tokens_a"].mean()),
                "a_seconds": float(g["seconds_a"].mean()),
                "b_seconds": float(g["seconds_b"].mean()),
                "diff_seconds": float(g["seconds_b"].mean() - g["seconds_a"].mean()),
                "a_run_tokens": float(g["run_tokens_a"].mean()),
                "b_run_tokens": float(g["run_tokens_b"].mean()),
                "a_run_seconds": float(g["run_seconds_a"].mean()),
                "b_run_seconds": float(g["run_seconds_b"].mean()),
            }
        )
    flipped = pd.DataFrame(flips, columns=["method", *keys, "metric", "a", "b"])
    paired = m[keys].drop_duplicates()
    differs = _content_differs(a.merge(paired, on=keys), b.merge(paired, on=keys), keys, _HASH_COL[kind])

    extra: dict[str, pd.DataFrame] = {
        "differs": run_differences(load_run_meta(a_dir), load_run_meta(b_dir), a, b, keys)
    }
    if kind == "attribution":
        extra.update(
            agreement=run_agreement(a, b, keys),
            blame_changed=blame_changes(a, b, keys),
            method_agreement=pd.concat(
                [method_agreement(a, keys, "A"), method_agreement(b, keys, "B")], ignore_index=True
            ),
        )
    return Comparison(
        kind,
        a_dir,
        b_dir,
        keys,
        len(paired),
        pd.DataFrame(rows),
        flipped,
        pd.DataFrame(costs),
        _unpaired(a, b, keys),
        differs,
        **extra,
    )
