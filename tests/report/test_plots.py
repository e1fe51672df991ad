"""Run plots (PNG + text charts) and the standalone report.html, on small hand-made results."""

from types import SimpleNamespace

import pandas as pd
import pytest

from agentcausal.attribution.evaluate import evaluate_frame
from agentcausal.attribution.results import results_frame
from agentcausal.report.attribution import write_report
from agentcausal.report.html import html_report
from agentcausal.report.plots import (
    Figure,
    attribution_figures,
    discovery_figures,
    discovery_stage_usage,
    figures_markdown,
    shd_png,
    text_bars,
    text_histograms,
)
from agentcausal.traces.model import Attribution, Label, Step, Trace

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _trace(i: int, n_steps: int, culprit: int) -> Trace:
    steps = [Step(index=k, agent=f"A{k % 2}", content=f"step {k}") for k in range(n_steps)]
    return Trace(
        id=f"x/{i}", question="q", ground_truth="a", label=Label(agent=f"A{culprit % 2}", step=culprit), steps=steps
    )


@pytest.fixture
def short_and_long_traces_evaluation():
    """Two methods on a 4-step and a 15-step trace: one exact hit, one off by 3, one undetermined, one failure."""
    ts = [_trace(0, 4, 1), _trace(1, 15, 9)]
    usage = {"baseline": {"calls": 1, "requests": 1, "prompt_tokens": 300, "completion_tokens": 20, "seconds": 0.5}}
    atts = [
        Attribution(trace_id="x/0", method="m1", step=1, agent="A1", usage=usage),
        Attribution(trace_id="x/1", method="m1", step=6, agent="A0", usage=usage),
        Attribution(trace_id="x/0", method="m2", step=None, agent=None, usage=usage),
        Attribution(trace_id="x/1", method="m2", error="EndpointUnreachableError: down"),
    ]
    return evaluate_frame(results_frame(atts, ts))


def test_text_bars_scale_to_the_largest_value_and_show_nan():
    out = text_bars(["a", "b", "c"], [10.0, 5.0, float("nan")], width=10, fmt="{:.0f}").splitlines()
    assert out[0] == "a " + "█" * 10 + " 10"
    assert out[1].startswith("b " + "█" * 5 + " ") and out[1].endswith(" 5")
    assert out[2].rstrip().endswith("–") and "█" not in out[2]
    assert text_bars([], []) == "(no data)"


def test_text_bars_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="2 labels but 1 values"):
        text_bars(["a", "b"], [1.0])


def test_text_histograms_one_sparkline_per_row():
    out = text_histograms({"m1": [2, 0, 1], "m2": [0, 0, 2]}, ["0", "1", "none"]).splitlines()
    assert out[0].startswith("m1 █ ▄") and out[0].endswith("2 0 1")
    assert out[-1] == "bins: 0, 1, none"


def test_attribution_figures_draw_pngs_and_text(short_and_long_traces_evaluation, tmp_path):
    figs = attribution_figures(short_and_long_traces_evaluation, tmp_path)
    assert [f.key for f in figs] == ["accuracy_by_length", "step_error", "stage_cost"]
    for f in figs:
        assert f.path == tmp_path / f"{f.key}.png" and f.path.read_bytes()[:8] == PNG_MAGIC
    acc = figs[0].text
    assert "m1 1-10" in acc and "100%" in acc and "m1 11-30" in acc and "0%" in acc
    assert "m1" in figs[1].text and "bins: 0, 1, 2, 3, 4, >=5, none" in figs[1].text
    md = figures_markdown(figs)
    assert "## Plots" in md and "PNG: [step_error.png](step_error.png)" in md and "report.html" in md


def test_attribution_figures_on_unlabelled_run_skip_drawing(tmp_path):
    t = Trace(id="y/0", question="q", ground_truth="a", steps=[Step(index=0, agent="A", content="c")])
    ev = evaluate_frame(results_frame([Attribution(trace_id="y/0", method="m", step=0, agent="A")], [t]))
    figs = attribution_figures(ev, tmp_path)
    by = {f.key: f for f in figs}
    assert by["accuracy_by_length"].path is None and by["step_error"].path is None
    assert not (tmp_path / "accuracy_by_length.png").exists()


def test_write_report_adds_plots_and_standalone_html(short_and_long_traces_evaluation, tmp_path):
    md = write_report(short_and_long_traces_evaluation, tmp_path, meta={"corpus": "<script>x</script>"})
    assert "## Plots" in md.read_text()
    html = (tmp_path / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 3
    assert "<script>x</script>" not in html and "&lt;script&gt;x" in html
    assert "EndpointUnreachableError" in html and "Failed traces (1)" in html


def test_shd_png_and_discovery_figures(tmp_path):
    df = pd.DataFrame(
        {
            "dataset": ["asia"] * 4 + ["cancer"] * 2,
            "method": ["pc", "pc", "mac", "mac", "pc", "mac"],
            "seed": [0, 1, 0, 1, 0, 0],
            "shd": [2, 4, 0, 1, 3, float("nan")],
        }
    )
    assert shd_png(df, tmp_path / "a.png").read_bytes()[:8] == PNG_MAGIC
    outcomes = [
        SimpleNamespace(method="pc", usage={}, seconds=1.5),
        SimpleNamespace(
            method="mac",
            seconds=9.0,
            usage={"mac.debate": {"prompt_tokens": 100, "completion_tokens": 10, "seconds": 4.0, "calls": 2}},
        ),
    ]
    usage = discovery_stage_usage(outcomes)
    assert usage.set_index(["method", "stage"]).loc[("pc", "(no LLM)"), "seconds"] == 1.5
    assert usage.set_index(["method", "stage"]).loc[("mac", "mac.debate"), "prompt_tokens"] == 100
    figs = discovery_figures(df, usage, tmp_path)
    assert [f.key for f in figs] == ["shd", "stage_cost"] and all(f.path.is_file() for f in figs)
    assert "asia · pc" in figs[0].text and "3.0" in figs[0].text  # mean of 2 and 4


def test_html_report_skips_figures_without_png(tmp_path):
    page = html_report(
        "T",
        {},
        [Figure("k", "missing", None, ""), Figure("g", "gone", tmp_path / "no.png", "")],
        [("Empty", pd.DataFrame())],
    )
    assert "data:image" not in page and "(none)" in page
