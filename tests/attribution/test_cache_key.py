"""Cached attributions stay valid: the content hashes, cache keys and plan items that fixed inputs get are the
values the code gave before the plan and the keyer were made faster (pinned here: a change that moves one of them
makes every cached record of those traces unreachable, and must be deliberate)."""

from __future__ import annotations

import hashlib
import json

import pytest

from agentcausal.attribution.cache_key import attribution_key, attribution_keyer
from agentcausal.attribution.method_settings import resolve_methods
from agentcausal.attribution.plan import attribute_plan
from agentcausal.registry import ATTRIBUTION, ATTRIBUTION_METHODS
from agentcausal.runs.half import Job
from agentcausal.runs.plan import ITEMS_FILE
from agentcausal.settings import RunSettings
from agentcausal.traces.jsonl import write_jsonl
from agentcausal.traces.model import Label, Step, Trace
from agentcausal_fakes.profiles import bench_gateway, profiles_toml
from agentcausal_fakes.synthetic import iter_synthetic_traces

BASE_URL = "http://127.0.0.1:9/v1"  # nothing is sent: the URL is part of each stage's identity in the key
METHODS = ["all_at_once", "step_by_step", "binary_search", "a2p", "echo", "dcfa"]


def pinned_traces() -> list[Trace]:
    """Three traces whose text holds what JSON escapes (quotes, backslashes, control characters), non-ASCII text,
    look-alike tags, metadata, and no label."""
    return [
        Trace(
            id="golden/plain",
            source="golden",
            question="Which step failed?",
            ground_truth="42",
            steps=[
                Step(index=0, agent="Orchestrator", role="Orchestrator (thought)", content="Plan: ask the coder."),
                Step(index=1, agent="Coder", content="print(6 * 7)"),
            ],
            label=Label(agent="Coder", step=1, reason="wrong"),
        ),
        Trace(
            id="golden/odd \u00e9",
            question='q "quoted" \\ back\\slash\n\ttab \u2028 \x7f \x01 \U0001f600 \u4e2d',
            ground_truth="",
            steps=[
                Step(
                    index=0,
                    agent="A\u00e9",
                    role="",
                    content='</trace> <step n="1"> \uff1c\uff0ftrace\uff1e',
                    metadata={"span_id": "s1"},
                ),
                Step(
                    index=1,
                    agent="B",
                    role="assistant",
                    content="line1\nline2\r\n\x00\x1f end",
                    metadata={"span_id": 7},
                ),
                Step(index=2, agent="A\u00e9", content=""),
            ],
            metadata={"failure_modes": ["FM-1", "FM-2"], "x": {"y": [1, 2.5, None]}},
        ),
        Trace(
            id="golden/one",
            question="?",
            ground_truth="yes",
            steps=[Step(index=0, agent="Solo", content="x" * 5000)],
            label=Label(agent="Solo", step=0),
        ),
    ]


CONTENT_HASHES = {
    "golden/plain": "ebd302c347bb810c9d08e14ad0c9fe364f6d2eb65ea977d1cf19ae35c57ed452",
    "golden/odd \u00e9": "5c5ac0ee8fb60d98c00ea5caa9bf801a6e2fad9960b8de3dc1700f6b9aa1eab5",
    "golden/one": "ebeceb0cbddf151a662021fae3b34efdd115ba953a85e7dea5dcbfab11189b3a",
}

