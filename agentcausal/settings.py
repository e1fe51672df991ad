"""Run settings shared by the CLI, tasks and flows.

Every field can be set by an environment variable ``AGENTCAUSAL_<FIELD>``
(e.g. ``AGENTCAUSAL_WHO_AND_WHEN_DIR``) or by a CLI flag. Relative paths are
relative to the working directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentcausal.exceptions import ConfigError

__all__ = ["RunSettings", "parse_bool", "TRUE_WORDS", "FALSE_WORDS"]

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
    raise ConfigError(f"{name} must be a boolean ({'/'.join(TRUE_WORDS)} or {'/'.join(FALSE_WORDS)}, any case), "
                      f"got {value!r}")


def _env(name: str, default: str | None) -> str | None:
    return os.environ.get(f"AGENTCAUSAL_{name}", default)


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(f"AGENTCAUSAL_{name}")
    return default if raw is None or not raw.strip() else parse_bool(raw, name=f"$AGENTCAUSAL_{name}")


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
        from agentcausal.llm.profiles import load_profiles

        profiles = load_profiles(self.profiles_path, self.routing)
        for stage in stages:
            profiles.profile_for(stage).api_key()

    def gateway(self):
        """A :class:`agentcausal.llm.Gateway` for these settings (new each call; see tasks for reuse)."""
        from agentcausal.llm import Gateway

        return Gateway.from_settings(
            routing=self.routing,
            profiles_path=self.profiles_path,
            cache_dir=self.llm_cache_dir,
            refresh=self.refresh,
        )
