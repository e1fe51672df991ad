"""ECHO (hierarchical context, analyst panel, consensus voting) against the fake OpenAI server (test double)."""

import json
import re
from pathlib import Path

import pytest

from agentcausal.attribution.echo_consensus import Vote, consensus
from agentcausal.attribution.echo_settings import ANALYSTS, PRESETS, EchoSettings
from agentcausal.attribution.jobs import run_method
from agentcausal.attribution.method_settings import resolve_methods
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.settings import resolve
from agentcausal.traces.io import load_traces
from agentcausal.traces.model import Label, Step, Trace

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"
SMALL = resolve(EchoSettings, PRESETS, "small").model_dump(mode="json")


def _trace(n: int = 6, step: int = 3, content=lambda i: f"content of step {i}") -> Trace:
    return Trace(
        id="t/1",
        source="examples",
        question="What is 6 x 7?",
        ground_truth="42",
        steps=[Step(index=i, agent=f"Agent{i % 3}", content=content(i)) for i in range(n)],
        label=Label(agent=f"Agent{step % 3}", step=step),
    )


def _user(req) -> str:
    return [m for m in req["messages"] if m["role"] == "user"][0]["content"]


def _schema(req) -> dict:
    return req["response_format"]["json_schema"]["schema"]


def _name(req) -> str:
    return req["response_format"]["json_schema"]["name"]


def _scan(*steps: int) -> str:
    return json.dumps({"overview": "the run went wrong", "candidates": [{"step": s, "reason": f"r{s}"} for s in steps]})


def _vote(step, agent, conf=0.8) -> dict:
    return {"hypothesis": f"h{step}", "evidence": "e", "step": step, "agent": agent, "confidence": conf}


def _panel(analysts, step, agent, conf=0.8) -> str:
    return json.dumps({a: _vote(step, agent, conf) for a in analysts})


class Responder:
    """Scan: the last step, then step 0 (when distinct). Panel: the first analyst votes the second candidate
    with confidence 0.9, every other analyst the first candidate with 0.4; agents are the steps' speakers."""

    def __call__(self, body) -> str:
        speakers = {int(s): a.strip() for s, a in re.findall(r'<step n="(\d+)">\nStep \d+ \| ([^:\n]+):', _user(body))}
        if _name(body) == "EchoScan":
            last = max(speakers)
            return _scan(*dict.fromkeys([last, 0]))
        props = _schema(body)["properties"]
        ref = props[next(iter(props))]["$ref"].rsplit("/", 1)[-1]
        cands = [c for c in _schema(body)["$defs"][ref]["properties"]["step"].get("enum", [])] or [
            c for b in _schema(body)["$defs"][ref]["properties"]["step"]["anyOf"] for c in b.get("enum", [])
        ]
        out = {}
        for i, a in enumerate(props):
            c = cands[1] if i == 0 and len(cands) > 1 else cands[0]
            out[a] = _vote(c, speakers[c], 0.9 if i == 0 else 0.4)
        return json.dumps(out)


@pytest.mark.parametrize("preset", ["paper", "small"])
@pytest.mark.parametrize("truth", [True, False], ids=["with_truth", "no_truth"])
def test_echo_runs_on_examples(fake_server, make_gateway, preset, truth):
    traces = load_traces([EXAMPLES])
    fake_server.responder = Responder()
    gw = make_gateway(fake_server)
    settings = resolve_methods(ATTRIBUTION_METHODS, ["echo"], preset=preset, with_ground_truth=truth)["echo"]
    m = len(settings["analysts"])
    assert m == (6 if preset == "paper" else 3)
    for t in traces:
        a = run_method(t, ATTRIBUTION_METHODS["echo"], gw, settings)
        assert a.error is None and a.status == "complete"
        last = len(t) - 1
        # confidence-weighted: (m-1) x 0.4 for the scan's first candidate against 0.9 for step 0
        expected = last if 0.4 * (m - 1) > 0.9 else 0
        assert (a.step, a.agent) == (expected, t.steps[expected].agent)
        assert [v["analyst"] for v in a.details["votes"]] == settings["analysts"]
        assert a.details["candidates"][0]["step"] == last
        assert a.prompt_version == ("echo/paper-2" if preset == "paper" else "echo/1")
    assert fake_server.count == 2 * len(traces)  # two full-context calls per trace
    for req in fake_server.chat_requests:
        assert ("<answer>" in _user(req)) is truth
    panel = fake_server.chat_requests[1]
    agents = json.dumps(_schema(panel)["$defs"])
    assert all(f'"{ag}"' in agents for ag in {s.agent for s in traces[0].steps})


