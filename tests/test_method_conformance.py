"""Every registered method of both halves passes one set of checks, in the spirit of scikit-learn's
``check_estimator``, in-process on the fake OpenAI-compatible server (test double), no Prefect.

The methods are the registry's (``agentcausal.registry.ATTRIBUTION_METHODS`` and ``DISCOVERY_METHODS``), which
must be exactly what ``agentcausal attribute --help`` and ``agentcausal discover --help`` offer, each spec
declaring what it needs consistently with how it runs. For each method, through its half's own job functions
(``half.run``, ``half.keyer``) and the run engine's (``RunEngine``, ``run_chunk``):

(a) on a 3-step trace or a 4-variable dataset (n = 200) with valid first replies, its record is ``complete``
    with the fields its half requires;
(b) (LLM methods) replies that stay invalid after every repair give a stored ``content_failed`` record (or
    the ``degraded`` fallback a method declares, :data:`INVALID_REPLY_FALLBACK`); a transport failure (HTTP 500
    after the client's retries) at the first or the last call raises out of the chunk and stores nothing (or
    gives the unstored fallback a method declares, :data:`RUN_FAILURE_FALLBACK`);
(c) every field of its settings changes its cache key (exemptions named in :data:`KEY_EXEMPT`);
(d) run twice on one results store, the second record is ``reused`` and equal to the computed one field
    for field apart from ``reused``, and so is its scored row apart from this run's cost columns.

Statistical discovery methods call no LLM: (a), (c), (d) only.
"""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import annotated_types
import numpy as np
import pandas as pd
import pytest
from pydantic import BaseModel

from agentcausal.attribution.plan import plan_attribution
from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.datasets import load_spec
from agentcausal.discovery.mac.prompts import PROMPT_VERSIONS
from agentcausal.discovery.mac.settings import MACSettings
from agentcausal.discovery.method_settings import method_stages
from agentcausal.discovery.plan import plan_discovery
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.discovery.scope import MAC_METHODS
from agentcausal.discovery.statistical.algorithms import ALGORITHMS
from agentcausal.discovery.variants import resolve_methods, variant
from agentcausal.exceptions import AgentCausalError
from agentcausal.records import RunRecord
from agentcausal.registry import ATTRIBUTION, ATTRIBUTION_METHODS, DISCOVERY, DISCOVERY_METHODS
from agentcausal.runs.engine import RunEngine, run_chunk
from agentcausal.runs.half import Job, RunHalf
from agentcausal.runs.plan import Plan
from agentcausal.settings import PRESET_NAMES, RunSettings, resolve
from agentcausal.traces.jsonl import write_jsonl
from agentcausal.traces.model import Label, Step, Trace
from agentcausal_cli import build_parser
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from agentcausal_fakes.profiles import profiles_toml
from agentcausal_fakes.responders import BenchResponder

LLM_METHODS = [m for m in DISCOVERY_METHODS if DISCOVERY_METHODS[m].needs_llm]
STATISTICAL_METHODS = [m for m in DISCOVERY_METHODS if not DISCOVERY_METHODS[m].needs_llm]
CASES = [("attribute", m) for m in sorted(ATTRIBUTION_METHODS)] + [("discover", m) for m in DISCOVERY_METHODS]
LLM_CASES = [c for c in CASES if c[0] == "attribute" or c[1] in LLM_METHODS]
IDS = [f"{h}:{m}" for h, m in CASES]
LLM_IDS = [f"{h}:{m}" for h, m in LLM_CASES]

#: methods whose documented answer to replies that stay invalid is a fallback marked ``degraded`` (cached, and
#: recomputed by ``--retry-failed``), not ``content_failed``
INVALID_REPLY_FALLBACK = {
    ("discover", "mac"): "DCM's algorithm debate falls back to mac.fallback_algorithm, MDM to the DCM graph",
    ("discover", "mac_single"): "as mac",
    ("discover", "dcm_only"): "DCM's algorithm debate falls back to mac.fallback_algorithm",
}

