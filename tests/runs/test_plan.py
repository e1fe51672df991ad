"""A typed plan per half: ``plan.json`` keeps its field names, an old one (both halves' fields in one bag) still
loads as its half's plan, a reader of either half tells them apart by ``kind``, and a half refuses the other's."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agentcausal.attribution.plan_model import AttributionPlan, AttributionRequest
from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.plan_model import DiscoveryPlan, DiscoveryRequest
from agentcausal.exceptions import ConfigError, RunFileError
from agentcausal.plans import parse_any_plan, read_any_plan
from agentcausal.runs.options import RunOptions
from agentcausal.runs.plan import FIELD_ORDER, MethodPlan, PlanItem, as_plan, read_plan, write_plan

METHOD = {"preset": "small", "variant": "default", "settings": {"a": 1}, "stages": {}, "profile_params": {}}


def _old_header(kind: str, items_file: str, **fields: object) -> dict[str, object]:
    """A ``plan.json`` as written before the plans were split: every field of both halves, nulls included."""
    bag: dict[str, object] = dict.fromkeys(FIELD_ORDER)
    bag.update(kind=kind, routing="default", preset="small", item_count=1, items_file=items_file)
    bag.update(methods={"m": METHOD}, repeats=1, missing_keys=[], estimate=None)
    bag.pop("items")
    bag.update(fields)
    return bag


def test_an_old_attribute_plan_json_loads_as_an_attribution_plan(tmp_path):
    items = tmp_path / "plan.items.jsonl"
    items.write_text(PlanItem(id="t", path="/x.json", sha256="0" * 64, file_sha256="1" * 64).model_dump_json() + "\n")
    (tmp_path / "plan.json").write_text(json.dumps(_old_header("attribute", str(items))))
    plan = read_any_plan(tmp_path / "plan.json")
    assert isinstance(plan, AttributionPlan) and plan.sources is None
    assert read_plan(tmp_path / "plan.json", AttributionPlan) == plan
    shown = plan.to_json_dict()
    assert not {"seeds", "n", "config", "llm_datasets", "anonymise"} & set(shown)
    assert shown["items"] == [{"id": "t", "path": "/x.json", "sha256": "0" * 64, "file_sha256": "1" * 64,
                               "offset": None, "facts": None}]  # fmt: skip
    with pytest.raises(RunFileError, match="not a run plan"):  # the other half's type refuses it
        read_plan(tmp_path / "plan.json", DiscoveryPlan)


def test_an_old_discover_plan_json_loads_with_its_config_typed(tmp_path):
    config = DiscoveryConfig(algorithm_timeout_s=12.0, samples=2).model_dump(mode="json")
    (tmp_path / "i.jsonl").write_text("")
    header = _old_header("discover", str(tmp_path / "i.jsonl"), seeds=[0, 1], n=300, config=config, anonymise=[])
    plan = parse_any_plan(json.dumps(header))
    assert isinstance(plan, DiscoveryPlan) and plan.seeds == [0, 1] and plan.n == 300
    assert isinstance(plan.config, DiscoveryConfig) and plan.config == DiscoveryConfig.model_validate(config)
    assert plan.run_config().algorithm_timeout_s == 12.0
    assert plan.to_json_dict()["anonymise"] == ["none"]  # not asked: shown as --anonymise's default


def test_write_plan_keeps_field_names_and_order_and_reads_back(tmp_path):
    config = DiscoveryConfig(samples=3)
    item = PlanItem(id="asia", path="/a.bif.gz", sha256="0" * 64, spec="asia", n=300, d=8)
    plan = DiscoveryPlan(
        methods={"pc": MethodPlan(**METHOD)}, items=[item], item_count=1, seeds=[0], n=300, config=config
    )
    written = json.loads(write_plan(plan, tmp_path).read_text())
    assert list(written) == [k for k in FIELD_ORDER if k in written]  # the order plan.json always had
    assert written["config"] == config.model_dump(mode="json")  # the config's JSON, as before
    assert not {"sources", "labels"} & set(written)  # attribution's fields are not in a discover plan
    back = read_any_plan(tmp_path / "plan.json")
    assert isinstance(back, DiscoveryPlan) and back.config == config and [i.id for i in back.iter_items()] == ["asia"]


def test_a_plan_of_the_other_half_is_refused():
    plan = DiscoveryPlan(methods={})
    assert as_plan(plan, DiscoveryPlan) is plan
    with pytest.raises(ConfigError, match="discover plan where a AttributionPlan"):
        as_plan(plan, AttributionPlan)
    with pytest.raises(ValidationError):
        parse_any_plan({"kind": "summarise", "methods": {}})


def test_requests_and_run_options_refuse_unknown_and_invalid_fields():
    assert AttributionRequest().methods == ["all_at_once"] and DiscoveryRequest(datasets=["asia"]).seeds == [0]
    with pytest.raises(ValidationError):
        AttributionRequest(limitt=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        DiscoveryRequest(datasets=["asia"], repeats=0)
    with pytest.raises(ValidationError):
        RunOptions(max_cost=-1.0)
