"""The LLM discovery baselines: zero-shot, ReAct, LLM-SCD and ILS-CSL (``docs/baselines.md``), and the
prompt pieces and graph answer they share."""
