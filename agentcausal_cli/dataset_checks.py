"""The datasets of ``agentcausal discover``: ``--dataset`` values expanded (``main``, ``all``) and every one
checked before any work (benchmark names; user datasets read in full, as the flow will read them).

::

    agentcausal discover --dataset main --method statistical
    agentcausal discover --dataset mydata.csv --dataset bad.csv --method pc --skip-invalid
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentcausal.exceptions import DatasetError, InvalidDatasetsError

__all__ = ["expand_datasets", "check_datasets"]


def expand_datasets(datasets: list[str]) -> list[str]:
    """``--dataset`` values with ``main`` and ``all`` replaced by their benchmarks, each name once, in order."""
    # start-up cost (see discover.cmd_discover)
    from agentcausal.discovery.data.datasets import BENCHMARKS, MAIN_BENCHMARKS

    out: list[str] = []
    for d in datasets:
        for x in {"main": MAIN_BENCHMARKS, "all": BENCHMARKS}.get(d.lower(), (d,)):
            if x not in out:
                out.append(x)
    return out


def check_datasets(
    specs: list[str], *, skip_invalid: bool = False, loaded: dict[str, Any] | None = None
) -> tuple[list[str], list[dict[str, Any]]]:
    """Validate every dataset before any work: benchmark names, and each user dataset read in full.

    User datasets are loaded as the flow will load them (same names, same
    checks), so what passes here does not fail later for its data.

    Parameters
    ----------
    specs : dataset specs (benchmark names, ``.csv``/``.parquet`` paths, ``DATA::META``)
    skip_invalid : print the invalid user datasets and go on with the rest, instead of refusing
    loaded : a dict to fill with spec -> Dataset for the user datasets read here (so the plan reads none again)

    Returns
    -------
    (valid specs, skipped) where skipped holds ``{"dataset", "file", "column", "error"}`` records.

    Raises
    ------
    DatasetError
        On an unknown benchmark name, two specs naming one file, an invalid user
        dataset (without ``skip_invalid``; :class:`InvalidDatasetsError` lists each
        when several are), or when ``skip_invalid`` leaves no dataset.
    """
    from agentcausal.discovery.data.datasets import BENCHMARKS, load_spec  # start-up cost (see discover.cmd_discover)
    from agentcausal.discovery.data.user_data import missing_summary, unique_dataset_names  # (the same)

    for s in specs:
        user = "::" in s or Path(s).suffix.lower() in (".csv", ".parquet", ".pq")
        key = s.lower().replace("-", "_")
        if not user and key not in BENCHMARKS and key not in ("auto", "autompg"):
            raise DatasetError(
                f"unknown dataset; choose from {', '.join(BENCHMARKS)}, 'main', 'all', "
                "or a .csv/.parquet path (with its .json metadata beside it, or DATA::META)",
                name=s,
            )
    names = unique_dataset_names(specs)
    errors: dict[str, DatasetError] = {}
    for s in specs:
        if "::" in s or Path(s).suffix.lower() in (".csv", ".parquet", ".pq"):
            try:
                ds = load_spec(s, name=names[s])
            except DatasetError as exc:
                errors[s] = exc
                continue
            if loaded is not None:
                loaded[s] = ds
            if missing_summary(ds):  # rows dropped for a missing value (--drop-missing): said, and in run.json
                print(f"agentcausal: note: {missing_summary(ds)}", file=sys.stderr)
            if ds.true_graph is None:
                print(
                    f'agentcausal: note: {names[s]} has no true graph (no "true_edges" in its metadata): '
                    "SHD, NHD and F1 are shown as -",
                    file=sys.stderr,
                )
    if errors and not skip_invalid:
        raise next(iter(errors.values())) if len(errors) == 1 else InvalidDatasetsError(list(errors.values()))
    if errors:
        print(f"agentcausal: skipping {len(errors)} invalid dataset(s):", file=sys.stderr)
        for e in errors.values():
            print(f"  {e}", file=sys.stderr)
    valid = [s for s in specs if s not in errors]
    if not valid:
        raise DatasetError("no valid dataset to run", name=", ".join(specs))
    skipped = [{"dataset": s, "file": e.file, "column": e.column, "error": str(e)} for s, e in errors.items()]
    return valid, skipped
