"""Run settings and method-settings presets: where things live, which routing runs, and which preset applies.

**Run settings** (:class:`RunSettings`): every field can be set by an environment variable
``AGENTCAUSAL_<FIELD>`` (e.g. ``AGENTCAUSAL_WHO_AND_WHEN_DIR``) or by a CLI flag. Relative paths are
relative to the working directory.

**Presets**: ``paper`` (the method as its paper defines it), ``small`` (sub-2B models) and ``dcfa_paper``
(``paper``, with the three Who&When baselines as DCFA's released code runs them for its Table 1:
github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution ``Automated_FA/Lib/utils.py``; a method
that lists no ``dcfa_paper`` keeps its ``paper`` defaults). Every
method's settings model (attribution and discovery, beside each method) sits beside a module-level
``PRESETS: dict[str, dict[str, Any]]`` giving field values for ``"paper"`` and ``"small"``; a field a
preset does not list keeps the model default, which is the ``paper`` value. A preset also names the
prompt set the method uses (field ``prompts``), so prompt texts belong to the preset and are versioned
with it (``PROMPT_VERSIONS`` beside each method's templates).

Which preset applies: ``--preset NAME`` on the CLI, else the routing's ``preset`` key in the profiles
file (``[routings.default] preset = "small"``), else :data:`DEFAULT_PRESET`; ``--set METHOD.FIELD=VALUE``
then overrides single fields (:func:`resolve`).

``paper`` has no cap the paper does not have; where a bound is needed for safety it is derived from the
trace (e.g. DCFA edges <= n(n-1)/2, search iterations <= n), and completion budgets come from the
profile's ``max_output_tokens`` (:func:`completion_budget`), not from fixed counts. ``small`` holds the
caps and wording tuned for the embedded 0.5B model on 2 CPU cores.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentcausal.exceptions import ConfigError

__all__ = [
    "RunSettings",
    "parse_bool",
    "TRUE_WORDS",
    "FALSE_WORDS",
    "PRESET_NAMES",
    "DEFAULT_PRESET",
    "FALLBACK_MAX_OUTPUT_TOKENS",
    "resolve",
    "settings_error_line",
    "preset_values",
    "completion_budget",
    "routing_preset",
    "gateway_preset",
]

#: spellings of a true boolean setting (compared case-insensitively, spaces ignored)
TRUE_WORDS = ("true", "1", "yes", "on")
#: spellings of a false boolean setting
FALSE_WORDS = ("false", "0", "no", "off")


def parse_bool(value: str | bool | int, *, name: str) -> bool:
    """A boolean setting from text: ``true/false``, ``1/0``, ``yes/no``, ``on/off``, any case.

    Parameters
    ----------
    value : str (an environment variable, a ``--set`` value), or a bool / 0 / 1 already parsed
    name : the setting, for the error (``$AGENTCAUSAL_REFRESH``, ``dcfa.use_lce``)

    Returns
    -------
    bool

    Raises
    ------
    ConfigError
        If ``value`` is anything else (``"ture"``, ``"2"``, ``"y"``), naming the setting.

    Examples
    --------
    >>> parse_bool("Yes", name="x"), parse_bool(" OFF ", name="x"), parse_bool(1, name="x")
    (True, False, True)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    word = str(value).strip().casefold()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ConfigError(
        f"{name} must be a boolean ({'/'.join(TRUE_WORDS)} or {'/'.join(FALSE_WORDS)}, any case), got {value!r}"
    )


def _env(name: str, default: str | None) -> str | None:
    return os.environ.get(f"AGENTCAUSAL_{name}", default)


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(f"AGENTCAUSAL_{name}")
    return default if raw is None or not raw.strip() else parse_bool(raw, name=f"$AGENTCAUSAL_{name}")


#: consecutive jobs failing on one dead endpoint that stop a run by default (:mod:`agentcausal.runs.breaker`)
DEFAULT_BREAKER_AFTER = 8


