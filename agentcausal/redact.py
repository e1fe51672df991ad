"""Redact the values of secret environment variables from text that leaves a sandbox or enters a record.

A variable is secret when a profile names it as ``api_key_env`` (the packaged
profiles file, the one ``AGENTCAUSAL_PROFILES`` points to, and any name given
to :func:`register_secret_env`), or when its name contains ``KEY``, ``TOKEN``,
``SECRET`` or ``PASSWORD`` (any case). Only values of at least 8 characters
are replaced, so short flags (``1``, ``true``) never blank out ordinary text.

Cost: one pass over ``os.environ`` and one ``str.replace`` per secret value
found in the text; profile files are parsed once per (path, mtime).
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from pathlib import Path

__all__ = ["redact", "secret_values", "register_secret_env", "MIN_SECRET_LENGTH"]

MIN_SECRET_LENGTH = 8
_NAME_RE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
_registered: set[str] = set()
_PACKAGED = Path(__file__).parent / "llm" / "profiles.toml"


def register_secret_env(*names: str) -> None:
    """Treat the variables ``names`` as secret from now on (e.g. a profile's ``api_key_env``)."""
    _registered.update(n for n in names if n)


@functools.lru_cache(maxsize=16)
def _profile_key_envs(path: str, mtime: float) -> frozenset[str]:
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, ValueError):
        return frozenset()
    profiles = data.get("profiles", {})
    names = set()
    if isinstance(profiles, dict):
        for prof in profiles.values():
            if isinstance(prof, dict) and isinstance(prof.get("api_key_env"), str):
                names.add(prof["api_key_env"])
    return frozenset(names)


def _profile_names() -> set[str]:
    names: set[str] = set()
    for p in (_PACKAGED, os.environ.get("AGENTCAUSAL_PROFILES")):
        if not p:
            continue
        try:
            mtime = os.stat(p).st_mtime
        except OSError:
            continue
        names |= _profile_key_envs(str(p), mtime)
    return names


def secret_values() -> list[tuple[str, str]]:
    """(name, value) of every secret variable set now, longest value first."""
    named = _profile_names() | _registered
    found = {}
    for name, value in os.environ.items():
        if len(value) < MIN_SECRET_LENGTH or value in found:
            continue
        if name in named or _NAME_RE.search(name):
            found[value] = name
    return sorted(((n, v) for v, n in found.items()), key=lambda nv: -len(nv[1]))


def redact(text: str) -> str:
    """``text`` with every secret variable's value replaced by ``[REDACTED:NAME]``.

    Parameters
    ----------
    text : str

    Returns
    -------
    str, unchanged when no secret value occurs in it.

    Examples
    --------
    >>> os.environ["DOCTEST_API_KEY"] = "sk-0123456789"
    >>> redact("key=sk-0123456789.")
    'key=[REDACTED:DOCTEST_API_KEY].'
    >>> del os.environ["DOCTEST_API_KEY"]
    """
    if not text:
        return text
    for name, value in secret_values():
        if value in text:
            text = text.replace(value, f"[REDACTED:{name}]")
    return text
