"""What the README's main job runs: a fixed, CPU-sized selection of real inputs.

The selection is data, not code paths: :func:`demo_selection` returns a
:class:`DemoSelection` that the ``demo`` flow executes. Defaults (sized for CPUs: the
whole job took about 9 minutes on 2 idle cores with the embedded 0.5B model):

* traces: two of our invented examples in ``data/examples/`` (always present) plus
  the two shortest Algorithm-Generated traces of the Who&When development
  split, ``38.json`` and ``47.json`` (6 steps, 2.9k and 3.5k characters), when
  the benchmark folder is present;
* attribution methods: ``all_at_once``, ``step_by_step``, ``binary_search``, ``dcfa``;
* MAC (with the zero-shot LLM baseline and the five statistical algorithms
  beside it) on Earthquake and Asia; the statistical algorithms alone on
  Cancer, Survey, Child and Auto MPG; n = 1000 rows, seed 0.

``quick=True`` keeps two example traces, the two cheapest baselines and MAC on
Earthquake only: a smoke run of every stage in a few minutes.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentcausal.discovery.data.datasets import data_dir

__all__ = ["DemoSelection", "demo_selection", "DEMO_TRACE_FILES", "DEMO_EXAMPLES", "examples_dir"]

#: real Who&When traces of the demo, relative to the benchmark folder
DEMO_TRACE_FILES = ("Algorithm-Generated/38.json", "Algorithm-Generated/47.json")
#: our invented traces in the demo: a unit slip, and a misread tool output behind an injected instruction
DEMO_EXAMPLES = ("wrong_unit_at_step_2.json", "misread_tool_output_at_step_4.json")
ATTRIBUTION_METHODS = ("all_at_once", "step_by_step", "binary_search", "dcfa")
STATISTICAL = ("pc", "fci", "ges", "exact_search", "direct_lingam")


class DemoSelection(BaseModel):
    """Everything the demo flow runs.

    Attributes
    ----------
    trace_paths : trace files or folders for the ``attribute`` flow
    attribution_methods : registered attribution method names
    datasets : discovery datasets (every method in ``statistical_methods`` runs on each)
    statistical_methods : pool algorithms run on every dataset
    llm_methods, llm_datasets : MAC and the LLM baseline, on these datasets only
    seeds : sampling seeds; n : rows per bnlearn sample
    out_dir : the demo's run folder
    notes : what was left out and why (e.g. no Who&When folder)
    """

    model_config = ConfigDict(frozen=True)

    trace_paths: tuple[str, ...]
    attribution_methods: tuple[str, ...] = ATTRIBUTION_METHODS
    datasets: tuple[str, ...] = ("earthquake", "cancer", "survey", "asia", "child", "auto_mpg")
    statistical_methods: tuple[str, ...] = STATISTICAL
    llm_methods: tuple[str, ...] = ("mac", "llm_zero_shot")
    llm_datasets: tuple[str, ...] = ("earthquake", "asia")
    seeds: tuple[int, ...] = (0,)
    n: int = 1000
    out_dir: str
    notes: tuple[str, ...] = ()


def examples_dir() -> Path:
    """``data/examples`` (invented traces shipped with the project)."""
    return data_dir() / "examples"


def demo_selection(
    who_and_when_dir: str | Path,
    *,
    out_root: str | Path = "runs",
    quick: bool = False,
    out_dir: str | Path | None = None,
) -> DemoSelection:
    """The demo selection for this machine.

    Parameters
    ----------
    who_and_when_dir : the Who&When benchmark folder; real traces are used when it holds them
    out_root : where ``demo-<timestamp>`` goes (ignored when ``out_dir`` is given)
    quick : a smaller smoke selection (see module docstring)
    out_dir : explicit run folder

    Returns
    -------
    DemoSelection; ``notes`` says when the real traces were not found.
    """
    notes: list[str] = []
    examples = [str(examples_dir() / name) for name in DEMO_EXAMPLES]
    real = [Path(who_and_when_dir) / f for f in DEMO_TRACE_FILES]
    found = [str(p) for p in real if p.is_file()]
    if len(found) < len(real):
        notes.append(
            f"Who&When traces not found under {who_and_when_dir} (set AGENTCAUSAL_WHO_AND_WHEN_DIR or "
            "run `agentcausal data fetch who-and-when`); attributing the example traces only"
        )
    out = str(out_dir or Path(out_root) / f"demo-{dt.datetime.now():%Y%m%d-%H%M%S}")
    if quick:
        return DemoSelection(
            trace_paths=tuple(examples[:2]),
            attribution_methods=("all_at_once", "binary_search"),
            datasets=("earthquake", "asia"),
            statistical_methods=("pc", "ges"),
            llm_methods=("mac",),
            llm_datasets=("earthquake",),
            out_dir=out,
            notes=tuple(notes),
        )
    return DemoSelection(trace_paths=tuple(examples + found), out_dir=out, notes=tuple(notes))
