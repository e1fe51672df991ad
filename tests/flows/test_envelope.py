"""The one envelope around a method run (agentcausal.runs.envelope): usage, models, caught and raised failures."""

from __future__ import annotations

import pytest

from agentcausal.exceptions import EndpointUnreachableError, StructuredOutputError, UnknownStageError
from agentcausal.llm.usage import StageUsage, UsageLedger
from agentcausal.runs.envelope import run_enveloped


class _Gw:
    def __init__(self):
        self.usage = UsageLedger()

    def model_for(self, stage):
        if stage == "nowhere":
            raise UnknownStageError(stage, "default", [])
        return f"p:{stage}"


def test_usage_of_this_item_only_summed_over_its_ledger_items_and_models_labelled():
    gw = _Gw()
    gw.usage.record("s", "t1", StageUsage(calls=1, requests=1, prompt_tokens=5))  # before the run: not counted

    def method():
        gw.usage.record("s", "t1", StageUsage(calls=1, requests=1, prompt_tokens=7))
        gw.usage.record("s", "t1:m", StageUsage(calls=1, requests=2, prompt_tokens=3))
        gw.usage.record("s", "other", StageUsage(calls=1, requests=1, prompt_tokens=100))
        return "ok"

    env = run_enveloped(method, gw=gw, stages=["s", "nowhere"], usage_items=["t1", "t1:m"], key=lambda: "k")
    assert env.result == "ok" and env.error is None and env.key == "k" and env.seconds >= 0
    assert env.usage["s"].prompt_tokens == 10 and env.usage["s"].requests == 3 and not env.reused
    assert env.models == {"s": "p:s", "nowhere": "unrouted"}


def test_all_cache_hits_from_an_earlier_run_are_reuse():
    gw = _Gw()
    env = run_enveloped(
        lambda: gw.usage.record("s", "t", StageUsage(calls=1, cache_hits=1)), gw=gw, stages=["s"], usage_items=["t"]
    )
    assert env.reused


def test_content_failure_is_returned_and_a_failure_of_the_run_raised_when_asked():
    def bad_reply():
        raise StructuredOutputError("s", "M", "x", 3, "bad")

    def down():
        raise EndpointUnreachableError("p", "http://h", "down")

    assert isinstance(run_enveloped(bad_reply, raise_transient=True).error, StructuredOutputError)
    assert isinstance(run_enveloped(down).error, EndpointUnreachableError)
    with pytest.raises(EndpointUnreachableError):
        run_enveloped(down, raise_transient=True)
