"""Flow-run names, tags, artifact keys and corpus paths of the ``attribute`` and ``discover`` flows.

Wiring helpers over :mod:`agentcausal.report.artifacts` that read the running
flow's parameters and deployment from ``prefect.runtime``:

* :func:`attribute_run_name` / :func:`discover_run_name`: ``flow_run_name`` callables
  (``who_and_when · all_at_once+dcfa · default``; a deployment's runs carry its name instead of the corpus);
* :func:`subject`: the deployment name when run from a deployment, else the corpus / dataset label;
* :func:`add_run_tags`: add ``method:`` / ``routing:`` / ``preset:`` / ``subset:`` tags to the running
  flow run (through the API, so deployment runs get them too);
* :func:`corpus_paths`: the ``paths`` parameter, or the Who&When folder of the settings
  (``AGENTCAUSAL_WHO_AND_WHEN_DIR``) when it is empty, resolved when the run starts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from prefect.runtime import deployment, flow_run

from agentcausal.report.artifacts import artifact_key, corpus_label, run_name, run_tags
from agentcausal.settings import RunSettings

__all__ = [
    "attribute_run_name",
    "discover_run_name",
    "subject",
    "add_run_tags",
    "corpus_paths",
    "key",
    "who_and_when_dir",
]

log = logging.getLogger(__name__)


def _params() -> dict[str, Any]:
    try:
        return dict(flow_run.parameters or {})
    except Exception:  # outside a flow run
        return {}


#: deployment name (None: not a deployment run) by flow-run id: ``prefect.runtime.deployment.name`` asks the API on
#: every access (the flow run, then its deployment), and a run reads it for its name, each artifact key and its
#: subject; a run's deployment never changes, so it is asked once per run (bounded: a long-lived server process).
#: A flow run whose context says it has no deployment (every run of the CLI, a nightly loop or a Python call) asks
#: nothing: Prefect's lookup does not read the context and fetches the flow run with a client of its own, a TLS
#: context and a round trip to the API (measured on a cached rerun: about 60 ms of CPU and 0.1 s of wall time)
_DEPLOYMENTS: dict[str, str | None] = {}
_DEPLOYMENTS_MAX = 1024


def _deployment_name() -> str | None:
    ctx = FlowRunContext.get()
    if ctx is not None and ctx.flow_run is not None and ctx.flow_run.deployment_id is None:
        return None  # the running flow run's own record: not a deployment run, nothing to ask the API
    try:
        run_id = str(flow_run.id) if flow_run.id else None
    except Exception:  # outside a flow run
        run_id = None
    if run_id is not None and run_id in _DEPLOYMENTS:
        return _DEPLOYMENTS[run_id]
    try:
        name = deployment.name
    except Exception:
        return None  # not remembered: a failed lookup is asked again
    if run_id is not None:
        if len(_DEPLOYMENTS) >= _DEPLOYMENTS_MAX:
            _DEPLOYMENTS.clear()
        _DEPLOYMENTS[run_id] = name
    return name


def _routing(settings: Any) -> str:
    if settings is None:
        return RunSettings.from_env().routing
    return str(
        getattr(settings, "routing", None)
        or (settings.get("routing") if isinstance(settings, dict) else None)
        or "default"
    )


def who_and_when_dir(settings: Any = None) -> str:
    """The Who&When folder of ``settings`` (a RunSettings, a mapping, or None for the environment).

    A RunSettings or mapping that does not set ``who_and_when_dir`` (a deployment's ``settings``
    naming only the routing) takes the environment's (``AGENTCAUSAL_WHO_AND_WHEN_DIR``).
    """
    env = RunSettings.from_env()
    if isinstance(settings, RunSettings):  # a field the deployment's mapping did not name: the environment's
        return settings.who_and_when_dir if "who_and_when_dir" in settings.model_fields_set else env.who_and_when_dir
    if isinstance(settings, dict) and settings.get("who_and_when_dir"):
        return str(settings["who_and_when_dir"])
    return env.who_and_when_dir


def corpus_paths(paths: Sequence[str] | None, settings: Any = None) -> list[str]:
    """``paths``, or ``[who_and_when_dir]`` from the settings when ``paths`` is empty.

    Parameters
    ----------
    paths : the flow's ``paths`` parameter
    settings : RunSettings, a mapping, or None (the environment: ``AGENTCAUSAL_WHO_AND_WHEN_DIR``)

    Returns
    -------
    list of str
    """
    return [str(p) for p in paths] if paths else [who_and_when_dir(settings)]


def subject(default: str) -> str:
    """The deployment's name when the run comes from a deployment, else ``default``."""
    return _deployment_name() or default


