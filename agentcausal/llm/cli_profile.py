"""The profile and routing ``cli`` of ``--base-url URL --model NAME``, and the profiles file text.

:func:`cli_profiles_toml` writes the user's (or the packaged) profiles file plus a chat profile and
a routing ``cli`` on one OpenAI-compatible endpoint, its context window the one the server reports
(:func:`server_context_window`). :func:`read_profiles_data` and :func:`profiles_toml_text` read and
write the profiles file both command-line routings start from (:mod:`agentcausal.llm.command_line`).
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentcausal.exceptions import ConfigError
from agentcausal.llm.profiles import DEFAULT_PROFILES_PATH, Profile

__all__ = [
    "CLI_PROFILE",
    "server_context_window",
    "read_profiles_data",
    "profiles_toml_text",
    "add_cli_profile",
    "cli_profiles_toml",
]

#: name of the profile (and routing) that ``--base-url URL --model NAME`` builds
CLI_PROFILE = "cli"


def server_context_window(
    base_url: str, model: str, *, api_key: str | None = None, timeout_s: float = 5.0
) -> int | None:
    """The context window an OpenAI-compatible server reports for ``model`` on ``GET /models``, if any.

    Reads the fields servers use: ``context_length`` / ``context_window`` /
    ``max_context_length`` (OpenRouter, LM Studio ...), ``max_model_len``
    (vLLM), ``meta.n_ctx`` / ``meta.n_ctx_train`` (llama.cpp).

    Parameters
    ----------
    base_url : str, e.g. ``http://127.0.0.1:8000/v1``
    model : str, the model id
    api_key : str or None, sent as a bearer token
    timeout_s : float, seconds

    Returns
    -------
    int tokens, or None when the server is unreachable or reports no size.
    """
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        r = httpx.get(base_url.rstrip("/") + "/models", headers=headers, timeout=timeout_s)
        r.raise_for_status()
        data = r.json().get("data") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    for m in data:
        if not isinstance(m, dict) or m.get("id") != model:
            continue
        meta = m["meta"] if isinstance(m.get("meta"), dict) else {}
        for v in (
            m.get("context_length"),
            m.get("context_window"),
            m.get("max_context_length"),
            m.get("max_model_len"),
            meta.get("n_ctx"),
            meta.get("n_ctx_train"),
        ):
            if isinstance(v, (int, float)) and v >= 256:
                return int(v)
    return None


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):  # an inline table (a profile's extra_body)
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items()) + "}"
    return json.dumps(str(v))  # a JSON string is a valid TOML basic string


def profiles_toml_text(data: dict) -> str:
    """TOML text of a profiles document: top-level scalars, then ``[table]`` and ``[table."name"]`` sections."""
    q = json.dumps
    lines = [f"{q(str(k))} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for top, tables in data.items():
        if not isinstance(tables, dict):
            continue
        flat = {k: v for k, v in tables.items() if not isinstance(v, dict)}
        if flat:
            lines += ["", f"[{q(str(top))}]"] + [f"{q(str(k))} = {_toml_value(v)}" for k, v in flat.items()]
        for name, table in tables.items():
            if isinstance(table, dict):
                lines += ["", f"[{q(str(top))}.{q(str(name))}]"]
                lines += [f"{q(str(k))} = {_toml_value(v)}" for k, v in table.items() if v is not None]
    return "\n".join(lines) + "\n"


def read_profiles_data(source: str | os.PathLike | None) -> tuple[Path, dict[str, Any]]:
    """The profiles file ``source`` (default ``$AGENTCAUSAL_PROFILES`` or the packaged file) and its TOML data.

    Raises
    ------
    ConfigError
        If the file is missing or not TOML.
    """
    path = Path(source or os.environ.get("AGENTCAUSAL_PROFILES") or DEFAULT_PROFILES_PATH)
    try:
        return path, tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read profiles file: {exc}", path=str(path)) from exc


def _window(
    reported: int | None, given: int | None, fallback: int = 8192, given_origin: str = "flag"
) -> tuple[int, str]:
    """The context window and where it came from: the server's report, else the one given, else ``fallback``."""
    if reported:
        return reported, "server"
    return (given, given_origin) if given else (fallback, "default")


