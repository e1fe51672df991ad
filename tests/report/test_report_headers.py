"""report.md headers as readable text (no Python reprs), the config of the methods that ran only, and the
discovery table's ``s`` note and ``reused`` column (fresh-user trial items 11, 12, 14)."""

from __future__ import annotations

import re

from agentcausal.attribution.results import save_run
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.evaluate import outcomes_frame, score_run
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.outcome import DiscoveryOutcome, save_outcomes
from agentcausal.report.attribution import report_run
from agentcausal.report.discovery import config_for_methods, write_report
from agentcausal.report.discovery_tables import SECONDS_NOTE, summary_text, table_records
from agentcausal.report.html import facts_markdown, readable_value
from agentcausal.traces.model import Attribution, Label, Step, Trace


def save_disc(outcomes, run_dir, meta):
    """``outcomes.jsonl``, ``run.json`` and the scored ``results.parquet``, as a discover run writes them."""
    save_outcomes(outcomes, run_dir, meta)
    score_run(run_dir)


_REPR = re.compile(r"[\[{]'|': |\bNone\b|\bTrue\b|\bFalse\b")  # Python list/dict reprs and literals


def _outcomes(methods, reused=()):
    t = CausalGraph.from_edges("ABC", [("A", "B"), ("B", "C")])
    return [
        DiscoveryOutcome(
            dataset="toy", seed=s, n=20, method=m, graph=t, true_graph=t, seconds=1.5, reused=(m, s) in reused
        )
        for m in methods
        for s in (0, 1)
    ]


def test_readable_value_has_no_python_reprs():
    v = {"all_at_once": {"context_tokens": None, "flag": True, "tags": ["a", "b"], "sub": {"x": 1}}}
    text = readable_value(v)
    assert not _REPR.search(text)
    assert "context_tokens = none" in text and "tags = a, b" in text and "sub = (x = 1)" in text
    lines = facts_markdown({"corpus": ["data/examples", "more"], "methods": v})
    assert lines[0] == "- **corpus**: data/examples, more"
    assert any(line.strip().startswith("| all_at_once | context_tokens = none") for line in lines)


def test_attribution_report_header_is_readable(tmp_path):
    tr = Trace(
        id="x/0",
        question="q",
        ground_truth="a",
        label=Label(agent="A", step=0),
        steps=[Step(index=0, agent="A", content="s")],
    )
    save_run(
        [Attribution(trace_id="x/0", method="all_at_once", step=0, agent="A")],
        [tr],
        tmp_path,
        {"corpus": ["data/examples"], "methods": {"all_at_once": {"context_tokens": None, "window": 4}}},
    )
    md = report_run(tmp_path).markdown
    head = md.split("## Accuracy")[0]
    assert "['data/examples']" not in head and "{'" not in head and not _REPR.search(head)
    assert "- **corpus**: data/examples" in head
    assert "| all_at_once | context_tokens = none; window = 4 |" in head


def test_discovery_report_config_only_for_methods_that_ran(tmp_path):
    config = DiscoveryConfig().model_dump(mode="json")
    assert set(config_for_methods(config, ["pc", "ges"])) == {"algorithm_timeout_s", "repeat"}
    assert "mac" in config_for_methods(config, ["dcm_only@ids"]) and "react" not in config_for_methods(config, ["mac"])
    save_disc(_outcomes(["pc", "fci"]), tmp_path, {"datasets": ["toy"], "methods": ["pc", "fci"], "config": config})
    md = write_report(tmp_path, draw=False).report.read_text()
    head = md.split("## Results")[0]
    for absent in ("mac", "react", "llm_scd", "ils_csl", "coding"):
        assert absent not in head
    assert "algorithm_timeout_s = 300" in head and not _REPR.search(head)
    assert "- **methods**: pc, fci" in head


def test_discovery_table_has_reused_column_and_says_what_s_measures(tmp_path):
    df = outcomes_frame(_outcomes(["pc", "ges"], reused={("ges", 0), ("ges", 1)}))
    text = summary_text(df)
    header, *rows = text.splitlines()
    assert header.split()[-3:] == ["s", "runs", "reused"]
    by_method = {r.split()[2]: r.split() for r in rows[:2]}
    assert by_method["pc"][-1] == "0" and by_method["ges"][-1] == "2"
    assert SECONDS_NOTE in " ".join(text.split()) and "worker process" in SECONDS_NOTE  # the legend is wrapped
    assert {r["method"]: r["reused"] for r in table_records(df)} == {"pc": 0, "ges": 2}
