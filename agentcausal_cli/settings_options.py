"""The run-settings options shared by the pipeline verbs (``attribute``, ``discover``, ``demo``).

``--routing``, ``--profiles``, ``--cache-dir``, ``--refresh`` and ``--retry-failed`` become one
:class:`agentcausal.settings.RunSettings` through :func:`settings_from_args`
(flags win over ``AGENTCAUSAL_*`` variables, which win over defaults).
"""

from __future__ import annotations

import argparse

from agentcausal.exceptions import ConfigError
from agentcausal.settings import RunSettings

__all__ = [
    "add_settings_arguments",
    "settings_from_args",
    "add_model_arguments",
    "apply_model_arguments",
    "route_stages",
    "add_threads_argument",
    "apply_threads",
]


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
    parser.add_argument("--profiles", default=None, help="profiles TOML (default: packaged or $AGENTCAUSAL_PROFILES)")
    parser.add_argument("--cache-dir", default=None, help="cache root (default: cache/ or $AGENTCAUSAL_CACHE_DIR)")
    parser.add_argument("--refresh", action="store_true", help="ignore cached results and LLM replies (rewrites them)")
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="recompute cached results marked content_failed or degraded (complete ones are reused; "
        "failed ones are never cached and always retried)",
    )


def settings_from_args(args: argparse.Namespace, **overrides: object) -> RunSettings:
    """RunSettings from the options of :func:`add_settings_arguments` plus ``overrides`` (None = unset)."""
    return RunSettings.from_env(
        routing=args.routing,
        profiles_path=args.profiles,
        cache_dir=args.cache_dir,
        refresh=True if args.refresh else None,
        retry_failed=True if getattr(args, "retry_failed", False) else None,
        **overrides,
    )


#: the stages a ``--route`` may name besides ``default`` and ``embed`` (checked against the method registry
#: by :func:`route_stages`; listed here so ``--help`` needs no import of the methods)
ROUTE_STAGES = ("dcfa.gca", "dcfa.lce", "dcfa.embed", "baseline", "mac.debate", "mac.coder", "mac.baseline")


