"""Request shaping for the gateway: parameters per dialect, cache identity and key, reply schema, JSON, repair.

* **Cache key** (:func:`cache_key`): sha256 of (base URL, model, messages, sampling parameters,
  JSON schema, and a caller's ``namespace`` when it has one); the API key never enters it. For embedded profiles the word ``embedded`` (plus
  the GGUF path when ``model_path`` is set, and ``+reproducible`` in the reproducible mode)
  stands for the base URL, since the port changes every run (:func:`cache_identity`). A repeat
  index (``sample > 0``) enters the key, and the request as ``seed`` where the endpoint takes one.
* **Dialects** (:func:`chat_params`): the completion cap goes under the profile's
  ``token_cap_param``; ``temperature`` only where allowed; ``reasoning_effort`` and
  ``extra_body`` where set (see :class:`~agentcausal.llm.profiles.Profile`).
* **Caps** (:func:`sent_cap`): a method's derived cap sizes the visible answer, so a profile whose
  hidden reasoning counts against the cap gets its ``max_output_tokens`` instead; a cap a user set
  (:class:`FixedCap`, e.g. the baselines' ``max_tokens=1024``) is sent as it is under the profile's own
  field (``max_completion_tokens`` for OpenAI's reasoning models, which counts the hidden reasoning),
  and one above the profile's ``max_output_tokens`` is refused (:class:`~agentcausal.exceptions.ConfigError`).
* **Structured replies**: each reply model's JSON schema is built once per class
  (:func:`reply_schema`); a reply's JSON is cut out of code fences and prose
  (:func:`extract_json`); an invalid reply goes back with its validation error
  (:func:`repair_prompt`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import weakref
from typing import Any

from pydantic import BaseModel

from agentcausal.exceptions import ConfigError
from agentcausal.llm.profiles import Profile

__all__ = [
    "FixedCap",
    "cache_identity",
    "cache_key",
    "chat_params",
    "sent_cap",
    "extract_json",
    "repair_prompt",
    "reply_schema",
]

log = logging.getLogger(__name__)

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)

_SCHEMAS: weakref.WeakKeyDictionary[type[BaseModel], tuple[dict[str, Any], str]] = weakref.WeakKeyDictionary()
_SCHEMAS_LOCK = threading.Lock()


def reply_schema(reply_model: type[BaseModel]) -> tuple[dict[str, Any], str]:
    """``reply_model``'s JSON schema and its ``json.dumps`` text, built once per model class.

    A model class's schema never changes, and building it costs about a millisecond of
    CPU per call (pydantic); every structured call used to rebuild it. Held weakly, so a
    class built per trace shape goes when its method's cache lets it go. The dict is shared:
    callers only read it (it goes into the request and the cache key as it is).
    """
    hit = _SCHEMAS.get(reply_model)
    if hit is None:
        schema = reply_model.model_json_schema()
        hit = (schema, json.dumps(schema))
        with _SCHEMAS_LOCK:
            _SCHEMAS[reply_model] = hit
    return hit


def cache_key(base_url: str, model: str, payload: dict[str, Any], namespace: str | None = None) -> str:
    """sha256 hex of (base URL, model, request payload[, namespace]); never includes an API key.

    Parameters
    ----------
    base_url : str
        The profile's base URL (``"embedded"`` for the packaged server, so the
        key does not change with the port it happens to bind).
    model : str
    payload : dict
        Messages, sampling parameters and schema, JSON-serialisable.
    namespace : str or None
        A caller's own cache space (discovery: the method's name, so one method never reads
        another's replies); None (default) leaves the key as it was without one.
    """
    extra = {} if namespace is None else {"namespace": namespace}
    blob = json.dumps({"base_url": base_url, "model": model, **payload, **extra}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def repair_prompt(error: str, truncated: bool) -> str:
    """The user turn that sends a validation error back for repair (the instructor-style reask)."""
    head = (
        "Your reply was cut off before the JSON object was complete. Reply again with a shorter, "
        "complete JSON object (keep text fields brief)."
        if truncated
        else "Your reply did not validate against the required JSON schema."
    )
    return f"{head}\nValidation error:\n{error[:1500]}\nReply again with only the corrected JSON object."


def cache_identity(profile: Profile) -> str:
    """What stands for the endpoint in a cache key: the base URL, plus the GGUF for embedded profiles.

    The embedded server binds a different port each run, so ``"embedded"`` (not
    the port) enters the key; a profile that serves its own ``model_path`` adds it,
    so two GGUF files under one model name never share cached replies. The embedded
    server's reproducible mode (``Profile.reproducible``) computes other numbers than
    its fast mode, so it adds ``+reproducible``: a reproducible run never reuses a
    reply the fast mode drew, and a fresh cache and a warm one give the same rows.
    """
    if not profile.is_embedded:
        return profile.base_url
    ident = f"embedded:{profile.model_path}" if profile.model_path else profile.base_url
    return ident + ("+reproducible" if profile.reproducible else "")


class FixedCap(int):
    """A completion cap (tokens) a user set, to be sent as it is (never raised for hidden reasoning).

    An ``int`` (JSON and arithmetic unchanged); :func:`sent_cap` tells it from a derived cap.

    Examples
    --------
    >>> FixedCap(1024) == 1024, isinstance(FixedCap(1024), int)
    (True, True)
    """

    __slots__ = ()


def sent_cap(profile: Profile, max_tokens: int | None) -> tuple[str, int | None, str]:
    """The completion cap a call will send: ``(field, value, how it was derived)``.

    Parameters
    ----------
    profile : Profile, the routed profile
    max_tokens : int, FixedCap or None, the method's cap (None: none)

    Returns
    -------
    (field, value, why): ``field`` the profile's ``token_cap_param``; ``value`` None when no cap is sent;
    ``why`` one phrase (``"set, sent as it is"``, ``"profile ceiling: hidden reasoning counts against the cap"``, ...).

    Raises
    ------
    ConfigError
        If a :class:`FixedCap` exceeds the profile's ``max_output_tokens`` (it could not be honoured).

    Examples
    --------
    >>> p = Profile(name="r", kind="chat", base_url="http://x/v1", model="m", max_output_tokens=32768,
    ...             token_cap_param="max_completion_tokens", hidden_reasoning_counts=True)
    >>> sent_cap(p, 1024)
    ('max_completion_tokens', 32768, 'profile ceiling: hidden reasoning counts against the cap')
    >>> sent_cap(p, FixedCap(1024))
    ('max_completion_tokens', 1024, 'set, sent as it is; hidden reasoning counts against it')
    """
    field, ceiling = profile.token_cap_param, profile.max_output_tokens
    if isinstance(max_tokens, FixedCap):
        if ceiling is not None and max_tokens > ceiling:
            raise ConfigError(
                f"max_tokens={int(max_tokens)} exceeds profile {profile.name}'s max_output_tokens={ceiling}; "
                f"set max_tokens <= {ceiling} or leave it unset"
            )
        note = "; hidden reasoning counts against it" if profile.hidden_reasoning_counts else ""
        return field, int(max_tokens), "set, sent as it is" + note
    if profile.hidden_reasoning_counts:  # the method's cap sizes the visible answer; reasoning needs headroom
        return field, ceiling, "profile ceiling: hidden reasoning counts against the cap"
    if max_tokens is not None and ceiling is not None and max_tokens > ceiling:
        return field, ceiling, "method's cap, lowered to the profile ceiling"
    return field, max_tokens, "method's cap" if max_tokens is not None else "none sent"


def chat_params(
    profile: Profile, max_tokens: int | None, temperature: float | None, sample: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Request parameters in the profile's dialect, and what of them enters the cache key.

    Returns ``(params, key_extra)``: ``params`` go into the request (and the
    cache key); ``key_extra`` holds what changes the result without being sent
    (``sample`` when the endpoint takes no seed). A profile's ``extra_body``
    fields (e.g. Qwen3's thinking switch) join the params at the top of the
    request's JSON, as the ``openai`` client's ``extra_body`` would put them.
    With the defaults (dialect ``max_tokens``, temperature allowed, ``sample=0``) the params are exactly
    ``{"temperature": t, "max_tokens": n}``, so cache keys written before
    these settings existed still match. The cap is :func:`sent_cap`'s.

    Raises
    ------
    ValueError
        If ``sample`` is negative.
    ConfigError
        If a :class:`FixedCap` exceeds the profile's ``max_output_tokens``.
    """
    if sample < 0:
        raise ValueError(f"sample must be >= 0, got {sample}")
    params: dict[str, Any] = {}
    if profile.temperature_allowed:
        params["temperature"] = float(profile.temperature if temperature is None else temperature)
    elif temperature is not None and temperature != profile.temperature:
        log.debug("profile %s takes no temperature; ignoring temperature=%s", profile.name, temperature)
    field, cap, _why = sent_cap(profile, max_tokens)
    if cap is not None:
        params[field] = cap
    if profile.reasoning_effort is not None:
        params["reasoning_effort"] = profile.reasoning_effort
    if profile.extra_body:
        params.update(profile.extra_body)  # fields outside OpenAI's schema, at the top of the body
    key_extra: dict[str, Any] = {}
    if sample > 0:
        if profile.seed_supported:
            params["seed"] = sample
        else:
            key_extra["sample"] = sample
    return params, key_extra


def extract_json(text: str) -> str:
    """Strip code fences and surrounding prose from a JSON reply."""
    t = _FENCE.sub("", text.strip()).strip()
    if t.startswith("{") or t.startswith("["):
        return t
    start, end = t.find("{"), t.rfind("}")
    return t[start : end + 1] if 0 <= start < end else t
