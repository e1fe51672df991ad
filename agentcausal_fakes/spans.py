"""TEST DOUBLE: a small 3-agent run (planner, researcher with a tool call and its result, writer) emitted
with the real OpenTelemetry SDK, in GenAI or OpenInference conventions, and its OTLP JSON; for the
importer tests and the report screenshot bench."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

QUESTION = "What is the boiling point of water at the top of Mount Everest?"
PLAN = "Plan: 1. look up the air pressure at the summit 2. derive the boiling point"
CALL_ARGS = '{"q": "air pressure Everest summit"}'
TOOL_RESULT = "About 34 kPa at the summit."
RESEARCH = "At 34 kPa water boils at about 71 C."
ANSWER = "Water boils at about 71 degrees Celsius on the summit."

#: (agent, role, content fragment) of the expected steps, in order
EXPECTED = [
    ("planner", "assistant", PLAN),
    ("researcher", "assistant", "tool call web_search"),
    ("researcher", "tool", TOOL_RESULT),
    ("researcher", "assistant", RESEARCH),
    ("writer", "assistant", ANSWER),
]


def _tracer():
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("agentcausal-test"), exporter


def _clock() -> Callable[[], int]:
    t = [1_717_000_000_000_000_000]

    def tick() -> int:
        t[0] += 1_000_000
        return t[0]

    return tick


def genai_spans(*, content: bool = True, layout: str = "v1.37") -> list[Any]:
    """The run as GenAI spans; ``layout`` "v1.37" (attributes) or "v1.27" (span events)."""
    tracer, exporter = _tracer()
    tick = _clock()

    def out_msgs(parts: list[dict]) -> dict:
        if not content:
            return {}
        if layout == "v1.37":
            return {"gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])}
        return {}

    def chat(name: str, parts: list[dict]) -> None:
        with tracer.start_as_current_span(
            "chat gpt-4o",
            start_time=tick(),
            end_on_exit=False,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.provider.name": "openai",
                **out_msgs(parts),
            },
        ) as s:
            if content and layout == "v1.27":
                text = "".join(p.get("content", "") for p in parts if p["type"] == "text")
                calls = [
                    {"id": p["id"], "type": "function", "function": {"name": p["name"], "arguments": p["arguments"]}}
                    for p in parts
                    if p["type"] == "tool_call"
                ]
                s.add_event(
                    "gen_ai.content.completion",
                    {"gen_ai.completion": json.dumps([{"role": "assistant", "content": text, "tool_calls": calls}])},
                )
            s.end(end_time=tick())

    def agent(name: str):
        return tracer.start_as_current_span(
            f"invoke_agent {name}",
            start_time=tick(),
            end_on_exit=False,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
        )

    root_attrs = {"gen_ai.operation.name": "invoke_workflow"}
    if content:
        root_attrs["gen_ai.input.messages"] = json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
        )
    with tracer.start_as_current_span(
        "invoke_workflow team", start_time=tick(), end_on_exit=False, attributes=root_attrs
    ) as root:
        with agent("planner") as a:
            chat("planner", [{"type": "text", "content": PLAN}])
            a.end(end_time=tick())
        with agent("researcher") as a:
            chat("researcher", [{"type": "tool_call", "id": "call_1", "name": "web_search", "arguments": CALL_ARGS}])
            tattrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "web_search",
                "gen_ai.tool.call.id": "call_1",
            }
            if content:
                tattrs.update({"gen_ai.tool.call.arguments": CALL_ARGS, "gen_ai.tool.call.result": TOOL_RESULT})
            with tracer.start_as_current_span(
                "execute_tool web_search", start_time=tick(), end_on_exit=False, attributes=tattrs
            ) as t:
                t.end(end_time=tick())
            chat("researcher", [{"type": "text", "content": RESEARCH}])
            a.end(end_time=tick())
        with agent("writer") as a:
            chat("writer", [{"type": "text", "content": ANSWER}])
            a.end(end_time=tick())
        root.end(end_time=tick())
    return list(exporter.get_finished_spans())


def otlp_json(spans: list[Any], *, hex_ids: bool = True) -> dict:
    """Spans as an OTLP JSON document through the real OTLP encoder; ids hex as the Collector writes them
    (``hex_ids=False`` keeps protobuf JSON's base64)."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.common")
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(spans))
    if hex_ids:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    for k in ("traceId", "spanId", "parentSpanId"):
                        if sp.get(k):
                            sp[k] = base64.b64decode(sp[k]).hex()
    return doc


