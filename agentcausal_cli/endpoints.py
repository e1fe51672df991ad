"""The reachability check of a run's chat endpoints, before any work (``attribute``, ``discover``).

One ``GET <base_url>/models`` per distinct non-embedded chat endpoint the run's
stages are routed to, with a short timeout. Any HTTP answer (even 401 or 404)
counts as reachable: only a refused connection, an unknown host or a timeout
stops the run, in one line, so that a typo in ``--base-url`` or a server that
is not started does not turn into a run in which every row fails.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentcausal.exceptions import EndpointCheckError

__all__ = ["CHECK_TIMEOUT_S", "check_endpoints"]

#: seconds the check waits for each endpoint (connect and read)
CHECK_TIMEOUT_S = 5.0


def check_endpoints(
    profiles_path: str | None, routing: str, stages: Iterable[str], *, timeout_s: float = CHECK_TIMEOUT_S
) -> list[str]:
    """Check that every non-embedded chat endpoint the ``stages`` use answers ``GET /models``.

    Parameters
    ----------
    profiles_path : the profiles TOML (None: the packaged one)
    routing : the active routing
    stages : stage names the run will call
    timeout_s : seconds per endpoint

    Returns
    -------
    list of str, the base URLs checked (embedded and local profiles are not checked).

    Raises
    ------
    EndpointCheckError
        Naming the first profile whose endpoint refused, timed out or does not resolve.
    """
    import httpx

    # start-up cost: loads openai, pydantic, which `agentcausal --help` and every other verb would pay at import
    from agentcausal.llm.profiles import load_profiles

    profiles = load_profiles(profiles_path, routing)
    checked: list[str] = []
    for stage in sorted(set(stages)):
        p = profiles.profile_for(stage)
        if p.kind != "chat" or p.is_embedded or p.is_local_embedder or p.base_url in checked:
            continue
        key = p.api_key()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            httpx.get(p.base_url.rstrip("/") + "/models", headers=headers, timeout=timeout_s)
        except httpx.TimeoutException:
            raise EndpointCheckError(
                p.name,
                p.base_url,
                f"no answer to GET /models within {timeout_s:g} s; is the server up and the address right?",
            ) from None
        except (httpx.TransportError, ValueError) as exc:
            cause = str(exc) or type(exc).__name__
            raise EndpointCheckError(
                p.name,
                p.base_url,
                f"{cause} (GET /models); start the server or fix the base URL (--base-url or the profile's base_url)",
            ) from None
        checked.append(p.base_url)
    return checked
