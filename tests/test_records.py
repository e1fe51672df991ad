"""The typed failure of a record (``agentcausal/records.py``): its kind and fields from the error's class, a record
stored before the field existed reads without one, and the per-kind tally that ``run.json`` carries reads back."""

from __future__ import annotations

import json
import typing

import pytest

from agentcausal import exceptions
from agentcausal.exceptions import (
    AgentCausalError,
    ContextWindowError,
    EndpointCheckError,
    EndpointDownError,
    EndpointUnreachableError,
    LLMCallError,
    StructuredOutputError,
)
from agentcausal.records import Failure, FailureTally, RunRecord, failure_fields, failure_of, read_failures
from agentcausal.runs.budget import BudgetExceeded
from agentcausal.traces.model import Attribution


@pytest.mark.parametrize(
    ("exc", "want"),
    [
        (
            EndpointUnreachableError("cli", "http://h:9/v1", "stage 'baseline': connection failed (4 retries)"),
            Failure(
                kind="endpoint_unreachable",
                profile="cli",
                endpoint="http://h:9/v1",
                cause="stage 'baseline': connection failed (4 retries)",
            ),
        ),
        (
            EndpointCheckError("cli", "http://h:9/v1", "refused"),
            Failure(kind="endpoint_unreachable", profile="cli", endpoint="http://h:9/v1", cause="refused"),
        ),
        (
            EndpointDownError("fake at http://h:1/v1", 8, "refused", profile="fake"),
            Failure(kind="endpoint_down", profile="fake", endpoint="fake at http://h:1/v1", cause="refused"),
        ),
        (
            LLMCallError("p", "baseline", 401, "bad key"),
            Failure(kind="http_error", profile="p", cause="bad key", http_status=401),
        ),
        (StructuredOutputError("s", "M", "raw", 3, "bad"), Failure(kind="invalid_reply")),
        (ContextWindowError("s", "p", 9000, 8192, 40000), Failure(kind="context_window", profile="p")),
        (BudgetExceeded("not run: cap"), Failure(kind="budget")),
        (AgentCausalError("x"), Failure(kind="other")),
        (RuntimeError("no record of this job"), Failure(kind="other")),
    ],
)
def test_failure_of_takes_the_kind_from_the_class_and_the_fields_it_carries(exc, want):
    assert failure_of(exc) == want
    assert failure_fields(exc)["failure"] == want


def test_a_record_stored_before_the_field_existed_reads_without_a_failure():
    old = {"trace_id": "t", "method": "all_at_once", "error": "LLMCallError: x", "status": "failed"}
    rec = Attribution.model_validate_json(json.dumps(old))
    assert rec.failure is None and rec.status == "failed"
    new = Attribution(trace_id="t", method="m", **failure_fields(LLMCallError("p", "s", 400, "x")))
    assert Attribution.model_validate_json(new.model_dump_json()).failure == new.failure
    assert new.failure is not None and new.failure.kind == "http_error"


def test_the_tally_counts_each_kind_with_its_first_fields_and_reads_back_from_run_json():
    tally = FailureTally()
    for url in ("http://a/v1", "http://b/v1"):
        tally.add(RunRecord(method="m", **failure_fields(EndpointUnreachableError("cli", url, "refused"))))
    tally.add(RunRecord(method="m", **failure_fields(StructuredOutputError("s", "M", "raw", 3, "bad"))))
    tally.add(RunRecord(method="m"))  # no failure: not counted
    meta = json.loads(json.dumps({"failures": tally.facts()}))  # as run.json holds it
    back = read_failures(meta)
    assert set(back) == {"endpoint_unreachable", "invalid_reply"}
    down = back["endpoint_unreachable"]
    assert (down.rows, down.profile, down.endpoint, down.cause) == (2, "cli", "http://a/v1", "refused")
    assert back["invalid_reply"].rows == 1


def test_a_run_json_without_a_tally_or_with_a_malformed_entry_reads_as_none_of_it():
    assert read_failures({}) == {}
    assert read_failures({"failures": None}) == {}
    got = read_failures({"failures": {"endpoint_down": {"rows": "many"}, "other": [1], "budget": {"rows": 2}}})
    assert set(got) == {"budget"} and got["budget"].rows == 2


def _kinds(tp) -> set[str]:
    args = typing.get_args(tp)
    return {a for a in args if isinstance(a, str)} | {k for a in args if not isinstance(a, str) for k in _kinds(a)}


def test_every_error_class_names_a_known_kind_and_a_subclass_keeps_its_parents():
    known = _kinds(exceptions.FailureKind)
    assert {"endpoint_unreachable", "endpoint_down", "other"} <= known
    classes = [getattr(exceptions, n) for n in exceptions.__all__ if isinstance(getattr(exceptions, n), type)]
    assert all(c.failure_kind in known for c in classes), {c.__name__: c.failure_kind for c in classes}
    assert exceptions.MissingAPIKeyError.failure_kind == exceptions.ConfigError.failure_kind == "config"
    assert (
        exceptions.InvalidTracesError.failure_kind == "input" and exceptions.CorruptStoreError.failure_kind == "other"
    )
