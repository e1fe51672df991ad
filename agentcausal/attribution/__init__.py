"""Failure attribution: the Who&When baselines, DCFA, and evaluation.

Each method module defines its :class:`~agentcausal.attribution.spec.AttributionSpec`; they are listed, and
looked up by name, in :data:`agentcausal.registry.ATTRIBUTION_METHODS` (which this package never imports).
"""