def add_cli_profile(
    data: dict[str, Any],
    base_url: str,
    model: str,
    *,
    api_key_env: str | None,
    context_window: int | None,
    embed_model: str | None,
    timeout_s: float,
    max_concurrency: int,
) -> tuple[dict[str, Any], dict[str, object]]:
    """``data`` plus profile and routing ``cli`` (see :func:`cli_profiles_toml`), and the facts."""
    key = os.environ.get(api_key_env) if api_key_env else None
    window, origin = _window(server_context_window(base_url, model, api_key=key), context_window)
    profiles = dict(data.get("profiles") or {})
    profiles[CLI_PROFILE] = {
        "kind": "chat",
        "base_url": base_url,
        "model": model,
        "api_key_env": api_key_env,
        "max_concurrency": max_concurrency,
        "timeout_s": timeout_s,
        "context_window": window,
    }
    embed = "embedder-local"
    if embed_model:
        embed = f"{CLI_PROFILE}-embed"
        profiles[embed] = {
            "kind": "embedding",
            "base_url": base_url,
            "model": embed_model,
            "api_key_env": api_key_env,
            "max_concurrency": max_concurrency,
            "timeout_s": 120.0,
        }
    elif embed not in profiles:
        profiles[embed] = {
            "kind": "embedding",
            "base_url": "local",
            "model": "all-MiniLM-L6-v2",
            "max_concurrency": 1,
            "timeout_s": 120.0,
            "context_window": 256,
        }
    try:
        Profile(name=CLI_PROFILE, **{k: v for k, v in profiles[CLI_PROFILE].items() if v is not None})
    except ValidationError as exc:
        raise ConfigError(f"--base-url/--model give an invalid profile: {exc}") from exc
    routings = dict(data.get("routings") or {})
    # a model named on the command line is taken to be a real one: the papers' settings (``--preset small`` overrides)
    routings[CLI_PROFILE] = {"default": CLI_PROFILE, "embed": embed, "preset": "paper"}
    facts: dict[str, object] = {
        "base_url": base_url,
        "model": model,
        "api_key_env": api_key_env,
        "context_window": window,
        "context_window_source": origin,
        "embed_model": embed_model or f"{profiles[embed]['model']} (embedded embedder)",
    }
    return {**data, "profiles": profiles, "routings": routings}, facts


def cli_profiles_toml(
    base_url: str,
    model: str,
    *,
    api_key_env: str | None = None,
    context_window: int | None = None,
    embed_model: str | None = None,
    source: str | os.PathLike | None = None,
    timeout_s: float = 600.0,
    max_concurrency: int = 4,
) -> tuple[str, dict[str, object]]:
    """A profiles file routing every chat stage to one OpenAI-compatible endpoint (profile and routing ``cli``).

    The file is ``source`` (default the packaged profiles) plus a chat profile
    ``cli`` and a routing ``cli`` whose ``default`` is that profile and whose
    method-settings preset is ``paper`` (``--preset`` overrides it). Embedding
    stages keep the embedded sentence-transformers embedder (``embedder-local``)
    unless ``embed_model`` is given, which adds an embedding profile ``cli-embed``
    on the same endpoint. The context window is the one the server reports on
    ``/models`` (:func:`server_context_window`), else ``context_window``, else 8192.

    Parameters
    ----------
    base_url : str, the endpoint (``.../v1``)
    model : str, the model id on that endpoint
    api_key_env : str or None, the variable holding the key (None: no key, local servers)
    context_window : int or None, tokens, when the server does not report it
    embed_model : str or None, an embedding model on the same endpoint
    source : profiles TOML to extend (default ``$AGENTCAUSAL_PROFILES`` or the packaged file)
    timeout_s, max_concurrency : the ``cli`` profile's request timeout and concurrency

    Returns
    -------
    (TOML text, facts) where facts records base_url, model, api_key_env, context_window,
    context_window_source (``server``, ``flag`` or ``default``) and embed_model.

    Raises
    ------
    ConfigError
        If ``source`` is missing or not TOML, or the resulting ``cli`` profile is invalid.
    """
    path, data = read_profiles_data(source)
    out, facts = add_cli_profile(
        data,
        base_url,
        model,
        api_key_env=api_key_env,
        context_window=context_window,
        embed_model=embed_model,
        timeout_s=timeout_s,
        max_concurrency=max_concurrency,
    )
    header = (
        f"# generated by agentcausal --base-url/--model from {path}: profile and routing {CLI_PROFILE!r}\n"
        f"# context window {facts['context_window']} ({facts['context_window_source']})\n\n"
    )
    return header + profiles_toml_text(out), facts
