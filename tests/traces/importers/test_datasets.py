"""MAST-Data and AgentRx loaders on small files made in their published schemas; fetch offline."""

from __future__ import annotations

import json

import pytest

from agentcausal.exceptions import DatasetError, TraceFormatError
from agentcausal.traces.importers import detect_format, import_traces
from agentcausal.traces.importers._fetch import fetch_files
from agentcausal.traces.importers.agentrx import load_agentrx
from agentcausal.traces.importers.mast import load_mast, split_trajectory
from agentcausal_cli import main

AG2_LOG = """user_proxy (to chat_manager):

What is 17 * 3?

--------------------------------------------------------------------------------
Solver (to chat_manager):

17 * 3 = 41

--------------------------------------------------------------------------------
Checker (to chat_manager):

Looks right. TERMINATE
"""

AGENTCHAT_LOG = """---------- user ----------
Find the capital of Australia.
---------- TextMessage (planner) ----------
Search the web.
---------- researcher ----------
Sydney.
"""


def _mad_rows():
    ann = {
        k: 0 for k in ("1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "3.1", "3.2", "3.3")
    }
    return [
        {
            "mas_name": "AG2",
            "llm_name": "gpt-4o",
            "benchmark_name": "GSM-Plus",
            "trace_id": 7,
            "trace": {"key": "k7", "index": 7, "trajectory": AG2_LOG},
            "mast_annotation": {**ann, "3.2": 1},
        },
        {
            "mas_name": "Magentic",
            "llm_name": "gpt-4o",
            "benchmark_name": "GAIA",
            "trace_id": 8,
            "trace": {"key": "k8", "index": 8, "trajectory": AGENTCHAT_LOG},
            "mast_annotation": {**ann, "1.3": 1, "3.3": 1},
        },
        {
            "mas_name": "ChatDev",
            "llm_name": "gpt-4o",
            "benchmark_name": "ProgramDev",
            "trace_id": 9,
            "trace": {"key": "k9", "index": 9, "trajectory": "first block\n\nsecond block"},
            "mast_annotation": ann,
        },
    ]


def test_split_trajectory_headers():
    assert split_trajectory(AG2_LOG) == [
        ("user_proxy", "What is 17 * 3?"),
        ("Solver", "17 * 3 = 41"),
        ("Checker", "Looks right. TERMINATE"),
    ]
    assert [a for a, _ in split_trajectory(AGENTCHAT_LOG)] == ["user", "planner", "researcher"]


def test_load_mast(tmp_path):
    (tmp_path / "MAD_human_labelled_dataset.json").write_text(json.dumps(_mad_rows()))
    ts = load_mast(tmp_path)
    assert [t.id for t in ts] == ["mast/AG2/7", "mast/Magentic/8", "mast/ChatDev/9"]
    assert ts[0].question == "What is 17 * 3?" and ts[0].label is None
    assert ts[0].metadata["failure_modes"] == ["3.2 No or incorrect verification"]
    assert ts[1].metadata["failure_modes"] == ["1.3 Step repetition", "3.3 Weak verification"]
    assert [(s.agent, s.content) for s in ts[2].steps] == [("ChatDev", "first block"), ("ChatDev", "second block")]
    assert detect_format(tmp_path / "MAD_human_labelled_dataset.json") == "mast"
    with pytest.raises(DatasetError, match="data fetch mast"):
        load_mast(tmp_path, which="full")


TAU_TRAJ = [
    {"role": "system", "content": "policy", "index": 1},
    {"role": "user", "content": "How many t-shirt options?", "index": 2},
    {
        "role": "assistant",
        "content": None,
        "index": 3,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "list_all_product_types", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "name": "list_all_product_types", "content": "{...}", "index": 4},
    {"role": "assistant", "content": "There are 11 options.", "index": 5},
]


def test_load_agentrx_folder(tmp_path):
    labels = {
        "trajectory_id": "2",
        "failure_summary": "counted unavailable items",
        "failures": [
            {
                "failure_id": "F2",
                "step_number": 5,
                "step_reason": "counted 11, 10 available",
                "failure_category": "Misinterpretation of tool output",
            },
            {"failure_id": "F1", "step_number": 3, "step_reason": "x", "failure_category": "Other"},
        ],
        "root_cause_failure_id": "F2",
    }
    traj = {"trajectory_id": "2", "traj": TAU_TRAJ, "info": {"task": {"outputs": ["10"]}}}
    (tmp_path / "tau_retail.jsonl").write_text(json.dumps(labels) + "\n")
    (tmp_path / "tau_retail_dataset.jsonl").write_text(json.dumps(traj) + "\n")
    (t,) = load_agentrx(tmp_path)
    assert t.id == "agentrx/2" and t.ground_truth == "10" and t.question == "How many t-shirt options?"
    assert t.label.step == 4 and t.label.agent == "assistant"
    assert t.label.reason.startswith("Misinterpretation of tool output")
    assert t.steps[3].agent == "list_all_product_types" and "tool call list_all_product_types" in t.steps[2].content
    assert len(t.metadata["failures"]) == 2


def test_agentrx_root_defaults_to_earliest_and_missing_messages(tmp_path):
    row = {
        "trajectory_id": "m1",
        "failures": [{"step_number": 3}, {"step_number": 2}],
        "messages": [
            {"source": "Orchestrator", "content": "plan", "role": "assistant"},
            {"source": "WebSurfer", "content": "clicked", "role": "assistant"},
            {"source": "Orchestrator", "content": "done", "role": "assistant"},
        ],
    }
    f = tmp_path / "one.jsonl"
    f.write_text(json.dumps(row) + "\n")
    assert detect_format(f) == "agentrx"
    (t,) = import_traces([f])
    assert (t.label.step, t.label.agent) == (1, "WebSurfer")
    g = tmp_path / "labels_only.jsonl"
    g.write_text(json.dumps({"trajectory_id": "z", "failures": [{"step_number": 1}]}) + "\n")
    with pytest.raises(TraceFormatError, match="have no messages"):
        load_agentrx(g)


def test_fetch_offline_says_where_to_copy(tmp_path):
    with pytest.raises(DatasetError, match="by hand"):
        fetch_files(
            "mast",
            "mcemri/MAST-Data",
            ["x.json"],
            tmp_path / "d",
            timeout_s=2,
            base_url="http://127.0.0.1:9/{repo}/{file}",
        )
    assert not (tmp_path / "d").exists()


def test_data_fetch_cli_refuses_existing(tmp_path, capsys):
    d = tmp_path / "m"
    d.mkdir()
    (d / "x").write_text("1")
    assert main(["data", "fetch", "mast", "--dest", str(d)]) == 2
    assert "--force" in capsys.readouterr().err
