"""What every result record of a run holds, attribution and discovery alike (:class:`RunRecord`).

A record is what one method gave on one item (a trace, or a dataset and seed): the answer fields of its
half (``Attribution``'s step and agent, ``DiscoveryOutcome``'s graph) beside the fields defined here,
which the run engine reads and stores the same way for both halves. The method fills the answer,
``details``, ``status`` and ``prompt_version`` (where its preset picks the prompt set); the run envelope
stamps ``models``, ``usage``, ``seconds`` and ``reused`` once (:meth:`agentcausal.runs.envelope.Envelope.stamp`);
a failure becomes ``error``, ``status`` and ``status_detail`` by one rule (:func:`failure_fields`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agentcausal.exceptions import is_content_failure

__all__ = ["ResultStatus", "RunRecord", "failure_fields"]

#: how complete a result is: ``complete``; ``degraded`` (a method fell back after a failed stage,
#: e.g. DCFA's GCA hypothesis after LCE failed); ``content_failed`` (a reply still invalid after all
#: repairs, an algorithm failing on the data: a property of the input, cached); ``failed`` (transport,
#: auth, rate limit, timeout, dead worker: never cached, retried by the next run); ``not_run`` (never
#: started: the run stopped first, e.g. its circuit breaker opened on a dead endpoint; never cached)
ResultStatus = Literal["complete", "degraded", "content_failed", "failed", "not_run"]


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
    reused: bool = False


def failure_fields(
    exc: BaseException, status: ResultStatus | None = None, *, max_chars: int | None = None
) -> dict[str, Any]:
    """The ``error``, ``status`` and ``status_detail`` of a record whose method raised ``exc``.

    Parameters
    ----------
    exc : the exception
    status : ``content_failed`` or ``failed``; None = from :func:`~agentcausal.exceptions.is_content_failure`
    max_chars : int or None, cut ``error`` to this many characters

    Returns
    -------
    dict with ``error`` (``"<ErrorClass>: <message>"``), ``status`` and ``status_detail`` (the class name)

    Examples
    --------
    >>> failure_fields(ValueError("bad"), "failed")
    {'error': 'ValueError: bad', 'status': 'failed', 'status_detail': 'ValueError'}
    """
    if status is None:
        status = "content_failed" if is_content_failure(exc) else "failed"
    error = f"{type(exc).__name__}: {exc}"
    return {"error": error[:max_chars] if max_chars else error, "status": status, "status_detail": type(exc).__name__}
