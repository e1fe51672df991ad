"""Serve the deployments of ``deploy/prefect.yaml`` from this process (``prefect.serve``).

The same file drives both ways of running the scheduled jobs: ``prefect
deploy --prefect-file deploy/prefect.yaml`` plus a worker, or this module
(``agentcausal serve``), which reads each deployment's name, entrypoint,
parameters, schedules, tags and description, builds it with
``flow.to_deployment`` and serves them all with one ``prefect.serve`` loop.
Served runs execute in subprocesses of this process. Schedules need a real
API (``prefect server start`` and ``PREFECT_API_URL``): Prefect's temporary
API has no scheduler.

::

    from flows.serve import load_specs, serve
    specs = load_specs()                       # validate the file: flows exist, parameters fit
    serve(only=["attribute/who-and-when-nightly"])
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from prefect import Flow
from prefect import serve as prefect_serve
from prefect.client.schemas.actions import DeploymentScheduleCreate
from prefect.client.schemas.schedules import CronSchedule
from prefect.deployments.runner import EntrypointType
from prefect.settings import PREFECT_API_URL
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentcausal.discovery.data.datasets import BENCHMARKS
from agentcausal.exceptions import ConfigError
from flows.naming import corpus_paths

__all__ = [
    "DEFAULT_FILE",
    "default_file",
    "ScheduleSpec",
    "DeploymentSpec",
    "load_specs",
    "load_flow",
    "runner_deployments",
    "serve",
    "InputCheck",
    "check_inputs",
]

#: the deployment file shipped in the repository
DEFAULT_FILE = Path(__file__).resolve().parents[1] / "deploy" / "prefect.yaml"


def default_file() -> Path:
    """``deploy/prefect.yaml`` of the working directory if there is one, else the repository's."""
    here = Path.cwd() / "deploy" / "prefect.yaml"
    return here if here.is_file() else DEFAULT_FILE


class ScheduleSpec(BaseModel):
    """One cron schedule of a deployment (the ``schedules`` items of ``prefect.yaml``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    cron: str
    timezone: str = "UTC"
    active: bool = True


class DeploymentSpec(BaseModel):
    """One deployment of ``prefect.yaml``, as this module reads it.

    Attributes
    ----------
    name : deployment name (the full name is ``<flow name>/<name>``)
    entrypoint : ``path/to/file.py:flow_function`` relative to the repository root
    parameters : default parameters of its runs (validated against the flow's signature)
    schedules : cron schedules
    description, tags : shown in the UI
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str
    entrypoint: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    schedules: list[ScheduleSpec] = Field(default_factory=list)
    description: str | None = None
    tags: list[str] = Field(default_factory=list)

    @property
    def module(self) -> str:
        """The entrypoint as an importable module name (``flows/attribute.py`` -> ``flows.attribute``)."""
        path = self.entrypoint.split(":", 1)[0]
        return path.removesuffix(".py").replace("/", ".").replace("\\", ".")

    @property
    def function(self) -> str:
        return self.entrypoint.split(":", 1)[1]


def load_flow(spec: DeploymentSpec) -> Flow:
    """Import the flow a deployment names.

    Parameters
    ----------
    spec : DeploymentSpec

    Returns
    -------
    The Prefect flow object.

    Raises
    ------
    ConfigError
        If the module or function does not exist or is not a flow.
    """
    try:
        obj = getattr(importlib.import_module(spec.module), spec.function)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"deployment {spec.name!r}: entrypoint {spec.entrypoint!r} not found: {exc}") from exc
    if not isinstance(obj, Flow):
        raise ConfigError(f"deployment {spec.name!r}: {spec.entrypoint!r} is not a Prefect flow")
    return obj


