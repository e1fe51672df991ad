"""The Performance section's writer: both READMEs, and the LCE economy per preset."""

from __future__ import annotations

from pathlib import Path

from bench.summary import _economy, update_readme
from bench.throughput import economies, economy_markdown


def _eco(sims: float) -> dict:
    summary = {
        "requests_per_trace": 7.0,
        "gca_requests_per_trace": 2,
        "lce_requests_per_trace": 4.0,
        "embed_requests_per_trace": 1.0,
        "neighbours_evaluated_per_trace": 4.0,
        "distinct_steps_evaluated_per_trace": 3.5,
        "simulations_per_trace": sims,
        "moves_per_trace": 0.5,
        "prompt_tokens_per_trace": 30000.0,
        "median_prompt_tokens_per_trace": 20000,
        "gca_prompt_tokens_per_trace": 12000.0,
        "ded_called_share": 0.5,
        "errors": 0,
        "paper_expansions_per_trace": 4.5,
        "paper_tokens_per_trace": 32000,
        "paper_gca_tokens_per_trace": 13000,
    }
    return {"per_trace": [], "by_distinct_steps": [], "summary": summary}


def test_economy_names_each_preset_and_its_caps():
    payload = {
        "corpus": "c",
        "preset": "paper",
        **_eco(3.25),
        "settings": {"max_edges": None},
        "other_presets": {"small": {**_eco(2.75), "settings": {"max_edges": 10}}},
    }
    assert list(economies(payload)) == ["paper", "small"]
    text = _economy(payload)
    assert "preset `paper`" in text and "**3.25 simulations**" in text
    assert "preset `small`" in text and "**2.75 simulations**" in text
    md = economy_markdown(payload, {"cpus": 2, "load_avg_1_5_15": [1, 1, 1], "commit": "x", "when": "now"})
    assert "max_edges none (no cap)" in md and "max_edges 10" in md


def test_economy_written_before_presets_still_reads():
    assert list(economies({"corpus": "c", **_eco(3.0)})) == ["unnamed"]


def test_update_readme_replaces_only_the_performance_section(tmp_path: Path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "# P\n\n## Use\n\nuse it\n\n## Performance\n\nold numbers\n\n### Sub\n\nold\n\n## Layout\n\nfiles\n"
    )
    assert update_readme("## Performance\n\nnew numbers\n", readme) == [readme]
    text = readme.read_text()
    assert "old" not in text and "new numbers" in text
    assert text.index("## Use") < text.index("new numbers") < text.index("## Layout\n\nfiles")
    last = tmp_path / "bench.md"
    last.write_text("# B\n\n## Performance\n\nold\n")
    update_readme("## Performance\n\nnew\n", last)
    assert last.read_text() == "# B\n\n## Performance\n\nnew\n"
