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

__all__ = ["RunSettings"]


def _env(name: str, default: str | None) -> str | None:
    return os.environ.get(f"AGENTCAUSAL_{name}", default)


class RunSettings(BaseModel):
    """Where things live and which routing is active; hashable, so tasks can key on it.

    Attributes
    ----------
    routing : str, the active routing in the profiles file (default ``"default"``)
    profiles_path : str or None, the profiles TOML (default: packaged file)
    cache_dir : str, root of the disk caches (``<cache_dir>/llm``, ``<cache_dir>/prefect`` ...)
    who_and_when_dir : str, the Who&When benchmark folder
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
    refresh: bool = False
    retry_failed: bool = False

    @classmethod
    def from_env(cls, **overrides: object) -> "RunSettings":
        """Defaults, then ``AGENTCAUSAL_*`` variables, then non-None ``overrides``."""
        values: dict[str, object] = {
            "routing": _env("ROUTING", "default"),
            "profiles_path": _env("PROFILES", None),
            "cache_dir": _env("CACHE_DIR", "cache"),
            "who_and_when_dir": _env("WHO_AND_WHEN_DIR", "data/who_and_when"),
            "refresh": _env("REFRESH", "0") in ("1", "true", "yes"),
            "retry_failed": _env("RETRY_FAILED", "0") in ("1", "true", "yes"),
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
