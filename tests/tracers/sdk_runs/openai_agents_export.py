"""Record the same two-agent OpenAI Agents SDK run with the SDK's own tracing export (test helper).

Runs in the agent-SDK virtual environment: ``python openai_agents_export.py BASE_URL OUT_FILE``. A tracing
processor collects ``Trace.export()`` and ``Span.export()`` of every finished trace and span and writes them
as the SDK's backend exporter sends them, ``{"data": [...]}``; no OpenTelemetry is involved.
"""

from __future__ import annotations

import asyncio
import json
import sys

from openai_agents_run import run


def main() -> None:
    from agents.tracing import TracingProcessor, set_trace_processors

    items: list[dict] = []

    class Collect(TracingProcessor):
        def on_trace_start(self, trace) -> None:
            pass

        def on_trace_end(self, trace) -> None:
            items.append(trace.export())

        def on_span_start(self, span) -> None:
            pass

        def on_span_end(self, span) -> None:
            items.append(span.export())

        def shutdown(self) -> None:
            pass

        def force_flush(self) -> None:
            pass

    set_trace_processors([Collect()])
    asyncio.run(run(sys.argv[1]))
    with open(sys.argv[2], "w", encoding="utf-8") as fh:
        json.dump({"data": items}, fh)


if __name__ == "__main__":
    main()
