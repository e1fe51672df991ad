"""A trace is checked once per run: the plan pass validates and hashes it, the item reads it back without repeating
what the unchanged file already passed (nor hashing a file this process's plan hashed); the plan validates each
method's settings, and takes its trace budget, once, not once per trace."""

from __future__ import annotations

import pytest

from agentcausal.attribution import estimate
from agentcausal.attribution.all_at_once import SPEC
from agentcausal.attribution.plan import attribute_plan
from agentcausal.exceptions import ConfigError, InputFileError, ItemChangedError
from agentcausal.input_files import loads_json
from agentcausal.registry import ATTRIBUTION_METHODS
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


def test_items_of_a_file_this_process_planned_read_it_unhashed_until_it_changes(tmp_path, monkeypatch):
    traces, path = _corpus(tmp_path)
    run_items.clear_cache()
    plan = _plan(path)  # hashes the file, and keeps the hash for this process's items

    def no_hash(p):
        raise AssertionError(f"{p} hashed again")

    with monkeypatch.context() as m:
        m.setattr(run_items, "sha256_file", no_hash)
        assert [run_items.load_trace_item(i) for i in plan.items] == traces
    path.write_text(path.read_text().replace("step 0 of 1", "step 9 of 1"))  # a new version: hashed, refused
    with pytest.raises(ItemChangedError, match="file sha256"):
        run_items.load_trace_item(plan.items[1])


def test_a_hash_of_a_file_that_changed_while_it_was_read_is_not_kept(tmp_path):
    _, path = _corpus(tmp_path)
    run_items.clear_cache()
    before = path.stat()
    path.write_text(path.read_text() + "\n")
    run_items.remember_file_sha256(str(path), "0" * 64, before)  # the stat is not the file's now: not kept
    item = _plan(path).items[0]
    assert run_items.load_trace_item(item).id == "t/0"


def test_the_plan_takes_each_methods_trace_budget_once(tmp_path, monkeypatch):
    _, path = _corpus(tmp_path, n=4)
    calls = []
    real = estimate.trace_budget
    monkeypatch.setattr(estimate, "trace_budget", lambda *a: calls.append(a) or real(*a))
    methods = ["all_at_once", "step_by_step", "dcfa"]
    specs = [ATTRIBUTION_METHODS[m] for m in methods]
    plan = attribute_plan([str(path)], specs, resolved=dict.fromkeys(methods, {}), preset="paper", routing="default")
    assert plan.estimate is not None and len(calls) == 2  # the two baselines; DCFA budgets its own prompts
    assert {m: plan.estimate["methods"][m]["jobs"] for m in methods} == dict.fromkeys(methods, 4)


def test_settings_that_do_not_validate_leave_every_trace_counted_and_unsized(tmp_path):
    traces, _ = _corpus(tmp_path, n=3)
    counted = estimate.TraceCalls([SPEC], {"all_at_once": {"prompts": "neither"}}, None)
    notes = [counted(t)["all_at_once"] for t in traces]  # validated once, refused for each trace alike
    assert notes[0] == notes[1] == notes[2] and notes[0][0] == []
    assert notes[0][1].startswith("not estimated for some traces (ConfigError: ")
    with pytest.raises(ConfigError):
        estimate.attribution_calls(traces[0], SPEC, {"prompts": "neither"})
