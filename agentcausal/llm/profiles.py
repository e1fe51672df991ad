"""LLM profiles and per-stage routing.

A *profile* names one endpoint and model (:class:`Profile`); a *routing* maps
stage names (``dcfa.gca``, ``dcfa.lce``, ``dcfa.embed``, ``mac.debate``,
``mac.coder``, ``baseline`` ...) to profiles. Both come from one TOML file
(default: the packaged ``agentcausal/llm/profiles.toml``; override with
``$AGENTCAUSAL_PROFILES``) with environment overrides
``AGENTCAUSAL_PROFILE_<NAME>_<FIELD>`` (name upper-cased, ``-`` as ``_``).

Resolution rule for a stage (documented choice): the exact stage name, then
``embed`` for stages ending in ``.embed``, then ``default``. Anything else is
an :class:`~agentcausal.exceptions.UnknownStageError`.

Routings written from a command line are built in :mod:`agentcausal.llm.cli_profile`
(``--base-url/--model``) and :mod:`agentcausal.llm.command_line` (``--route``).

Concurrency limits are per profile (``max_concurrency``). Profiles that name
the same ``limit_group`` (e.g. a chat and an embedding profile served by one
vLLM) share one limit instead, of the size given in the file's
``[limit_groups]`` table (``name = size``); a group missing from that table
gets the largest ``max_concurrency`` of its profiles.
"""

from __future__ import annotations

import json
import logging
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentcausal.exceptions import (
    ConfigError,
    MissingAPIKeyError,
    UnknownProfileError,
    UnknownStageError,
)

__all__ = ["Profile", "ProfileSet", "load_profiles", "DEFAULT_PROFILES_PATH"]

DEFAULT_PROFILES_PATH = Path(__file__).with_name("profiles.toml")

log = logging.getLogger(__name__)


