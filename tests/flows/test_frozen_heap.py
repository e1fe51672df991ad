"""flows.engine.frozen_heap: a flow's body runs with the objects alive at its start out of full collections,
handed back however it ends, and a flow inside a frozen one leaves the outer freeze alone."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import flows.attribute
import flows.discover
from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.discovery.plan_model import DiscoveryRequest
from agentcausal.runs.options import RunOptions
from agentcausal.settings import RunSettings
from flows.engine import frozen_heap

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"


class Seen(Exception):
    """Raised by the stand-in engine with the freeze count it saw."""


def test_frozen_while_inside_unfrozen_after_and_nested_leaves_the_outer_alone(monkeypatch):
    # Frozen objects may still be freed by reference counting (the freeze count can fall while frozen), so
    # the nested case is checked by the calls made, not by comparing counts.
    calls: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda real=gc.freeze: (calls.append("freeze"), real())[1])
    monkeypatch.setattr(gc, "unfreeze", lambda real=gc.unfreeze: (calls.append("unfreeze"), real())[1])
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        with frozen_heap():
            assert calls == ["freeze"]  # the inner one froze nothing more
        assert calls == ["freeze"]  # and did not unfreeze the outer one
        assert gc.get_freeze_count() > 0
    assert calls == ["freeze", "unfreeze"]
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("the flow failed")
    assert calls == ["freeze", "unfreeze", "freeze", "unfreeze"]
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize(
    ("module", "request_"),
    [
        (flows.attribute, AttributionRequest(paths=[str(EXAMPLES)], methods=["all_at_once"])),
        (flows.discover, DiscoveryRequest(datasets=["asia"], methods=["pc"], seeds=[0])),
    ],
)
def test_both_flows_run_their_engine_frozen(module, request_, tmp_path, monkeypatch):
    def engine(*args, **kwargs):
        raise Seen(gc.get_freeze_count())

    monkeypatch.setattr(module, "run_engine", engine)
    flow = module.attribute if module is flows.attribute else module.discover
    with pytest.raises(Seen) as seen:
        flow.fn(request_, RunOptions(out_dir=str(tmp_path / "run")), RunSettings(cache_dir=str(tmp_path / "c")))
    assert seen.value.args[0] > 0
    assert gc.get_freeze_count() == 0
