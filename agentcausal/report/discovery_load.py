"""The scored frame of a discovery run folder (``results.parquet``), read back for reports and comparisons."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from agentcausal.exceptions import RunFileError

__all__ = ["load_scored"]


def load_scored(run_dir: str | Path) -> pd.DataFrame:
    """The scored frame of a discovery run folder (``results.parquet``, written by the run or by
    :func:`agentcausal.discovery.evaluate.score_run`).

    Parameters
    ----------
    run_dir : discovery run folder

    Returns
    -------
    DataFrame, one row per (dataset, seed, method) (:func:`agentcausal.discovery.evaluate.outcomes_frame`).

    Raises
    ------
    RunFileError
        If the file is missing or unreadable.
    """
    p = Path(run_dir) / "results.parquet"
    if not p.is_file():
        raise RunFileError(
            "no results.parquet here: the outcomes are not scored "
            "(`agentcausal discover --report RUN_DIR` scores them)",
            path=str(p),
        )
    try:
        return pd.read_parquet(p)
    except Exception as exc:  # pyarrow raises several types for a torn or empty file
        raise RunFileError(f"not a readable Parquet file (torn or empty?): {type(exc).__name__}", path=str(p)) from exc
