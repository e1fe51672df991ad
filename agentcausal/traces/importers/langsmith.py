"""LangSmith run exports (LangGraph/LangChain) → :class:`~agentcausal.traces.model.Trace`.

A run export is JSON Lines (or a JSON array) of runs::

    {"id": "...", "name": "researcher", "run_type": "chain", "parent_run_id": "...", "trace_id": "...",
     "dotted_order": "20240914T223155647000Z<uuid>.…", "start_time": "...", "inputs": {...},
     "outputs": {...}, "error": null, "extra": {"metadata": {"langgraph_node": "researcher", ...}}}

* order: ``dotted_order`` (it already is execution order, parent before child);
* steps: each ``llm`` run (its generation's message, with tool calls, or text)
  and each ``tool`` run (its output) as a tool step;
* agent: ``extra.metadata.langgraph_node`` of the run or its nearest ancestor;
  a node's own chain run with no LLM or tool run below it is the step itself;
* question: the root run's input (first human message, or ``question``/``input``);
* messages may be in LangChain's serialised form (``{"lc": 1, "kwargs": {...}}``).

References
----------
LangSmith run data format, https://docs.smith.langchain.com/reference/data_formats/run_data_format
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcausal.exceptions import TraceFormatError
from agentcausal.traces.importers._spans import SpanKind, SpanRecord, message_text, read_json_records, spans_to_traces
from agentcausal.traces.model import Trace

__all__ = ["read_runs", "langsmith_records", "load_langsmith"]

_HUMAN = ("human", "user", "HumanMessage", "HumanMessageChunk")


def read_runs(path: str | Path) -> list[dict[str, Any]]:
    """The runs of a LangSmith export (JSON Lines, or a JSON array).

    Raises
    ------
    TraceFormatError
        If the file is not JSON or a record lacks ``id``/``run_type``.
    """
    p = Path(path)
    runs = read_json_records(p, "not JSON")
    for i, r in enumerate(runs):
        if not isinstance(r, dict) or "id" not in r or "run_type" not in r:
            raise TraceFormatError(f"record {i}: expected a LangSmith run (id, run_type, dotted_order)", path=str(p))
    return runs


def _msg(m: Any) -> tuple[str, str]:
    """(type or role, text with tool calls) of a message in dict or LangChain-serialised form."""
    if isinstance(m, (list, tuple)) and len(m) == 2 and isinstance(m[0], str):  # ("human", "text")
        return m[0], message_text(m[1])
    if not isinstance(m, dict):
        return "", message_text(m)
    typ = m.get("type") or m.get("role") or ""
    if "lc" in m and isinstance(m.get("kwargs"), dict):
        ids = m.get("id") or []
        typ = ids[-1] if ids else typ
        m = m["kwargs"]
        typ = m.get("type") or typ
    parts = [message_text(m.get("content"))]
    calls = m.get("tool_calls") or (m.get("additional_kwargs") or {}).get("tool_calls") or []
    for c in calls:
        if isinstance(c, dict):
            fn = c["function"] if isinstance(c.get("function"), dict) else c
            args = fn.get("args", fn.get("arguments", ""))
            parts.append(
                f"tool call {fn.get('name', '')}"
                f"({args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)})"
            )
    return str(typ), "\n".join(p for p in parts if p)


def _messages(inputs: Any) -> list[Any]:
    msgs = inputs.get("messages") if isinstance(inputs, dict) else None
    if isinstance(msgs, list) and msgs and isinstance(msgs[0], list):
        msgs = msgs[0]  # chat model runs: a batch of message lists
    return msgs if isinstance(msgs, list) else []


def _first_human(inputs: Any) -> str | None:
    for m in _messages(inputs):
        typ, text = _msg(m)
        if typ in _HUMAN and text:
            return text
    return None


def _question(inputs: Any) -> str | None:
    q = _first_human(inputs)
    if q:
        return q
    if isinstance(inputs, dict):
        for k in ("question", "input", "query", "task", "prompt"):
            if isinstance(inputs.get(k), str) and inputs[k]:
                return inputs[k]
    return None


def _llm_output(outputs: Any) -> str | None:
    if not isinstance(outputs, dict) or not outputs:
        return None
    gens = outputs.get("generations")
    if isinstance(gens, list) and gens:
        g = gens[0][0] if isinstance(gens[0], list) and gens[0] else gens[0]
        if isinstance(g, dict):
            if g.get("message") is not None:
                text = _msg(g["message"])[1]
                if text:
                    return text
            return str(g.get("text", ""))
    msgs = _messages(outputs)
    if msgs:
        return _msg(msgs[-1])[1]
    for k in ("output", "content", "text"):
        if k in outputs:
            return _msg(outputs[k])[1] if isinstance(outputs[k], dict) else message_text(outputs[k])
    return json.dumps(outputs, ensure_ascii=False, default=str)


def _tool_output(outputs: Any) -> str | None:
    if outputs is None or outputs == {}:
        return None
    out = outputs.get("output", outputs) if isinstance(outputs, dict) else outputs
    if isinstance(out, dict) and ("lc" in out or "content" in out):
        return _msg(out)[1]
    return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, default=str)


def _parent_from_dotted(dotted: str) -> str | None:
    segs = dotted.split(".")
    return segs[-2][22:] if len(segs) >= 2 and len(segs[-2]) > 22 else None


def langsmith_records(path: str | Path) -> list[SpanRecord]:
    """Span records of a LangSmith run export, before building traces (``start`` = rank in ``dotted_order``).

    Raises
    ------
    TraceFormatError
        If the file is not a run export.
    """
    runs = read_runs(path)
    runs.sort(key=lambda r: (str(r.get("dotted_order") or ""), str(r.get("start_time") or "")))
    out = []
    for rank, r in enumerate(runs):
        rt = str(r.get("run_type", ""))
        meta_in = ((r.get("extra") or {}).get("metadata") or {}) if isinstance(r.get("extra"), dict) else {}
        node = meta_in.get("langgraph_node")
        node = str(node) if node and not str(node).startswith("__") else None
        dotted = str(r.get("dotted_order") or "")
        trace_id = str(r.get("trace_id") or (dotted.split(".")[0][22:] if dotted else r["id"]))
        parent = r.get("parent_run_id") or (_parent_from_dotted(dotted) if dotted else None)
        meta: dict[str, Any] = {"run_type": rt}
        if meta_in.get("langgraph_step") is not None:
            meta["langgraph_step"] = meta_in["langgraph_step"]
        if r.get("error"):
            meta["error"] = str(r["error"])[:500]
        content = first_user = None
        if rt == "llm":
            kind: SpanKind = "llm"
            content = _llm_output(r.get("outputs"))
            first_user = _first_human(r.get("inputs"))
        elif rt == "tool":
            kind = "tool"
            content = _tool_output(r.get("outputs"))
            meta["tool_name"] = r.get("name", "")
        elif rt == "chain" and node and r.get("name") == node:
            kind = "agent"
            content = _llm_output(r.get("outputs"))
        else:
            kind = "chain" if rt == "chain" else "other"
        out.append(
            SpanRecord(
                trace_id=trace_id,
                span_id=str(r["id"]),
                parent_id=str(parent) if parent else None,
                name=str(r.get("name", "")),
                start=rank,
                kind=kind,
                agent=node,
                content=content,
                question=_question(r.get("inputs")),
                first_user=first_user,
                meta=meta,
            )
        )
    return out


def load_langsmith(path: str | Path, *, tool_agent: str | None = None, skip_invalid: bool = False) -> list[Trace]:
    """Import a LangSmith run export.

    Parameters
    ----------
    path : JSON Lines (or JSON array) of runs
    tool_agent : agent name for tool steps (default: the calling agent)
    skip_invalid : drop traces without content instead of raising

    Returns
    -------
    list of Trace, one per ``trace_id``; step metadata holds the run id as ``span_id``.

    Raises
    ------
    TraceFormatError
        If the file is not a run export, or a trace has no steps or no content.
    """
    p = Path(path)
    return spans_to_traces(
        langsmith_records(p), source="langsmith", file=p.name, tool_agent=tool_agent, skip_invalid=skip_invalid
    )
