"""The run plan: what a run will do, readable before it spends anything (``--dry-run``).

One schema for both verbs (:class:`Plan`)::

    {"kind": "attribute" | "discover",
     "routing": NAME, "preset": NAME,
     "items": [{"id", "path", "sha256", "file_sha256", ("n", "d" for discover)}],
     "methods": {name: {"preset", "variant", "settings": {...resolved fields, as the run applies them...},
                        "stages": {stage: "profile:model"},
                        "profile_params": {stage: {"temperature", "max_output_tokens"}}}},
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentcausal.exceptions import AgentCausalError, MissingAPIKeyError
from agentcausal.llm.profiles import ProfileSet, load_profiles

__all__ = ["SourceFile", "sha256_file", "source_files", "PlanItem", "MethodPlan", "Plan", "stage_models",
           "profile_params", "missing_keys", "routed_profiles", "absolute_path"]


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
        return SourceFile(path=absolute_path(q), sha256=sha256_file(q) if q.is_file() else None, format=fmt)

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
        stands for its trace in :func:`agentcausal.attribution.cache_key.attribution_key`)."""
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


def routed_profiles(profiles_path: str | None, routing: str) -> ProfileSet:
    """The profiles file's profiles under ``routing`` (:func:`agentcausal.llm.profiles.load_profiles`)."""
    return load_profiles(profiles_path, routing)


def stage_models(profiles: Any, stages: Sequence[str]) -> dict[str, str]:
    """``{stage: "profile:model"}`` for each stage (``"unrouted"`` when no route serves it)."""
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
    "max_output_tokens": int or None (completion ceiling; None: none)}; unrouted stages are left out.
    """
    out = {}
    for st in stages:
        try:
            p = profiles.profile_for(st)
        except AgentCausalError:
            continue
        out[st] = {"temperature": float(p.temperature) if p.temperature_allowed else None,
                   "max_output_tokens": p.max_output_tokens}
    return out


def missing_keys(profiles: Any, stages: Sequence[str]) -> list[str]:
    """Environment variables a stage's profile reads its key from that are unset (sorted, unique)."""
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


def absolute_path(path: str | Path) -> str:
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


