"""LangSmith run export import: dotted_order, langgraph_node agents, LangChain-serialised messages."""

from __future__ import annotations

import json
import random
import uuid

import pytest

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers import detect_format
from agentcausal.traces.importers.langsmith import load_langsmith
from agentcausal_fakes.spans import ANSWER, PLAN, QUESTION, RESEARCH, TOOL_RESULT


def _ai(content, calls=()):
    return {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {
            "content": content,
            "type": "ai",
            "tool_calls": [{"name": n, "args": a, "id": "c1"} for n, a in calls],
        },
    }


def _export():
    trace = str(uuid.UUID(int=1))
    runs = []
    t = [0]

    def run(name, rtype, parent, node=None, inputs=None, outputs=None):
        t[0] += 1
        rid = str(uuid.UUID(int=100 + t[0]))
        seg = f"20240914T2231{t[0]:02d}000000Z{rid}"
        dotted = seg if parent is None else parent["dotted_order"] + "." + seg
        r = {
            "id": rid,
            "name": name,
            "run_type": rtype,
            "trace_id": trace,
            "parent_run_id": parent["id"] if parent else None,
            "dotted_order": dotted,
            "inputs": inputs or {},
            "outputs": outputs or {},
            "error": None,
            "extra": {"metadata": {"langgraph_node": node, "langgraph_step": t[0]} if node else {}},
        }
        runs.append(r)
        return r

    root = run(
        "LangGraph",
        "chain",
        None,
        inputs={
            "messages": [
                {
                    "lc": 1,
                    "type": "constructor",
                    "id": ["langchain", "schema", "messages", "HumanMessage"],
                    "kwargs": {"content": QUESTION},
                }
            ]
        },
    )
    p = run("planner", "chain", root, "planner")
    run("ChatOpenAI", "llm", p, "planner", outputs={"generations": [[{"text": "", "message": _ai(PLAN)}]]})
    r = run("researcher", "chain", root, "researcher")
    run(
        "ChatOpenAI",
        "llm",
        r,
        "researcher",
        outputs={"generations": [[{"text": "", "message": _ai("", [("web_search", {"q": "x"})])}]]},
    )
    tl = run("tools", "chain", root, "tools")
    run("web_search", "tool", tl, "tools", outputs={"output": TOOL_RESULT})
    r2 = run("researcher", "chain", root, "researcher")
    run("ChatOpenAI", "llm", r2, "researcher", outputs={"generations": [[{"text": RESEARCH}]]})
    run("writer", "chain", root, "writer", outputs={"messages": [_ai(ANSWER)]})  # node without an LLM run
    return runs, root


def test_langsmith_export(tmp_path):
    runs, root = _export()
    random.Random(0).shuffle(runs)
    f = tmp_path / "runs.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in runs) + "\n")
    assert detect_format(f) == "langsmith"
    (t,) = load_langsmith(f)
    assert t.question == QUESTION and t.id == root["trace_id"]
    assert [(s.agent, s.role, s.content) for s in t.steps] == [
        ("planner", "assistant", PLAN),
        ("researcher", "assistant", 'tool call web_search({"q": "x"})'),
        ("tools", "tool", TOOL_RESULT),
        ("researcher", "assistant", RESEARCH),
        ("writer", "assistant", ANSWER),
    ]
    assert all(s.metadata["trace_id"] == t.id and s.metadata["span_id"] for s in t.steps)


def test_not_runs(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text('{"id": 1}\n')
    with pytest.raises(TraceFormatError, match="LangSmith run"):
        load_langsmith(f)
