"""Tests of the test doubles in ``agentcausal_fakes``."""
