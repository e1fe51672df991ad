"""Plan items: a task loads its own trace by (id, path, offset, sha256), checked against the plan."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentcausal.attribution.all_at_once import SPEC
from agentcausal.attribution.plan import attribute_plan
from agentcausal.exceptions import ItemChangedError
from agentcausal.runs import items as run_items
from agentcausal.traces.io import load_traces
from agentcausal.traces.jsonl import write_jsonl

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"


def _plan(paths):
    return attribute_plan(
        [str(p) for p in paths], [SPEC], resolved={"all_at_once": {}}, preset="paper", routing="default"
    )


def test_items_load_the_traces_the_corpus_holds(tmp_path):
    folder = tmp_path / "ex"
    shutil.copytree(EXAMPLES, folder)
    jsonl = write_jsonl(load_traces([EXAMPLES])[:2], tmp_path / "more" / "t.jsonl")
    run_items.clear_cache()
    loose = load_traces([folder])
    plan = _plan([folder])
    assert [run_items.load_trace_item(i) for i in plan.items] == loose  # same ids, same content
    plan2 = _plan([jsonl])
    assert [run_items.load_trace_item(i).id for i in plan2.items] == [i.id for i in plan2.items]
    assert all(i.offset is not None for i in plan2.items)  # a JSONL item names its line: only that line is read


def test_a_file_changed_since_the_plan_is_one_error_naming_the_item(tmp_path):
    f = tmp_path / "a" / "wrong_unit_at_step_2.json"
    f.parent.mkdir()
    shutil.copy(EXAMPLES / f.name, f)
    run_items.clear_cache()
    item = _plan([f]).items[0]
    f.write_text(f.read_text().replace("Conversion", "Conversión", 1))
    with pytest.raises(ItemChangedError) as exc:
        run_items.load_trace_item(item)
    assert exc.value.item == item.id and exc.value.path == str(f)
    assert "\n" not in str(exc.value) and "changed since the run plan" in str(exc.value)
    run_items.clear_cache()
    stale = item.model_copy(update={"file_sha256": None})  # the bytes unchecked: the trace's hash still is
    with pytest.raises(ItemChangedError, match="content hash"):
        run_items.load_trace_item(stale)
