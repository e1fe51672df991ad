"""The run plan: what a run will do, readable before it spends anything (``--dry-run``), streamed.

One schema for both verbs (:class:`Plan`, the header's shared fields, and its :class:`PlanItem` lines); each
half's plan is a typed subclass (:class:`agentcausal.attribution.plan_model.AttributionPlan`,
:class:`agentcausal.discovery.plan_model.DiscoveryPlan`: the discovery ``config`` a ``DiscoveryConfig``), and
:data:`agentcausal.plans.AnyPlan` reads either by ``kind``::

    {"kind": "attribute" | "discover",
     "routing": NAME, "preset": NAME,
     "item_count": N, "items": [first items ...], "items_file": "plan.items.jsonl" (a run's plan),
     "methods": {name: {"preset", "variant", "settings": {...resolved fields, as the run applies them...},
                        "stages": {stage: "profile:model"},
                        "profile_params": {stage: {"temperature", "max_output_tokens", "endpoint",
                                                   "context_window", "reasoning", ...dialect}}}},
     "repeats": K,
     ("seeds": [...], "n": N, "config": {...DiscoveryConfig...}, "llm_datasets": [...] for discover),
     "missing_keys": [ENV_VAR, ...],
     ("sources": [{"path", "sha256", "format"}], "labels": {"path", "sha256", "format"}
      for an imported attribute corpus),
     ("anonymise": [...] for discover; ["none"] when not asked, the CLI default),
     "estimate": {"methods": {name: {"jobs", "requests", "prompt_tokens", "completion_tokens": [low, high],
                                     "usd": [low, high] or None (price unknown), "calls": [...], "how": [...]}},
                  "total": {...}, "prices": {stage: note}, "how": [...]}}   (:mod:`agentcausal.runs.budget`)

Items are a stream: a builder hands each one to a :class:`PlanWriter` as it is read, hashed and
validated, which writes it as one line of ``plan.items.jsonl`` in the run folder (and the header to
``plan.json`` when the corpus is done), or, for ``--dry-run``, counts them and keeps the first
:data:`SHOWN_ITEMS`. :meth:`Plan.iter_items` reads them back one at a time; no part of the run holds
the list (:func:`read_plan`, :func:`write_plan`). ``plan.json`` holds the half's fields in the order shown above
(:data:`FIELD_ORDER`); one written before the plans were split (the other half's fields, null) still loads.

An attribute item's ``path`` is the file its trace was read from, ``offset`` the byte offset of its
line in a JSONL file, ``sha256`` the trace's content hash
(:meth:`agentcausal.traces.model.Trace.content_hash`: question, ground truth and steps, not the
label) and ``file_sha256`` the sha256 of that file's bytes (so two copies of a trace with different
labels differ). A discover item's ``spec`` is the dataset as the command line named it.

A setting that is null because the routed profile decides (an attribution method's ``max_tokens``
fields, a discovery method's ``temperature_used``) is shown by what the profile applies:
``profile_params`` gives per stage the temperature the requests send (None: the profile sends none,
the endpoint's default applies) and the completion-token ceiling ``max_output_tokens`` (the cap a
null ``max_tokens`` leaves, None: no ceiling). An attribution method's ``settings`` stay as resolved
(they enter the cache keys).

Building a plan reads trace files, dataset metadata and the profiles file; it starts no model, makes
no request and needs no API key (keys that a stage would need and that are unset are listed under
``missing_keys``). An imported corpus (another trace format, or ``--labels``) runs from
``<run folder>/traces.jsonl``; its items name that file, and ``sources`` / ``labels`` name the files
it was imported from (absolute paths and the sha256 of their bytes), so the run's provenance stays
in ``run.json``. Every ``path`` is absolute and resolved. ``run.json`` holds the header under
``plan`` (with the first :data:`SHOWN_ITEMS` items).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import Self

from agentcausal.exceptions import AgentCausalError, ConfigError, MissingAPIKeyError, RunFileError
from agentcausal.llm.profiles import ProfileSet, load_profiles
from agentcausal.runs.folder import atomic_path, atomic_write_text, model_lines
from agentcausal.traces.model import TraceFacts

__all__ = [
    "SourceFile",
    "sha256_file",
    "source_files",
    "PlanItem",
    "MethodPlan",
    "Plan",
    "PlanWriter",
    "SHOWN_ITEMS",
    "PLAN_FILE",
    "FIELD_ORDER",
    "ITEMS_FILE",
    "as_plan",
    "read_plan",
    "write_plan",
    "stage_models",
    "profile_params",
    "missing_keys",
    "routed_profiles",
    "absolute_path",
]

#: items a dry run prints, and ``run.json`` lists, at most (the count is always given)
SHOWN_ITEMS = 20
#: the plan's header in a run folder
PLAN_FILE = "plan.json"
#: the plan's items in a run folder, one JSON object a line
ITEMS_FILE = "plan.items.jsonl"


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


def source_files(
    detected: Sequence[tuple[str | Path, str]], labels: str | Path | None = None, logs: str | Path | None = None
) -> tuple[list[SourceFile], SourceFile | None]:
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
    offset : int or None, byte offset of the trace's line in a JSONL ``path`` (attribute; None: a Who&When file)
    spec : str or None, the dataset as named on the command line (discover: a benchmark name, a data path
        or ``DATA::META``)
    n : int or None, rows (discover)
    d : int or None, variables (discover)
    facts : TraceFacts or None, what scoring the trace's results reads (attribute: label, length, subset,
        span ids), taken when the plan was built so that writing the results reads no trace again; None in
        a plan written without them (its traces are read again to score)
    data_hashes : tuple of (seed, hash) pairs or None, the content hash of the rows each seed's jobs run on
        (discover: ``Dataset.content_hash``), taken when the plan was built so that keying a job samples no
        data; None in a plan written without them (the rows are sampled again to key)
    """

    model_config = ConfigDict(frozen=True)

    id: str
    path: str
    sha256: str
    file_sha256: str | None = None
    offset: int | None = None
    spec: str | None = None
    n: int | None = None
    d: int | None = None
    facts: TraceFacts | None = None
    data_hashes: tuple[tuple[int, str], ...] | None = None

    def data_hash(self, seed: int) -> str | None:
        """The content hash of seed ``seed``'s rows as the plan took it (None: not in the plan)."""
        return dict(self.data_hashes).get(seed) if self.data_hashes is not None else None

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


