"""The run plan: what a run will do, readable before it spends anything (``--dry-run``).

One schema for both verbs (:class:`Plan`)::

    {"kind": "attribute" | "discover",
     "routing": NAME, "preset": NAME,
     "items": [{"id", "path", "sha256", "file_sha256", ("n", "d" for discover)}],
     "methods": {name: {"preset", "variant", "settings": {...resolved fields, as the run applies them...},
                        "stages": {stage: "profile:model"},
                        "profile_params": {stage: {"temperature", "max_output_tokens", "endpoint",
                                                   "context_window", "reasoning", ...dialect}}}},
     "repeats": K,
     ("seeds": [...], "n": N for discover),
     "missing_keys": [ENV_VAR, ...],
     ("sources": [{"path", "sha256", "format"}], "labels": {"path", "sha256", "format"}
      for an imported attribute corpus),
     ("anonymise": [...] for discover; ["none"] when not asked, the CLI default)}

An attribute item's ``path`` is the file its trace was read from, ``sha256`` the
trace's content hash (:meth:`agentcausal.traces.model.Trace.content_hash`:
question, ground truth and steps, not the label) and ``file_sha256`` the sha256
of that file's bytes (so two copies of a trace with different labels differ).

A setting that is null because the routed profile decides (an attribution
method's ``max_tokens`` fields, a discovery method's ``temperature_used``) is
shown by what the profile applies: ``profile_params`` gives per stage the
temperature the requests send (None: the profile sends none, the endpoint's
default applies) and the completion-token ceiling ``max_output_tokens`` (the
cap a null ``max_tokens`` leaves, None: no ceiling). A discovery method's
``temperature_used`` holds the profile's temperature when its stages agree on
one, with ``temperature_from`` (``setting``, ``profile``, ``not sent`` or
``profile (per stage)``; ``setting (not sent: …)`` when the profile takes no
temperature) saying where it comes from. An attribution method's
``settings`` stay as resolved (they enter the cache keys).

Building a plan reads trace files, dataset metadata and the profiles file;
it starts no model, makes no request and needs no API key (keys that a
stage would need and that are unset are listed under ``missing_keys``).
An imported corpus (another trace format, or ``--labels``) runs from
``<run folder>/traces.jsonl``; its items name that file, and ``sources`` /
``labels`` name the files it was imported from (absolute paths and the
sha256 of their bytes), so the run's provenance stays in ``run.json``.
Every ``path`` is absolute and resolved.

The same plan is stored in the run folder's ``run.json`` (``meta["plan"]``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SourceFile", "sha256_file", "source_files", "PlanItem", "MethodPlan", "Plan", "stage_models",
           "profile_params", "missing_keys", "attribute_plan", "discover_plan"]


class SourceFile(BaseModel):
    """A file an imported corpus was read from (provenance; the run reads ``<run folder>/traces.jsonl``).

    Attributes
    ----------
    path : str, absolute and resolved
    sha256 : str or None, sha256 of the file's bytes (None for a folder, e.g. a Who&When or AgentRx folder)
    format : str, the trace format it was read as (:data:`agentcausal.traces.importers.FORMATS`),
        ``labels`` for the ``--labels`` JSONL, ``otlp-logs`` for the ``--logs`` file
    """

    model_config = ConfigDict(frozen=True)

    path: str
    sha256: str | None
    format: str


def source_files(detected: Sequence[tuple[str | Path, str]], labels: str | Path | None = None,
                 logs: str | Path | None = None) -> tuple[list[SourceFile], SourceFile | None]:
    """The provenance of an imported corpus: each input file with its sha256 and format, and the labels file.

    Parameters
    ----------
    detected : (path, format) per input (:func:`agentcausal.traces.importers.detect_formats`)
    labels : the ``--labels`` file, or None
    logs : the ``--logs`` file (listed among the sources), or None

    Returns
    -------
    (sources, labels) : list of SourceFile, and SourceFile or None
    """
    def one(p: str | Path, fmt: str) -> SourceFile:
        q = Path(p)
        return SourceFile(path=_abs(q), sha256=sha256_file(q) if q.is_file() else None, format=fmt)

    sources = [one(p, f) for p, f in detected] + ([one(logs, "otlp-logs")] if logs else [])
    return sources, (one(labels, "labels") if labels else None)


class PlanItem(BaseModel):
    """One input: a trace (attribute) or a dataset (discover).

    Attributes
    ----------
    id : str, trace id or dataset name
    path : str, the file it is read from (a trace's own file inside a folder given; the dataset file),
        absolute and resolved
    sha256 : str, trace content hash (:meth:`Trace.content_hash`: question, ground truth and steps,
        not the label), or sha256 of the dataset file's bytes
    file_sha256 : str or None, sha256 of the bytes of ``path`` (attribute; None when ``path`` is no file)
    n : int or None, rows (discover)
    d : int or None, variables (discover)
    """

    model_config = ConfigDict(frozen=True)

    id: str
    path: str
    sha256: str
    file_sha256: str | None = None
    n: int | None = None
    d: int | None = None

    def content_hash(self) -> str:
        """``sha256``: for a trace, what :meth:`Trace.content_hash` gave when the plan was built (so an item
        stands for its trace in :func:`agentcausal.attribution.common.attribution_key`)."""
        return self.sha256


class MethodPlan(BaseModel):
    """One method as it will run.

    Attributes
    ----------
    preset : str, the settings preset (``paper`` or ``small``)
    variant : str, ``with_truth`` or ``no_truth`` (attribution); ``default`` (discovery)
    settings : dict, the resolved settings (every field)
    stages : dict stage -> ``profile:model``
    profile_params : dict stage -> {``temperature``: float or None (None: not sent, the endpoint's default),
        ``max_output_tokens``: int or None (the profile's completion ceiling; None: none)}, what the routed
        profile applies where a setting is null (unrouted stages are left out)
    """

    model_config = ConfigDict(frozen=True)

    preset: str
    variant: str
    settings: dict[str, Any]
    stages: dict[str, str]
    profile_params: dict[str, dict[str, Any]] = Field(default_factory=dict)


class Plan(BaseModel):
    """What a run will do (see the module docstring for the JSON shape)."""

    kind: Literal["attribute", "discover"]
    routing: str | None = None
    preset: str | None = None
    items: list[PlanItem]
    methods: dict[str, MethodPlan]
    repeats: int = Field(1, ge=1)
    seeds: list[int] | None = None
    n: int | None = None
    missing_keys: list[str] = Field(default_factory=list)
    sources: list[SourceFile] | None = None
    labels: SourceFile | None = None
    anonymise: list[str] | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """The plan as one JSON-friendly dict (item ``n``/``d``, ``seeds``, ``n`` and ``anonymise`` only for
        discover; ``file_sha256`` only for attribute; ``sources`` and ``labels`` only for an imported corpus)."""
        out = self.model_dump(mode="json")
        for k in ("sources", "labels"):
            if out.get(k) is None:
                out.pop(k, None)
        if self.kind == "attribute":
            for k in ("anonymise", "seeds", "n"):
                out.pop(k, None)
            out["items"] = [{k: v for k, v in it.items() if k not in ("n", "d")} for it in out["items"]]
        else:
            out["items"] = [{k: v for k, v in it.items() if k != "file_sha256"} for it in out["items"]]
            if not out.get("anonymise"):  # not asked: the names as they are, ``--anonymise``'s default
                out["anonymise"] = ["none"]
        return out

    def dumps(self) -> str:
        """One JSON object (what ``--dry-run`` prints)."""
        return json.dumps(self.to_json_dict(), indent=2, sort_keys=False)


def _profiles(profiles_path: str | None, routing: str):
    from agentcausal.llm.profiles import load_profiles

    return load_profiles(profiles_path, routing)


def stage_models(profiles: Any, stages: Sequence[str]) -> dict[str, str]:
    """``{stage: "profile:model"}`` for each stage (``"unrouted"`` when no route serves it)."""
    from agentcausal.exceptions import AgentCausalError

    out = {}
    for st in stages:
        try:
            p = profiles.profile_for(st)
            out[st] = f"{p.name}:{p.model}"
        except AgentCausalError:
            out[st] = "unrouted"
    return out


def profile_params(profiles: Any, stages: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per routed stage, what its profile applies where a method setting is null.

    Returns
    -------
    dict stage -> {"temperature": float or None (None: the profile sends no temperature),
    "max_output_tokens": int or None (completion ceiling; None: none), and the profile's dialect
    (:meth:`agentcausal.llm.profiles.Profile.dialect`: ``endpoint``, ``context_window``, ``reasoning``, ...)};
    unrouted stages are left out.
    """
    from agentcausal.exceptions import AgentCausalError

    out = {}
    for st in stages:
        try:
            p = profiles.profile_for(st)
        except AgentCausalError:
            continue
        out[st] = {"temperature": float(p.temperature) if p.temperature_allowed else None,
                   "max_output_tokens": p.max_output_tokens, **p.dialect()}  # endpoint, reasoning ...
    return out


def _with_temperature(settings: dict[str, Any], params: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A discovery method's ``temperature_used`` as its calls apply it, with ``temperature_from``."""
    if "temperature_used" not in settings:
        return settings
    if settings["temperature_used"] is not None:
        unsent = bool(params) and all(p["temperature"] is None for p in params.values())
        return {**settings, "temperature_from": "setting (not sent: the profile takes none)" if unsent else "setting"}
    temps = {p["temperature"] for p in params.values()}
    if len(temps) != 1:  # no routed stage, or stages that disagree: see profile_params
        return {**settings, "temperature_from": "profile (per stage)"}
    (t,) = temps
    return {**settings, "temperature_used": t, "temperature_from": "profile" if t is not None else "not sent"}


def missing_keys(profiles: Any, stages: Sequence[str]) -> list[str]:
    """Environment variables a stage's profile reads its key from that are unset (sorted, unique)."""
    from agentcausal.exceptions import AgentCausalError, MissingAPIKeyError

    out = set()
    for st in stages:
        try:
            profiles.profile_for(st).api_key()
        except MissingAPIKeyError as exc:
            p = profiles.profile_for(st)
            out.add(p.api_key_env or str(exc))
        except AgentCausalError:
            continue
    return sorted(out)


def attribute_plan(paths: Sequence[str], methods: Sequence[str] = (), *,
                   resolved: Mapping[str, Mapping[str, Any]],
                   preset: str, routing: str, profiles_path: str | None = None, ids: Sequence[str] | None = None,
                   limit: int | None = None, max_steps: int | None = None, repeats: int = 1,
                   skip_invalid: bool = False, traces: Sequence[tuple[str, Any]] | None = None,
                   sources: Sequence[SourceFile] | None = None, labels: SourceFile | None = None) -> Plan:
    """The plan of ``agentcausal attribute``.

    Parameters
    ----------
    paths : trace folders/files as given
    methods : method names
    resolved : method -> resolved settings (:func:`agentcausal.attribution.common.resolve_methods`)
    preset : str, the preset the settings were resolved with
    routing, profiles_path : the routing and profiles file
    ids, limit, max_steps : the trace selection (:func:`agentcausal.traces.io.select_traces`)
    repeats : int, runs per (trace, method)
    skip_invalid : leave out invalid trace inputs (as the flow does with ``--skip-invalid``)
    traces : (file, Trace) pairs already read (imported formats); None = read ``paths``
    sources, labels : provenance of an imported corpus (:func:`source_files`); None when not imported

    Returns
    -------
    Plan

    Raises
    ------
    TraceFormatError, ConfigError
        On a malformed trace file or an unknown routing/method.
    """
    from agentcausal.attribution.registry import get_method
    from agentcausal.traces.io import _raise_all, scan_traces, select_traces

    if traces is None:  # one read of the corpus: the traces and the file each came from
        scan = scan_traces(list(paths))
        if not skip_invalid:
            _raise_all(scan.invalid)
        traces = list(zip(scan.origins, scan.traces, strict=True))
    origin = {t.id: _abs(p) for p, t in traces}  # absolute: run.json read from any directory names the file
    traces = select_traces([t for _, t in traces], ids=ids, limit=limit, max_steps=max_steps)
    profiles = _profiles(profiles_path, routing)
    all_stages: list[str] = []
    mplans = {}
    for m in methods:
        spec = get_method(m)
        st = dict(resolved[m])
        stages = list(spec.stages)
        if st.get("with_ground_truth") is False:
            stages = [s for s in stages if not s.endswith(".embed")]  # the no-truth DCFA scores with a judge
        all_stages += stages
        mplans[m] = MethodPlan(preset=preset, variant="with_truth" if st.get("with_ground_truth", True) else "no_truth",
                               settings=st, stages=stage_models(profiles, stages),
                               profile_params=profile_params(profiles, stages))
    file_hash: dict[str, str | None] = {}
    for p in {origin[t.id] for t in traces}:
        file_hash[p] = sha256_file(Path(p)) if Path(p).is_file() else None
    items = [PlanItem(id=t.id, path=origin[t.id], sha256=t.content_hash(), file_sha256=file_hash[origin[t.id]])
             for t in traces]
    return Plan(kind="attribute", routing=routing, preset=preset, items=items, methods=mplans, repeats=repeats,
                missing_keys=missing_keys(profiles, all_stages),
                sources=list(sources) if sources is not None else None, labels=labels)


def _abs(path: str | Path) -> str:
    """``path`` absolute and resolved (symlinks followed), as a plan item names its file."""
    return str(Path(path).expanduser().resolve())


def sha256_file(path: str | Path) -> str:
    """sha256 hex digest of a file's bytes, read in 1 MiB blocks (a plan item's ``sha256`` / ``file_sha256``).

    Raises
    ------
    OSError
        If the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _dataset_item(spec: str, n: int, loaded: Any = None) -> PlanItem:
    """n, d and a file hash of a dataset, from metadata where that is cheap (bnlearn: the descriptions);
    ``loaded``: the user dataset as the CLI's check already read it (not read again)."""
    from agentcausal.discovery.datasets import BENCHMARKS, data_dir

    key = spec.lower().replace("-", "_")
    if key in ("auto", "autompg"):
        key = "auto_mpg"
    if key in BENCHMARKS:
        root = data_dir()
        desc_path = root / "descriptions" / f"{key}.json"
        d = len(json.loads(desc_path.read_text()).get("variables", {}))
        bif = root / "bnlearn" / f"{key}.bif.gz"
        if bif.is_file():
            return PlanItem(id=key, path=_abs(bif), sha256=sha256_file(bif), n=n, d=d)
        from agentcausal.discovery.datasets import load_dataset

        ds = load_dataset(key, n=n)  # auto_mpg: a small CSV, every row
        return PlanItem(id=key, path=_abs(desc_path), sha256=sha256_file(desc_path), n=int(ds.data.shape[0]), d=d)
    data_path, meta_path = spec.split("::", 1) if "::" in spec else (spec, str(Path(spec).with_suffix(".json")))
    from agentcausal.discovery.datasets import load_user_dataset

    ds = loaded if loaded is not None else load_user_dataset(data_path, meta_path)
    return PlanItem(id=ds.name, path=_abs(data_path), sha256=sha256_file(Path(data_path)), n=int(ds.data.shape[0]),
                    d=len(ds.variables))


def discover_plan(datasets: Sequence[str], methods: Sequence[str], *, config: Any, preset: str, routing: str,
                  profiles_path: str | None = None, n: int = 1000, repeats: int = 1,
                  anonymise: Sequence[str] = (), seeds: Sequence[int] = (0,),
                  loaded: Mapping[str, Any] | None = None) -> Plan:
    """The plan of ``agentcausal discover``.

    Parameters
    ----------
    datasets : dataset names or paths (expanded)
    methods : discovery method names (resolved)
    config : DiscoveryConfig
    preset : str, the preset MAC's settings were resolved with
    routing, profiles_path : the routing and profiles file
    n : int, rows sampled from a bnlearn network
    repeats : int, runs per (dataset, seed, method)
    anonymise : variable-anonymisation choices (``--anonymise``; empty = not asked, shown as ``["none"]``)
    seeds : the run seeds
    loaded : spec -> Dataset, user datasets already read and checked (the CLI's check); not read again

    Returns
    -------
    Plan with items carrying ``n`` and ``d``.

    Raises
    ------
    DatasetError, ConfigError
    """
    from agentcausal.discovery.methods import method_settings, method_stages

    profiles = _profiles(profiles_path, routing)
    all_stages: list[str] = []
    mplans = {}
    for m in methods:
        stages = list(method_stages(m, config))
        all_stages += stages
        params = profile_params(profiles, stages)
        mplans[m] = MethodPlan(preset=preset, variant="default",
                               settings=_with_temperature(method_settings(m, config), params),
                               stages=stage_models(profiles, stages), profile_params=params)
    items = [_dataset_item(d, n, (loaded or {}).get(d)) for d in datasets]
    return Plan(kind="discover", routing=routing, preset=preset, items=items, methods=mplans, repeats=repeats,
                seeds=list(seeds), n=n, missing_keys=missing_keys(profiles, all_stages), anonymise=list(anonymise))
