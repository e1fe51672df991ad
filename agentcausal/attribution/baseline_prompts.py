"""Prompt pieces and reply checks shared by the Who&When baselines and the baselines built like them.

* :func:`system_prompt`, :func:`baseline_messages`, :func:`task_block`: the short instructions and the
  delimited question (and, with ground truth, the correct answer); :class:`Prompt` the messages of a
  full-trace call and the steps the budget shortened.
* :func:`reply_text`, :func:`enum_choice`, :func:`agent_names`, :func:`bounded_step`: the types of a reply's
  fields; :func:`text_fields` and :func:`capped_reply` a reply model's text fields capped.
* :func:`decisive_verdict`: the decisive error a reply names, checked against the trace;
  :func:`undetermined` the record of a run that names none.

References
----------
Zhang, S. et al. "Which Agent Causes Task Failures and When? On Automated Failure Attribution of LLM
Multi-Agent Systems." ICML 2025. arXiv:2505.00212, section 4.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, Field, WithJsonSchema, create_model

from agentcausal.llm.replies import ShortText
from agentcausal.traces.model import Attribution, Trace
from agentcausal.traces.render import DATA_NOTICE, delimit

__all__ = [
    "agent_names",
    "bounded_step",
    "capped_reply",
    "enum_choice",
    "reply_text",
    "text_fields",
    "Prompt",
    "system_prompt",
    "baseline_messages",
    "decisive_verdict",
    "task_block",
    "undetermined",
]

#: a reply model
M = TypeVar("M", bound=BaseModel)

_ROLE = (
    "You find the decisive error in a failed multi-agent run: the step whose mistake, "
    "had it been avoided, would have let the team reach the correct answer. "
    "Steps are numbered from 0."
)


def reply_text(max_chars: int | None) -> Any:
    """The type of a free-text reply field: capped at ``max_chars`` characters, or not at all.

    Parameters
    ----------
    max_chars : int or None; an int gives :func:`~agentcausal.llm.replies.ShortText` (schema
        ``maxLength``, longer text cut on validation: the ``small`` presets' bound on a sub-2B
        model's decode time); None gives a plain ``str`` (the ``paper`` presets: no cap the
        papers do not have; the profile's completion budget bounds the reply)

    Examples
    --------
    >>> from pydantic import create_model
    >>> create_model("R", reason=(reply_text(5), ...))(reason="abcdefgh").reason
    'abcde'
    >>> "maxLength" in create_model("R", reason=(reply_text(None), ...)).model_json_schema()["properties"]["reason"]
    False
    """
    return str if max_chars is None else ShortText(max_chars)


def text_fields(model: type[BaseModel], max_chars: int | None, *names: str) -> dict[str, Any]:
    """``create_model`` definitions of ``model``'s text fields ``names``: typed :func:`reply_text` of ``max_chars``,
    each with the description ``model`` gives it.

    Examples
    --------
    >>> from pydantic import BaseModel, Field
    >>> class R(BaseModel):
    ...     reason: str = Field(description="Why.")
    >>> create_model("R", __base__=R, **text_fields(R, 5, "reason"))(reason="abcdefgh").reason
    'abcde'
    """
    return {n: (reply_text(max_chars), Field(description=model.model_fields[n].description)) for n in names}


def capped_reply(model: type[M], max_chars: int | None, *names: str) -> type[M]:
    """``model`` with its text fields ``names`` capped at ``max_chars`` characters (:func:`text_fields`; None: no
    cap), its name and docstring kept (the schema's title and description are ``model``'s)."""
    return create_model(model.__name__, __base__=model, __doc__=model.__doc__, **text_fields(model, max_chars, *names))


def bounded_step(n_steps: int, description: str) -> Any:
    """A required reply field (``create_model`` definition) of a step number in ``0..n_steps-1`` (schema
    ``minimum``/``maximum``): a forced choice (``paper`` presets), an out-of-range step goes through the
    gateway's repair loop.

    Examples
    --------
    >>> create_model("R", step=bounded_step(3, "Step."))(step=2).step
    2
    """
    return (int, Field(ge=0, le=max(n_steps - 1, 0), description=description))


def agent_names(trace: Trace) -> tuple[str, ...]:
    """The trace's own agents, in order of first appearance (the choices of an agent-naming reply)."""
    return tuple(dict.fromkeys(s.agent for s in trace.steps))


@functools.lru_cache(maxsize=1024)
def enum_choice(values: tuple[Any, ...], json_type: Literal["string", "integer"] = "string") -> Any:
    """A reply field's type that takes one of ``values``, written as a JSON-schema ``enum``.

    An enum even for one value: pydantic writes a one-value ``Literal`` as ``const``, which
    fewer servers take.

    Parameters
    ----------
    values : tuple of str or int, the allowed values (e.g. :func:`agent_names`)
    json_type : "string" or "integer", the schema type of the values

    Returns
    -------
    An ``Annotated[Literal[values], WithJsonSchema(...)]`` type for a pydantic field; the same
    object for the same arguments (cached: building the ``Literal`` costs more than the lookup,
    and pydantic copies the schema dict before use).
    """
    return Annotated[Literal[values], WithJsonSchema({"type": json_type, "enum": list(values)})]


def decisive_verdict(
    trace: Trace, step: int | None, agent: str | None, details: dict[str, Any]
) -> tuple[int | None, str | None]:
    """The decisive error a reply names, checked against the trace.

    A step outside ``0..n-1`` is recorded as ``details["invalid_step"]`` and read as
    undetermined (None); a blank agent is None; a step without an agent takes the
    step's speaker.

    Parameters
    ----------
    trace : Trace, n steps
    step : int or None, the reply's 0-based step
    agent : str or None, the reply's agent
    details : dict, the attribution's details (updated in place)

    Returns
    -------
    (step, agent), each None when undetermined.
    """
    agent = (agent or "").strip() or None
    if step is not None and not 0 <= step < len(trace):
        details["invalid_step"] = step
        step = None
    if step is not None and agent is None:
        agent = trace.steps[step].agent
    return step, agent


class Prompt(NamedTuple):
    """Chat messages and the 0-based steps the budget shortened."""

    messages: list[dict[str, str]]
    shortened: tuple[int, ...]


def undetermined(trace: Trace, method: str, version: str, reason: str, details: dict[str, Any]) -> Attribution:
    """The Attribution of a run that names no decisive error: ``step``, ``agent`` and ``candidates`` None,
    ``reason`` saying why (``prompt_version`` ``version``, ``details`` as the method records them)."""
    return Attribution(
        trace_id=trace.id, method=method, step=None, agent=None, reason=reason, prompt_version=version, details=details
    )


def baseline_messages(instruction: str, user: str, role: str | None = None) -> list[dict[str, str]]:
    """The chat messages of one baseline call: :func:`system_prompt` of ``instruction``, then ``user``.

    Parameters
    ----------
    instruction : str, one sentence saying what to answer
    user : str, the user message
    role : str or None, the system message's first sentence; None = ours (the decisive-error
        definition). The ``paper`` presets pass the source code's own system message.

    Returns
    -------
    list of two message dicts (system, user)
    """
    return [{"role": "system", "content": system_prompt(instruction, role)}, {"role": "user", "content": user}]


def system_prompt(task: str, role: str | None = None) -> str:
    """The system message: role, the data notice, and the task.

    Parameters
    ----------
    task : str, one sentence saying what to answer
    role : str or None, the role sentence; None = ours (the decisive-error definition)

    Returns
    -------
    str

    Examples
    --------
    >>> system_prompt("Say hi.", "You are a helpful assistant.").startswith("You are a helpful assistant. ")
    True
    """
    return f"{role or _ROLE} {DATA_NOTICE} {task} Reply with one JSON object."


def task_block(trace: Trace, with_ground_truth: bool) -> str:
    """The delimited question and, optionally, the correct answer.

    Parameters
    ----------
    trace : Trace
    with_ground_truth : bool

    Returns
    -------
    str, ``<question>...</question>`` and ``<answer>...</answer>`` lines, escaped.
    """
    out = "The team's task:\n" + delimit("question", trace.question.strip())
    if with_ground_truth:
        out += "\nThe correct answer:\n" + delimit("answer", trace.ground_truth.strip())
    return out
