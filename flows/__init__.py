"""Prefect flows: wiring, mapping over a corpus or datasets, artifacts. Thin."""