def test_consensus_rule_pinned():
    t = _trace(6)  # speakers Agent0, Agent1, Agent2, Agent0, Agent1, Agent2
    v = [Vote("a", 1, "Agent1", 0.9), Vote("b", 2, "Agent2", 0.5), Vote("c", 2, "Agent2", 0.3)]
    assert consensus(v, t).step == 1  # 0.9 > 0.8
    assert consensus(v, t, rule="majority").step == 2  # 1 < 2 votes
    r = consensus(v, t)
    assert r.scores == pytest.approx({1: 0.9, 2: 0.8}) and r.support == pytest.approx(0.9 / 1.7) and r.tied == (1,)
    # ties: earliest (default), the most confident single vote, the scan's rank
    tie = [Vote("a", 3, None, 0.6), Vote("b", 1, None, 0.3), Vote("c", 1, None, 0.3)]
    assert consensus(tie, t).step == 1 and consensus(tie, t).tied == (1, 3)
    assert consensus(tie, t, tie_break="highest_confidence").step == 3
    assert consensus(tie, t, tie_break="scan_rank", scan_order=[3, 1]).step == 3
    assert consensus(tie, t, tie_break="scan_rank", scan_order=[5]).step == 1  # unranked: earliest
    # thresholds: low-confidence votes dropped; a weak winner is undetermined
    assert consensus(v, t, min_confidence=0.4).step == 1 and consensus(v, t, min_confidence=0.4).counted == 2
    assert consensus(v, t, min_support=0.6).step is None
    # abstentions and out-of-range steps do not count
    assert consensus([Vote("a", None, None, 0.9), Vote("b", 99, "Agent0", 1.0)], t) == (None, None, {}, 0.0, (), 0)
    # the agent: weighted vote of the winner's voters; a tie or none named takes the speaker
    ag = [Vote("a", 4, "Agent0", 0.5), Vote("b", 4, "Agent2", 0.4), Vote("c", 4, "Agent2", 0.3)]
    assert consensus(ag, t).agent == "Agent2"
    assert consensus(ag, t, rule="majority").agent == "Agent2"
    assert consensus([Vote("a", 4, "Agent0", 0.5), Vote("b", 4, "Agent1", 0.5)], t).agent == "Agent1"  # speaker
    assert consensus([Vote("a", 4, "Agent0", 0.5), Vote("b", 4, "Agent2", 0.5)], t).agent == "Agent0"  # earliest
    assert consensus([Vote("a", 5, None, 0.5)], t).agent == "Agent2"
    with pytest.raises(ValueError, match="unknown consensus"):
        consensus(v, t, rule="mean")


@pytest.mark.parametrize("preset", ["paper", "small"])
def test_echo_agent_not_in_trace_is_repaired(fake_server, make_gateway, preset):
    settings = resolve_methods(ATTRIBUTION_METHODS, ["echo"], preset=preset)["echo"]
    names = settings["analysts"]
    fake_server.push(_scan(3, 1), _panel(names, 3, "James Bond"), _panel(names, 3, "Agent0"))
    a = run_method(_trace(), ATTRIBUTION_METHODS["echo"], make_gateway(fake_server), settings)
    schema = json.dumps(_schema(fake_server.chat_requests[1]))
    assert "James Bond" not in schema and "Agent2" in schema
    assert fake_server.count == 3 and (a.step, a.agent) == (3, "Agent0")


def test_echo_panel_steps_are_the_candidates(fake_server, make_gateway):
    names = list(ANALYSTS)
    fake_server.push(_scan(4, 1), _panel(names, 2, "Agent2"), _panel(names, 1, "Agent1"))
    a = run_method(_trace(), ATTRIBUTION_METHODS["echo"], make_gateway(fake_server))
    assert fake_server.count == 3 and a.step == 1  # step 2 is no candidate: repaired
    step_schema = json.dumps(_schema(fake_server.chat_requests[1])["$defs"])
    assert '"enum": [4, 1]' in step_schema


