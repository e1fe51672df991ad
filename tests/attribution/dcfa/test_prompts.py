"""DCFA reply models (what is validated, what is advisory) and prompt layout."""

import pytest
from pydantic import ValidationError

from agentcausal.attribution.dcfa import ded, prompts
from agentcausal.traces.model import Step


def test_hypothesis_model_bounds_step_to_trace():
    m = prompts.hypothesis_model(4, 100)
    assert m(step=3, reason="r").step == 3
    with pytest.raises(ValidationError):
        m(step=4, reason="r")
    schema = m.model_json_schema()["properties"]["step"]
    assert (schema["minimum"], schema["maximum"]) == (0, 3)


def test_corrected_trace_model_names_steps_in_range():
    m = prompts.corrected_trace_model(3, 50)
    reply = m(steps=[{"step": 1, "content": "b"}])
    assert [(e.step, e.content) for e in reply.steps] == [(1, "b")]  # a step may be left out
    with pytest.raises(ValidationError):
        m(steps=[{"step": 3, "content": "x"}])
    schema = m.model_json_schema()
    assert schema["properties"]["steps"]["maxItems"] == 3
    entry = schema["$defs"]["CorrectedStep"]["properties"]
    assert (entry["step"]["minimum"], entry["step"]["maximum"], entry["content"]["maxLength"]) == (0, 2, 50)
    assert m(steps=[{"step": 0, "content": "x" * 80}]).steps[0].content == "x" * 80  # advisory: the caller cuts
    assert (
        "maxLength"
        not in prompts.corrected_trace_model(3, None).model_json_schema()["$defs"]["CorrectedStep"]["properties"][
            "content"
        ]
    )


def test_decision_model_is_an_enum_of_candidates():
    m = ded.decision_model((5, 2), 100)
    assert m.model_json_schema()["properties"]["step"]["enum"] == [2, 5]
    assert m(step=5, reason="r").step == 5
    with pytest.raises(ValidationError):
        m(step=3, reason="r")


@pytest.mark.parametrize(
    "factory, args",
    [
        (prompts.hypothesis_model, (0, 100)),
        (prompts.corrected_trace_model, (0, 100)),
        (ded.decision_model, ((), 100)),
    ],
)
def test_model_factories_reject_empty(factory, args):
    with pytest.raises(ValueError):
        factory(*args)


def test_gca_schema_caps_are_advisory():
    m = prompts.gca_joint_model(2, 3, 40)
    schema = m.model_json_schema()
    assert schema["properties"]["deviations"]["maxItems"] == 2 and schema["properties"]["edges"]["maxItems"] == 3
    many = m(deviations=[{"step": i, "reason": "r" * 90} for i in range(5)], edges=[])
    assert len(many.deviations) == 5  # validation lets them through; gca.validate_deviations cuts


def test_reasons_and_answer_are_escaped():
    steps = [Step(index=0, agent="A", content="x")]
    msgs = prompts.hg_messages("q", "a </answer> b", steps, [(0, "bad </trace> reason")], [])
    user = msgs[1]["content"]
    assert "&lt;/trace> reason" in user and "a &lt;/answer> b" in user
    assert msgs[0]["content"] == prompts.SYSTEM_TEMPLATE


def test_format_helpers():
    assert prompts.format_edges([(0, 2), (2, 3)]) == "0 -> 2, 2 -> 3"
    assert prompts.format_edges([]) == "none"
    assert prompts.format_deviations([]) == "- none"


def test_all_stages_share_one_system_message():
    steps = [Step(index=i, agent="A", content=f"c{i}") for i in range(3)]
    systems = {
        prompts.gca_joint_messages("q", steps, max_deviations=2, max_edges=2)[0]["content"],
        prompts.hg_messages("q", "t", steps, [], [])[0]["content"],
        prompts.correct_messages("q", "t", steps, [], [], max_chars=50)[0]["content"],
        prompts.simulation_messages("q", steps, 1)[0]["content"],
        ded.ded_messages("q", "t", steps[:2], [])[0]["content"],
    }
    assert len(systems) == 1
