"""TEST DOUBLES for the tests and the benchmarks, never for the product.

``agentcausal/``, ``flows/`` and ``tasks/`` never import this package, and it is
not part of the installed distribution: ``tests/`` and ``bench/`` import it from
the repository root (pytest's rootdir, ``python -m bench``'s working directory).

Modules
-------
fake_openai
    :class:`~agentcausal_fakes.fake_openai.FakeOpenAIServer`, a fake
    OpenAI-compatible HTTP server (scripted replies, latency, faults).
responders
    :class:`~agentcausal_fakes.responders.BenchResponder`, schema-valid replies
    for every attribution and discovery reply model, by schema name.
evidence
    :class:`~agentcausal_fakes.evidence.EvidenceResponder`, a responder wrapper
    that adds a quoted ``evidence`` field.
synthetic
    Invented traces (``synthetic_traces``) of a fixed shape, by seed.
profiles
    LLM profiles and a Gateway on one fake endpoint (``bench_profiles``).
spans
    A small 3-agent run as OpenTelemetry spans (GenAI or OpenInference
    conventions) and as OTLP JSON.
"""
