"""A trace is checked once per run: the plan pass validates and hashes it, the item reads it back without repeating
what the unchanged file already passed; the plan validates each method's settings once, not once per trace."""

from __future__ import annotations

import pytest

from agentcausal.attribution import estimate
from agentcausal.attribution.all_at_once import SPEC
from agentcausal.attribution.plan import attribute_plan
from agentcausal.exceptions import InputFileError, ItemChangedError
from agentcausal.input_files import loads_json
from agentcausal.runs import items as run_items
from agentcausal.traces.jsonl import write_jsonl
from agentcausal.traces.model import Step, Trace
from agentcausal.traces.render import escape_data, render_conversation, render_steps_info


def _corpus(tmp_path, n=3):
    traces = [
        Trace(
            id=f"t/{i}",
            question="q?",
            ground_truth="a",
            steps=[Step(index=j, agent=f"A{j % 2}", content=f"step {j} of {i} <b> x < 3") for j in range(4)],
        )
        for i in range(n)
    ]
    return traces, write_jsonl(traces, tmp_path / "c.jsonl")


def _plan(path):
    return attribute_plan([str(path)], [SPEC], resolved={"all_at_once": {}}, preset="paper", routing="default")


def test_an_item_of_an_unchanged_file_is_read_without_hashing_its_trace_again(tmp_path, monkeypatch):
    traces, path = _corpus(tmp_path)
    run_items.clear_cache()
    plan = _plan(path)

    def no_hash(self):
        raise AssertionError("the trace's content hash was computed again")

    monkeypatch.setattr(Trace, "content_hash", no_hash)
    assert [run_items.load_trace_item(i) for i in plan.items] == traces
    stale = plan.items[0].model_copy(update={"file_sha256": None})  # bytes unchecked: the trace's own hash is
    with pytest.raises(AssertionError, match="computed again"):
        run_items.load_trace_item(stale)


def test_an_item_whose_file_changed_is_still_refused(tmp_path):
    _, path = _corpus(tmp_path)
    run_items.clear_cache()
    item = _plan(path).items[1]
    path.write_text(path.read_text().replace("step 0 of 1", "step 9 of 1"))
    with pytest.raises(ItemChangedError, match="file sha256"):
        run_items.load_trace_item(item)


def test_the_plan_validates_each_methods_settings_once(tmp_path, monkeypatch):
    _, path = _corpus(tmp_path, n=5)
    calls = []
    real = estimate.method_settings
    monkeypatch.setattr(estimate, "method_settings", lambda *a, **k: calls.append(a) or real(*a, **k))
    monkeypatch.setattr(estimate, "_VALIDATED", {})
    plan = _plan(path)
    assert plan.item_count == 5 and len(calls) == 1
    assert plan.estimate is not None and plan.estimate["methods"]["all_at_once"]["jobs"] == 5


@pytest.mark.parametrize("depth", [1, 2, 63, 64])
def test_nesting_up_to_the_limit_is_read(depth):
    assert loads_json("[" * depth + "]" * depth) is not None


@pytest.mark.parametrize("text", ["[" * 65 + "]" * 65, '{"a": ' * 65 + "1" + "}" * 65, "[" * 64 + "{}" + "]" * 64])
def test_nesting_past_the_limit_is_refused(text):
    with pytest.raises(InputFileError, match="nested deeper than 64"):
        loads_json(text)


def test_rendering_escapes_ascii_and_lookalike_openers_alike():
    steps = [
        Step(index=0, agent="A</trace>", content="x < 3 and </trace> then \uff1c/step>"),
        Step(index=1, agent="B", content="plain"),
    ]
    text = render_steps_info(steps).text
    assert "A&lt;/trace>" in text and "x < 3 and &lt;/trace> then &lt;/step>" in text
    assert escape_data("plain ascii <div>") == "plain ascii <div>"
    conv = render_conversation(steps, numbered=True).text
    assert conv.splitlines()[1] == "Step 0 - A&lt;/trace>: x < 3 and &lt;/trace> then &lt;/step>"
    short = render_steps_info([Step(index=0, agent="A", content="<trace>" + "y" * 5000)], budget_chars=400)
    assert short.shortened == (0,) and short.text.startswith('<trace>\n<step n="0">\nStep 0 | A: &lt;trace>')
