"""Agreement of blamed steps without labels: between two runs, and between the methods of one run.

Unlabelled traces are the common case, so two runs (or two methods) are compared by
whether they blame the same step, not by accuracy:

* **agreement** p_o: the share of paired traces whose blamed 0-based steps are
  equal, over the pairs where both blamed a step (pairs where either is
  undetermined or failed are counted apart, never as agreeing), with n, the
  count k and a percentile bootstrap interval (pairs resampled with replacement,
  2,000 resamples, fixed seed, 95 %);
* **chance** p_e: the agreement expected if both picked a step uniformly at
  random, from each trace's step count: p_e = mean over the pairs of 1 / n_i;
* **κ** = (p_o − p_e) / (1 − p_e): chance-corrected agreement with chance from
  the uniform choice over each trace's own steps (the Brennan–Prediger form of
  Cohen's κ, with the number of categories per trace; a trace's steps are its
  categories, so there is no marginal distribution shared across traces to take
  chance from as Cohen's κ does); NaN when p_e = 1 (every trace one step), with
  the bootstrap interval of the same resamples.

:func:`run_differences` lists what differs between two runs' ``run.json``
(preset, per-method settings, models, corpus, routing) and their traces.

References
----------
Brennan, R. L. and Prediger, D. J. "Coefficient kappa: some uses, misuses, and alternatives."
Educational and Psychological Measurement 41(3), 1981. doi:10.1177/001316448104100307.
Cohen, J. "A coefficient of agreement for nominal scales." Educational and Psychological Measurement
20(1), 1960. doi:10.1177/001316446002000104. Efron, B. and Tibshirani, R. J. "An Introduction to the
Bootstrap." Chapman & Hall, 1993. doi:10.1201/9780429246593.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from agentcausal.repeats import repeat_of
from agentcausal.report.html import readable_value

__all__ = [
    "AgreementStats",
    "AGREEMENT_NOTE",
    "MIN_INTERVAL_N",
    "kappa_word",
    "agreement_stats",
    "blamed_pairs",
    "run_agreement",
    "method_agreement",
    "blame_changes",
    "run_differences",
    "with_repeat",
]

#: bootstrap resamples and seed (fixed: a report repeats exactly)
RESAMPLES, SEED, LEVEL = 2000, 0, 0.95

#: below this many pairs an interval is not drawn: the bootstrap of a handful of pairs is not meaningful
MIN_INTERVAL_N = 10

#: Landis and Koch's words for ranges of κ (upper bounds, inclusive)
_KAPPA_WORDS = ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial"))


def kappa_word(kappa: float) -> str:
    """Landis and Koch's word for a κ: poor (< 0), slight (0–0.20), fair, moderate, substantial, almost perfect
    (0.81–1); ``""`` for NaN.

    References
    ----------
    Landis, J. R. and Koch, G. G. "The measurement of observer agreement for categorical data." Biometrics 33(1),
    1977. doi:10.2307/2529310.

    >>> kappa_word(0.05), kappa_word(0.55), kappa_word(0.9), kappa_word(-0.1), kappa_word(float("nan"))
    ('slight', 'moderate', 'almost perfect', 'poor', '')
    """
    if kappa != kappa:
        return ""
    if kappa < 0:
        return "poor"
    return next((w for hi, w in _KAPPA_WORDS[1:] if kappa <= hi), "almost perfect")


#: how the agreement tables are computed (printed above them)
AGREEMENT_NOTE = (
    "agreement: share of paired traces whose blamed 0-based step is the same, over the pairs where both blamed a "
    f"step (k/n), with a {int(LEVEL * 100)}% percentile bootstrap interval ({RESAMPLES:,} resamples of the pairs); "
    "not compared: pairs where either was undetermined or failed. chance: the agreement expected if both picked "
    "a step at random, mean of 1/(steps of the trace). κ = (agreement − chance) / (1 − chance) "
    "(Brennan–Prediger form: chance from each trace's own step count), with Landis and Koch's word for its range "
    f"(slight 0–0.20, fair, moderate, substantial, almost perfect 0.81–1). With fewer than {MIN_INTERVAL_N} pairs "
    "no interval is drawn: it would not be meaningful."
)


class AgreementStats(NamedTuple):
    """Agreement of two blamed-step columns over paired traces (module docstring).

    Attributes
    ----------
    n : int, pairs where both blamed a step
    k : int, of those, pairs blaming the same step
    agreement : float, k / n (NaN when n = 0)
    low, high : float, bootstrap interval of the agreement
    chance : float, mean of 1 / n_steps over the n pairs
    kappa : float, (agreement − chance) / (1 − chance); NaN when chance = 1 or n = 0
    kappa_low, kappa_high : float, bootstrap interval of κ
    not_compared : int, pairs where either side has no step
    """

    n: int
    k: int
    agreement: float
    low: float
    high: float
    chance: float
    kappa: float
    kappa_low: float
    kappa_high: float
    not_compared: int


def _kappa(po: np.ndarray | float, pe: np.ndarray | float) -> np.ndarray | float:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isclose(pe, 1.0), np.nan, (np.asarray(po) - pe) / (1.0 - np.asarray(pe)))


def agreement_stats(
    a: Iterable[Any],
    b: Iterable[Any],
    n_steps: Iterable[int],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> AgreementStats:
    """Agreement, chance agreement and κ of two blamed-step sequences over the same traces.

    Parameters
    ----------
    a, b : blamed 0-based steps per pair (None / NaN: no step)
    n_steps : steps of each pair's trace (>= 1)
    resamples, seed, level : the bootstrap

    Returns
    -------
    AgreementStats

    Examples
    --------
    >>> s = agreement_stats([1, 2, 3, None], [1, 2, 0, 4], [4, 4, 4, 4])
    >>> (s.n, s.k, s.agreement, s.chance, round(s.kappa, 3), s.not_compared)
    (3, 2, 0.6666666666666666, 0.25, 0.556, 1)
    """

    def step(v: Any) -> float:
        return float("nan") if v is None or v is pd.NA or (isinstance(v, float) and v != v) else float(v)

    x = np.array([step(v) for v in a], dtype=float)
    y = np.array([step(v) for v in b], dtype=float)
    n_i = np.array([max(int(v), 1) for v in n_steps], dtype=float)
    ok = ~np.isnan(x) & ~np.isnan(y)
    same, pe_i = (x[ok] == y[ok]).astype(float), 1.0 / n_i[ok]
    n = int(ok.sum())
    if n == 0:
        nan = float("nan")
        return AgreementStats(0, 0, nan, nan, nan, nan, nan, nan, nan, int((~ok).sum()))
    po, pe = float(same.mean()), float(pe_i.mean())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    po_b, pe_b = same[idx].mean(axis=1), pe_i[idx].mean(axis=1)
    k_b = _kappa(po_b, pe_b)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(po_b, [tail, 100 - tail])
    if np.isnan(k_b).all():
        klo = khi = float("nan")
    else:
        klo, khi = np.nanpercentile(k_b, [tail, 100 - tail])
    return AgreementStats(
        n,
        int(same.sum()),
        po,
        float(lo),
        float(hi),
        pe,
        float(_kappa(po, pe)),
        float(klo),
        float(khi),
        int((~ok).sum()),
    )


def with_repeat(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``repeat`` column (the repeat index in ``details_json``, 0 when none) when it has none."""
    if "repeat" in df.columns:
        return df

    def rep(blob: Any) -> int:
        try:
            d = json.loads(blob) if isinstance(blob, str) else {}
        except ValueError:
            d = {}
        return repeat_of(d if isinstance(d, dict) else {})

    return df.assign(repeat=[rep(b) for b in df["details_json"]] if "details_json" in df else 0)


