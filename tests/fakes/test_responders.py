"""The bench responders answer every reply model validly, so the benchmarks do not rot.

Each registered attribution method runs against the fake OpenAI server (test
double) with :class:`agentcausal_fakes.responders.BenchResponder`; a reply that failed
validation would show up as a repair request (requests > calls) or an error.
"""

from __future__ import annotations

import pytest

from agentcausal.attribution.jobs import run_method
from agentcausal.discovery.mac import prompts as mac_prompts
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.traces.model import Label, Step, Trace
from agentcausal_fakes.responders import HANDLED_SCHEMAS, BenchResponder, instance_from_schema


def _trace(n: int = 7, tid: str = "bench/seven-steps") -> Trace:
    return Trace(
        id=tid,
        source="examples",
        question="How many moons has Mars?",
        ground_truth="2",
        steps=[
            Step(index=i, agent=f"Agent{i % 3}", content=f"step {i}: looked up moon data, found {i}") for i in range(n)
        ],
        label=Label(agent="Agent1", step=1),
    )


def _usage(att):
    calls = sum(u.get("calls", 0) for u in att.usage.values())
    requests = sum(u.get("requests", 0) for u in att.usage.values())
    return calls, requests


@pytest.mark.parametrize("method", sorted(ATTRIBUTION_METHODS))
def test_every_method_gets_valid_replies_first_time(fake_server, make_gateway, method):
    fake_server.responder = responder = BenchResponder()
    gw = make_gateway(fake_server, cache=False)
    att = run_method(_trace(), ATTRIBUTION_METHODS[method], gw)
    calls, requests = _usage(att)
    assert att.error is None
    assert calls > 0
    assert requests == calls, f"{requests - calls} repair requests: a bench reply failed validation"
    assert set(responder.counts) <= set(HANDLED_SCHEMAS), f"reply models without a handler: {responder.counts}"


def test_split_gca_and_every_dcfa_stage_are_handled(fake_server, make_gateway):
    fake_server.responder = responder = BenchResponder()
    gw = make_gateway(fake_server, cache=False)
    seen: set[str] = set()
    from agentcausal.attribution.binary_search import PRESETS as BASELINE_PRESETS
    from agentcausal.attribution.dcfa import PRESETS as DCFA_PRESETS
    from agentcausal.attribution.echo_settings import PRESETS as ECHO_PRESETS

    for method, settings in [
        ("all_at_once", None),
        ("step_by_step", None),
        ("binary_search", None),
        ("binary_search", BASELINE_PRESETS["small"]),
        ("step_by_step", BASELINE_PRESETS["small"]),
        ("dcfa", {"mdi_cgc": "joint"}),
        ("dcfa", {"cgc": "equations", "simulation": "equations", "ded": "equations"}),
        ("dcfa", None),
        ("dcfa", DCFA_PRESETS["small"]),
        ("dcfa", {"with_ground_truth": False}),
        ("a2p", None),
        ("echo", None),
        ("echo", ECHO_PRESETS["small"]),
    ]:
        for k in range(6):  # several traces, so DED (needs two candidates) is reached
            att = run_method(_trace(5 + k, f"bench/t{k}"), ATTRIBUTION_METHODS[method], gw, settings)
            calls, requests = _usage(att)
            assert att.error is None and requests == calls
        seen |= set(responder.counts)
    assert seen == set(HANDLED_SCHEMAS)


def test_replies_repeat_exactly(fake_server, make_gateway):
    outs = []
    for _ in range(2):
        fake_server.responder = BenchResponder()
        gw = make_gateway(fake_server, cache=False)
        a = run_method(_trace(), ATTRIBUTION_METHODS["dcfa"], gw)
        outs.append((a.step, a.details["deviations"], a.details["edges"], a.details["lce"]["scores"]))
    assert outs[0] == outs[1]


@pytest.mark.parametrize(
    "model",
    [
        mac_prompts.AlgorithmProposalReply,
        mac_prompts.AlgorithmVerdictReply,
        mac_prompts.GraphVerdictReply,
        mac_prompts.CodeReply,
        mac_prompts.graph_reply_model(("Smoking", "Cancer", "Xray")),
    ],
)
def test_generic_instances_validate_for_other_reply_models(model):
    inst = instance_from_schema(model.model_json_schema(), seed=3)
    model.model_validate(inst)


def test_unknown_schema_gets_a_generic_reply():
    body = {
        "messages": [{"role": "user", "content": "x"}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "Unseen",
                "schema": {
                    "type": "object",
                    "properties": {
                        "k": {"type": "integer", "minimum": 2, "maximum": 4},
                        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 2},
                    },
                },
            },
        },
    }
    import json

    reply = json.loads(BenchResponder()(body))
    assert 2 <= reply["k"] <= 4 and len(reply["tags"]) == 2 and set(reply["tags"]) <= {"a", "b"}
