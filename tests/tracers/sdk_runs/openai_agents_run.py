"""Record a two-agent OpenAI Agents SDK run with the OpenInference instrumentation (test helper).

Runs in the agent-SDK virtual environment (scripts/setup.sh: .venv-agents), never in the project's:
``python openai_agents_run.py BASE_URL OUT_FILE [OTLP_ENDPOINT PROJECT]``. The model is the fake
OpenAI-compatible server at BASE_URL (agentcausal_fakes/fake_openai.py, a test double). The spans are written
to OUT_FILE by the OpenTelemetry console exporter (``span.to_json()``, one object per span) and, when
OTLP_ENDPOINT is given, also sent there over OTLP/HTTP with the Phoenix project PROJECT.
"""

from __future__ import annotations

import asyncio
import sys

QUESTION = "Which city hosted the 1992 Summer Olympics?"


def tracer_provider(out_file: str, endpoint: str | None, project: str | None):
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project or "default"}))
    out = open(out_file, "w", encoding="utf-8")  # closed at exit by the provider's shutdown
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
    if endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


async def run(base_url: str) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, trace
    from openai import AsyncOpenAI

    model = OpenAIChatCompletionsModel(
        model="fake-model", openai_client=AsyncOpenAI(base_url=base_url, api_key="test-key")
    )
    planner = Agent(name="planner", instructions="You plan the research. PLANNER", model=model)
    writer = Agent(name="writer", instructions="You write the final answer. WRITER", model=model)
    with trace("olympics team"):
        plan = await Runner.run(planner, QUESTION)
        await Runner.run(writer, f"{QUESTION}\nPlan: {plan.final_output}")


def main() -> None:
    base_url, out_file = sys.argv[1], sys.argv[2]
    endpoint = sys.argv[3] if len(sys.argv) > 3 else None
    project = sys.argv[4] if len(sys.argv) > 4 else None
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    provider = tracer_provider(out_file, endpoint, project)
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    asyncio.run(run(base_url))
    provider.force_flush()
    provider.shutdown()


if __name__ == "__main__":
    main()