#: (method, settings, repeat) per column of KEYS
KEY_CASES = [
    ("all_at_once", None, 0),
    ("all_at_once", {"prompts": "small"}, 0),
    ("all_at_once", None, 2),
    ("step_by_step", None, 1),
    ("dcfa", None, 0),
    ("echo", None, 0),
]
KEYS = {
    "golden/plain": [
        "bc200a46e6134d777422ffa55dfc428000c38de72301b19b1e3e779783208b0f",
        "c4d538d536d35d66e2b49423d7067e837d912144d9ecd1c9bc6aaf8cc55e70c5",
        "464408ec7acc1db1ffd09958534dc23166f58116d9e2a451ff3e0b575eb1309c",
        "605fdf055a958cfbccefcb771cda72e93bf49b62d13d0594584b87ba0f190bce",
        "70724ecc75301f4eb9c49eef859bb0c260d90b69579d6d2c9f6ad838d249c967",
        "ebe134a2a83698df6c0cd3d8b1b540a446c0084370eb9e52d1193a0b8ebbbe58",
    ],
    "golden/odd \u00e9": [
        "628b4b41cfcd29136603d7a620aa82f185470fae2fffd2602f14f955340eeff5",
        "63cdef8ea736f49cc5ad09196ca5ebc27b29ff8e5491daa624e8445035c17fb3",
        "cd54e9bdd2ed9806738203d777ee9a22cf83db76f672746bd5dae23f7a0c8f43",
        "30d9976d32093c67ddf402f4309238f4656508442f85c1f277bc02e655fa3fc8",
        "a07dd746b869cc376aa44c284461ddf7edfa6deb47cf169b88b72d4a430f4c1a",
        "af8e3f716bc7b816f7337e04ec6e8692f008f7018022c2e532537f06a574729f",
    ],
    "golden/one": [
        "840685e30692c13f9b34b6dffc4aabeec01f621999f36a9a5653e3d800c9960d",
        "8f1081ed8dff0d4788584165b3e233890726ab8b88221d1a31086be030efe00d",
        "9bc2729a2dea9faf8f77a454ded50e802b66e68e48b0679c25ed5736226eda98",
        "de85d126cc6091f364a50803c41e30bb757aa0c59d3d3f0c7ec723e7df7453a3",
        "859a5fe54be4c951cb635ff8241518f9f4692354e4d856fe3b150d08ea64bb76",
        "a4c78c439d04518491ec4f23514f9ff50d16a97d0caeae87ba0e2be310413ec1",
    ],
}
#: sha256 of plan.items.jsonl (the run folder's path masked) of the pinned traces and 5 synthetic ones
ITEMS_DIGEST = "92e4e5eb43a7d4f2b42870ca2d01416e5694d8a8d7b6423fc9d9c07e50309656"
#: sha256 of every job's key of that plan, in job order, joined
JOB_KEYS_DIGEST = "bbaa6ed93489f7de08243a6817f201f5cdd542ffa16f1ae30fbe1998d220f69c"


@pytest.fixture
def gw():
    g = bench_gateway(BASE_URL, 1, None, model="golden-model")
    yield g
    g.close()


def test_content_hashes_are_pinned():
    assert {t.id: t.content_hash() for t in pinned_traces()} == CONTENT_HASHES


def test_cache_keys_are_pinned(gw):
    for t in pinned_traces():
        got = [attribution_key(t, ATTRIBUTION_METHODS[m], st, gw, r) for m, st, r in KEY_CASES]
        assert got == KEYS[t.id], t.id


def test_a_keyer_bound_to_a_method_gives_the_key_of_each_trace_and_repeat(gw):
    keys = attribution_keyer(gw)
    for m, st, r in KEY_CASES:
        spec = ATTRIBUTION_METHODS[m]
        bound = keys.bound(spec, st)
        for t in pinned_traces():
            assert bound(t, r) == keys(t, spec, st, r) == attribution_key(t, spec, st, gw, r)


def test_plan_items_and_job_keys_are_pinned(tmp_path):
    corpus = write_jsonl(pinned_traces() + list(iter_synthetic_traces(5)), tmp_path / "corpus.jsonl")
    toml = profiles_toml(tmp_path / "p.toml", BASE_URL, 1, model="golden-model", context_window=8192)
    resolved = resolve_methods(ATTRIBUTION_METHODS, METHODS, None, with_ground_truth=True, preset="paper")
    run = tmp_path / "run"
    run.mkdir()
    plan = attribute_plan(
        [str(corpus)],
        [ATTRIBUTION_METHODS[m] for m in METHODS],
        resolved=resolved,
        preset="paper",
        routing="default",
        profiles_path=str(toml),
        items_file=run / ITEMS_FILE,
    )
    text = (run / ITEMS_FILE).read_text().replace(str(tmp_path.resolve()), "<TMP>").replace(str(tmp_path), "<TMP>")
    assert hashlib.sha256(text.encode()).hexdigest() == ITEMS_DIGEST
    assert [json.loads(line)["sha256"] for line in text.splitlines()[:3]] == list(CONTENT_HASHES.values())
    key = ATTRIBUTION.keyer(
        plan, RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / "c"), routing="default")
    )
    jobs = list(ATTRIBUTION.jobs(plan))
    assert len(jobs) == 8 * len(METHODS) and all(isinstance(j, Job) for j in jobs)
    assert hashlib.sha256("".join(key(j) for j in jobs).encode()).hexdigest() == JOB_KEYS_DIGEST
