"""All-at-Once's ``small`` reply without a pydantic class per trace: the same schema, requests, cache keys and
validation as the trace's own model (:func:`agentcausal.attribution.all_at_once.reply_shape`)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

import agentcausal.llm.dialect as dialect_mod
from agentcausal.attribution import all_at_once
from agentcausal.attribution.jobs import run_method
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from agentcausal_fakes.responders import BenchResponder
from agentcausal_fakes.synthetic import synthetic_traces

AGENT_TUPLES = [
    ("Coder",),
    ("Coder", "WebSurfer"),
    ("WebSurfer", "Coder", "Orchestrator (thought)"),
    ("O'Brien", 'say "hi"', "Ünïcode", "tab\there", ""),
]


@pytest.mark.parametrize("reason_chars", [None, 300])
@pytest.mark.parametrize("agents", AGENT_TUPLES)
def test_template_schema_equals_the_trace_models_schema(agents, reason_chars):
    shape = all_at_once.reply_shape(agents, 7, False, reason_chars)
    own = all_at_once.reply_model(agents, 7, False, reason_chars).model_json_schema()
    assert shape.schema == own
    assert json.dumps(shape.schema) == json.dumps(own)  # the same key order too: the same request body


def test_template_schema_is_a_fresh_copy():
    a = all_at_once.reply_shape(("Coder",), 3, False, None).schema
    a["properties"]["agent"]["anyOf"][0]["enum"].append("Intruder")
    b = all_at_once.reply_shape(("Coder",), 3, False, None).schema
    assert b["properties"]["agent"]["anyOf"][0]["enum"] == ["Coder"]


REPLIES = [
    '{"reason": "r", "agent": "Coder", "step": 1}',
    '{"reason": "r", "agent": null, "step": null}',
    '{"reason": "r", "agent": "Nobody", "step": 1}',
    '{"reason": "r", "agent": 5, "step": 1}',
    '{"reason": "r", "agent": "coder", "step": 99}',
    '{"reason": "' + "x" * 400 + '", "agent": "WebSurfer", "step": -3}',
    '{"agent": "Coder"}',
    '{"reason": 3, "agent": "Coder", "step": "two"}',
    "not json",
    "[]",
]


@pytest.mark.parametrize("reason_chars", [None, 300])
@pytest.mark.parametrize("text", REPLIES)
def test_one_model_with_a_context_validates_as_the_trace_model(text, reason_chars):
    """Accepted replies give the same fields; rejected ones the same error text (it goes into the repair prompt)."""
    agents = ("Coder", "WebSurfer")
    own = all_at_once.reply_model(agents, 4, False, reason_chars)
    shape = all_at_once.reply_shape(agents, 4, False, reason_chars)
    try:
        want: object = own.model_validate_json(text).model_dump()
    except ValidationError as exc:
        want = str(exc)
    try:
        got: object = shape.model.model_validate_json(text, context=shape.context).model_dump()
    except ValidationError as exc:
        got = str(exc)
    assert got == want


def test_paper_model_is_one_class_per_step_count():
    a = all_at_once.reply_model(("Coder", "WebSurfer"), 4, True, None)
    assert all_at_once.reply_model(("WebSurfer", "Coder", "Assistant"), 4, True, None) is a
    assert all_at_once.reply_model(("Coder", "WebSurfer"), 5, True, None) is not a
    assert all_at_once.reply_shape(("Coder",), 4, True, None) == (a, None, None)


def _sent(run, make_gateway, tmp_path, monkeypatch, label: str, json_mode: str) -> tuple[list[str], list[str]]:
    """(request bodies and the records, cache-key payloads) of ``run`` on eight synthetic traces."""
    payloads: list[str] = []
    real_key = dialect_mod.cache_key
    with monkeypatch.context() as m, FakeOpenAIServer(responder=BenchResponder()) as srv:
        m.setattr(
            dialect_mod,
            "cache_key",
            lambda b, mo, p: payloads.append(json.dumps(p, sort_keys=True)) or real_key(b, mo, p),
        )
        gw = make_gateway(srv, cache_dir=tmp_path / label, json_mode=json_mode, context_window=128000)
        records = [run(t, gw).model_dump(exclude={"seconds", "usage"}) for t in synthetic_traces(8, seed=4)]
        bodies = [json.dumps(r, sort_keys=True) for r in srv.chat_requests]
    assert payloads and bodies
    return bodies + [json.dumps(records, sort_keys=True, default=str)], payloads


@pytest.mark.parametrize("json_mode", ["json_schema", "json_object"])
def test_small_preset_sends_and_keys_what_the_model_per_trace_sent(json_mode, make_gateway, tmp_path, monkeypatch):
    small = all_at_once.AllAtOnceSettings(**all_at_once.PRESETS["small"])

    def per_trace(trace, gw):  # the code before: the trace's own class and its schema on every call
        with monkeypatch.context() as m:
            m.setattr(
                all_at_once,
                "reply_shape",
                lambda agents, n, forced, rc: all_at_once.ReplyShape(
                    all_at_once.reply_model(agents, n, forced, rc), None, None
                ),
            )
            return run_method(trace, ATTRIBUTION_METHODS["all_at_once"], gw, small)

    before = _sent(per_trace, make_gateway, tmp_path, monkeypatch, "before", json_mode)
    after = _sent(
        lambda t, gw: run_method(t, ATTRIBUTION_METHODS["all_at_once"], gw, small),
        make_gateway,
        tmp_path,
        monkeypatch,
        "after",
        json_mode,
    )
    assert after == before
