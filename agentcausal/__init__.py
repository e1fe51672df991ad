"""agentcausal: LLM agents on causal questions, as cached pipelines.

Two published methods live here as plain library code (no Prefect import):

* DCFA failure attribution for LLM multi-agent traces
  (:mod:`agentcausal.attribution`), with the Who&When baselines.
* MAC multi-agent causal discovery (:mod:`agentcausal.discovery`).

Every LLM call goes through :class:`agentcausal.llm.Gateway`, which routes a
named stage to a profile (endpoint + model), caches on disk, retries and counts
tokens. ``tasks/`` and ``flows/`` wrap this library in Prefect.
"""

__version__ = "0.1.0"
