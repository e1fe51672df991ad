"""Benchmarks: throughput, cache reuse and LCE economy against the fake OpenAI server (test double),
the MAC statistical stage on the six datasets, and (opt-in) the embedded model on real traces.

Run ``.venv/bin/python -m bench`` from the repository root; see ``bench/README.md``.
Nothing here is imported by the package or timed in tests.
"""
