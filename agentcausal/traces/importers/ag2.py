"""AG2 runtime logs and AG2/AutoGen chat histories → :class:`~agentcausal.traces.model.Trace`.

**Runtime-log SQLite** (``autogen.runtime_logging.start(logger_type="sqlite",
config={"dbname": "logs.db"})``): one trace per ``session_id``. Steps are the
``chat_completions`` rows in ``start_time`` order (agent ``source_name``,
content ``response.choices[0].message`` with its tool calls) with the
``function_calls`` rows interleaved by ``timestamp`` as tool steps (that table
has no session id: a call belongs to the session running at its time). The
question is the first user message of the first request. Step metadata keeps
``invocation_id`` and ``session_id``.

**Chat histories** (JSON): a list of messages ``{content, role, name}``
(``ChatResult.chat_history``, ``GroupChat.messages``: the agent is ``name``;
the same shape as Who&When Algorithm-Generated ``history``), an object with
``chat_history``, or an AutoGen 0.4+ ``TaskResult`` ``{"messages": [{type,
source, content}...]}`` (agent ``source``; ``ToolCallExecutionEvent`` results
are tool steps; streaming chunks are skipped). One trace per file, id = file
stem; every message is a step, as in Who&When.

References
----------
AG2 runtime logging, https://docs.ag2.ai/docs/use-cases/notebooks/notebooks/agentchat_logging
Zhang, S. et al. "Which Agent Causes Task Failures and When?" ICML 2025. arXiv:2505.00212.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers._spans import iso_to_ns, message_text
from agentcausal.traces.model import Step, Trace

__all__ = ["load_ag2", "load_ag2_sqlite", "load_chat_history", "parse_chat_history"]

_SKIP_TYPES = {"ModelClientStreamingChunkEvent", "LLMCallEvent", "MemoryQueryEvent"}


def _loads(s: Any) -> Any:
    if not isinstance(s, str):
        return s
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        return s


def _completion_text(response: Any) -> str:
    r = _loads(response)
    if isinstance(r, dict) and "choices" in r:
        texts = []
        for ch in r.get("choices") or []:
            msg = (ch or {}).get("message") or {}
            texts.append(
                "\n".join(t for t in (message_text(msg.get("content")), message_text(msg.get("tool_calls") or [])) if t)
            )
        return "\n".join(t for t in texts if t)
    if isinstance(r, dict) and "response" in r:
        return message_text(r["response"])
    return message_text(r)


def load_ag2_sqlite(path: str | Path, *, tool_agent: str | None = None, skip_invalid: bool = False) -> list[Trace]:
    """Import an AG2 runtime-log SQLite database (one trace per logging session).

    Parameters
    ----------
    path : the ``.db`` file
    tool_agent : agent name for tool steps (default: the agent that ran the function)
    skip_invalid : accepted for symmetry; a session always has content

    Returns
    -------
    list of Trace, sessions in order of their first completion; ``id`` is the session id.

    Raises
    ------
    TraceFormatError
        If the database has no ``chat_completions`` table or no rows.
    """
    p = Path(path)
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "chat_completions" not in tables:
                raise TraceFormatError("not an AG2 runtime log: no chat_completions table", path=str(p))
            comps = con.execute(
                "SELECT invocation_id, session_id, source_name, request, response, start_time, "
                "end_time FROM chat_completions ORDER BY start_time, id"
            ).fetchall()
            calls = (
                con.execute(
                    "SELECT source_name, function_name, args, returns, timestamp FROM function_calls ORDER BY timestamp"
                ).fetchall()
                if "function_calls" in tables
                else []
            )
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise TraceFormatError(f"cannot read SQLite: {exc}", path=str(p)) from exc
    if not comps:
        raise TraceFormatError(
            "AG2 runtime log has no chat_completions rows (was logging started before the chat?)", path=str(p)
        )
    sessions: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
    spans: dict[str, list[int]] = {}
    for inv, sess, src, req, resp, start, end in comps:
        sess = str(sess or "session")
        t0, t1 = iso_to_ns(start), iso_to_ns(end) or iso_to_ns(start)
        sessions.setdefault(sess, []).append(
            (
                t0,
                0,
                {
                    "agent": src or "unknown",
                    "role": "assistant",
                    "content": _completion_text(resp),
                    "request": _loads(req),
                    "invocation_id": inv,
                },
            )
        )
        lo_hi = spans.setdefault(sess, [t0, t1])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], t0), max(lo_hi[1], t1)
    order = sorted(spans, key=lambda s: spans[s][0])
    for src, fname, args, returns, ts in calls:
        t = iso_to_ns(ts)
        inside = [s for s in order if spans[s][0] <= t <= spans[s][1]]
        before = [s for s in order if spans[s][0] <= t]
        cands = inside or before
        sess = cands[-1] if cands else order[0]
        sessions[sess].append(
            (
                t,
                1,
                {
                    "agent": tool_agent or src or "unknown",
                    "role": "tool",
                    "content": message_text(_loads(returns)),
                    "function_name": fname,
                    "args": args,
                },
            )
        )
    out = []
    for sess in order:
        rows = [r for _, _, r in sorted(sessions[sess], key=lambda x: (x[0], x[1]))]
        question = ""
        first_req = next((r["request"] for r in rows if r["role"] == "assistant"), None)
        if isinstance(first_req, dict):
            question = next(
                (
                    message_text(m.get("content"))
                    for m in first_req.get("messages") or []
                    if isinstance(m, dict) and m.get("role") == "user"
                ),
                "",
            )
        steps = []
        for i, r in enumerate(rows):
            meta = {"session_id": sess}
            for k in ("invocation_id", "function_name", "args"):
                if r.get(k) is not None:
                    meta[k] = r[k]
            steps.append(Step(index=i, agent=str(r["agent"]), role=r["role"], content=r["content"], metadata=meta))
        out.append(
            Trace(
                id=sess,
                source="ag2",
                question=question,
                ground_truth="",
                steps=steps,
                metadata={"format": "ag2", "file": p.name, "session_id": sess},
            )
        )
    return out


def parse_chat_history(data: Any, trace_id: str, *, tool_agent: str | None = None) -> Trace:
    """One AG2/AutoGen chat history (see the module docstring for the accepted shapes) as a Trace.

    Raises
    ------
    TraceFormatError
        If ``data`` is none of the shapes or holds no message.
    """
    if isinstance(data, dict):
        msgs = data.get("chat_history", data.get("messages"))
    else:
        msgs = data
    if not isinstance(msgs, list) or not msgs:
        raise TraceFormatError(
            f"trace {trace_id!r}: expected a non-empty list of messages "
            "(chat_history, GroupChat.messages or TaskResult.messages)"
        )
    steps: list[Step] = []
    question = ""
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise TraceFormatError(f"trace {trace_id!r}: message {i} is not an object")
        typ = m.get("type")
        if typ in _SKIP_TYPES:
            continue
        if "source" in m and typ:  # AutoGen 0.4+ AgentChat
            agent = str(m.get("source") or "unknown")
            role = (
                "tool"
                if typ in ("ToolCallExecutionEvent", "FunctionExecutionResultMessage")
                else "thought"
                if typ == "ThoughtEvent"
                else "assistant"
            )
            if agent == "user":
                role = "user"
                question = question or message_text(m.get("content"))
        else:  # AG2 chat_history / GroupChat.messages
            name = m.get("name")
            agent = str(name).strip() if isinstance(name, str) and name.strip() else str(m.get("role") or "unknown")
            role = str(m.get("role", ""))
            if role in ("tool", "function"):
                role = "tool"
        if role == "tool" and tool_agent:
            agent = tool_agent
        content = message_text(m.get("content"))
        if m.get("tool_calls"):
            content = "\n".join(t for t in (content, message_text(m["tool_calls"])) if t)
        steps.append(
            Step(
                index=len(steps),
                agent=agent,
                role=role,
                content=content,
                metadata={"message_index": i, **({"type": typ} if typ else {})},
            )
        )
    if not steps:
        raise TraceFormatError(f"trace {trace_id!r}: no messages")
    if not question:
        question = next((s.content for s in steps if s.role == "user"), steps[0].content)
    return Trace(
        id=trace_id, source="ag2", question=question, ground_truth="", steps=steps, metadata={"format": "ag2-chat"}
    )


def load_chat_history(path: str | Path, *, tool_agent: str | None = None) -> list[Trace]:
    """Import a JSON chat history file (one trace, id = file stem; a list of ``{chat_history}`` objects
    gives ``stem/0``, ``stem/1`` ...).

    Raises
    ------
    TraceFormatError
        If the file is not JSON or not a chat history.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceFormatError(f"cannot read as JSON: {exc}", path=str(p)) from exc
    try:
        if (
            isinstance(data, list)
            and data
            and all(
                isinstance(d, dict) and ("chat_history" in d or ("messages" in d and "content" not in d)) for d in data
            )
        ):
            return [parse_chat_history(d, f"{p.stem}/{i}", tool_agent=tool_agent) for i, d in enumerate(data)]
        return [parse_chat_history(data, p.stem, tool_agent=tool_agent)]
    except TraceFormatError as exc:
        raise TraceFormatError(str(exc), path=str(p)) from exc


def load_ag2(path: str | Path, *, tool_agent: str | None = None, skip_invalid: bool = False) -> list[Trace]:
    """Import an AG2 runtime-log SQLite database or a chat-history JSON file (chosen by content).

    Raises
    ------
    TraceFormatError
        If the file is neither.
    """
    p = Path(path)
    with p.open("rb") as fh:
        is_db = fh.read(16) == b"SQLite format 3\x00"
    if is_db:
        return load_ag2_sqlite(p, tool_agent=tool_agent, skip_invalid=skip_invalid)
    return load_chat_history(p, tool_agent=tool_agent)