#: the order of a plan's fields in ``plan.json`` and ``--dry-run`` (both halves' fields; each plan has its own)
FIELD_ORDER = (
    "kind",
    "routing",
    "preset",
    "item_count",
    "items",
    "items_file",
    "methods",
    "repeats",
    "seeds",
    "n",
    "config",
    "llm_datasets",
    "missing_keys",
    "sources",
    "labels",
    "anonymise",
    "skipped",
    "estimate",
)


def _ordered(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` with its keys in :data:`FIELD_ORDER` (any other key after them)."""
    rank = {k: i for i, k in enumerate(FIELD_ORDER)}
    return dict(sorted(d.items(), key=lambda kv: rank.get(kv[0], len(rank))))


class Plan(BaseModel):
    """What a run will do: the header of a plan, with its items in memory or in a file; the fields both halves'
    plans share (:class:`agentcausal.attribution.plan_model.AttributionPlan`,
    :class:`agentcausal.discovery.plan_model.DiscoveryPlan`; :data:`agentcausal.plans.AnyPlan` reads either by
    ``kind``).

    See the module docstring for the JSON shape. ``items`` holds the items of a plan built in memory
    (or the first of a dry run); ``items_file`` names the file a run's items are streamed from
    (:meth:`iter_items` reads whichever the plan has). ``item_count`` counts them either way.
    ``skipped`` lists the invalid inputs ``--skip-invalid`` left out (``{"path", "field", "error"}`` or
    ``{"dataset", "file", "column", "error"}``). A key of the other half's plan in a ``plan.json`` (a null
    ``seeds`` in an attribute plan written before the plans were split) is ignored.
    """

    #: item fields the half's items never carry, left out of :meth:`to_json_dict`
    ITEM_FIELDS_NOT_SHOWN: ClassVar[tuple[str, ...]] = ()

    kind: str
    routing: str | None = None
    preset: str | None = None
    item_count: int = 0
    items: list[PlanItem] = Field(default_factory=list)
    items_file: str | None = None
    methods: dict[str, MethodPlan]
    repeats: int = Field(1, ge=1)
    missing_keys: list[str] = Field(default_factory=list)
    skipped: list[dict[str, Any]] | None = None
    estimate: dict[str, Any] | None = None

    def iter_items(self) -> Iterator[PlanItem]:
        """The plan's items one at a time: from ``items_file`` when it has one, else ``items``.

        Raises
        ------
        RunFileError
            If the items file is missing or a line is not a plan item (torn), naming the file and line.
        """
        if self.items_file is None:
            yield from self.items
            return
        path = Path(self.items_file)
        try:
            fh = path.open(encoding="utf-8")
        except OSError as exc:
            raise RunFileError(f"cannot read the plan's items: {exc.strerror or exc}", path=str(path)) from exc
        with fh:
            yield from model_lines(fh, PlanItem, "a plan item", path)

    def header(self) -> Self:
        """This plan without its in-memory items (what a task receives: methods, settings, config)."""
        return self.model_copy(update={"items": []}) if self.items else self

    def to_json_dict(self, *, shown: int = SHOWN_ITEMS) -> dict[str, Any]:
        """The plan as one JSON-friendly dict, with its first ``shown`` items (the item fields of the plan's
        half only); ``sources``, ``labels``, ``items_file``, ``skipped`` and ``estimate`` only when set."""
        out = self.model_dump(mode="json", exclude={"items"})
        first: list[dict[str, Any]] = []
        for it in self.iter_items():
            if len(first) >= shown:
                break
            d = it.model_dump(mode="json")
            first.append({k: v for k, v in d.items() if k not in self.ITEM_FIELDS_NOT_SHOWN})
        out["items"] = first
        for k in ("sources", "labels", "items_file", "skipped", "estimate"):
            if out.get(k) is None:
                out.pop(k, None)
        return _ordered(out)

    def dumps(self) -> str:
        """One JSON object (what ``--dry-run`` prints): the header, the item count and the first items."""
        return json.dumps(self.to_json_dict(), indent=2, sort_keys=False)


P = TypeVar("P", bound=Plan)


class PlanWriter:
    """Items of a plan taken one at a time: written as lines of ``items_path``, or (None) kept in memory,
    all of them or (``keep``, a dry run) only the first ``keep``; counted either way.

    Parameters
    ----------
    items_path : Path or None, the items file (written atomically when :meth:`close` is called)
    keep : int or None, items kept in memory at most (None: every item when there is no file,
        :data:`SHOWN_ITEMS` when there is)

    Examples
    --------
    >>> w = PlanWriter(None)
    >>> w.add(PlanItem(id="a", path="/x", sha256="0")); w.count
    1
    """

    def __init__(self, items_path: str | Path | None, *, keep: int | None = None) -> None:
        self.path = None if items_path is None else Path(items_path)
        self.keep = keep if keep is not None else (SHOWN_ITEMS if self.path is not None else None)
        self.count = 0
        self.first: list[PlanItem] = []
        self._atomic = None if self.path is None else atomic_path(self.path)
        self._fh = None if self._atomic is None else self._atomic.__enter__().open("w", encoding="utf-8")

    def add(self, item: PlanItem) -> None:
        """Take the next item."""
        self.count += 1
        if self.keep is None or len(self.first) < self.keep:
            self.first.append(item)
        if self._fh is not None:
            self._fh.write(item.model_dump_json(exclude_none=True) + "\n")

    def close(self, model: type[P], **header: Any) -> P:
        """Finish the items file; the plan (a ``model``: the half's plan type) with ``header``'s fields and
        these items (in the file, or the first ones in memory for a dry run)."""
        if self._fh is not None and self._atomic is not None:  # both or neither
            self._fh.close()
            self._atomic.__exit__(None, None, None)
            return model(**header, item_count=self.count, items_file=str(self.path))
        return model(**header, item_count=self.count, items=self.first)

    def abort(self) -> None:
        """Drop a half-written items file (the build was refused)."""
        if self._fh is not None and self._atomic is not None:  # both or neither
            self._fh.close()
            try:
                self._atomic.__exit__(RuntimeError, RuntimeError("aborted"), None)
            except RuntimeError:
                pass


def write_plan(plan: Plan, run_dir: str | Path) -> Path:
    """Write ``plan.json`` (the header; its items stay where ``items_file`` names, or are written beside it
    as ``plan.items.jsonl`` when the plan holds them in memory) into ``run_dir``; the path of ``plan.json``."""
    d = Path(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    if plan.items_file is None:
        items = d / ITEMS_FILE
        atomic_write_text(items, "".join(i.model_dump_json(exclude_none=True) + "\n" for i in plan.items))
        plan = plan.model_copy(update={"items": [], "items_file": str(items.resolve()), "item_count": len(plan.items)})
    p = d / PLAN_FILE
    header = _ordered(plan.model_dump(mode="json", exclude={"items"}))
    atomic_write_text(p, json.dumps(header, indent=1, ensure_ascii=False) + "\n")
    return p


def as_plan(plan: P | Mapping[str, Any] | str | Path, model: type[P]) -> P:
    """A plan given to a flow as it came: a ``model``, its JSON dict, or the path of its ``plan.json``.

    Raises
    ------
    RunFileError
        If a path names no readable plan of that half.
    ConfigError
        If a plan or dict given is not a ``model`` (the other half's plan, or no plan).
    """
    if isinstance(plan, model):
        return plan
    if isinstance(plan, (str, Path)):
        return read_plan(plan, model)
    if isinstance(plan, Plan):
        raise ConfigError(f"a {plan.kind} plan where a {model.__name__} was expected")
    try:
        return model.model_validate(dict(plan))
    except ValueError as exc:
        raise ConfigError(f"not a {model.__name__}: {str(exc)[:200]}") from exc


def read_plan(path: str | Path, model: type[P]) -> P:
    """The plan whose header is the file ``path`` (``plan.json``) as a ``model`` (the half's plan type), its
    items streamed from its items file (:func:`agentcausal.plans.read_any_plan` reads either half's).

    Raises
    ------
    RunFileError
        If the file is missing or not a plan header of that half.
    """
    p = Path(path)
    try:
        return model.model_validate_json(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunFileError(f"cannot read the run plan: {exc.strerror or exc}", path=str(p)) from exc
    except ValueError as exc:
        raise RunFileError(f"not a run plan (torn?): {str(exc)[:200]}", path=str(p)) from exc


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
    "max_output_tokens": int or None (completion ceiling; None: none), and the profile's dialect
    (:meth:`agentcausal.llm.profiles.Profile.dialect`: ``endpoint``, ``context_window``, ``reasoning``, ...)};
    unrouted stages are left out.
    """
    out = {}
    for st in stages:
        try:
            p = profiles.profile_for(st)
        except AgentCausalError:
            continue
        out[st] = {
            "temperature": float(p.temperature) if p.temperature_allowed else None,
            "max_output_tokens": p.max_output_tokens,
            **p.dialect(),
        }  # endpoint, reasoning ...
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
