"""The run-settings options shared by the pipeline verbs (``attribute``, ``discover``, ``demo``).

``--routing``, ``--profiles``, ``--cache-dir``, ``--refresh`` and ``--retry-failed`` become one
:class:`agentcausal.settings.RunSettings` through :func:`settings_from_args`
(flags win over ``AGENTCAUSAL_*`` variables, which win over defaults).
"""

from __future__ import annotations

import argparse

from agentcausal.settings import RunSettings

__all__ = ["add_settings_arguments", "settings_from_args"]


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--routing``, ``--profiles``, ``--cache-dir``, ``--refresh`` and ``--retry-failed`` to a verb's parser.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_settings_arguments(p)
    >>> settings_from_args(p.parse_args(["--routing", "paper", "--refresh"])).routing
    'paper'
    >>> settings_from_args(p.parse_args(["--retry-failed"])).retry_failed
    True
    """
    parser.add_argument("--routing", default=None, help="LLM routing from the profiles file (default: 'default')")
    parser.add_argument("--profiles", default=None,
                        help="profiles TOML (default: packaged or $AGENTCAUSAL_PROFILES)")
    parser.add_argument("--cache-dir", default=None, help="cache root (default: cache/ or $AGENTCAUSAL_CACHE_DIR)")
    parser.add_argument("--refresh", action="store_true",
                        help="ignore cached results and LLM replies (rewrites them)")
    parser.add_argument("--retry-failed", action="store_true",
                        help="recompute cached results marked content_failed or degraded (complete ones are reused; "
                             "failed ones are never cached and always retried)")


def settings_from_args(args: argparse.Namespace, **overrides: object) -> RunSettings:
    """RunSettings from the options of :func:`add_settings_arguments` plus ``overrides`` (None = unset)."""
    return RunSettings.from_env(routing=args.routing, profiles_path=args.profiles, cache_dir=args.cache_dir,
                                refresh=True if args.refresh else None,
                                retry_failed=True if getattr(args, "retry_failed", False) else None, **overrides)