#: methods whose documented answer to a failure of the run in a late stage is a ``degraded`` fallback that the
#: half refuses to store (``AttributionHalf.storable``), returned to the engine instead of raised
RUN_FAILURE_FALLBACK = {
    ("attribute", "dcfa"): "an LCE failure falls back to GCA's hypothesis (details.lce.cause = 'run'), never stored",
}

#: settings fields that legitimately leave a method's cache key as it is: (half, method or "*", field) -> why
KEY_EXEMPT = {
    ("discover", "*", "samples"): "not itself keyed: it only selects sampling_temperature, which is keyed",
    ("discover", "*", "executor_fallback"): "display only: why executor=auto runs the typed executor",
}

#: fields no valid settings let change alone, changed with the fields their validator ties them to (so the
#: check is weaker for them): (model name, field) -> its current value -> the values that replace it
_PROMPT_SETS = {  # DcfaSettings: prompts='small' takes only cgc='edges', simulation and ded 'equations'
    "small": {"prompts": "paper", "cgc": "code", "simulation": "code", "ded": "code"},
    "paper": {"prompts": "small", "cgc": "edges", "simulation": "equations", "ded": "equations"},
}
COUPLED = {("DcfaSettings", "prompts"): _PROMPT_SETS, ("DcfaGcaOnlySettings", "prompts"): _PROMPT_SETS}

#: the value a settings field is perturbed to where the generic choice would be a no-op here
OVERRIDES = {
    ("mac", "executor"): "coding",  # "auto" resolves to the executor that runs here, which may be the base's
}


# ---------------------------------------------------------------- inputs: a 3-step trace, a 4-variable dataset
def _trace() -> Trace:
    return Trace(
        id="conformance/0",
        source="conformance",
        question="What is 2 km in metres?",
        ground_truth="2000",
        steps=[
            Step(index=0, agent="Planner", content="Plan: convert 2 km to metres with the factor 1000."),
            Step(index=1, agent="Calculator", content="2 km = 2 x 100 = 200 m."),
            Step(index=2, agent="Planner", content="Final answer: 200"),
        ],
        label=Label(agent="Calculator", step=1),
    )


def _dataset(folder: Path) -> str:
    """rain -> wet -> slips <- umbrellas <- rain: linear, uniform noise, n = 200, with its metadata beside it."""
    rng = np.random.default_rng(0)
    n = 200
    rain = rng.uniform(-1, 1, n)
    wet = 2 * rain + 0.5 * rng.uniform(-1, 1, n)
    umbrellas = -1.5 * rain + 0.5 * rng.uniform(-1, 1, n)
    slips = wet + umbrellas + 0.5 * rng.uniform(-1, 1, n)
    cols = {"rain": rain, "wet": wet, "umbrellas": umbrellas, "slips": slips}
    pd.DataFrame(cols).to_csv(folder / "weather.csv", index=False)
    meta = {
        "domain": "weather and pedestrians",
        "variables": {
            "rain": "rainfall today",
            "wet": "how wet the streets are",
            "umbrellas": "umbrellas sold",
            "slips": "people slipping",
        },
        "true_edges": [["rain", "wet"], ["rain", "umbrellas"], ["wet", "slips"], ["umbrellas", "slips"]],
        "data_type": "continuous",
    }
    (folder / "weather.json").write_text(json.dumps(meta))
    return str(folder / "weather.csv")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("conformance-inputs")
    return {"attribute": str(write_jsonl([_trace()], d / "trace.jsonl")), "discover": _dataset(d)}


def _valid() -> BenchResponder:
    """Valid first replies for every reply schema (the bench's; Step-by-Step says "decisive" at once)."""
    return BenchResponder(hazard=1.0)


@pytest.fixture
def server():
    with FakeOpenAIServer(responder=_valid()) as srv:
        yield srv


@pytest.fixture
def settings(server, tmp_path) -> RunSettings:
    toml = profiles_toml(tmp_path / "profiles.toml", server.base_url, 4, model="conformance-model")
    return RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / "cache"))


