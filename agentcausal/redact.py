"""Redact the values of secret environment variables, and their common encodings, from text that leaves a
sandbox or enters a record.

A variable is secret when a profile names it as ``api_key_env`` (the packaged
profiles file, the one ``AGENTCAUSAL_PROFILES`` points to, and any name given
to :func:`register_secret_env`), or when its name contains ``KEY``, ``TOKEN``,
``SECRET`` or ``PASSWORD`` (any case). Only values of at least 8 characters
are replaced, so short flags (``1``, ``true``) never blank out ordinary text.

Each secret is found as itself (``[REDACTED:NAME]``) and as its common
encodings (``[REDACTED:NAME:<encoding>]``, :data:`ENCODINGS`): reversed; hex of
its UTF-8 bytes (any case); URL-encoded (``quote``, ``quote_plus`` and every
byte as ``%XX``, any case); base64, standard and URL-safe alphabets, padded or
not, wrapped over lines or not, and also where the secret sat inside a longer
encoded text: for each of the three byte offsets modulo 3 the characters that
encode only the secret's bytes are matched (at least 8 of them), so
``base64("KEY=" + secret)`` loses the secret's part. A secret split up,
interleaved or encrypted is not found: redaction is the second line of defence
behind a sandbox that holds no secret.

Cost: one pass over ``os.environ`` per call and one compiled pattern per
secret and encoding (cached for the set of secrets); profile files are parsed
once per (path, mtime).
"""

from __future__ import annotations

import base64
import functools
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, quote_plus

__all__ = ["redact", "secret_values", "register_secret_env", "MIN_SECRET_LENGTH", "ENCODINGS", "encoded_forms"]

MIN_SECRET_LENGTH = 8
#: the encodings of a secret that are redacted besides the secret itself
ENCODINGS = ("reversed", "hex", "url", "base64")
#: the fewest base64 characters of a secret matched inside a longer encoded text
_MIN_BASE64_CORE = 8
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


def _base64_cores(raw: bytes) -> set[str]:
    """Standard-alphabet base64 of ``raw`` alone, and the stable part of its encoding at each offset mod 3."""
    forms = {base64.b64encode(raw).decode(), base64.b64encode(raw).decode().rstrip("=")}
    for r in range(3):
        enc = base64.b64encode(b"\0" * r + raw).decode()
        first = -(-r // 3)  # the first 3-byte group holding only secret bytes
        last = (r + len(raw)) // 3  # one past the last such group
        core = enc[4 * first : 4 * last]
        if len(core) >= _MIN_BASE64_CORE:
            forms.add(core)
    return forms


def encoded_forms(value: str) -> dict[str, set[str]]:
    """The literal forms of ``value`` searched for, by encoding (hex and ``%XX`` forms are matched in any case).

    Examples
    --------
    >>> sorted(encoded_forms("sk-0123456789")["hex"])
    ['736b2d30313233343536373839']
    """
    raw = value.encode("utf-8")
    b64 = _base64_cores(raw)
    return {
        "reversed": {value[::-1]},
        "hex": {raw.hex()},
        "url": {quote(value, safe=""), quote_plus(value, safe=""), "".join(f"%{b:02x}" for b in raw)} - {value},
        "base64": b64 | {f.replace("+", "-").replace("/", "_") for f in b64},
    }


_WRAP = r"(?:\r?\n)?"  # base64 wrapped over lines (76 characters a line, or 64)


def _pattern(form: str, encoding: str) -> re.Pattern[str]:
    if encoding == "base64":
        return re.compile(_WRAP.join(re.escape(c) for c in form))
    return re.compile(re.escape(form), re.IGNORECASE if encoding in ("hex", "url") else 0)


@functools.lru_cache(maxsize=8)
def _patterns(secrets: tuple[tuple[str, str], ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    """(pattern, replacement) for every secret and encoded form, longest form first."""
    found: list[tuple[int, re.Pattern[str], str]] = []
    for name, value in secrets:
        found.append((len(value), re.compile(re.escape(value)), f"[REDACTED:{name}]"))
        for encoding, forms in encoded_forms(value).items():
            for form in forms:
                found.append((len(form), _pattern(form, encoding), f"[REDACTED:{name}:{encoding}]"))
    found.sort(key=lambda x: -x[0])
    return tuple((p, r) for _, p, r in found)


def redact(text: str) -> str:
    """``text`` with every secret variable's value replaced by ``[REDACTED:NAME]`` and each of its
    encodings (:func:`encoded_forms`) by ``[REDACTED:NAME:ENCODING]``.

    Parameters
    ----------
    text : str

    Returns
    -------
    str, unchanged when no secret value or encoding occurs in it.

    Examples
    --------
    >>> os.environ["DOCTEST_API_KEY"] = "sk-0123456789"
    >>> redact("key=sk-0123456789.")
    'key=[REDACTED:DOCTEST_API_KEY].'
    >>> redact("b64=c2stMDEyMzQ1Njc4OQ== rev=9876543210-ks")
    'b64=[REDACTED:DOCTEST_API_KEY:base64] rev=[REDACTED:DOCTEST_API_KEY:reversed]'
    >>> del os.environ["DOCTEST_API_KEY"]
    """
    if not text:
        return text
    secrets = tuple(secret_values())
    if not secrets:
        return text
    for pattern, replacement in _patterns(secrets):
        text = pattern.sub(_literal(replacement), text)
    return text


def _literal(replacement: str) -> Callable[[re.Match[str]], str]:
    """A ``re.sub`` replacement taken as it is (no backslash or group references)."""
    return lambda _m: replacement
