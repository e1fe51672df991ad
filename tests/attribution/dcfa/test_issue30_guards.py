"""Guards of issue 30's smaller DCFA points: the tie rule reaches the search from ``run_lce``, and MDI's
reply schema asks for the reason its prompt asks for (fake server, a test double)."""

from __future__ import annotations

import json

import pytest

from agentcausal.attribution.dcfa import DcfaSettings, run_dcfa
from agentcausal.attribution.dcfa.paper_prompts import MDI_TASK
from agentcausal.attribution.dcfa.prompts import gca_joint_model, mdi_model
from tests.attribution.dcfa.conftest import DcfaResponder
from tests.attribution.dcfa.test_paper_procedure import cosine_embedder


@pytest.mark.parametrize("ties, pivot", [("outward", 3), ("lower", 2)])
def test_the_tie_rule_setting_reaches_the_search_through_run_lce(
    fake_server, make_gateway, wrong_lookup_at_step_1, ties, pivot
):
    # hypothesis 1 with effects 2 and 3: ΔS(2) = S(2) - S(1) = 0.3 and ΔS(3) = S(3) - S(2) = 0.3 after rounding,
    # a tie; "outward" moves to the higher step going forward, "lower" to the lower one. Dropping the
    # ``ties=`` wiring in run_lce leaves the search on its default and fails the "lower" case.
    fake_server.embedder = cosine_embedder
    fake_server.responder = DcfaResponder(
        edges=[(1, 2), (1, 3)],
        hypothesis=1,
        corrected=["", "fix 1", "fix 2", "fix 3", "", ""],
        outcomes={-1: "c0", 0: "c0.1", 1: "c0.2", 2: "c0.5", 3: "c0.8"},
    )
    a = run_dcfa(wrong_lookup_at_step_1, make_gateway(fake_server, cache=False), DcfaSettings(search_ties=ties))
    lce = a.details["lce"]
    scored = {e["step"]: e["delta_s"] for e in lce["evaluated"] if e["direction"] == "forward"}
    assert scored[2] == pytest.approx(scored[3], abs=5e-4)  # the tie the rule decides
    assert [m["step"] for m in lce["path"]][:1] == [pivot]


@pytest.mark.parametrize("joint", [False, True])
def test_mdi_reply_schema_asks_the_detailed_reason_the_prompt_asks(joint):
    assert "a detailed reason" in MDI_TASK
    model = gca_joint_model(None, None, None, False, True) if joint else mdi_model(None, None)
    schema = json.dumps(model.model_json_schema())
    assert "one sentence" not in schema and "short reason" not in schema
    assert "a detailed reason" in schema


def test_small_mdi_reply_schema_keeps_its_one_sentence():
    for model in (mdi_model(5, 120, "small"), gca_joint_model(5, 10, 120, style="small")):
        assert "one sentence" in json.dumps(model.model_json_schema())
