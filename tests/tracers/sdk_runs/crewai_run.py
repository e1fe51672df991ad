"""Record a two-agent CrewAI crew with the OpenInference instrumentation (test helper).

Runs in the agent-SDK virtual environment (scripts/setup.sh: .venv-agents), never in the project's:
``python crewai_run.py BASE_URL OUT_FILE [OTLP_ENDPOINT PROJECT]``, as
:mod:`openai_agents_run` (same exporters; the model is the fake OpenAI-compatible server, a test double).
CrewAI's own instrumentation records the crew and its agents; its LLM calls go through the ``openai``
package, recorded by the OpenInference OpenAI instrumentation, as Phoenix's CrewAI guide sets it up.
"""

from __future__ import annotations

import sys

from openai_agents_run import tracer_provider

QUESTION = "Which city hosted the 1992 Summer Olympics?"


def run(base_url: str) -> None:
    from crewai import LLM, Agent, Crew, Process, Task

    llm = LLM(model="openai/fake-model", base_url=base_url, api_key="test-key")
    researcher = Agent(
        role="researcher",
        goal="Find the facts. RESEARCHER",
        backstory="A careful researcher.",
        llm=llm,
        allow_delegation=False,
        verbose=False,
    )
    writer = Agent(
        role="writer",
        goal="Write the answer. WRITER",
        backstory="A concise writer.",
        llm=llm,
        allow_delegation=False,
        verbose=False,
    )
    find = Task(description=QUESTION, expected_output="the host city", agent=researcher)
    answer = Task(
        description="Answer the question in one sentence.", expected_output="one sentence", agent=writer, context=[find]
    )
    Crew(agents=[researcher, writer], tasks=[find, answer], process=Process.sequential, verbose=False).kickoff()


def main() -> None:
    base_url, out_file = sys.argv[1], sys.argv[2]
    endpoint = sys.argv[3] if len(sys.argv) > 3 else None
    project = sys.argv[4] if len(sys.argv) > 4 else None
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    provider = tracer_provider(out_file, endpoint, project)
    CrewAIInstrumentor().instrument(tracer_provider=provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    run(base_url)
    provider.force_flush()
    provider.shutdown()


if __name__ == "__main__":
    main()