def load_specs(path: str | Path | None = None, *, check: bool = True) -> list[DeploymentSpec]:
    """Read and check the deployments of a ``prefect.yaml``.

    Parameters
    ----------
    path : the deployment file (default :func:`default_file`)
    check : import every flow and validate its parameters and cron expressions

    Returns
    -------
    list of DeploymentSpec, in file order.

    Raises
    ------
    ConfigError
        If the file is missing or not YAML, a deployment is malformed, names a flow that does not
        exist, has parameters the flow rejects, or a cron expression is invalid.
    """
    p = Path(path) if path is not None else default_file()
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read deployment file: {exc}", path=str(p)) from exc
    try:
        specs = [DeploymentSpec.model_validate(d) for d in doc.get("deployments") or []]
    except ValidationError as exc:
        raise ConfigError(f"malformed deployment: {exc}", path=str(p)) from exc
    if not specs:
        raise ConfigError("no deployments", path=str(p))
    if check:
        for s in specs:
            fl = load_flow(s)
            try:
                fl.validate_parameters(dict(s.parameters))
            except Exception as exc:  # Prefect raises ParameterTypeError / SignatureMismatchError
                raise ConfigError(
                    f"deployment {s.name!r}: parameters do not fit flow {fl.name!r}: {exc}"
                    + _regroup_hint(fl.name, dict(s.parameters)),
                    path=str(p),
                ) from exc
            for sch in s.schedules:
                try:
                    CronSchedule(cron=sch.cron, timezone=sch.timezone)
                except (ValueError, ValidationError) as exc:
                    raise ConfigError(f"deployment {s.name!r}: bad schedule {sch.cron!r}: {exc}", path=str(p)) from exc
    return specs


def _regroup_hint(flow: str, parameters: dict[str, Any]) -> str:
    """Where a flat parameter of ``attribute``/``discover`` now belongs (``plan.<key>`` or ``run.<key>``), as a
    sentence to append to the error; ``""`` when no given key is such a field."""
    from agentcausal.attribution.plan_model import AttributionRequest
    from agentcausal.discovery.plan_model import DiscoveryRequest
    from agentcausal.runs.options import RunOptions

    requests: dict[str, type[BaseModel]] = {"attribute": AttributionRequest, "discover": DiscoveryRequest}
    if flow not in requests:
        return ""
    plan_keys, run_keys = set(requests[flow].model_fields), set(RunOptions.model_fields)
    moves = [
        f"{k} -> plan.{k}" if k in plan_keys else f"{k} -> run.{k}"
        for k in parameters
        if k not in ("plan", "run", "settings") and (k in plan_keys or k in run_keys)
    ]
    if not moves:
        return ""
    return (
        f"; flow {flow!r} takes `plan:` (what to run) and `run:` (where, caps) mappings, "
        f"as in deploy/prefect.yaml: move {', '.join(moves)}"
    )


class InputCheck(NamedTuple):
    """One input of a deployment and whether it is there.

    Attributes
    ----------
    deployment : str, the deployment's name
    kind : ``"corpus"`` (a trace folder or file) or ``"dataset"`` (a benchmark name or data file)
    value : str, the path or name as the run will see it (empty ``paths`` resolved from the settings)
    exists : bool
    note : str, why it counts as missing (or where an empty ``paths`` came from)
    """

    deployment: str
    kind: str
    value: str
    exists: bool
    note: str = ""


