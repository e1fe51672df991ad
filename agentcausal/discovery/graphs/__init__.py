"""The causal graph type (``CausalGraph``: edge marks, causal-learn encodings, DAG repair) and the metrics
that score a graph against the truth (SHD, SHD₂, NHD, F1, skeleton F1)."""
