"""One run path for both halves (attribution and discovery).

* :mod:`agentcausal.runs.items` — load one plan item (trace) from its path, checking its sha256;
* :mod:`agentcausal.runs.envelope` — run one method on one item: timing, usage, model labels, errors, cache key;
* :mod:`agentcausal.runs.folder` — the run folder: save, load, evaluate, report, ``run.json``.
"""
