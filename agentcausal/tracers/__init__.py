"""Back to the tracer: read traces from the trace stores teams run, and send the blamed steps back.

=====================  =============================================================================
module                 what
=====================  =============================================================================
:mod:`.blame`          the blamed spans of a run folder (read through the run folder's loaders)
:mod:`.phoenix`        Arize Phoenix: traces in (project, time window, Phoenix's span filter), span
                       annotations back (label, score, explanation, metadata)
:mod:`.otlp_export`    the results as OTLP JSON log records of OpenTelemetry GenAI evaluation events
                       (``gen_ai.evaluation.result``), keyed by trace and span id, for any OTLP backend
=====================  =============================================================================
"""