#: the base discovery config: the typed executor (the coding agent needs the sandbox and code replies)
BASE_CONFIG = DiscoveryConfig(mac=MACSettings(executor="typed"))


def _half(kind: str) -> RunHalf:
    return ATTRIBUTION if kind == "attribute" else DISCOVERY


def _plan(kind: str, method: str, inputs: dict[str, str], settings: RunSettings, run_dir: Path) -> Plan:
    if kind == "attribute":
        request = AttributionRequest(paths=[inputs[kind]], methods=[method])
        return plan_attribution(request, settings, ATTRIBUTION_METHODS, run_dir=run_dir)
    return plan_discovery(
        DiscoveryRequest(datasets=[inputs[kind]], methods=[method], config=BASE_CONFIG, n=200),
        settings,
        DISCOVERY_METHODS,
    )


def _job(kind: str, plan: Plan) -> Job:
    (job,) = list(_half(kind).jobs(plan))
    return job


# ---------------------------------------------------------------- the parsers offer what the registries hold
def _offered(verb: str) -> set[str]:
    """The method names ``agentcausal VERB --help`` lists for ``--method`` (its choices, else its help's list)."""
    sub = next(a for a in build_parser()._actions if a.dest == "verb")
    action = next(a for a in sub.choices[verb]._actions if "--method" in a.option_strings)
    if action.choices:
        return set(action.choices)
    text = re.sub(r"\([^)]*\)", "", action.help or "")  # "(repeatable)", "(default: ...)", "(the five)"
    listing = max(re.split(r"[:;]", text), key=lambda part: part.count(","))
    names = {p.strip().removeprefix("or ").strip(" '\"") for p in listing.split(",")}
    return {n for n in names if n}


def test_the_parsers_offer_exactly_the_registered_methods():
    assert _offered("attribute") == set(ATTRIBUTION_METHODS)
    assert _offered("discover") == set(DISCOVERY_METHODS) | {"statistical"}
    assert [v.name for v in resolve_methods(DISCOVERY_METHODS, ["statistical"])] == STATISTICAL_METHODS
    assert set(LLM_METHODS) | set(STATISTICAL_METHODS) == set(DISCOVERY_METHODS)
    declared = {*INVALID_REPLY_FALLBACK, *RUN_FAILURE_FALLBACK, *((h, m) for h, m, _ in KEY_EXEMPT if m != "*")}
    assert declared <= set(CASES), f"exemptions name methods no registry holds: {declared - set(CASES)}"


@pytest.mark.parametrize(("kind", "method"), CASES, ids=IDS)
def test_each_spec_declares_what_it_runs_with_and_needs(kind, method):
    spec = (ATTRIBUTION_METHODS if kind == "attribute" else DISCOVERY_METHODS)[method]
    assert spec.name == method and callable(spec.run)
    assert bool(spec.prompt_version) == spec.needs_llm  # every prompt set versioned; no LLM, no prompt
    if spec.settings_model is not None:
        assert spec.settings_model.model_config.get("frozen"), spec.settings_model
        assert set(spec.presets) <= set(PRESET_NAMES)
        for name in PRESET_NAMES:
            resolve(spec.settings_model, spec.presets, name)  # every preset validates
    if kind == "attribute":
        assert spec.needs_llm and spec.settings_model is not None and not spec.needs_data
        assert spec.needs_labels == ("with_ground_truth" not in spec.settings_model.model_fields)
        return
    assert not spec.needs_labels  # outcomes are scored outside the method
    assert (spec.family == "statistical") == (method in ALGORITHMS) == (not spec.needs_llm)
    assert (spec.family == "mac") == (method in MAC_METHODS)
    assert (spec.settings_model is None) == (not spec.needs_llm)
    assert spec.needs_data == (method not in ("mdm_only", "llm_zero_shot")), "only those two read no rows"


# ---------------------------------------------------------------- (a) a complete record with its half's fields
def _requests(server: FakeOpenAIServer) -> int:
    return len(server.chat_requests) + len(server.embedding_requests)