def blamed_pairs(a: pd.DataFrame, b: pd.DataFrame, on: Sequence[str]) -> pd.DataFrame:
    """Rows of ``a`` and ``b`` paired on ``on``: pred_step, pred_agent, confidence of each (``_a``, ``_b``),
    and n_steps (from ``a``)."""
    cols = [c for c in ("pred_step", "pred_agent", "confidence", "n_steps", "error") if c in a.columns]
    left = a[list(on) + cols]
    right = b[list(on) + [c for c in cols if c in b.columns and c != "n_steps"]]
    return left.merge(right, on=list(on), suffixes=("_a", "_b"))


def _row(stats: AgreementStats) -> dict[str, Any]:
    return stats._asdict()


def run_agreement(a: pd.DataFrame, b: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per method run in both, the agreement of the two runs' blamed steps over the shared items.

    Parameters
    ----------
    a, b : results frames of runs A and B
    keys : item key columns (``["trace_id"]``, plus a repeat column where both have one)

    Returns
    -------
    DataFrame: method, then the :class:`AgreementStats` fields.
    """
    rows = []
    for method in sorted(set(a["method"]) & set(b["method"])):
        p = blamed_pairs(a[a["method"] == method], b[b["method"] == method], keys)
        if p.empty:
            continue
        rows.append({"method": method, **_row(agreement_stats(p["pred_step_a"], p["pred_step_b"], p["n_steps"]))})
    return pd.DataFrame(rows, columns=["method", *AgreementStats._fields])


def method_agreement(df: pd.DataFrame, keys: Sequence[str], run: str = "") -> pd.DataFrame:
    """Per pair of methods of one run, the agreement of their blamed steps over the traces both ran.

    Returns
    -------
    DataFrame: run, method_a, method_b, then the :class:`AgreementStats` fields (empty with one method).
    """
    rows = []
    methods = sorted(set(df["method"]))
    for m1, m2 in itertools.combinations(methods, 2):
        p = blamed_pairs(df[df["method"] == m1], df[df["method"] == m2], keys)
        if p.empty:
            continue
        rows.append(
            {
                "run": run,
                "method_a": m1,
                "method_b": m2,
                **_row(agreement_stats(p["pred_step_a"], p["pred_step_b"], p["n_steps"])),
            }
        )
    return pd.DataFrame(rows, columns=["run", "method_a", "method_b", *AgreementStats._fields])


def blame_changes(a: pd.DataFrame, b: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The paired items whose blamed step differs between the runs (one of them without a step included).

    Returns
    -------
    DataFrame: method, *keys, step_a, agent_a, step_b, agent_b, confidence_a, confidence_b (NaN where none).
    """
    cols = ["method", *keys, "step_a", "agent_a", "step_b", "agent_b", "confidence_a", "confidence_b"]
    rows = []
    for method in sorted(set(a["method"]) & set(b["method"])):
        p = blamed_pairs(a[a["method"] == method], b[b["method"] == method], keys)
        for r in p.to_dict(orient="records"):
            sa, sb = r["pred_step_a"], r["pred_step_b"]
            na, nb = pd.isna(sa), pd.isna(sb)
            if (na and nb) or (not na and not nb and int(sa) == int(sb)):
                continue
            rows.append(
                {
                    "method": method,
                    **{k: r[k] for k in keys},
                    "step_a": None if na else int(sa),
                    "agent_a": None if pd.isna(r.get("pred_agent_a")) else r.get("pred_agent_a"),
                    "step_b": None if nb else int(sb),
                    "agent_b": None if pd.isna(r.get("pred_agent_b")) else r.get("pred_agent_b"),
                    "confidence_a": r.get("confidence_a", float("nan")),
                    "confidence_b": r.get("confidence_b", float("nan")),
                }
            )
    out = pd.DataFrame(rows, columns=cols)
    for c in ("step_a", "step_b"):
        out[c] = out[c].astype("Int64")
    return out


#: run.json keys that differ between any two runs by nature (time, the plan's item paths) and are not compared
_VOLATILE = {"started", "wall_seconds", "plan", "name", "run_dir", "skipped", "speaker_mismatch"}
#: what each run.json key is, for the "what differs" header
_KIND = {
    "preset": "preset",
    "methods": "settings",
    "config": "settings",
    "models": "models",
    "model": "models",
    "corpus": "corpus",
    "datasets": "corpus",
    "traces": "corpus",
    "routing": "routing",
    "profiles": "routing",
    "repeats": "run",
    "seeds": "run",
}


def _comparable(meta: Mapping[str, Any]) -> dict[str, Any]:
    """``run.json`` with an imported corpus named by its source files (path and sha256), not by the
    ``traces.jsonl`` that each run folder holds a copy of."""
    out = dict(meta)
    plan = meta.get("plan")
    sources = plan.get("sources") if isinstance(plan, Mapping) else None
    if sources:
        out["corpus"] = [
            f"{s.get('path')} ({s.get('format')}, sha256 {str(s.get('sha256', ''))[:12]})"
            for s in sources
            if isinstance(s, Mapping)
        ]
    return out


def _flat(v: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(v, Mapping) and v:
        out: dict[str, Any] = {}
        for k, x in v.items():
            out.update(_flat(x, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: v}


def _text(v: Any, width: int = 90) -> str:
    s = "–" if v is _MISSING else readable_value(v)
    return s if len(s) <= width else s[: width - 1] + "…"


_MISSING = object()


def run_differences(
    meta_a: Mapping[str, Any],
    meta_b: Mapping[str, Any],
    a: pd.DataFrame | None = None,
    b: pd.DataFrame | None = None,
    keys: Sequence[str] = ("trace_id",),
) -> pd.DataFrame:
    """What differs between two runs: every ``run.json`` fact (nested settings flattened to ``method.field``)
    whose values differ, and, from the results, the traces only one run has and the prompt versions.

    Parameters
    ----------
    meta_a, meta_b : the runs' ``run.json``
    a, b : their results frames (optional: adds corpus and prompt-version rows)
    keys : item key columns

    Returns
    -------
    DataFrame: what (``preset``, ``settings``, ``models``, ``corpus``, ``routing``, ``run``), key, A, B
    (readable text, ``–`` where a run lacks the key); empty when nothing differs.
    """

    def facts(meta: Mapping[str, Any]) -> dict[str, Any]:
        return {
            k: v for top, val in _comparable(meta).items() if top not in _VOLATILE for k, v in _flat({top: val}).items()
        }

    fa, fb = facts(meta_a), facts(meta_b)
    rows = []
    for k in sorted(set(fa) | set(fb)):
        va, vb = fa.get(k, _MISSING), fb.get(k, _MISSING)
        if va == vb:
            continue
        top, _, rest = k.partition(".")
        what = _KIND.get(top, "run")
        shown = rest if top in ("methods", "models", "config") and rest else k  # "dcfa.prompts", not "methods.…"
        rows.append({"what": what, "key": shown, "A": _text(va), "B": _text(vb)})
    if a is not None and b is not None:
        ia = {tuple(r) for r in a[list(keys)].astype(str).itertuples(index=False)}
        ib = {tuple(r) for r in b[list(keys)].astype(str).itertuples(index=False)}
        if ia != ib:
            rows.append(
                {
                    "what": "corpus",
                    "key": "items",
                    "A": f"{len(ia)} ({len(ia - ib)} only in A)",
                    "B": f"{len(ib)} ({len(ib - ia)} only in B)",
                }
            )
        if "prompt_version" in a and "prompt_version" in b:
            pa = a.groupby("method")["prompt_version"].first().to_dict()
            pb = b.groupby("method")["prompt_version"].first().to_dict()
            for m in sorted(set(pa) & set(pb), key=str):  # method names
                if pa[m] != pb[m]:
                    rows.append({"what": "settings", "key": f"{m}.prompt_version", "A": str(pa[m]), "B": str(pb[m])})
    order = {w: i for i, w in enumerate(("preset", "settings", "models", "corpus", "routing", "run"))}
    out = pd.DataFrame(rows, columns=["what", "key", "A", "B"])
    return out.sort_values(
        ["what", "key"], key=lambda s: s.map(order) if s.name == "what" else s, kind="stable"
    ).reset_index(drop=True)
