"""Figures kept by the tables they draw: a report of unchanged tables copies the same PNG bytes without drawing,
a changed table draws again, and a bad record is a miss."""

import pytest

import agentcausal.report.plots as plots
from agentcausal.attribution.evaluate import evaluate_frame
from agentcausal.attribution.results import results_frame
from agentcausal.report.figure_cache import FigureCache
from agentcausal.traces.model import Attribution, Label, Step, Trace

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DRAWS = ("accuracy_by_length_png", "step_error_png", "stage_cost_png")


def _evaluation(tokens=300, reused=False):
    steps = [Step(index=k, agent=f"A{k % 2}", content=f"step {k}") for k in range(6)]
    t = Trace(id="x/0", question="q", ground_truth="a", label=Label(agent="A1", step=1), steps=steps)
    usage = {
        "baseline": {
            "calls": 1,
            "requests": 0 if reused else 1,
            "cache_hits": 1 if reused else 0,
            "prompt_tokens": tokens,
            "completion_tokens": 20,
            "seconds": 1,
        }
    }
    att = Attribution(trace_id="x/0", method="m", step=1, agent="A1", usage=usage, reused=reused)
    return evaluate_frame(results_frame([att], [t]))


def _no_drawing(monkeypatch):
    def forbidden(*a, **k):
        raise AssertionError("drawn although its tables did not change")

    for name in DRAWS:
        monkeypatch.setattr(plots, name, forbidden)


def test_unchanged_tables_copy_the_same_pngs_without_drawing(tmp_path, monkeypatch):
    cache = FigureCache(tmp_path / "figures")
    first = plots.attribution_figures(_evaluation(), tmp_path / "a", cache=cache)
    assert all(f.path is not None and f.path.read_bytes()[:8] == PNG_MAGIC for f in first)
    _no_drawing(monkeypatch)
    again = plots.attribution_figures(_evaluation(), tmp_path / "b", cache=cache)
    assert cache.reused == 3
    assert [f.path.read_bytes() for f in again] == [f.path.read_bytes() for f in first]
    assert [f.text for f in again] == [f.text for f in first]


def test_a_rerun_of_reused_rows_copies_the_pictures_it_would_draw(tmp_path, monkeypatch):
    # the tables' reused and request counts changed; the columns the figures draw did not
    cache = FigureCache(tmp_path / "figures")
    first = plots.attribution_figures(_evaluation(), tmp_path / "a", cache=cache)
    rerun = _evaluation(reused=True)
    assert rerun.by_length["reused"].sum() == 1 and rerun.cost_by_stage["requests"].sum() == 0
    _no_drawing(monkeypatch)
    again = plots.attribution_figures(rerun, tmp_path / "b", cache=cache)
    assert cache.reused == 3
    assert [f.path.read_bytes() for f in again] == [f.path.read_bytes() for f in first]


def test_a_changed_table_is_drawn_again(tmp_path, monkeypatch):
    cache = FigureCache(tmp_path / "figures")
    plots.attribution_figures(_evaluation(), tmp_path / "a", cache=cache)
    drawn = []
    real = plots.stage_cost_png

    def counting(cost, path):
        drawn.append(path)
        return real(cost, path)

    monkeypatch.setattr(plots, "stage_cost_png", counting)
    plots.attribution_figures(_evaluation(tokens=900), tmp_path / "b", cache=cache)
    assert drawn == [tmp_path / "b" / "stage_cost.png"] and cache.reused == 2


def test_a_bad_record_is_drawn_again(tmp_path):
    cache = FigureCache(tmp_path / "figures")
    first = plots.attribution_figures(_evaluation(), tmp_path / "a", cache=cache)
    for k in list(cache.store.iterkeys()):
        cache.store.set(k, {"png": 17})  # another shape: never copied
    again = plots.attribution_figures(_evaluation(), tmp_path / "b", cache=cache)
    assert cache.reused == 0
    assert [f.path.read_bytes() for f in again] == [f.path.read_bytes() for f in first]


@pytest.mark.parametrize("cached", [False, True])
def test_nothing_to_draw_stays_nothing(tmp_path, cached):
    t = Trace(id="y/0", question="q", ground_truth="a", steps=[Step(index=0, agent="A", content="c")])
    ev = evaluate_frame(results_frame([Attribution(trace_id="y/0", method="m", step=0, agent="A")], [t]))
    cache = FigureCache(tmp_path / "figures")
    if cached:
        plots.attribution_figures(ev, tmp_path / "a", cache=cache)
    by = {f.key: f for f in plots.attribution_figures(ev, tmp_path / "b", cache=cache)}
    assert by["accuracy_by_length"].path is None and not (tmp_path / "b" / "accuracy_by_length.png").exists()
