"""The run-settings options shared by the pipeline verbs (``attribute``, ``discover``, ``demo``).

``--routing``, ``--profiles``, ``--cache-dir``, ``--refresh`` and ``--retry-failed`` become one
:class:`agentcausal.settings.RunSettings` through :func:`settings_from_args`
(flags win over ``AGENTCAUSAL_*`` variables, which win over defaults).
"""

from __future__ import annotations

import argparse

from agentcausal.settings import RunSettings

__all__ = ["add_settings_arguments", "settings_from_args", "add_model_arguments", "apply_model_arguments"]


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


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--base-url URL --model NAME [--api-key-env VAR] [--context-window N] [--embed-model M]``.

    Together they route every chat stage to one OpenAI-compatible endpoint through a
    generated profile and routing named ``cli`` (:func:`apply_model_arguments`).
    """
    g = parser.add_argument_group("one model for every stage (instead of a profiles file)")
    g.add_argument("--base-url", default=None, metavar="URL",
                   help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (needs --model)")
    g.add_argument("--model", default=None, metavar="NAME", help="model id on that endpoint (needs --base-url)")
    g.add_argument("--api-key-env", default=None, metavar="VAR",
                   help="environment variable holding the endpoint's API key (default: no key)")
    g.add_argument("--context-window", type=int, default=None, metavar="N",
                   help="context tokens when the server's /models does not report them (default 8192)")
    g.add_argument("--embed-model", default=None, metavar="M",
                   help="embedding model on the same endpoint (default: the embedded local embedder)")


def apply_model_arguments(args: argparse.Namespace, settings: RunSettings) -> tuple[RunSettings, dict[str, object]]:
    """Settings routed to the ``cli`` profile when ``--base-url``/``--model`` are given, and the facts for run.json.

    The profiles file (the one in ``settings`` plus profile and routing ``cli``,
    :func:`agentcausal.llm.profiles.cli_profiles_toml`) is written under
    ``<cache_dir>/profiles/cli-<hash>.toml``.

    Returns
    -------
    (settings, facts): unchanged settings and ``{}`` without the flags.

    Raises
    ------
    ConfigError
        If only one of ``--base-url`` and ``--model`` is given, or with ``--routing`` (they choose the routing).
    """
    import hashlib
    from pathlib import Path

    from agentcausal.exceptions import ConfigError
    from agentcausal.llm.profiles import CLI_PROFILE, cli_profiles_toml

    base_url, model = getattr(args, "base_url", None), getattr(args, "model", None)
    if base_url is None and model is None:
        return settings, {}
    if not (base_url and model):
        raise ConfigError("--base-url and --model go together (an endpoint and a model on it)")
    if getattr(args, "routing", None):
        raise ConfigError("--routing and --base-url/--model exclude each other (they route every stage to 'cli')")
    text, facts = cli_profiles_toml(base_url, model, api_key_env=args.api_key_env,
                                    context_window=args.context_window, embed_model=args.embed_model,
                                    source=settings.profiles_path)
    path = Path(settings.cache_dir) / "profiles" / f"cli-{hashlib.sha256(text.encode()).hexdigest()[:12]}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    facts = {**facts, "profiles_file": str(path)}
    return settings.model_copy(update={"routing": CLI_PROFILE, "profiles_path": str(path)}), facts


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """``--threads N``: CPU threads of the embedded model (``attribute``, ``discover``)."""
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="CPU threads of the embedded model (default: all cores but one; "
                        "$AGENTCAUSAL_PROFILE_EMBEDDED_THREADS wins)")


def apply_threads(args: argparse.Namespace) -> None:
    """Check ``--threads`` and hand it to the embedded profile through ``AGENTCAUSAL_PROFILE_EMBEDDED_THREADS``
    (an explicit environment value wins).

    Raises
    ------
    ConfigError
        If ``--threads`` is below 1.
    """
    if args.threads is None:
        return
    if args.threads < 1:
        from agentcausal.exceptions import ConfigError

        raise ConfigError(f"--threads must be at least 1, got {args.threads}")
    import os

    os.environ.setdefault("AGENTCAUSAL_PROFILE_EMBEDDED_THREADS", str(args.threads))