def _check_attribution(rec: RunRecord, method: str, plan: Plan, server: FakeOpenAIServer) -> None:
    trace = _trace()
    spec = ATTRIBUTION_METHODS[method]
    assert rec.status == "complete" and rec.error is None and rec.status_detail is None, (rec.status, rec.error)
    assert rec.trace_id == trace.id and rec.method == method and not rec.reused
    assert isinstance(rec.step, int) and 0 <= rec.step < len(trace), rec.step
    assert rec.agent in {s.agent for s in trace.steps}, rec.agent
    assert rec.settings == plan.methods[method].settings
    assert rec.prompt_version in spec.prompt_version.split("+"), (rec.prompt_version, spec.prompt_version)
    assert set(rec.models) == set(plan.methods[method].stages) and set(rec.models) <= set(spec.stages)
    assert all(re.fullmatch(r"bench(-embed)?:conformance-model", v) for v in rec.models.values()), rec.models
    assert set(rec.usage) == set(rec.models) and all(u["calls"] >= 1 for u in rec.usage.values()), rec.usage
    assert sum(u["requests"] for u in rec.usage.values()) == _requests(server) > 0  # every request booked to it


def _check_discovery(rec: RunRecord, method: str, plan: Plan, server: FakeOpenAIServer, spec: str) -> None:
    ds = load_spec(spec)
    config = DiscoveryConfig.model_validate(plan.config)
    stages = method_stages(DISCOVERY_METHODS[method], config)
    assert rec.status == "complete" and rec.error is None and rec.status_detail is None, (rec.status, rec.error)
    assert (rec.dataset, rec.seed, rec.n, rec.method) == (ds.name, 0, 200, method) and not rec.reused
    assert rec.graph is not None and tuple(rec.graph.nodes) == tuple(ds.variables)
    assert rec.data_hash == ds.content_hash() and rec.true_graph == ds.true_graph
    if method in STATISTICAL_METHODS:
        assert rec.prompt_version == "" and rec.models == {} and rec.usage == {} and _requests(server) == 0
        assert rec.details["choice"]["algorithm"] == method, rec.details
        return
    assert stages and rec.prompt_version == PROMPT_VERSIONS[config.mac.prompts]
    assert set(rec.models) == set(stages) and all(v == "bench:conformance-model" for v in rec.models.values())
    assert set(rec.usage) == set(stages) and all(u["calls"] >= 1 for u in rec.usage.values()), rec.usage
    assert sum(u["requests"] for u in rec.usage.values()) == _requests(server) > 0


@pytest.mark.parametrize(("kind", "method"), CASES, ids=IDS)
def test_a_completes_on_valid_first_replies(kind, method, inputs, settings, server, tmp_path):
    plan = _plan(kind, method, inputs, settings, tmp_path / "run")
    rec = _half(kind).run(_job(kind, plan), plan, settings)
    if kind == "attribute":
        _check_attribution(rec, method, plan, server)
    else:
        _check_discovery(rec, method, plan, server, inputs[kind])


# ---------------------------------------------------------------- (b) status rules
def _one_chunk(kind: str, plan: Plan, settings: RunSettings):
    engine = RunEngine(_half(kind), plan, settings)
    (chunk,) = list(engine.chunks())
    return engine, chunk


@pytest.mark.parametrize(("kind", "method"), LLM_CASES, ids=LLM_IDS)
def test_b_replies_invalid_after_every_repair_give_a_stored_content_failure(
    kind, method, inputs, settings, server, tmp_path
):
    server.responder = lambda body: "never JSON {"
    plan = _plan(kind, method, inputs, settings, tmp_path / "run")
    engine, chunk = _one_chunk(kind, plan, settings)
    assert run_chunk(_half(kind), chunk) is None  # the record is in the store: a content failure is cached
    stored = engine.store.get(chunk.keys[0])
    assert stored is not None
    rec = stored.record
    assert _requests(server) > 0  # the invalid text is never taken for an answer:
    assert "never JSON" not in json.dumps(rec.model_dump(exclude={"error", "details", "status_detail"}))
    if (kind, method) in INVALID_REPLY_FALLBACK:
        fallback = DiscoveryConfig.model_validate(plan.config).mac.fallback_algorithm
        assert rec.status == "degraded" and rec.graph is not None, (rec.status, rec.error)
        assert "still invalid" in (rec.status_detail or "") and f"ran {fallback}" in rec.status_detail
    else:
        assert rec.status == "content_failed" and "still invalid" in (rec.error or ""), (rec.status, rec.error)
        answer = rec.step if kind == "attribute" else rec.graph
        assert answer is None, answer