def route_stages() -> list[str]:
    """Every LLM stage a method of either half may call (sorted)."""
    # start-up cost: loads networkx, openai, pandas, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.registry import ATTRIBUTION_METHODS, DISCOVERY_METHODS

    tables = (ATTRIBUTION_METHODS.specs, DISCOVERY_METHODS.specs)
    return sorted({st for specs in tables for spec in specs.values() for st in spec.stages})


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--base-url URL --model NAME [--api-key-env VAR] [--context-window N] [--embed-model M]`` and
    ``--route STAGE=TARGET`` (repeatable).

    ``--base-url/--model`` route every chat stage to one OpenAI-compatible endpoint through a generated
    profile and routing named ``cli``; each ``--route`` then sends one stage elsewhere, over that routing or
    over ``--routing``'s (:func:`apply_model_arguments`). ``--dry-run`` shows the resulting route of each
    stage (its profile, model, endpoint and dialect).
    """
    g = parser.add_argument_group(
        "models and endpoints on the command line (instead of writing a profiles file)",
        "--base-url/--model send every chat stage to one endpoint; --route sends one stage elsewhere "
        "(over --routing or --base-url). --dry-run shows each stage's profile, model, endpoint and dialect.",
    )
    g.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (needs --model)",
    )
    g.add_argument("--model", default=None, metavar="NAME", help="model id on that endpoint (needs --base-url)")
    g.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="environment variable holding --base-url's API key (default: no key)",
    )
    g.add_argument(
        "--context-window",
        type=int,
        default=None,
        metavar="N",
        help="--base-url's context tokens when the server's /models does not report them (default 8192)",
    )
    g.add_argument(
        "--embed-model",
        default=None,
        metavar="M",
        help="embedding model on --base-url's endpoint (default: the embedded local embedder)",
    )
    g.add_argument(
        "--route",
        action="append",
        default=None,
        metavar="STAGE=TARGET",
        dest="routes",
        help="send one stage to another model (repeatable). TARGET: a profile (gemini-2.5-pro, "
        "deepseek-reasoner, vllm-deepseek-r1 ...: its model and dialect), PROFILE@URL (that "
        "profile on another server), or MODEL@URL (a model on an OpenAI-compatible endpoint; "
        "the dialect of the profile serving that model id, else the plain one). Options after "
        "commas: key=VAR (API key variable; a profile's own key is not sent to another host), "
        "model=ID, ctx=N (context tokens). STAGE: "
        + ", ".join(ROUTE_STAGES)
        + ", or default / embed (every chat / embedding stage without its own --route). "
        "Example: --routing paper --route "
        "dcfa.lce=Qwen/Qwen3-Coder-30B-A3B-Instruct@http://gpu-host:8000/v1",
    )


def apply_model_arguments(args: argparse.Namespace, settings: RunSettings) -> tuple[RunSettings, dict[str, object]]:
    """Settings routed as ``--base-url/--model`` and ``--route`` ask, and the facts for run.json.

    Without those flags: ``(settings, {})``. Otherwise the profiles file of the settings plus the
    command line's routing (:func:`agentcausal.llm.command_line.command_line_profiles_toml`: routing ``cli``
    with ``--base-url``, else ``<routing>+cli``) is written under ``<cache_dir>/profiles/cli-<hash>.toml``
    and the settings point there.

    Returns
    -------
    (settings, facts): facts hold the ``--base-url`` facts (``base_url``, ``model``, ``context_window`` ...),
    ``routing_base``, ``routes`` (stage -> profile and where it came from) and ``profiles_file``.

    Raises
    ------
    ConfigError
        One line for each bad value: only one of ``--base-url`` and ``--model``; ``--routing`` with them
        (they choose the routing); ``--api-key-env``, ``--context-window`` or ``--embed-model`` without
        ``--base-url``; ``--context-window`` below 256; a malformed ``--route``, an unknown stage, profile
        or routing, a stage routed twice (:func:`agentcausal.llm.command_line.parse_route`).
    """
    import hashlib
    from pathlib import Path

    # start-up cost: loads openai, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.llm.command_line import command_line_profiles_toml, parse_route

    base_url, model = getattr(args, "base_url", None), getattr(args, "model", None)
    raw_routes = getattr(args, "routes", None) or []
    if base_url is None and model is None:
        for flag, value in (
            ("--api-key-env", getattr(args, "api_key_env", None)),
            ("--context-window", getattr(args, "context_window", None)),
            ("--embed-model", getattr(args, "embed_model", None)),
        ):
            if value is not None:
                raise ConfigError(
                    f"{flag} applies to --base-url/--model (for a --route target: STAGE=TARGET,key=VAR / ,ctx=N)"
                )
        if not raw_routes:
            return settings, {}
    elif not (base_url and model):
        raise ConfigError("--base-url and --model go together (an endpoint and a model on it)")
    elif getattr(args, "routing", None):
        raise ConfigError(
            "--routing and --base-url/--model exclude each other (they route every stage to 'cli'; "
            "to change one stage of a routing use --route)"
        )
    if getattr(args, "context_window", None) is not None and args.context_window < 256:
        raise ConfigError(f"--context-window must be at least 256 tokens, got {args.context_window}")
    stages = route_stages() if raw_routes else []
    routes = [parse_route(r, stages) for r in raw_routes]
    text, routing, facts = command_line_profiles_toml(
        routing=settings.routing,
        routes=routes,
        base_url=base_url,
        model=model,
        api_key_env=getattr(args, "api_key_env", None),
        context_window=getattr(args, "context_window", None),
        embed_model=getattr(args, "embed_model", None),
        source=settings.profiles_path,
    )
    path = Path(settings.cache_dir) / "profiles" / f"cli-{hashlib.sha256(text.encode()).hexdigest()[:12]}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    facts = {**facts, "profiles_file": str(path)}
    if not routes:  # --base-url alone: the facts as they were
        facts = {k: v for k, v in facts.items() if k not in ("routes", "routing_base")}
    return settings.model_copy(update={"routing": routing, "profiles_path": str(path)}), facts


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """``--threads N``: CPU threads of the embedded model (``attribute``, ``discover``)."""
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="CPU threads of the embedded model (default: all cores but one; "
        "$AGENTCAUSAL_PROFILE_EMBEDDED_THREADS wins)",
    )


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
        raise ConfigError(f"--threads must be at least 1, got {args.threads}")
    import os

    os.environ.setdefault("AGENTCAUSAL_PROFILE_EMBEDDED_THREADS", str(args.threads))