def _field(obj: Any, name: str) -> Any:
    """Field ``name`` of a parameter as the flow run holds it: a model, its JSON dict, or neither (None)."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _given_name(p: dict[str, Any]) -> str | None:
    """The run's own name (``--name``: ``meta["name"]`` of its run options), if it has one."""
    meta = _field(p.get("run"), "meta")
    name = meta.get("name") if isinstance(meta, dict) else None
    return str(name) if name else None


def _header(plan: Any) -> Any:
    """A ``plan`` parameter as its fields: the path of a ``plan.json`` read as its header (small: a plan's items
    live in their own file), anything else as it is; ``{}`` for a path that cannot be read (naming never fails)."""
    if isinstance(plan, (str, Path)):
        try:
            return json.loads(Path(plan).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
    return plan


def _methods(plan: Any) -> list[str]:
    """The method names of a plan (its ``methods`` mapping), a request (its ``methods`` list) or the path of a
    ``plan.json``."""
    return list(_field(_header(plan), "methods") or [])


def _datasets(plan: Any) -> list[str]:
    """The dataset names of a discovery request, or of a plan's items (a plan given as a model or a path)."""
    if names := _field(plan, "datasets"):
        return list(names)
    from agentcausal.discovery.plan_model import DiscoveryPlan
    from agentcausal.runs.plan import as_plan

    try:
        built = as_plan(plan, DiscoveryPlan)
        return list(dict.fromkeys(i.spec or i.id for i in built.iter_items()))
    except Exception:  # not a readable discovery plan: the run is still named
        return []


def attribute_run_name() -> str:
    """``flow_run_name`` of the ``attribute`` flow: the run's ``--name`` (``meta["name"]``), else
    ``<deployment or corpus> · <methods> · <routing>`` (the corpus of a built plan: its ``meta["corpus"]``)."""
    p = _params()
    if name := _given_name(p):
        return name
    plan, meta = p.get("plan"), _field(p.get("run"), "meta") or {}
    if meta.get("corpus"):
        paths = list(meta["corpus"])
    elif _field(plan, "kind") is None and plan is not None and not isinstance(plan, str):  # a request
        paths = _field(plan, "paths") or [who_and_when_dir(p.get("settings"))]
    else:  # a plan without its corpus named
        paths = []
    return run_name(subject(corpus_label(paths)), _methods(plan), _routing(p.get("settings")))


def discover_run_name() -> str:
    """``flow_run_name`` of the ``discover`` flow: the run's ``--name`` (``meta["name"]``), else
    ``<deployment or datasets> · <methods> · <routing>``."""
    p = _params()
    if name := _given_name(p):
        return name
    label = corpus_label(_datasets(p.get("plan")), default="datasets")
    return run_name(subject(label), _methods(p.get("plan")), _routing(p.get("settings")))


def key(kind: str, default_subject: str) -> str:
    """:func:`agentcausal.report.artifacts.artifact_key` of ``kind`` for this run's subject."""
    return artifact_key(kind, subject(default_subject))


def add_run_tags(
    methods: Iterable[str], settings: Any = None, *, preset: str | None = None, subsets: Iterable[str] = ()
) -> list[str]:
    """Add the run's tags to the running flow run (best effort: a failure is logged, never raised).

    Returns
    -------
    list of the tags added.
    """
    tags = run_tags(list(methods), _routing(settings), preset, subsets)
    try:
        with get_client(sync_client=True) as client:
            fr = client.read_flow_run(flow_run.id)
            client.update_flow_run(flow_run.id, tags=sorted(set(fr.tags or []) | set(tags)))
    except Exception as exc:  # tags are a convenience; the run goes on
        log.debug("could not tag flow run: %s", exc)
    return tags