#: HTTP 500s injected: more than any method's requests with the client's retries
FAULTS = 5000


def _fail_from(server: FakeOpenAIServer, first_failing: int) -> None:
    """From chat request ``first_failing`` (1-based) on, every request gets HTTP 500 (the client's retries
    included): the replies before it are valid."""
    valid = _valid()
    served = [0]

    def respond(body: dict[str, Any]) -> str:
        served[0] += 1
        if served[0] == first_failing - 1:
            server.inject(*([500] * FAULTS))
        return valid(body)

    server.responder = respond
    if first_failing <= 1:
        server.inject(*([500] * FAULTS))


@pytest.mark.parametrize(("kind", "method"), LLM_CASES, ids=LLM_IDS)
def test_b_a_transport_failure_raises_out_of_the_job_and_is_never_stored(kind, method, inputs, server, tmp_path):
    toml = profiles_toml(tmp_path / "profiles.toml", server.base_url, 4, model="conformance-model")
    probe = RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / "probe"))
    plan = _plan(kind, method, inputs, probe, tmp_path / "probe-run")
    _half(kind).run(_job(kind, plan), plan, probe)  # how many requests a valid run sends
    n_valid = len(server.chat_requests)
    assert n_valid > 0
    for first_failing in sorted({1, n_valid}):  # the first call, and the last
        server.requests.clear()
        server.faults.clear()
        _fail_from(server, first_failing)
        settings = probe.model_copy(update={"cache_dir": str(tmp_path / f"cache-{first_failing}")})
        engine, chunk = _one_chunk(kind, plan, settings)
        try:
            unstored = run_chunk(_half(kind), chunk)
        except AgentCausalError as exc:
            assert "500" in str(exc), exc
        else:  # only a declared fallback may come back instead of the failure, and then it is not stored
            assert (kind, method) in RUN_FAILURE_FALLBACK and first_failing > 1, (first_failing, unstored)
            assert unstored is not None and unstored[0] is not None and unstored[0].status == "degraded"
            assert not _half(kind).storable(unstored[0])  # the half itself refuses to cache it
        assert 0 < len(server.faults) < FAULTS, "the failure was never reached"
        assert engine.store.get(chunk.keys[0]) is None and len(engine.store) == 0, first_failing


# ---------------------------------------------------------------- (c) every setting is in the cache key
def _bounds(info) -> tuple[float | None, float | None, bool]:
    lo = hi = None
    strict = False
    for m in info.metadata:
        if isinstance(m, annotated_types.Ge):
            lo = m.ge
        elif isinstance(m, annotated_types.Gt):
            lo, strict = m.gt, True
        elif isinstance(m, annotated_types.Le):
            hi = m.le
        elif isinstance(m, annotated_types.Lt):
            hi = m.lt
    return lo, hi, strict