class RunSettings(BaseModel):
    """Where things live and which routing is active; hashable, so tasks can key on it.

    Attributes
    ----------
    routing : str, the active routing in the profiles file (default ``"default"``)
    profiles_path : str or None, the profiles TOML (default: packaged file)
    cache_dir : str, root of the disk caches (``<cache_dir>/llm``, ``<cache_dir>/prefect`` ...)
    who_and_when_dir : str, the Who&When benchmark folder
    mast_dir, agentrx_dir : str, the MAST-Data and AgentRx folders (``agentcausal data fetch mast|agentrx``)
    refresh : bool, bypass LLM cache reads and recompute every cached task result
    retry_failed : bool, also recompute cached results marked ``content_failed`` or ``degraded``
        (a plain run reuses them; ``failed`` results are never cached, so always retried);
        complete results are still reused
    breaker_after : int, consecutive jobs failing on one dead endpoint (refused, 5xx, timeout after the
        client's retries) that stop the run (:mod:`agentcausal.runs.breaker`; 0 = never)
    """

    model_config = ConfigDict(frozen=True)

    routing: str = "default"
    profiles_path: str | None = None
    cache_dir: str = "cache"
    who_and_when_dir: str = "data/who_and_when"
    mast_dir: str = "data/mast"
    agentrx_dir: str = "data/agentrx"
    refresh: bool = False
    retry_failed: bool = False
    breaker_after: int = Field(default=DEFAULT_BREAKER_AFTER, ge=0)

    @classmethod
    def from_env(cls, **overrides: object) -> "RunSettings":
        """Defaults, then ``AGENTCAUSAL_*`` variables, then non-None ``overrides``.

        Boolean variables (``AGENTCAUSAL_REFRESH``, ``AGENTCAUSAL_RETRY_FAILED``) read as :func:`parse_bool`; an empty one is unset.

        Raises
        ------
        ConfigError
            If a boolean variable holds anything but true/false, 1/0, yes/no, on/off.
        """
        values: dict[str, object] = {
            "routing": _env("ROUTING", "default"),
            "profiles_path": _env("PROFILES", None),
            "cache_dir": _env("CACHE_DIR", "cache"),
            "who_and_when_dir": _env("WHO_AND_WHEN_DIR", "data/who_and_when"),
            "mast_dir": _env("MAST_DIR", "data/mast"),
            "agentrx_dir": _env("AGENTRX_DIR", "data/agentrx"),
            "refresh": _env_bool("REFRESH", False),
            "retry_failed": _env_bool("RETRY_FAILED", False),
            "breaker_after": _env("BREAKER_AFTER", str(DEFAULT_BREAKER_AFTER)),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def llm_cache_dir(self) -> Path:
        return Path(self.cache_dir) / "llm"

    def check_routes(self, stages: Iterable[str]) -> None:
        """Fail fast, before any work: the routing exists, every stage is routed, every key is set.

        Parameters
        ----------
        stages : stage names the run will call (e.g. a method's ``MethodSpec.stages``)

        Raises
        ------
        ConfigError
            If the profiles file or the routing does not exist.
        UnknownStageError
            If a stage has no route.
        MissingAPIKeyError
            If a stage's profile reads its key from an unset variable.
        """
        from agentcausal.llm.profiles import load_profiles  # start-up cost: agentcausal.llm loads openai (~0.4 s)

        profiles = load_profiles(self.profiles_path, self.routing)
        for stage in stages:
            profiles.profile_for(stage).api_key()

    def gateway(self):
        """A :class:`agentcausal.llm.Gateway` for these settings (new each call; see tasks for reuse)."""
        from agentcausal.llm import Gateway  # start-up cost: agentcausal.llm loads openai (~0.4 s)

        return Gateway.from_settings(
            routing=self.routing,
            profiles_path=self.profiles_path,
            cache_dir=self.llm_cache_dir,
            refresh=self.refresh,
        )


#: the presets every method takes (``dcfa_paper`` = ``paper`` for a method that does not list it)
PRESET_NAMES = ("paper", "small", "dcfa_paper")

#: the preset of a routing that names none
DEFAULT_PRESET = "small"

#: completion budget (tokens) of a stage whose settings and profile give none (documented fallback;
#: further capped at a quarter of the profile's context window so the trace keeps room)
FALLBACK_MAX_OUTPUT_TOKENS = 4096

S = TypeVar("S", bound=BaseModel)


def preset_values(presets: Mapping[str, Mapping[str, Any]], preset: str) -> dict[str, Any]:
    """The field values a preset sets (empty for a preset the method leaves at its defaults).

    Raises
    ------
    ConfigError
        If ``preset`` is not one of :data:`PRESET_NAMES` nor a key of ``presets``.
    """
    if preset not in presets and preset not in PRESET_NAMES:
        raise ConfigError(f"unknown preset {preset!r}; choose from: {', '.join(sorted({*PRESET_NAMES, *presets}))}")
    return dict(presets.get(preset, {}))


def resolve(
    settings_model: type[S],
    presets: Mapping[str, Mapping[str, Any]],
    preset: str | None,
    overrides: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
) -> S:
    """Settings of one method: model defaults, then the preset's values, then ``overrides``.

    Parameters
    ----------
    settings_model : the method's frozen pydantic settings class (defaults = ``paper``)
    presets : the method's ``PRESETS`` mapping preset name -> field values
    preset : str or None; None = the model defaults (the ``paper`` preset)
    overrides : field values that win over the preset (``--set``)
    name : the method's name for error messages (default: the model's class name)

    Returns
    -------
    an instance of ``settings_model``

    Raises
    ------
    ConfigError
        If the preset is unknown or the values do not validate.

    Examples
    --------
    >>> from pydantic import BaseModel
    >>> class S(BaseModel):
    ...     cap: int | None = None
    ...     k: int = 1
    >>> resolve(S, {"paper": {}, "small": {"cap": 10}}, "small", {"k": 2})
    S(cap=10, k=2)
    """
    values = preset_values(presets, preset) if preset is not None else {}
    values.update(dict(overrides or {}))
    try:
        return settings_model(**values)
    except ValidationError as exc:
        raise ConfigError(settings_error_line(exc, settings_model, name or settings_model.__name__)) from exc


def settings_error_line(exc: ValidationError, settings_model: type[BaseModel], name: str) -> str:
    """One line for a settings :class:`~pydantic.ValidationError`: each bad field and why, no pydantic dump or URL.

    Examples
    --------
    >>> from pydantic import BaseModel, ConfigDict
    >>> class S(BaseModel):
    ...     model_config = ConfigDict(extra="forbid")
    ...     k: int = 1
    >>> try:
    ...     S(k="x", nope=3)
    ... except ValidationError as e:
    ...     print(settings_error_line(e, S, "m"))
    invalid value 'x' for m.k: Input should be a valid integer, unable to parse string as an integer; unknown field nope of method m; valid fields: k
    """
    parts, unknown = [], False
    for err in exc.errors():
        field = ".".join(str(x) for x in err.get("loc", ())) or "?"
        if err.get("type") == "extra_forbidden":
            unknown = True
            parts.append(f"unknown field {field} of method {name}")
        else:
            parts.append(f"invalid value {err.get('input')!r} for {name}.{field}: {err.get('msg', 'invalid')}")
    fields = ", ".join(settings_model.model_fields)
    return "; ".join(parts) + (f"; valid fields: {fields}" if unknown else "")


def completion_budget(gw: Any, stage: str, fixed: int | None) -> int:
    """Completion cap (tokens) of one call of ``stage``.

    Parameters
    ----------
    gw : Gateway
    stage : str, the routed stage
    fixed : int or None, the method setting; a number wins (the ``small`` preset's fixed caps)

    Returns
    -------
    int: ``fixed``; else the profile's ``max_output_tokens`` (``Gateway.max_output_tokens(stage)``);
    else :data:`FALLBACK_MAX_OUTPUT_TOKENS` capped at a quarter of the stage's context window.
    """
    if fixed is not None:
        return fixed
    getter = getattr(gw, "max_output_tokens", None)
    value = getter(stage) if callable(getter) else getattr(gw.profile_for(stage), "max_output_tokens", None)
    if value is not None:
        return int(value)
    return max(256, min(FALLBACK_MAX_OUTPUT_TOKENS, gw.profile_for(stage).context_window // 4))


def routing_preset(profiles_path: str | None, routing: str) -> str:
    """The preset a routing names in the profiles file (:data:`DEFAULT_PRESET` when it names none).

    Raises
    ------
    ConfigError
        If the profiles file or the routing does not exist.
    """
    from agentcausal.llm.profiles import load_profiles  # start-up cost: agentcausal.llm loads openai (~0.4 s)

    return getattr(load_profiles(profiles_path, routing), "preset", None) or DEFAULT_PRESET


def gateway_preset(gw: Any) -> str | None:
    """The preset the gateway's active routing names, or None (a plain library call then gets the
    settings models' defaults, the ``paper`` preset)."""
    profiles = getattr(gw, "profiles", None)
    return getattr(profiles, "preset", None)
