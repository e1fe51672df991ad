"""Failure attribution: the Who&When baselines, DCFA, and evaluation.

Methods are looked up by name in :mod:`agentcausal.attribution.registry`.
"""
