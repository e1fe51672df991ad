"""Test doubles. Never product defaults: tests and benchmarks only."""