def _candidates(annotation: Any, info, current: Any) -> Iterator[Any]:
    """Other values of a field's type, nearest first; the caller keeps the first that validates."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        yield from (a for a in args if a != current)
    elif origin in (typing.Union, types.UnionType):
        real = [a for a in args if a is not type(None)]
        if current is not None and type(None) in args:
            yield None
        for a in real:
            yield from _candidates(a, info, current if current is not None else None)
    elif origin is tuple and current:
        yield tuple(current[:-1]) if len(current) > 1 else None
        yield from ((a,) for a in typing.get_args(args[0]) if (a,) != tuple(current))
    elif annotation is bool:
        yield not current
    elif annotation in (int, float):
        lo, hi, strict = _bounds(info)
        base = current if current is not None else (lo if lo is not None else 1)
        step = 1 if annotation is int else 0.5
        for v in (base + step, base * 2, base - step, (lo + step) if lo is not None else None, hi):
            if v is not None and v != current:
                yield annotation(v)
    elif annotation is str:
        yield f"{current}-changed"


#: no other valid value (a field another one constrains, e.g. DCFA's ``prompts`` and ``cgc``)
NO_VALUE = object()


def _perturbed(model: type[BaseModel], values: dict[str, Any], field: str, section: str | None = None) -> Any:
    """Another valid value of ``field`` of ``model`` with the other values as they are, else :data:`NO_VALUE`."""
    if (section, field) in OVERRIDES:
        return OVERRIDES[(section, field)]
    info = model.model_fields[field]
    current = model.model_validate(values).model_dump(mode="json")[field]
    for v in _candidates(info.annotation, info, values.get(field)):
        try:
            if model.model_validate({**values, field: v}).model_dump(mode="json")[field] != current:
                return v
        except ValueError:
            continue
    return NO_VALUE


def _changed_keys(
    model: type[BaseModel],
    fields: list[str],
    bases: list[dict[str, Any]],
    key_of: Callable[[dict[str, Any]], str],
    section: str | None = None,
) -> dict[str, bool]:
    """Per field of ``model``: whether changing it alone changes the key, from the first base (field values)
    where it has another valid value."""
    out = {}
    for f in fields:
        for values in bases:
            v = _perturbed(model, values, f, section)
            if v is not NO_VALUE:
                out[f] = key_of({**values, f: v}) != key_of(values)
                break
            if (model.__name__, f) in COUPLED:
                new = {**values, **COUPLED[(model.__name__, f)][values[f]]}
                out[f] = key_of(new) != key_of(values)
                break
        else:
            raise AssertionError(f"no other valid value found for {model.__name__}.{f}: add one to OVERRIDES")
    return out


def _discovery_settings(method: str) -> list[tuple[str | None, str]]:
    """The (section, field) pairs of DiscoveryConfig a discovery method runs with: the fields its plan shows
    (``method_settings.method_settings``: a sub-model's or the config's own), and for an LLM method the repeat index
    and the run's sample count."""
    from agentcausal.discovery.method_settings import method_settings

    shown = method_settings(variant(DISCOVERY_METHODS, method), BASE_CONFIG)
    derived = {"paper_unspecified", "temperature_used"}  # computed from the fields below, not settings
    if method in STATISTICAL_METHODS:
        return [(None, k) for k in shown if k not in derived]
    section = method if method in ("react", "llm_scd", "ils_csl") else "mac"
    model = type(getattr(BASE_CONFIG, section))
    assert set(shown) - derived <= set(model.model_fields), set(shown) - derived - set(model.model_fields)
    fields = [(section, k) for k in model.model_fields if k in shown]
    return fields + [(None, "repeat"), (None, "samples"), (None, "executor_fallback")]


@pytest.mark.parametrize(("kind", "method"), CASES, ids=IDS)
def test_c_every_setting_changes_the_cache_key(kind, method, inputs, settings, tmp_path):
    half = _half(kind)
    plan = _plan(kind, method, inputs, settings, tmp_path / "run")
    job = _job(kind, plan)
    changed: dict[str, bool] = {}
    if kind == "attribute":
        model = ATTRIBUTION_METHODS[method].settings_model

        def key_of(values: dict[str, Any]) -> str:
            mp = plan.methods[method].model_copy(update={"settings": values})
            return half.keyer(plan.model_copy(update={"methods": {method: mp}}), settings)(job)

        # the run's settings (the routing's preset), else the model defaults (``paper``) for a field the
        # preset's other values constrain
        bases = [dict(plan.methods[method].settings), model().model_dump(mode="json")]
        changed = _changed_keys(model, list(model.model_fields), bases, key_of)
    else:
        config = plan.run_config().model_dump(mode="json")
        wanted = _discovery_settings(method)
        for section in dict.fromkeys(s for s, _ in wanted):
            model = type(getattr(BASE_CONFIG, section)) if section else DiscoveryConfig

            def key_of(values: dict[str, Any], section: str | None = section) -> str:
                cfg = {**config, section: values} if section else values
                typed = DiscoveryConfig.model_validate(cfg)  # as plan.json reads it back
                return half.keyer(plan.model_copy(update={"config": typed}), settings)(job)

            fields = [f for s, f in wanted if s == section]
            sub = _changed_keys(model, fields, [config[section] if section else config], key_of, section)
            changed.update({(f"{section}.{f}" if section else f): c for f, c in sub.items()})
    exempt = {f for (h, m, f) in KEY_EXEMPT if h == kind and m in ("*", method)}
    assert changed, "no setting checked"
    assert [f for f, c in changed.items() if not c and f not in exempt] == [], "settings not in the cache key"
    stale = [f for f in exempt if changed.get(f)]
    assert stale == [], f"exempt but keyed (drop the exemption): {stale}"


