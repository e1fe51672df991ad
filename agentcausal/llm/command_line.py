"""Routings from the command line: ``--base-url URL --model NAME`` and ``--route STAGE=TARGET``.

:func:`command_line_profiles_toml` writes a profiles file: the user's (or the packaged) file plus
what the flags ask for, under a routing of its own, so a run routed from the command line is an
ordinary run of an ordinary profiles file, recorded in ``run.json``. :func:`parse_route` reads one
``--route`` value; the profile and routing ``cli`` of ``--base-url/--model`` are built in
:mod:`agentcausal.llm.cli_profile`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentcausal.exceptions import ConfigError
from agentcausal.llm.cli_profile import (
    CLI_PROFILE,
    add_cli_profile,
    profiles_toml_text,
    read_profiles_data,
    server_context_window,
)
from agentcausal.llm.profiles import Profile

__all__ = [
    "ROUTE_OPTIONS",
    "Route",
    "parse_route",
    "command_line_profiles_toml",
]


# ---------------------------------------------------------------- one stage to another model (``--route``)

#: the options a ``--route`` target may carry after a comma
ROUTE_OPTIONS = ("key", "model", "ctx")


@dataclasses.dataclass(frozen=True)
class Route:
    """One stage sent elsewhere: ``STAGE=TARGET[,key=VAR][,model=ID][,ctx=N]`` (see :func:`parse_route`).

    Attributes
    ----------
    stage : str, a stage name, or ``default`` / ``embed`` (every chat / embedding stage without its own route)
    target : str, a profile name, or a model id when ``base_url`` is given and no profile has that name
    base_url : str or None, the endpoint (``http(s)://...``) after ``@``; None: the profile's own
    options : dict, ``key`` (API key variable; empty: none), ``model`` (model id), ``ctx`` (context tokens)
    text : str, the flag's value as given (for messages)
    """

    stage: str
    target: str
    base_url: str | None
    options: dict[str, str]
    text: str


def parse_route(text: str, stages: Sequence[str]) -> Route:
    """One ``--route`` value: ``STAGE=PROFILE``, ``STAGE=PROFILE@URL`` or ``STAGE=MODEL@URL``, options after commas.

    Parameters
    ----------
    text : str, e.g. ``"dcfa.lce=Qwen/Qwen3-Coder-30B-A3B-Instruct@http://gpu:8000/v1"``
    stages : the stage names a route may name (``default`` and ``embed`` are always allowed)

    Returns
    -------
    Route

    Raises
    ------
    ConfigError
        One line naming what is wrong: no ``=``, an unknown stage, an empty target, an endpoint that is
        not an ``http://`` or ``https://`` URL, an unknown or malformed option.
    """
    from urllib.parse import urlsplit

    stage, eq, rest = text.partition("=")
    stage = stage.strip()
    if not eq or not stage:
        raise ConfigError(
            f"--route {text!r}: expected STAGE=TARGET, e.g. dcfa.lce=vllm or "
            "dcfa.lce=Qwen/Qwen3-Coder-30B-A3B-Instruct@http://gpu-host:8000/v1"
        )
    allowed = sorted(set(stages) | {"default", "embed"})
    if stage not in allowed:
        raise ConfigError(f"--route {text!r}: unknown stage {stage!r}; stages: {', '.join(allowed)}")
    target, *opts = rest.split(",")
    options: dict[str, str] = {}
    for opt in opts:
        name, eq2, value = opt.partition("=")
        name = name.strip()
        if not eq2 or name not in ROUTE_OPTIONS:
            raise ConfigError(
                f"--route {text!r}: unknown option {opt!r}; options: " + ", ".join(f"{o}=..." for o in ROUTE_OPTIONS)
            )
        if name in options:
            raise ConfigError(f"--route {text!r}: option {name!r} given twice")
        options[name] = value.strip()
    if "ctx" in options and not (options["ctx"].isdigit() and int(options["ctx"]) >= 256):
        raise ConfigError(f"--route {text!r}: ctx must be a whole number of tokens >= 256, got {options['ctx']!r}")
    if "model" in options and not options["model"]:
        raise ConfigError(f"--route {text!r}: model= needs a model id")
    if "key" in options and options["key"] and not options["key"].replace("_", "").isalnum():
        raise ConfigError(
            f"--route {text!r}: key= names an environment variable (letters, digits, _), got {options['key']!r}"
        )
    target = target.strip()
    at = max(target.rfind("@http://"), target.rfind("@https://"))
    base_url = None
    if at >= 0:
        target, base_url = target[:at].strip(), target[at + 1 :].strip()
        parts = urlsplit(base_url)
        if not parts.hostname:
            raise ConfigError(f"--route {text!r}: the endpoint {base_url!r} has no host")
    elif "@" in target:
        raise ConfigError(f"--route {text!r}: the endpoint after '@' must be an http:// or https:// URL")
    if not target:
        raise ConfigError(f"--route {text!r}: no profile or model before the endpoint")
    return Route(stage=stage, target=target, base_url=base_url, options=options, text=text)


def _is_embedding_stage(stage: str) -> bool:
    return stage == "embed" or stage.endswith(".embed")


def _same_host(a: str, b: str) -> bool:
    from urllib.parse import urlsplit

    return (urlsplit(a).hostname or a) == (urlsplit(b).hostname or b)


def _resolve_route(
    route: Route, profiles: dict[str, dict[str, Any]], path: Path
) -> tuple[str, dict[str, Any] | None, dict[str, object]]:
    """A route's profile: ``(existing name, None, facts)``, or ``(stem, new profile table, facts)`` where
    ``stem`` is the profile the new one copies (``cli`` for a model id with the default dialect).

    A profile name keeps that profile (a copy when an endpoint or an option changes it). A model id on an
    endpoint takes the dialect of the one profile of the file that serves the same model id (several:
    an error naming them; none: the default dialect). On another host the profile's key variable is kept
    only for a server the user runs (``api_key_optional``), and its prices are dropped.
    """
    kind = "embedding" if _is_embedding_stage(route.stage) else "chat"
    opts = route.options
    origin: str
    if route.target in profiles:
        base, stem = dict(profiles[route.target]), route.target
        origin = f"profile {route.target}"
    elif route.base_url is None:
        raise ConfigError(
            f"--route {route.text!r}: no profile {route.target!r} (profiles: "
            f"{', '.join(sorted(profiles))}); a model on an endpoint is MODEL@URL",
            path=str(path),
        )
    else:
        same = sorted(
            n for n, p in profiles.items() if p.get("model") == route.target and p.get("kind", "chat") == kind
        )
        if len(same) > 1:
            raise ConfigError(
                f"--route {route.text!r}: profiles {', '.join(same)} all serve model "
                f"{route.target!r} with different dialects; name one: "
                f"--route {route.stage}={same[0]}@{route.base_url}",
                path=str(path),
            )
        if same:
            base, stem = dict(profiles[same[0]]), same[0]
            origin = f"the dialect of profile {same[0]} (same model id)"
        else:
            base = {
                "kind": kind,
                "model": route.target,
                "max_concurrency": 4,
                "timeout_s": 600.0 if kind == "chat" else 120.0,
            }
            stem, origin = CLI_PROFILE, "default dialect"
    if base.get("kind", "chat") != kind:
        what = "an embedding" if kind == "embedding" else "a chat"
        raise ConfigError(
            f"--route {route.text!r}: {route.target!r} is a {base.get('kind', 'chat')} profile; "
            f"stage {route.stage!r} needs {what} profile",
            path=str(path),
        )
    if route.base_url is None and not opts:  # a profile as it stands
        return route.target, None, {"profile": route.target, "from": origin}
    new = dict(base)
    if route.base_url is not None and route.base_url.rstrip("/") != str(base.get("base_url", "")).rstrip("/"):
        moved = not _same_host(route.base_url, str(base.get("base_url", "")))
        new["base_url"] = route.base_url
        new.pop("model_path", None)
        for price in ("price_prompt_per_1k", "price_completion_per_1k", "prices_as_of"):
            new.pop(price, None)  # another server's prices are not the profile's
        if moved and not base.get("api_key_optional"):
            new.pop("api_key_env", None)  # never send a provider's key to another host unasked
    if "model" in opts:
        new["model"] = opts["model"]
    if "key" in opts:
        new["api_key_env"] = opts["key"] or None
        new["api_key_optional"] = False
    window_origin = "profile" if "context_window" in base else "default"
    given = int(opts["ctx"]) if "ctx" in opts else None
    if new.get("base_url") not in (None, "embedded", "local"):
        key = os.environ.get(new["api_key_env"]) if new.get("api_key_env") else None
        reported = server_context_window(str(new["base_url"]), str(new["model"]), api_key=key)
    else:
        reported = None
    if given is not None:
        new["context_window"], window_origin = given, "flag"
    elif reported:
        new["context_window"], window_origin = reported, "server"
    new.setdefault("context_window", 8192)
    facts = {
        "profile": None,
        "from": origin,
        "base_url": new.get("base_url"),
        "model": new.get("model"),
        "api_key_env": new.get("api_key_env"),
        "context_window": new["context_window"],
        "context_window_source": window_origin,
    }
    return stem, new, facts


def command_line_profiles_toml(
    *,
    routing: str | None = None,
    routes: Sequence[Route] = (),
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    context_window: int | None = None,
    embed_model: str | None = None,
    source: str | os.PathLike | None = None,
) -> tuple[str, str, dict[str, object]]:
    """The profiles file of a command line's routing: ``--base-url/--model`` and ``--route`` over a routing.

    Starts from ``source`` (default ``$AGENTCAUSAL_PROFILES`` or the packaged file) and the routing
    ``routing`` (default ``$AGENTCAUSAL_ROUTING`` or ``default``), or, with ``base_url`` and ``model``,
    the routing ``cli`` of :func:`~agentcausal.llm.cli_profile.cli_profiles_toml`. Each route then sends its
    stage elsewhere; the others keep their route. A route for ``default`` (``embed``) sends every chat (embedding) stage
    that has no route of its own. A route that changes a profile (an endpoint, a model, a key, a
    context window) adds a profile named ``PROFILE@HOST`` (``cli@HOST`` for a model id without
    profile), one per distinct target, so stages sent to one server share its concurrency limit.
    The new routing is ``cli`` with ``base_url``, else ``<routing>+cli``; it keeps the base
    routing's method-settings preset.

    Parameters
    ----------
    routing : str or None, the routing the routes change
    routes : parsed ``--route`` values (:func:`parse_route`), at most one per stage
    base_url, model, api_key_env, context_window, embed_model : as in
        :func:`~agentcausal.llm.cli_profile.cli_profiles_toml` (both or neither of ``base_url`` and ``model``)
    source : profiles TOML to extend

    Returns
    -------
    (TOML text, routing name, facts): facts hold the ``cli`` facts (with ``base_url``), ``routing_base``
    and ``routes``: stage -> {``profile``, ``from``, and for a new profile ``base_url``, ``model``,
    ``api_key_env``, ``context_window``, ``context_window_source``}.

    Raises
    ------
    ConfigError
        On an unreadable file, an unknown routing, a stage routed twice, or a route that names no profile,
        a profile of the wrong kind, or a model several profiles serve (one line each).
    """
    path, data = read_profiles_data(source)
    facts: dict[str, object] = {}
    if base_url is not None and model is not None:
        data, facts = add_cli_profile(
            data,
            base_url,
            model,
            api_key_env=api_key_env,
            context_window=context_window,
            embed_model=embed_model,
            timeout_s=600.0,
            max_concurrency=4,
        )
        base = name = CLI_PROFILE
    else:
        base = routing or os.environ.get("AGENTCAUSAL_ROUTING") or "default"
        name = f"{base}+cli"
    routings = {k: dict(v) for k, v in (data.get("routings") or {}).items()}
    if base not in routings and base != "default":
        raise ConfigError(f"unknown routing {base!r}; defined routings: {', '.join(sorted(routings))}", path=str(path))
    profiles = {k: dict(v) for k, v in (data.get("profiles") or {}).items() if isinstance(v, dict)}
    table = dict(routings.get(base) or {"default": next(iter(profiles), "")})
    seen: dict[str, Route] = {}
    for r in routes:
        if r.stage in seen:
            raise ConfigError(f"--route {r.stage}=... given twice ({seen[r.stage].text!r} and {r.text!r})")
        seen[r.stage] = r
    made: dict[str, str] = {}  # json of a new profile table -> its name
    route_facts: dict[str, dict[str, object]] = {}
    for r in routes:
        pname, new, f = _resolve_route(r, profiles, path)
        if new is not None:
            blob = json.dumps(new, sort_keys=True, default=str)
            if blob not in made:
                from urllib.parse import urlsplit

                stem = pname
                host = urlsplit(str(new.get("base_url", ""))).netloc or str(new.get("base_url"))
                candidate, n = f"{stem}@{host}", 2
                while candidate in profiles:
                    candidate, n = f"{stem}@{host}#{n}", n + 1
                profiles[candidate] = new
                made[blob] = candidate
            pname = made[blob]
            try:
                Profile(name=pname, **{k: v for k, v in new.items() if v is not None})
            except ValidationError as exc:
                raise ConfigError(f"--route {r.text!r} gives an invalid profile: {exc}", path=str(path)) from exc
        route_facts[r.stage] = {**f, "profile": pname}
        if r.stage in ("default", "embed"):
            for stage in list(table):
                if stage == "preset" or stage in seen:
                    continue
                if _is_embedding_stage(stage) == (r.stage == "embed"):
                    table[stage] = pname
        table[r.stage] = pname
    routings[name] = table
    out = {**data, "profiles": profiles, "routings": routings}
    facts = {**facts, "routing_base": base, "routes": route_facts}
    header = (
        f"# generated by agentcausal from {path}: routing {name!r} = {base!r}"
        + "".join(f"\n#   --route {r.text}" for r in routes)
        + "\n\n"
    )
    return header + profiles_toml_text(out), name, facts
