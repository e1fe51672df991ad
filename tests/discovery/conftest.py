"""Fixtures for discovery tests: tiny datasets and a scripted MAC responder for the fake server."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest

from agentcausal.discovery.data.dataset_model import Dataset, DatasetMetadata, VariableInfo
from agentcausal.discovery.graphs.graph import CausalGraph


def reply_kind(body: dict) -> tuple[str, str]:
    """(reply model name, role) of a chat request the MAC code sent."""
    name = body.get("response_format", {}).get("json_schema", {}).get("name", "")
    user = body["messages"][1]["content"]
    role = user.split("You are the ")[1].split(".")[0] if "You are the " in user else "coder"
    return name, role


def _schema(body: dict) -> dict:
    return body.get("response_format", {}).get("json_schema", {}).get("schema", {})


def with_required_reasons(reply: dict, schema: dict, role: str) -> dict:
    """``reply`` with the reason fields a schema requires and the reply lacks (the ``paper`` prompt set's
    ``reasoning``, ``reason`` and per-edge ``reason``), each a short text naming the role. A schema that
    requires none (the ``small`` set) leaves the reply as it is, byte for byte."""
    required = [k for k in schema.get("required", []) if k not in reply]
    out = {k: f"{role} reasons" for k in required if schema["properties"][k].get("type") == "string"}
    out.update(reply)
    edge = schema.get("$defs", {}).get("Edge", {})
    if "reason" in edge.get("required", []) and isinstance(out.get("edges"), list):
        out["edges"] = [{"reason": f"{role}: {e['cause']} drives {e['effect']}", **e} for e in out["edges"]]
    return out


def mac_responder(
    *,
    affirmative_algo="pc",
    negative_algo="ges",
    algo_winner="A",
    affirmative_edges=(("Burglary", "Alarm"),),
    negative_edges=(("Alarm", "Burglary"),),
    votes=("A", "A", "tie"),
    code: str | None = None,
) -> Callable[[dict], str]:
    """A rule-based responder that answers each MAC call by its reply model and role."""

    def respond(body: dict) -> str:
        name, role = reply_kind(body)
        text = answer(body, name, role)
        filled = with_required_reasons(json.loads(text), _schema(body), role)
        return text if filled == json.loads(text) else json.dumps(filled)

    def answer(body: dict, name: str, role: str) -> str:
        if name == "AlgorithmProposalReply":
            algo = affirmative_algo if role == "Affirmative" else negative_algo
            return json.dumps({"algorithm": algo, "reason": f"{role} likes {algo}"})
        if name == "AlgorithmVerdictReply":
            return json.dumps({"winner": algo_winner, "reason": "fits the data"})
        if name == "GraphProposal":
            edges = negative_edges if role == "Negative" else affirmative_edges
            return json.dumps({"edges": [{"cause": a, "effect": b} for a, b in edges]})
        if name == "GraphVerdictReply":
            return json.dumps({"skeleton": votes[0], "colliders": votes[1], "directions": votes[2], "reason": "judged"})
        if name == "GraphOverallVerdictReply":
            return json.dumps({"winner": votes[0], "reason": "judged"})
        if name == "CodeReply":
            return json.dumps({"code": code or "raise SystemExit(1)"})
        raise AssertionError(f"unexpected request {name!r} from {role!r}")

    return respond


@pytest.fixture
def collider_dataset() -> Dataset:
    """Three continuous variables X -> Z <- Y (linear, uniform noise), 800 rows."""
    rng = np.random.default_rng(0)
    x, y = rng.uniform(size=800), rng.uniform(size=800)
    z = x + y + 0.3 * rng.uniform(size=800)
    meta = DatasetMetadata(
        title="collider",
        domain="toy",
        variables={
            "X": VariableInfo(description="cause one"),
            "Y": VariableInfo(description="cause two"),
            "Z": VariableInfo(description="common effect"),
        },
    )
    return Dataset(
        name="collider",
        variables=("X", "Y", "Z"),
        data=np.c_[x, y, z],
        data_type="continuous",
        metadata=meta,
        true_graph=CausalGraph.from_edges("XYZ", [("X", "Z"), ("Y", "Z")]),
        seed=0,
    )