class Profile(BaseModel):
    """One endpoint + model.

    Attributes
    ----------
    name : str
    kind : "chat" or "embedding"
    base_url : str
        OpenAI-compatible base URL; ``"embedded"`` starts the packaged llama.cpp
        server; ``"local"`` (embedding only) runs sentence-transformers in-process.
    model : str
    api_key_env : str or None
        Name of the environment variable holding the key (never the key).
    api_key_optional : bool
        Send a placeholder key when the variable is unset (vLLM without auth).
    max_concurrency : int
        In-process limit of simultaneous requests to this endpoint.
    timeout_s : float
        Per-request timeout, seconds.
    context_window : int
        Tokens the model accepts (prompt + completion); renderers budget prompts by it.
    json_mode : "json_schema" or "json_object"
    price_prompt_per_1k, price_completion_per_1k : float
        USD per 1000 tokens, for cost reports (0 = free/unknown).
    model_path : str or None
        For ``embedded``: a GGUF file to serve instead of the packaged model.
    threads : int or None
        For ``embedded``: CPU threads of the llama.cpp server; default all cores
        but one (see :func:`agentcausal.llm.local.default_threads`).
    temperature : float
        Sampling temperature used when a call does not pass one (0 = the papers'
        deterministic setting). Not sent when ``temperature_allowed`` is false.
    max_output_tokens : int or None
        Ceiling on completion tokens per request (the model's or the account's
        output limit); a method's own cap is clamped to it, and methods under the
        ``paper`` preset derive their completion budgets from it
        (:meth:`agentcausal.llm.Gateway.max_output_tokens`). ``None`` = no ceiling.
    limit_group : str or None
        Profiles naming the same group (e.g. a chat and an embedding profile on
        one server) share one concurrency limit, of the size declared in the
        profiles file's ``[limit_groups]`` table (default: the largest
        ``max_concurrency`` among the group's profiles).
    token_cap_param : "max_tokens" or "max_completion_tokens"
        The request parameter carrying the completion cap. OpenAI's reasoning
        models (o-series, GPT-5) refuse ``max_tokens``.
    temperature_allowed : bool
        Whether the endpoint accepts a ``temperature`` (OpenAI's reasoning
        models accept only the default and refuse the parameter otherwise).
    reasoning_effort : str or None
        Sent as ``reasoning_effort`` (``"minimal"``, ``"low"``, ``"medium"``,
        ``"high"``) when set; ``None`` sends nothing (the endpoint's default).
    hidden_reasoning_counts : bool
        Hidden reasoning tokens count against the completion cap. A method's
        cap sizes the visible answer only, so the gateway then sends
        ``max_output_tokens`` as the cap (or no cap when that is unset)
        instead of the method's cap.
    seed_supported : bool
        Whether the endpoint takes a ``seed``; repeats (``sample > 0``) send
        ``seed = sample`` only where it does (they are cached apart either way).
    extra_body : dict or None
        JSON fields merged into every chat request of the profile, for switches an
        endpoint takes outside OpenAI's schema: vLLM's
        ``{chat_template_kwargs = {enable_thinking = false}}`` (Qwen3's thinking off),
        Model Studio's ``{enable_thinking = false}``. Sent as the ``openai`` client's
        ``extra_body`` and part of the cache key. An environment override takes JSON text.
    reasoning : "none", "always", "on" or "off"
        What the model does before its visible answer, as this profile asks for it:
        ``none`` (no reasoning mode), ``always`` (a reasoning model whose reasoning
        cannot be switched off: GPT-5, Gemini-2.5-Pro, DeepSeek-R1), ``on``/``off`` (a
        hybrid model, switched by the profile's ``extra_body`` or ``reasoning_effort``).
        Descriptive (nothing is sent for it): the run plan shows it per stage. A
        reasoning profile normally sets ``hidden_reasoning_counts`` and ``max_output_tokens``.
    prices_as_of : str or None
        ISO date (``YYYY-MM-DD``) the two prices were read from the provider's price
        list; ``None`` for a profile without prices (0 = free or unknown).
    reproducible : bool
        For ``embedded``: serve so that one request gets one reply whatever ran before
        or beside it (one decoding slot, no reuse of cached prompt prefixes; see
        :func:`agentcausal.llm.local.start_server` and ``docs/embedded.md``), at a speed
        cost. Ignored by other endpoints.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Literal["chat", "embedding"] = "chat"
    base_url: str
    model: str
    api_key_env: str | None = None
    api_key_optional: bool = False
    max_concurrency: int = Field(4, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    context_window: int = Field(8192, ge=256)
    json_mode: Literal["json_schema", "json_object"] = "json_schema"
    price_prompt_per_1k: float = 0.0
    price_completion_per_1k: float = 0.0
    model_path: str | None = None
    threads: int | None = Field(None, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    max_output_tokens: int | None = Field(None, ge=1)
    limit_group: str | None = None
    token_cap_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    temperature_allowed: bool = True
    reasoning_effort: str | None = None
    hidden_reasoning_counts: bool = False
    seed_supported: bool = True
    extra_body: dict[str, Any] | None = None
    reasoning: Literal["none", "always", "on", "off"] = "none"
    prices_as_of: str | None = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    reproducible: bool = False

    @field_validator("extra_body", mode="before")
    @classmethod
    def _json_text(cls, value: Any) -> Any:
        """An environment override arrives as text: read it as a JSON object."""
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError as exc:
                raise ValueError(f"extra_body must be a JSON object, got {value!r}") from exc
        return value

    def dialect(self) -> dict[str, Any]:
        """The request dialect in one dict, for the run plan: where requests go and what they send.

        Returns
        -------
        dict with ``endpoint`` (the base URL; ``embedded``/``local`` for the packaged servers),
        ``context_window``, ``reasoning`` and, where set, ``token_cap_param`` (when not
        ``max_tokens``), ``reasoning_effort``, ``hidden_reasoning_counts``, ``extra_body``,
        ``json_mode`` (when not ``json_schema``).
        """
        out: dict[str, Any] = {
            "endpoint": self.base_url,
            "context_window": self.context_window,
            "reasoning": self.reasoning,
        }
        if self.token_cap_param != "max_tokens":
            out["token_cap_param"] = self.token_cap_param
        if self.reasoning_effort is not None:
            out["reasoning_effort"] = self.reasoning_effort
        if self.hidden_reasoning_counts:
            out["hidden_reasoning_counts"] = True
        if self.extra_body:
            out["extra_body"] = self.extra_body
        if self.kind == "chat" and self.json_mode != "json_schema":
            out["json_mode"] = self.json_mode
        if self.is_embedded:
            out["reproducible"] = self.reproducible
        return out

    def api_key(self) -> str:
        """The API key from the environment.

        Raises
        ------
        MissingAPIKeyError
            If ``api_key_env`` is set, the variable is unset and the key is not optional.
        """
        if self.api_key_env is None:
            return "not-needed"
        value = os.environ.get(self.api_key_env)
        if value:
            return value
        if self.api_key_optional:
            return "not-needed"
        raise MissingAPIKeyError(self.name, self.api_key_env)

    @property
    def is_embedded(self) -> bool:
        return self.base_url == "embedded"

    @property
    def is_local_embedder(self) -> bool:
        return self.base_url == "local"


class ProfileSet(BaseModel):
    """All profiles and routings of one file, with one routing active.

    Raises
    ------
    UnknownProfileError
        At construction, if a routing names a profile that does not exist.
    ConfigError
        If the active routing does not exist.
    """

    model_config = ConfigDict(frozen=True)

    profiles: dict[str, Profile]
    routings: dict[str, dict[str, str]]
    routing: str = "default"
    path: str | None = None
    limit_groups: dict[str, int] = {}
    #: routing -> method-settings preset named by its ``preset`` key (agentcausal.settings)
    presets: dict[str, str] = Field(default_factory=dict)

    @property
    def preset(self) -> str | None:
        """The method-settings preset the active routing names (its ``preset`` key), or None."""
        return self.presets.get(self.routing)

    def model_post_init(self, __context: object) -> None:
        if self.routing not in self.routings:
            raise ConfigError(
                f"unknown routing {self.routing!r}; defined routings: {', '.join(sorted(self.routings))}",
                path=self.path,
            )
        for _rname, table in self.routings.items():
            for _stage, pname in table.items():
                if pname not in self.profiles:
                    raise UnknownProfileError(pname, list(self.profiles), path=self.path)
        for group, size in self.limit_groups.items():
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ConfigError(
                    f"[limit_groups] {group} = {size!r}: the size must be an integer >= 1", path=self.path
                )

    def limit_group_size(self, group: str) -> int:
        """Requests in flight allowed at once across all profiles naming ``group`` as ``limit_group``.

        The size declared in the profiles file's ``[limit_groups]`` table, else
        the largest ``max_concurrency`` among the group's profiles.
        """
        if group in self.limit_groups:
            return self.limit_groups[group]
        sizes = [p.max_concurrency for p in self.profiles.values() if p.limit_group == group]
        return max(sizes, default=1)

    def profile_for(self, stage: str) -> Profile:
        """The profile that serves ``stage`` under the active routing.

        Raises
        ------
        UnknownStageError
            If neither the stage, its fallback (``embed``) nor ``default`` is routed.
        """
        table = self.routings[self.routing]
        if stage in table:
            return self.profiles[table[stage]]
        if stage.endswith(".embed") and "embed" in table:
            return self.profiles[table["embed"]]
        if not stage.endswith(".embed") and "default" in table:
            return self.profiles[table["default"]]
        raise UnknownStageError(stage, self.routing, list(table))

    def with_routing(self, routing: str) -> "ProfileSet":
        return ProfileSet(
            profiles=self.profiles,
            routings=self.routings,
            routing=routing,
            path=self.path,
            limit_groups=self.limit_groups,
            presets=self.presets,
        )


ENV_PREFIX = "AGENTCAUSAL_PROFILE_"


def _env_name(profile: str) -> str:
    return profile.upper().replace("-", "_").replace(".", "_")


def _env_overrides(names: list[str]) -> dict[str, dict[str, str]]:
    """Field overrides per profile from ``AGENTCAUSAL_PROFILE_<NAME>_<FIELD>`` variables.

    A variable belongs to the profile with the longest matching name whose rest
    is a :class:`Profile` field, so ``AGENTCAUSAL_PROFILE_OPENAI_EMBED_MODEL``
    sets ``model`` of ``openai-embed``, not a field ``embed_model`` of ``openai``.
    Variables that match no profile and field are logged as warnings (typos).
    """
    fields = set(Profile.model_fields) - {"name"}
    by_env = sorted(((_env_name(n), n) for n in names), key=lambda t: -len(t[0]))
    out: dict[str, dict[str, str]] = {n: {} for n in names}
    for key, value in os.environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        rest = key[len(ENV_PREFIX) :]
        for env_name, name in by_env:
            field = rest[len(env_name) + 1 :].lower()
            if rest.startswith(env_name + "_") and field in fields:
                out[name][field] = value
                break
        else:
            log.warning(
                "ignoring %s: no profile with that field (profiles: %s; fields: %s)",
                key,
                ", ".join(sorted(names)),
                ", ".join(sorted(fields)),
            )
    return out


def load_profiles(path: str | os.PathLike | None = None, routing: str | None = None) -> ProfileSet:
    """Read profiles and routings from TOML, apply environment overrides.

    Parameters
    ----------
    path : path, optional
        The TOML file; default ``$AGENTCAUSAL_PROFILES`` or the packaged file.
    routing : str, optional
        Active routing; default ``$AGENTCAUSAL_ROUTING`` or ``"default"``.

    Returns
    -------
    ProfileSet

    Raises
    ------
    ConfigError
        If the file is missing, is not TOML, or a profile has a bad field.
    UnknownProfileError
        If a routing names an undefined profile.
    """
    path = Path(path or os.environ.get("AGENTCAUSAL_PROFILES") or DEFAULT_PROFILES_PATH)
    if not path.is_file():
        raise ConfigError("profiles file not found", path=str(path))
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=str(path)) from exc
    profiles: dict[str, Profile] = {}
    raw_profiles = data.get("profiles") or {}
    overrides = _env_overrides(list(raw_profiles))
    for name, raw in raw_profiles.items():
        if not isinstance(raw, dict):
            raise ConfigError(f"profile {name!r} must be a table [profiles.{name}]", path=str(path))
        try:
            profiles[name] = Profile(name=name, **{**raw, **overrides[name]})
        except ValidationError as exc:
            env = ", ".join(f"{ENV_PREFIX}{_env_name(name)}_{f.upper()}" for f in overrides[name])
            where = f" (environment overrides: {env})" if env else ""
            raise ConfigError(f"profile {name!r} is invalid{where}: {exc}", path=str(path)) from exc
    routings = {k: dict(v) for k, v in (data.get("routings") or {}).items()}
    presets = {k: str(v.pop("preset")) for k, v in routings.items() if "preset" in v}  # not a stage
    routings.setdefault("default", {"default": next(iter(profiles), "")} if profiles else {})
    limit_groups = data.get("limit_groups") or {}
    if not isinstance(limit_groups, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in limit_groups.values()
    ):
        raise ConfigError(
            f"[limit_groups] must be a table of name = size (an integer >= 1), got {limit_groups!r}", path=str(path)
        )
    return ProfileSet(
        profiles=profiles,
        routings=routings,
        limit_groups=dict(limit_groups),
        routing=routing or os.environ.get("AGENTCAUSAL_ROUTING") or "default",
        path=str(path),
        presets=presets,
    )