def check_inputs(spec: DeploymentSpec) -> list[InputCheck]:
    """The inputs a deployment's runs will read, resolved as at run time, and whether each exists.

    ``attribute`` deployments: each of its request's ``plan.paths`` (``nightly``: ``paths``), or, when they are
    empty, the Who&When folder of the deployment's ``settings`` or of this environment
    (``AGENTCAUSAL_WHO_AND_WHEN_DIR``). ``discover`` deployments: each of ``plan.datasets`` is a
    known benchmark name, or a data file with its ``.json`` metadata (``DATA::META`` pairs too).
    Relative paths are relative to the working directory (the repository root when served).

    Parameters
    ----------
    spec : DeploymentSpec

    Returns
    -------
    list of InputCheck (empty for a flow without file inputs).
    """
    p = spec.parameters
    raw = p.get("plan")
    request: dict[str, Any] = raw if isinstance(raw, dict) else {}  # a request (a plan.json path: no inputs)
    out: list[InputCheck] = []
    if "paths" in p or "paths" in request or spec.function == "attribute":
        paths = p.get("paths") or request.get("paths")  # nightly: ``paths``; attribute: its request's
        note = "" if paths else "paths empty: the Who&When folder, AGENTCAUSAL_WHO_AND_WHEN_DIR"
        for path in corpus_paths(paths, p.get("settings")):
            out.append(
                InputCheck(
                    spec.name,
                    "corpus",
                    path,
                    Path(path).exists(),
                    note if Path(path).exists() else (note + "; " if note else "") + "not found",
                )
            )
    for ds in request.get("datasets") or []:
        if "::" in ds:
            files = ds.split("::", 1)
        elif Path(ds).suffix.lower() in (".csv", ".parquet", ".pq"):
            files = [ds, str(Path(ds).with_suffix(".json"))]
        else:
            ok = ds.lower() in BENCHMARKS
            out.append(InputCheck(spec.name, "dataset", ds, ok, "" if ok else "not a known benchmark"))
            continue
        missing = [f for f in files if not Path(f).is_file()]
        out.append(
            InputCheck(spec.name, "dataset", ds, not missing, f"not found: {', '.join(missing)}" if missing else "")
        )
    return out


def _full_name(spec: DeploymentSpec) -> str:
    return f"{load_flow(spec).name}/{spec.name}"


def runner_deployments(specs: Sequence[DeploymentSpec], only: Sequence[str] | None = None) -> list[Any]:
    """``flow.to_deployment`` for each spec (optionally only some), ready for ``prefect.serve``.

    Parameters
    ----------
    specs : from :func:`load_specs`
    only : full names (``attribute/who-and-when-nightly``) or bare deployment names to keep; None keeps all

    Returns
    -------
    list of ``prefect.deployments.runner.RunnerDeployment``.

    Raises
    ------
    ConfigError
        If a name in ``only`` matches no deployment.
    """

    chosen = list(specs)
    if only:
        names = {s.name: s for s in specs} | {_full_name(s): s for s in specs}
        missing = [n for n in only if n not in names]
        if missing:
            raise ConfigError(
                f"no deployment named {', '.join(missing)}; known: {', '.join(_full_name(s) for s in specs)}"
            )
        chosen = list({id(names[n]): names[n] for n in only}.values())
    out = []
    for s in chosen:
        schedules = [
            DeploymentScheduleCreate(schedule=CronSchedule(cron=c.cron, timezone=c.timezone), active=c.active)
            for c in s.schedules
        ]
        out.append(
            load_flow(s).to_deployment(
                name=s.name,
                parameters=dict(s.parameters),
                schedules=schedules or None,
                description=s.description,
                tags=list(s.tags),
                entrypoint_type=EntrypointType.MODULE_PATH,
            )
        )
    return out


def serve(path: str | Path | None = None, *, only: Sequence[str] | None = None, limit: int | None = None) -> None:
    """Serve the deployments of ``path`` until interrupted (``prefect.serve``).

    Parameters
    ----------
    path : the deployment file (default :func:`default_file`)
    only : see :func:`runner_deployments`
    limit : most flow runs at once (None: no limit)

    Raises
    ------
    ConfigError
        As :func:`load_specs` and :func:`runner_deployments`; also when ``PREFECT_API_URL`` is not set
        (Prefect's temporary API does not run schedules).
    """

    if not PREFECT_API_URL.value():
        raise ConfigError(
            "PREFECT_API_URL is not set: schedules need a Prefect server. Start one with "
            "`prefect server start` and `export PREFECT_API_URL=http://127.0.0.1:4200/api`"
        )
    deployments = runner_deployments(load_specs(path), only=only)
    prefect_serve(*deployments, limit=limit)