# ---------------------------------------------------------------- (d) a reused result equals the computed one
class _Recording:
    """A half that keeps what its jobs computed and what its sink was handed (test double around the real one)."""

    def __init__(self, half: RunHalf) -> None:
        self.half = half
        self.computed: list[RunRecord] = []
        self.written: list[RunRecord] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.half, name)

    def run(self, job: Job, plan: Plan, settings: RunSettings) -> RunRecord:
        rec = self.half.run(job, plan, settings)
        self.computed.append(rec)
        return rec

    def sink(self, plan: Plan, run_dir: Path, meta: Any) -> Any:
        inner, written = self.half.sink(plan, run_dir, meta), self.written

        class Sink:
            def add(self, job: Job, record: RunRecord) -> None:
                written.append(record)
                inner.add(job, record)

            def close(self) -> dict[str, Any]:
                return inner.close()

        return Sink()


def _engine_run(kind: str, plan: Plan, settings: RunSettings, run_dir: Path) -> tuple[_Recording, pd.DataFrame]:
    half = _Recording(_half(kind))
    engine = RunEngine(half, plan, settings)  # type: ignore[arg-type]  # a RunHalf by delegation
    for chunk in engine.chunks():
        try:
            result = run_chunk(half, chunk)  # type: ignore[arg-type]
        except AgentCausalError as exc:
            result = exc
        engine.done(chunk, result)
    engine.finish(run_dir)
    return half, pd.read_parquet(run_dir / "results.parquet")


#: columns of a scored row that describe this run, not the result: what it paid and whether it was reused
THIS_RUN_COLUMNS = ("reused", "run_requests", "run_prompt_tokens", "run_completion_tokens", "run_request_seconds")


@pytest.mark.parametrize(("kind", "method"), CASES, ids=IDS)
def test_d_a_reused_result_is_identical_to_the_computed_one(kind, method, inputs, settings, server, tmp_path):
    plan = _plan(kind, method, inputs, settings, tmp_path / "plan")
    first, rows1 = _engine_run(kind, plan, settings, tmp_path / "r1")
    n = server.count
    second, rows2 = _engine_run(kind, plan, settings, tmp_path / "r2")
    assert server.count == n and second.computed == []  # nothing computed, nothing sent
    (computed,) = first.computed
    (written1,), (reused,) = first.written, second.written
    assert computed.status == "complete" and not written1.reused and reused.reused
    want = computed.model_dump(mode="json", exclude={"reused"})
    assert written1.model_dump(mode="json", exclude={"reused"}) == want
    assert reused.model_dump(mode="json", exclude={"reused"}) == want
    this_run = [c for c in rows1.columns if c in THIS_RUN_COLUMNS or c.startswith("run_")]
    assert list(rows1.columns) == list(rows2.columns) and len(rows1) == len(rows2) == 1
    pd.testing.assert_frame_equal(rows1.drop(columns=this_run), rows2.drop(columns=this_run))
    assert bool(rows2.loc[0, "reused"]) and not bool(rows1.loc[0, "reused"])
