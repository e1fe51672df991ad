"""Reply models and their JSON schemas are built once, and caching them changes no request body or cache key.

The gateway keeps each reply model's schema per class (``dialect.reply_schema``) and
``enum_choice`` its field type per value tuple. Here the same traces run through each
method twice, once with those caches bypassed and every method's model cache cleared (the
code before them) and once as shipped, against the fake server; the request bodies it
received and the payloads hashed into cache keys must be the same, byte for byte.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError, ValidationInfo, model_validator

import agentcausal.llm.dialect as dialect_mod
import agentcausal.llm.gateway as gateway_mod
from agentcausal.attribution import a2p, all_at_once, baseline_prompts, binary_search, echo, step_by_step
from agentcausal.attribution.dcfa import ded as dcfa_ded
from agentcausal.attribution.dcfa import prompts as dcfa_prompts
from agentcausal.attribution.jobs import run_method
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from agentcausal_fakes.responders import BenchResponder
from agentcausal_fakes.synthetic import synthetic_traces

MODEL_CACHES = (
    [
        a2p.reply_model,
        all_at_once._forced_model,
        all_at_once._choice_model,
        all_at_once._choice_template,
        all_at_once._any_agent_model,
        binary_search.choice_model,
        echo.scan_model,
        echo.panel_model,
        step_by_step.verdict_model,
        baseline_prompts.enum_choice,
    ]
    + [
        getattr(dcfa_prompts, n)
        for n in (
            "_deviation_model",
            "_judged_edge_model",
            "gca_joint_model",
            "mdi_model",
            "cgc_model",
            "hypothesis_model",
            "corrected_trace_model",
        )
    ]
    + [dcfa_ded.decision_model]
)


def _clear_model_caches() -> None:
    for fn in MODEL_CACHES:
        fn.cache_clear()


def _record(method: str, make_gateway, tmp_path, monkeypatch, *, label: str, json_mode: str) -> tuple[list, list]:
    """(sorted request bodies, sorted cache-key payloads) of ``method`` on three synthetic traces."""
    payloads: list[str] = []
    real_key = dialect_mod.cache_key

    def spy(base_url, model, payload):
        payloads.append(json.dumps([model, payload], sort_keys=True))
        return real_key(base_url, model, payload)

    monkeypatch.setattr(dialect_mod, "cache_key", spy)
    with FakeOpenAIServer(responder=BenchResponder()) as srv:
        gw = make_gateway(srv, cache_dir=tmp_path / f"cache-{label}", json_mode=json_mode, context_window=128000)
        for trace in synthetic_traces(3, seed=1):
            run_method(trace, ATTRIBUTION_METHODS[method], gw)
        bodies = [json.dumps(r, sort_keys=True) for r in srv.chat_requests]
    assert bodies, "the method sent no request"
    assert payloads, "no cache key went through the spy: patched where the gateway does not look it up"
    return sorted(bodies), sorted(payloads)  # DCFA runs stages in parallel: order varies


@pytest.mark.parametrize(
    "method,json_mode",
    [
        ("all_at_once", "json_schema"),
        ("all_at_once", "json_object"),
        ("step_by_step", "json_schema"),
        ("binary_search", "json_schema"),
        ("a2p", "json_schema"),
        ("dcfa", "json_schema"),
    ],
)
def test_cached_models_and_schemas_send_the_same_requests_and_keys(
    method, json_mode, make_gateway, tmp_path, monkeypatch
):
    rebuilt: list[str] = []

    def rebuild(model):
        rebuilt.append(model.__name__)
        return model.model_json_schema(), json.dumps(model.model_json_schema())

    with monkeypatch.context() as m:  # before: schema rebuilt on every call, field types rebuilt per model
        m.setattr(dialect_mod, "reply_schema", rebuild)
        for mod in (all_at_once, a2p, echo):
            m.setattr(mod, "enum_choice", baseline_prompts.enum_choice.__wrapped__)
        _clear_model_caches()
        before = _record(method, make_gateway, tmp_path, m, label="before", json_mode=json_mode)
    assert rebuilt, "no schema went through the stand-in: patched where the gateway does not look it up"
    _clear_model_caches()
    after = _record(method, make_gateway, tmp_path, monkeypatch, label="after", json_mode=json_mode)
    assert after[0] == before[0]
    assert after[1] == before[1]


def test_reply_model_and_schema_are_built_once_per_shape():
    _clear_model_caches()
    first = all_at_once.reply_model(("Coder", "WebSurfer"), 4, True, None)
    assert all_at_once.reply_model(("Coder", "WebSurfer"), 4, True, None) is first
    assert all_at_once.reply_model(("WebSurfer", "Coder"), 4, False, None) is not first
    assert all_at_once.reply_model(("Coder", "WebSurfer"), 5, True, None) is not first
    schema, text = dialect_mod.reply_schema(first)
    assert dialect_mod.reply_schema(first)[0] is schema
    assert schema == first.model_json_schema() and text == json.dumps(first.model_json_schema())


def test_shared_enum_type_keeps_each_models_own_schema():
    """One cached field type in two models with different field descriptions: neither leaks into the other."""
    agents = ("Coder", "Assistant")
    _clear_model_caches()
    forced, loose = (all_at_once.reply_model(agents, 3, f, None) for f in (True, False))
    dialect_mod.reply_schema(forced)
    got = dialect_mod.reply_schema(loose)[0]
    _clear_model_caches()
    fresh = all_at_once._choice_model.__wrapped__(agents, None).model_json_schema()
    assert json.dumps(got) == json.dumps(fresh)
    assert got["properties"]["agent"] != dialect_mod.reply_schema(forced)[0]["properties"]["agent"]


# ---------------------------------------------- a schema template instead of a model per shape
class _TemplateVerdict(all_at_once.AllAtOnceReply):
    """Your verdict on the decisive error of the whole run."""

    agent: str
    step: int

    @model_validator(mode="after")
    def _in_this_trace(self, info: ValidationInfo) -> "_TemplateVerdict":
        ctx = info.context or {}
        if "agents" in ctx and self.agent not in ctx["agents"]:
            raise ValueError(f"agent must be one of {list(ctx['agents'])}")
        if not 0 <= self.step < max(ctx["n_steps"], 1):
            raise ValueError(f"step must be in 0..{ctx['n_steps'] - 1}")
        return self


def _template_schema(template: dict, agents: tuple[str, ...], n_steps: int) -> dict:
    """All-at-Once's forced (``paper``) schema for one trace, by substitution into one template: the step's
    bound, and the agent enum where the template has one (``paper``'s agent is free text)."""
    props = template["properties"]
    agent = {**props["agent"], "enum": list(agents)} if "enum" in props["agent"] else props["agent"]
    return {
        **template,
        "properties": {**props, "agent": agent, "step": {**props["step"], "maximum": max(n_steps - 1, 0)}},
    }


def test_a_schema_template_with_a_validation_context_sends_the_per_shape_models_bodies_and_keys(
    make_gateway, tmp_path, monkeypatch
):
    """``structured(schema=..., context=...)``: one model class and a substituted schema send and key exactly what
    All-at-Once's model per trace shape sends (the method change left to All-at-Once's owner), and the context still
    rejects an agent the trace does not have."""
    from agentcausal.attribution.baseline_prompts import agent_names

    settings = all_at_once.AllAtOnceSettings()
    template = all_at_once.reply_model(("X",), 1, True, None).model_json_schema()
    traces = synthetic_traces(12, seed=3)
    runs = []
    real_key = dialect_mod.cache_key
    for variant in ("per shape", "template"):
        payloads: list[str] = []
        monkeypatch.setattr(
            dialect_mod,
            "cache_key",
            lambda b, m, p: (
                payloads.append(json.dumps(p, sort_keys=True))  # noqa: B023 (this variant only)
                or real_key(b, m, p)
            ),
        )
        with FakeOpenAIServer(responder=BenchResponder()) as srv:
            gw = make_gateway(srv, cache_dir=tmp_path / variant, context_window=128000)
            for t in traces:
                messages, _ = all_at_once.build_messages(t, settings, None)
                agents = agent_names(t)
                if variant == "per shape":
                    gw.structured("baseline", messages, all_at_once.reply_model(agents, len(t), True, None))
                else:
                    out = gw.structured(
                        "baseline",
                        messages,
                        _TemplateVerdict,
                        schema=_template_schema(template, agents, len(t)),
                        context={"agents": agents, "n_steps": len(t)},
                    )
                    assert out.agent in agents and 0 <= out.step < len(t)
            runs.append(([json.dumps(r, sort_keys=True) for r in srv.chat_requests], payloads))
        assert payloads, "no cache key went through the spy"
    assert runs[0] == runs[1]
    with pytest.raises(ValidationError, match="agent must be one of"):
        _TemplateVerdict.model_validate_json(
            '{"reason": "r", "agent": "Nobody", "step": 0}', context={"agents": ("Coder",), "n_steps": 3}
        )


def test_requests_through_post_send_what_chat_completions_create_sent(make_gateway, tmp_path, monkeypatch):
    """The gateway sends chat bodies as plain JSON (no SDK): every request the fake server receives (body, path,
    bearer key) equals what the ``openai`` client's ``chat.completions.create`` sends, for structured replies in
    both JSON modes, a repeat index (seed) and a plain chat."""
    import openai  # the reference only: the gateway does not use it

    def through_create(self, stage, profile, messages, params, timer):  # the same request through the SDK
        ep = self.clients.endpoint(profile)
        client = openai.OpenAI(base_url=ep.base_url, api_key=ep.api_key, max_retries=0)
        resp = client.chat.completions.create(model=profile.model, messages=messages, **params)
        choice = resp.choices[0]
        u = resp.usage
        return choice.message.content or "", choice.finish_reason, u.prompt_tokens, u.completion_tokens

    def calls(gw) -> None:
        for t in synthetic_traces(2, seed=5):
            run_method(t, ATTRIBUTION_METHODS["all_at_once"], gw)
        gw.chat("baseline", [{"role": "user", "content": "plain"}], max_tokens=12, sample=2)

    seen = []
    for variant in ("create", "post"):
        for json_mode in ("json_schema", "json_object"):
            with monkeypatch.context() as m, FakeOpenAIServer(responder=BenchResponder()) as srv:
                if variant == "create":
                    m.setattr(gateway_mod.Gateway, "_request", through_create)
                gw = make_gateway(
                    srv, cache_dir=tmp_path / f"{variant}-{json_mode}", json_mode=json_mode, context_window=128000
                )
                calls(gw)
                seen.append(sorted(json.dumps(r, sort_keys=True) for r in srv.chat_requests))
    assert seen[0] and seen[:2] == seen[2:]
