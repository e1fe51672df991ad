"""Traces of multi-agent runs: models, loaders, and rendering into prompts."""

from agentcausal.traces.model import Attribution, Label, Step, Trace

__all__ = ["Attribution", "Label", "Step", "Trace"]
