"""What every result record of a run holds, attribution and discovery alike (:class:`RunRecord`).

A record is what one method gave on one item (a trace, or a dataset and seed): the answer fields of its
half (``Attribution``'s step and agent, ``DiscoveryOutcome``'s graph) beside the fields defined here,
which the run engine reads and stores the same way for both halves. The method fills the answer,
``details``, ``status`` and ``prompt_version`` (where its preset picks the prompt set); the run envelope
stamps ``models``, ``usage``, ``seconds`` and ``reused`` once (:meth:`agentcausal.runs.envelope.Envelope.stamp`);
a failure becomes ``error``, ``status``, ``status_detail`` and ``failure`` by one rule (:func:`failure_fields`).

``failure`` (:class:`Failure`) holds the error's kind and the fields readers act on (the profile and
endpoint of an unreachable endpoint ...), so no reader parses ``error``; the run engine tallies them per kind
into ``run.json``'s ``failures`` (:class:`FailureTally`), which the command line reads. A record stored before
the field existed reads with ``failure = None``; a run folder without ``failures`` reads as no tally.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from agentcausal.exceptions import AgentCausalError, FailureKind, is_content_failure

__all__ = [
    "Failure",
    "FailureCount",
    "FailureKind",
    "FailureTally",
    "ResultStatus",
    "RunRecord",
    "failure_fields",
    "failure_of",
    "read_failures",
]

#: how complete a result is: ``complete``; ``degraded`` (a method fell back after a failed stage,
#: e.g. DCFA's GCA hypothesis after LCE failed); ``content_failed`` (a reply still invalid after all
#: repairs, an algorithm failing on the data: a property of the input, cached); ``failed`` (transport,
#: auth, rate limit, timeout, dead worker: never cached, retried by the next run); ``not_run`` (never
#: started: the run stopped first, e.g. its circuit breaker opened on a dead endpoint; never cached)
ResultStatus = Literal["complete", "degraded", "content_failed", "failed", "not_run"]


class Failure(BaseModel):
    """The typed fields of a record's failure, beside its message (``error``).

    Attributes
    ----------
    kind : FailureKind, from the error's class (:attr:`AgentCausalError.failure_kind
        <agentcausal.exceptions.AgentCausalError.failure_kind>`; ``other`` for any other exception)
    profile : str or None, the LLM profile the error names
    endpoint : str or None, the endpoint's base URL (for ``endpoint_down``: the circuit breaker's
        ``profile at URL``)
    cause : str or None, what the endpoint did (refused, timed out, the HTTP error's text), without the wrapper
    http_status : int or None, the HTTP status of an ``http_error``
    """

    kind: FailureKind = "other"
    profile: str | None = None
    endpoint: str | None = None
    cause: str | None = None
    http_status: int | None = None


def _text(exc: BaseException, name: str) -> str | None:
    v = getattr(exc, name, None)
    return v if isinstance(v, str) else None


def failure_of(exc: BaseException) -> Failure:
    """The :class:`Failure` of ``exc``: its class's kind and the structured fields it carries.

    Examples
    --------
    >>> from agentcausal.exceptions import EndpointUnreachableError
    >>> failure_of(EndpointUnreachableError("cli", "http://h:9/v1", "refused"))
    Failure(kind='endpoint_unreachable', profile='cli', endpoint='http://h:9/v1', cause='refused', http_status=None)
    >>> failure_of(ValueError("bad")).kind
    'other'
    """
    if not isinstance(exc, AgentCausalError):
        return Failure()
    status = getattr(exc, "status", None)
    return Failure(
        kind=exc.failure_kind,
        profile=_text(exc, "profile"),
        endpoint=_text(exc, "base_url") or _text(exc, "endpoint"),
        cause=_text(exc, "cause") if exc.failure_kind != "http_error" else _text(exc, "detail"),
        http_status=status if isinstance(status, int) and not isinstance(status, bool) else None,
    )


class RunRecord(BaseModel):
    """The fields every record of a run shares.

    Attributes
    ----------
    method : str, the method's name as the run plan names it
    prompt_version : str, the prompt set used ("" for a method without prompts)
    models : dict stage -> ``profile:model`` (``"unrouted"``)
    usage : dict stage -> token, call and time totals (:class:`agentcausal.llm.usage.StageUsage` as a dict)
    seconds : float, wall time of the method on its item (s)
    error : str or None, ``"<ErrorClass>: <message>"`` when the method failed (the record counts as wrong)
    details : dict, the method's own record (DCFA's deviations and search, MAC's debates ...)
    status : ResultStatus
    status_detail : str or None, why degraded or failed
    failure : Failure or None, the typed fields of ``error`` (None without one, and in records stored
        before the field existed)
    reused : bool, this run paid nothing for the record (read from the results store, or every LLM call a
        cache hit on an entry an earlier run wrote); ``usage`` is what it cost when it was computed
    """

    method: str
    prompt_version: str = ""
    models: dict[str, str] = Field(default_factory=dict)
    usage: dict[str, dict[str, int | float]] = Field(default_factory=dict)  # counts stay int through JSON
    seconds: float = 0.0
    error: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    status: ResultStatus = "complete"
    status_detail: str | None = None
    failure: Failure | None = None
    reused: bool = False


def failure_fields(
    exc: BaseException, status: ResultStatus | None = None, *, max_chars: int | None = None
) -> dict[str, Any]:
    """The ``error``, ``status``, ``status_detail`` and ``failure`` of a record whose method raised ``exc``.

    Parameters
    ----------
    exc : the exception
    status : ``content_failed`` or ``failed``; None = from :func:`~agentcausal.exceptions.is_content_failure`
    max_chars : int or None, cut ``error`` to this many characters

    Returns
    -------
    dict with ``error`` (``"<ErrorClass>: <message>"``), ``status``, ``status_detail`` (the class name) and
    ``failure`` (:func:`failure_of`)

    Examples
    --------
    >>> f = failure_fields(ValueError("bad"), "failed")
    >>> f["error"], f["status"], f["status_detail"], f["failure"].kind
    ('ValueError: bad', 'failed', 'ValueError', 'other')
    """
    if status is None:
        status = "content_failed" if is_content_failure(exc) else "failed"
    error = f"{type(exc).__name__}: {exc}"
    return {
        "error": error[:max_chars] if max_chars else error,
        "status": status,
        "status_detail": type(exc).__name__,
        "failure": failure_of(exc),
    }


class FailureCount(Failure):
    """One kind's entry of ``run.json``'s ``failures``: its rows and the fields of its first failure.

    Attributes
    ----------
    rows : int, records of this kind in the run (reused ones included)
    """

    rows: int = 0


class FailureTally:
    """Records by failure kind, each kind with the fields of its first record (``run.json``'s ``failures``).

    >>> from agentcausal.exceptions import EndpointUnreachableError
    >>> t = FailureTally()
    >>> for _ in range(2):
    ...     t.add(RunRecord(method="m", **failure_fields(EndpointUnreachableError("cli", "http://h:9/v1", "refused"))))
    >>> t.add(RunRecord(method="m"))
    >>> t.facts()
    {'endpoint_unreachable': {'profile': 'cli', 'endpoint': 'http://h:9/v1', 'cause': 'refused', 'rows': 2}}
    """

    def __init__(self) -> None:
        self._kinds: dict[str, FailureCount] = {}

    def add(self, record: RunRecord) -> None:
        """Count ``record`` under its failure's kind (a record without one is not counted)."""
        f = record.failure
        if f is None:
            return
        entry = self._kinds.get(f.kind)
        if entry is None:
            self._kinds[f.kind] = FailureCount(**f.model_dump(), rows=1)
        else:
            entry.rows += 1

    def facts(self) -> dict[str, dict[str, Any]]:
        """kind -> its count and first fields, as JSON values (unset fields left out)."""
        return {k: c.model_dump(exclude={"kind"}, exclude_none=True) for k, c in self._kinds.items()}


def read_failures(run_meta: Mapping[str, Any]) -> dict[str, FailureCount]:
    """The failure tally of a run's ``run.json`` (:meth:`FailureTally.facts`): kind -> :class:`FailureCount`.

    A run folder written before ``run.json`` had ``failures`` (or with a malformed entry) reads as an empty
    tally for it.

    >>> read_failures({"failures": {"endpoint_down": {"rows": 3, "profile": "p"}}})["endpoint_down"].rows
    3
    >>> read_failures({})
    {}
    """
    raw = run_meta.get("failures")
    out: dict[str, FailureCount] = {}
    for kind, entry in (raw if isinstance(raw, Mapping) else {}).items():
        try:
            out[kind] = FailureCount.model_validate({**entry, "kind": kind})
        except (ValidationError, TypeError):
            continue
    return out
