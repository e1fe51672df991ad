"""What the command line prints from a finished run's ``run.json`` (``agentcausal_cli/run_output.py``): the
endpoint-unreachable line and the circuit breaker's rows come from the typed failure tally, not from error text."""

from __future__ import annotations

from agentcausal.exceptions import EndpointDownError, EndpointUnreachableError, StructuredOutputError
from agentcausal.records import FailureTally, RunRecord, failure_fields
from agentcausal_cli.run_output import _breaker_rows, unreachable_summary


def _meta(total: int, *errors: BaseException, **extra) -> dict:
    tally = FailureTally()
    for exc in errors:
        tally.add(RunRecord(method="m", **failure_fields(exc)))
    return {"rows": {"total": total}, "failures": tally.facts(), **extra}


def test_every_row_unreachable_gives_one_line_naming_profile_endpoint_and_cause():
    dead = EndpointUnreachableError("cli", "http://127.0.0.1:9/v1", "stage 'baseline': connection failed (4 retries)")
    assert unreachable_summary(_meta(2, dead, dead)) == (
        "endpoint unreachable: cli at http://127.0.0.1:9/v1 — stage 'baseline': connection failed (4 retries) "
        "(all 2 row(s) failed; nothing was cached)"
    )
    # one row answered, or failed otherwise: no such line
    assert unreachable_summary(_meta(3, dead, dead)) is None
    assert unreachable_summary(_meta(2, dead, StructuredOutputError("s", "M", "x", 3, "bad"))) is None
    assert unreachable_summary({"rows": {"total": 1}}) is None  # a run folder without a tally


def test_the_error_text_is_not_read():
    """A message that reads like an unreachable endpoint but is another kind gives no line."""
    lookalike = StructuredOutputError("s", "M", "EndpointUnreachableError: profile 'p': endpoint u unreachable", 3, "x")
    meta = _meta(1, lookalike)
    assert "EndpointUnreachableError" in failure_fields(lookalike)["error"] and unreachable_summary(meta) is None


def test_breaker_rows_come_from_the_tally_and_an_older_run_json_from_its_stopped_line():
    down = EndpointDownError("p at http://h/v1", 3, "refused", profile="p")
    assert _breaker_rows(_meta(5, down, down), not_run=4) == 2  # the other two held back by --max-cost
    assert _breaker_rows(_meta(5), not_run=4) == 0
    assert _breaker_rows({"rows": {"total": 5}, "stopped": "endpoint down: p at http://h/v1 ..."}, not_run=4) == 4
    assert _breaker_rows({"rows": {"total": 5}}, not_run=4) == 0
