"""TEST DOUBLE: LLM profiles, a routing and a Gateway on one fake OpenAI-compatible endpoint."""

from __future__ import annotations

from pathlib import Path

from agentcausal.llm import Gateway, Profile, ProfileSet

__all__ = ["bench_profiles", "bench_gateway", "profiles_toml"]


def bench_profiles(
    base_url: str,
    concurrency: int,
    *,
    model: str = "bench-model",
    context_window: int = 128000,
    preset: str | None = None,
) -> ProfileSet:
    """Every chat stage and the embeddings on one fake endpoint, sharing one concurrency limit.

    Chat and embedding profiles name one ``limit_group`` (named after ``model``)
    of size ``concurrency``, so the gateway caps *all* requests in flight at
    ``concurrency`` (each profile alone would have its own limit, and DCFA's
    embeddings would add to the chat requests) and ``sum of latencies /
    concurrency`` is a true lower bound of the wall time. Use a new ``model``
    label per configuration: semaphores live for the process. ``preset`` is the
    method-settings preset the routing names (``agentcausal.settings``; None: the
    settings models' defaults, which are the ``paper`` preset).
    """
    common = dict(base_url=base_url, model=model, max_concurrency=concurrency, timeout_s=60.0, limit_group=model)
    return ProfileSet(
        profiles={
            "bench": Profile(name="bench", context_window=context_window, **common),
            "bench-embed": Profile(name="bench-embed", kind="embedding", **common),
        },
        routings={"default": {"default": "bench", "embed": "bench-embed"}},
        limit_groups={model: concurrency},
        presets={"default": preset} if preset else {},
    )


def bench_gateway(
    base_url: str, concurrency: int, cache_dir: str | Path | None, *, model: str, preset: str | None = None
) -> Gateway:
    """A Gateway on :func:`bench_profiles` (its routing naming ``preset``), with a disk cache at ``cache_dir``."""
    return Gateway(
        bench_profiles(base_url, concurrency, model=model, preset=preset), cache_dir=cache_dir, max_retries=2
    )


def profiles_toml(
    path: str | Path,
    base_url: str,
    concurrency: int,
    *,
    model: str,
    context_window: int = 128000,
    preset: str | None = None,
) -> Path:
    """The same profiles as :func:`bench_profiles`, as a TOML file for ``RunSettings.profiles_path``."""
    text = (
        f'[limit_groups]\n"{model}" = {concurrency}\n\n'
        f'[profiles.bench]\nkind = "chat"\nbase_url = "{base_url}"\nmodel = "{model}"\n'
        f"max_concurrency = {concurrency}\ntimeout_s = 60\ncontext_window = {context_window}\n"
        f'limit_group = "{model}"\n\n'
        f'[profiles.bench-embed]\nkind = "embedding"\nbase_url = "{base_url}"\nmodel = "{model}"\n'
        f'max_concurrency = {concurrency}\ntimeout_s = 60\nlimit_group = "{model}"\n\n'
        '[routings.default]\ndefault = "bench"\nembed = "bench-embed"\n' + (f'preset = "{preset}"\n' if preset else "")
    )
    p = Path(path)
    p.write_text(text)
    return p