def test_echo_paper_scan_bounds_steps(fake_server, make_gateway):
    names = list(ANALYSTS)
    fake_server.push(_scan(9), _scan(), _scan(2), _panel(names, 2, "Agent2"))
    a = run_method(_trace(), ATTRIBUTION_METHODS["echo"], make_gateway(fake_server))
    scan = _schema(fake_server.chat_requests[0])
    assert scan["properties"]["candidates"]["minItems"] == 1
    assert a.step == 2 and fake_server.count == 4


def test_echo_small_undetermined(fake_server, make_gateway):
    gw = make_gateway(fake_server, cache=False)
    fake_server.push(_scan(99))
    a = run_method(_trace(), ATTRIBUTION_METHODS["echo"], gw, SMALL)
    assert (a.step, a.agent, a.error) == (None, None, None)
    assert a.details["invalid_candidates"] == [99] and fake_server.count == 1  # no panel call
    fake_server.push(_scan(2, 4), _panel(SMALL["analysts"], None, None))
    b = run_method(_trace(), ATTRIBUTION_METHODS["echo"], gw, SMALL)
    assert b.step is None and "no analyst vote" in b.reason


def test_echo_hierarchical_context(fake_server, make_gateway):
    body = lambda i: (  # noqa: E731
        f"We work on part {i}. "
        + "filler " * 60
        + f"\nTherefore result {i} is ready."
        + ("\nError: lookup failed" if i == 2 else "")
    )
    t = _trace(14, content=body)
    names = list(ANALYSTS)
    fake_server.push(_scan(7), _panel(names, 7, "Agent1"))
    a = run_method(t, ATTRIBUTION_METHODS["echo"], make_gateway(fake_server))
    assert a.step == 7
    user = _user(fake_server.chat_requests[1])
    window = user[user.index("Candidate step 7") :]
    level = {int(n): lv for n, lv in re.findall(r"Step (\d+) \| Agent\d: \[(L\d)\]", window)}
    assert level == {
        **{i: "L1" for i in (6, 7, 8)},
        **{i: "L2" for i in (4, 5, 9, 10)},
        **{i: "L3" for i in (1, 2, 3, 11, 12, 13)},
    }
    assert window.count("filler") > 0 and "Step 0 |" not in window  # step 0 is 7 away: global view only
    assert "Error: lookup failed" in window  # L3 keeps warning lines
    globl = user[: user.index("Candidate step 7")]
    assert all(f"Step {i} |" in globl for i in range(14)) and "[decision]" in globl and "[error]" in globl


def test_echo_presets():
    paper, small = (resolve_methods(ATTRIBUTION_METHODS, ["echo"], preset=p)["echo"] for p in ("paper", "small"))
    assert paper["max_tokens"] is None and paper["max_candidates"] is None and len(paper["analysts"]) == 6
    assert (paper["l1_radius"], paper["l2_radius"], paper["l3_radius"]) == (1, 3, 6)  # ECHO's layers
    assert small["max_tokens"] == 384 and small["max_candidates"] == 3 and small["prompts"] == "small"
    assert (paper["consensus"], paper["tie_break"]) == ("confidence_weighted", "earliest")
    from agentcausal.exceptions import ConfigError

    with pytest.raises(ConfigError, match="distinct"):
        resolve_methods(ATTRIBUTION_METHODS, ["echo"], {"echo": {"analysts": ["balanced", "balanced"]}})


def test_echo_panel_keeps_the_candidates_that_fit(fake_server, make_gateway):
    names = list(ANALYSTS)
    t = _trace(20, content=lambda i: f"step {i} " + "words " * 300)
    fake_server.push(_scan(*range(19, 9, -1)), _panel(names, 19, "Agent1"))
    a = run_method(t, ATTRIBUTION_METHODS["echo"], make_gateway(fake_server, context_window=4096))
    kept, over = a.details["candidates"], a.details["candidates_over_budget"]
    assert 1 <= len(kept) < 10 and [c["step"] for c in kept] + over == list(range(19, 9, -1))  # scan order kept
    assert a.step == 19 and len(_user(fake_server.chat_requests[1])) < 4096 * 4
