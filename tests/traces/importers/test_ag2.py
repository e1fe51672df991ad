"""AG2 runtime-log SQLite (tables as autogen.logger.SqliteLogger creates them) and chat histories."""

from __future__ import annotations

import json
import sqlite3

import pytest

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers import detect_format, import_traces
from agentcausal.traces.importers.ag2 import load_ag2
from agentcausal_fakes.spans import ANSWER, PLAN, QUESTION, RESEARCH, TOOL_RESULT

SCHEMA = """
CREATE TABLE chat_completions (id INTEGER PRIMARY KEY, invocation_id TEXT, client_id INTEGER, wrapper_id INTEGER,
  session_id TEXT, source_name TEXT, request TEXT, response TEXT, is_cached INEGER, cost REAL,
  start_time DATETIME DEFAULT CURRENT_TIMESTAMP, end_time DATETIME DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE function_calls (source_id INTEGER, source_name TEXT, function_name TEXT, args TEXT DEFAULT NULL,
  returns TEXT DEFAULT NULL, timestamp DATETIME DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE events (event_name TEXT, source_id INTEGER, source_name TEXT, agent_module TEXT DEFAULT NULL,
  agent_class_name TEXT DEFAULT NULL, id INTEGER PRIMARY KEY, json_state TEXT,
  timestamp DATETIME DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE version (id INTEGER PRIMARY KEY CHECK (id = 1), version_number INTEGER NOT NULL);
"""


def _completion(content, calls=()):
    return json.dumps(
        {
            "id": "x",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "tool_calls": [
                            {"id": "c1", "type": "function", "function": {"name": n, "arguments": a}} for n, a in calls
                        ]
                        or None,
                    },
                }
            ],
        },
        indent=4,
    )


def test_runtime_log_sqlite(tmp_path):
    db = tmp_path / "logs.db"
    con = sqlite3.connect(db)
    con.executescript(SCHEMA)
    req = json.dumps({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": QUESTION}]})
    rows = [
        ("planner", _completion(PLAN), "2024-05-01 10:00:00.000001", "2024-05-01 10:00:01.000000"),
        (
            "researcher",
            _completion(None, [("web_search", '{"q": "x"}')]),
            "2024-05-01 10:00:02.000000",
            "2024-05-01 10:00:03.000000",
        ),
        ("writer", _completion(ANSWER), "2024-05-01 10:00:06.000000", "2024-05-01 10:00:07.000000"),
        ("researcher", _completion(RESEARCH), "2024-05-01 10:00:04.000000", "2024-05-01 10:00:05.000000"),
    ]
    for i, (src, resp, t0, t1) in enumerate(rows):
        con.execute(
            "INSERT INTO chat_completions (invocation_id, client_id, wrapper_id, session_id, request, "
            "response, is_cached, cost, start_time, end_time, source_name) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (f"inv{i}", 1, 1, "sess-1", req, resp, 0, 0.0, t0, t1, src),
        )
    con.execute(
        "INSERT INTO function_calls VALUES (?,?,?,?,?,?)",
        (7, "researcher", "web_search", '{"q": "x"}', json.dumps(TOOL_RESULT), "2024-05-01 10:00:03.500000"),
    )
    con.commit()
    con.close()
    assert detect_format(db) == "ag2"
    (t,) = import_traces([db])
    assert t.id == "sess-1" and t.question == QUESTION
    assert [(s.agent, s.role) for s in t.steps] == [
        ("planner", "assistant"),
        ("researcher", "assistant"),
        ("researcher", "tool"),
        ("researcher", "assistant"),
        ("writer", "assistant"),
    ]
    assert [s.content for s in t.steps] == [PLAN, 'tool call web_search({"q": "x"})', TOOL_RESULT, RESEARCH, ANSWER]
    assert t.steps[0].metadata["invocation_id"] == "inv0"


def test_empty_log_refused(tmp_path):
    db = tmp_path / "logs.db"
    con = sqlite3.connect(db)
    con.executescript(SCHEMA)
    con.close()
    with pytest.raises(TraceFormatError, match="no chat_completions rows"):
        load_ag2(db)


def test_chat_history_groupchat(tmp_path):
    hist = [
        {"content": QUESTION, "role": "user", "name": "user_proxy"},
        {"content": PLAN, "role": "user", "name": "Planner"},
        {
            "content": "",
            "role": "assistant",
            "name": "Coder",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "run", "arguments": "{}"}}],
        },
        {"content": TOOL_RESULT, "role": "tool", "name": "Computer_terminal"},
    ]
    f = tmp_path / "chat.json"
    f.write_text(json.dumps({"chat_history": hist, "summary": "x"}))
    assert detect_format(f) == "ag2"
    (t,) = load_ag2(f)
    assert t.id == "chat" and t.question == QUESTION
    assert [(s.agent, s.role) for s in t.steps] == [
        ("user_proxy", "user"),
        ("Planner", "user"),
        ("Coder", "assistant"),
        ("Computer_terminal", "tool"),
    ]
    assert t.steps[2].content == "tool call run({})"


def test_autogen_task_result(tmp_path):
    msgs = {
        "messages": [
            {"type": "TextMessage", "source": "user", "content": QUESTION, "models_usage": None},
            {
                "type": "ToolCallRequestEvent",
                "source": "researcher",
                "content": [{"id": "1", "name": "web_search", "arguments": "{}"}],
            },
            {
                "type": "ToolCallExecutionEvent",
                "source": "researcher",
                "content": [{"content": TOOL_RESULT, "call_id": "1", "is_error": False}],
            },
            {"type": "ModelClientStreamingChunkEvent", "source": "writer", "content": "Wa"},
            {"type": "TextMessage", "source": "writer", "content": ANSWER},
        ],
        "stop_reason": "done",
    }
    f = tmp_path / "task.json"
    f.write_text(json.dumps(msgs))
    (t,) = import_traces([f])
    assert t.question == QUESTION
    assert [(s.agent, s.role, s.content) for s in t.steps] == [
        ("user", "user", QUESTION),
        ("researcher", "assistant", "tool call web_search({})"),
        ("researcher", "tool", TOOL_RESULT),
        ("writer", "assistant", ANSWER),
    ]
