"""Prefect tasks: one per unit of cached, retryable work, each a thin wrapper over one library call."""