def openinference_spans(*, node_id_only: str = "researcher") -> list[Any]:
    """The run as OpenInference spans (constants from openinference-semantic-conventions); the agent
    ``node_id_only`` is named only by ``graph.node.id``."""
    pytest.importorskip("openinference.semconv")
    from openinference.semconv.trace import MessageAttributes as M
    from openinference.semconv.trace import OpenInferenceSpanKindValues as K
    from openinference.semconv.trace import SpanAttributes as A
    from openinference.semconv.trace import ToolCallAttributes as TC

    tracer, exporter = _tracer()
    tick = _clock()
    out = f"{A.LLM_OUTPUT_MESSAGES}.0."

    def llm(text: str | None, call: tuple[str, str] | None = None) -> None:
        attrs = {
            A.OPENINFERENCE_SPAN_KIND: K.LLM.value,
            A.LLM_MODEL_NAME: "gpt-4o",
            f"{A.LLM_INPUT_MESSAGES}.0.{M.MESSAGE_ROLE}": "user",
            f"{A.LLM_INPUT_MESSAGES}.0.{M.MESSAGE_CONTENT}": QUESTION,
            out + M.MESSAGE_ROLE: "assistant",
        }
        if text is not None:
            attrs[out + M.MESSAGE_CONTENT] = text
        if call:
            attrs[f"{out}{M.MESSAGE_TOOL_CALLS}.0.{TC.TOOL_CALL_FUNCTION_NAME}"] = call[0]
            attrs[f"{out}{M.MESSAGE_TOOL_CALLS}.0.{TC.TOOL_CALL_FUNCTION_ARGUMENTS_JSON}"] = call[1]
        with tracer.start_as_current_span(
            "ChatCompletion", start_time=tick(), end_on_exit=False, attributes=attrs
        ) as s:
            s.end(end_time=tick())

    def agent(name: str):
        attrs = {A.OPENINFERENCE_SPAN_KIND: K.AGENT.value, A.GRAPH_NODE_ID: name}
        if name != node_id_only:
            attrs[A.AGENT_NAME] = name
        return tracer.start_as_current_span(
            f"{name}._execute_core", start_time=tick(), end_on_exit=False, attributes=attrs
        )

    with tracer.start_as_current_span(
        "Crew.kickoff",
        start_time=tick(),
        end_on_exit=False,
        attributes={A.OPENINFERENCE_SPAN_KIND: K.CHAIN.value, A.INPUT_VALUE: QUESTION},
    ) as root:
        with agent("planner") as a:
            llm(PLAN)
            a.end(end_time=tick())
        with agent("researcher") as a:
            llm(None, ("web_search", CALL_ARGS))
            with tracer.start_as_current_span(
                "web_search",
                start_time=tick(),
                end_on_exit=False,
                attributes={
                    A.OPENINFERENCE_SPAN_KIND: K.TOOL.value,
                    A.TOOL_NAME: "web_search",
                    A.INPUT_VALUE: CALL_ARGS,
                    A.OUTPUT_VALUE: TOOL_RESULT,
                },
            ) as t:
                t.end(end_time=tick())
            llm(RESEARCH)
            a.end(end_time=tick())
        with agent("writer") as a:
            llm(ANSWER)
            a.end(end_time=tick())
        root.end(end_time=tick())
    return list(exporter.get_finished_spans())
